"""The serving cache keeps a steady state as text: read back it is the same :class:`Serving`, float for float."""

from __future__ import annotations

import math

import pytest

from pipeline.compute.service_setups import SetupServer
from pipeline.compute.serving_cache import serving_of, serving_text
from sizing_core.serving import Serving, Workload
from sizing_core.serving.service_level import standard_workload


def test_a_steady_state_reads_back_equal() -> None:
    s = Serving(rate=None, concurrency=8, ttft_ms=0.1 + 0.2, ttft_ms_p90=1 / 3, itl_ms=12.345678901234567,
                e2e_ms=6400.000000000001, e2e_ms_p90=7000.5, output_tokens_per_s=640.0, requests_per_s=0.125,
                mean_batch=7.999999999999999, saturated=False, max_rate=math.inf, ttft_ms_range=(0.2, 0.4),
                itl_ms_range=(11.0, 14.0), e2e_ms_range=(6000.0, 7000.0), max_running=256)
    back = serving_of(serving_text(s))
    assert back == s and isinstance(back.ttft_ms_range, tuple) and math.isinf(back.max_rate)
    assert serving_of(serving_text(None)) is None


def test_the_cache_holds_standard_loads_only() -> None:
    from pipeline.compute.serving_cache import ServingCache

    cache = ServingCache()
    other = Workload(input_tokens=1000, output_tokens=100, rate=2.0)
    with pytest.raises(ValueError, match="standard loads only"):
        SetupServer(None, other, 8192, cache=cache, model=("m", "r"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="standard loads only"):
        SetupServer(None, standard_workload(8192, 4), 8192, cache=cache)  # type: ignore[arg-type]
    SetupServer(None, standard_workload(8192, 4), 8192, cache=cache, model=("m", "r"))  # type: ignore[arg-type]
