"""A service level at a load: what a user asks of a setup beyond holding the model (a TTFT bound at p90 and a
per-user decode rate), the default interactive floor, and the one call that serves a rented layout at a load.

``vramlab fit ... --rate R`` and ``vramlab cheapest ... --rate R`` both answer through :func:`serve_layout`, so a
setup's figures in ``cheapest`` are the ones ``fit`` gives for the same GPU, engine, format and layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..architecture import Architecture
from ..engines import Engine
from ..engines.memory import EngineStartup
from ..gpus import GPU
from .scheduler import memory_requests
from .workload import Workload

if TYPE_CHECKING:
    from . import Serving


@dataclass(frozen=True)
class ServiceLevel:
    """What each user of the load must get: TTFT at p90 at most ``ttft_ms_p90`` and at least
    ``min_tokens_per_s`` tokens per second while its answer streams (1000 / ITL). A setup that cannot sustain the
    load (saturated) never meets a level: its queue grows without bound."""

    ttft_ms_p90: float | None = None
    min_tokens_per_s: float | None = None

    def shortfall(self, s: Serving) -> list[str]:
        """Why ``s`` misses the level, in words (empty: it meets it)."""
        out = []
        if s.saturated:
            out.append(f"saturated: sustains at most {s.max_rate:.3g} req/s")
        if self.ttft_ms_p90 is not None and not s.prefill_compute:
            out.append("TTFT unknown: no tensor-core rate for this GPU, so the prompt's compute is not counted")
        elif self.ttft_ms_p90 is not None and s.ttft_ms_p90 > self.ttft_ms_p90:
            out.append(f"TTFT p90 {s.ttft_ms_p90:,.0f} ms > {self.ttft_ms_p90:,.0f} ms")
        if self.min_tokens_per_s is not None and tokens_per_s_per_user(s) < self.min_tokens_per_s:
            out.append(f"{tokens_per_s_per_user(s):.1f} tokens/s per user < {self.min_tokens_per_s:g}")
        return out

    def meets(self, s: Serving) -> bool:
        return not self.shortfall(s)

    def to_json(self) -> dict[str, Any]:
        return {"ttftMsP90": self.ttft_ms_p90, "minTokensPerSPerUser": self.min_tokens_per_s}


#: the default interactive floor (docs/decisions.md: what serving guides and providers state for chat): the first
#: token within 2 s at p90 and at least 10 tokens/s per user (faster than reading speed)
DEFAULT_FLOOR = ServiceLevel(ttft_ms_p90=2000.0, min_tokens_per_s=10.0)
#: the answer a standard load's requests generate (its prompt fills the rest of the load's context)
STANDARD_OUTPUT_TOKENS = 512


def standard_workload(context: int, concurrency: int) -> Workload:
    """The serving load of a published standard load (``concurrency`` requests of ``context`` tokens): that many
    clients in a closed loop, each prompt ``context - 512`` tokens and each answer 512, so a request ends holding
    the load's context."""
    output = min(STANDARD_OUTPUT_TOKENS, max(1, context // 2))
    return Workload(input_tokens=context - output, output_tokens=output, concurrency=concurrency)


def tokens_per_s_per_user(s: Serving) -> float:
    """The decode rate one user sees while its answer streams."""
    return 1000.0 / s.itl_ms if s.itl_ms > 0 else float("inf")


def headroom(s: Serving) -> float:
    """The highest sustainable rate over the rate served (open loop: the arrival rate)."""
    served = s.rate if s.rate is not None else s.requests_per_s
    return s.max_rate / served if served and served > 0 else float("inf")


def usd_per_million_output(price_per_hour: float, s: Serving) -> tuple[float | None, tuple[float, float] | None]:
    """$/1M output tokens at the load and its range. The tokens served per second are the load's while the setup
    keeps up (open loop: rate x O) and what its cycle allows otherwise; the range follows the at-load E2E band
    (closed loop: throughput is clients / E2E; open loop: the sustainable rate scales the same way)."""
    if s.output_tokens_per_s <= 0:
        return None, None
    cost = price_per_hour / (s.output_tokens_per_s * 3600) * 1e6
    low, high = (x / s.e2e_ms if s.e2e_ms > 0 else 1.0 for x in s.e2e_ms_range)
    if s.rate is not None:  # the served rate: the arrival rate, capped by the sustainable one's band
        per_request = s.output_tokens_per_s / s.requests_per_s if s.requests_per_s > 0 else 0.0
        fast = min(s.rate, s.max_rate / low if low > 0 else s.rate) * per_request
        slow = min(s.rate, s.max_rate / high if high > 0 else s.rate) * per_request
        if fast <= 0 or slow <= 0:
            return cost, None
        return cost, (price_per_hour / (fast * 3600) * 1e6, price_per_hour / (slow * 3600) * 1e6)
    return cost, (cost * low, cost * high)


def serve_layout(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, nodes: int,
                 load: Workload, context: int, kv_cache_dtype: str = "bf16", native: bool = True,
                 start: EngineStartup | None = None, cpu_offload_gb: float | None = None) -> Serving | None:
    """:func:`~sizing_core.serving.serve` of a TP x PP layout over ``nodes`` machines at ``load`` with
    ``max_model_len = context``; ``start``: the engine's start-up figures when the caller has them (else computed
    for the layout, the memory plan holding what the engine's scheduler plans for at this load). None: no
    bandwidth figure for the GPU, or the layout serves no request."""
    from ..placement.deployment import startup_for_layout
    from . import serve

    if gpu.bandwidth_gbs is None:
        return None
    try:
        if start is None:
            start = startup_for_layout(arch, gpu, engine, fmt, tp, pp, context, kv_cache_dtype,
                                       memory_requests(engine, load))
        return serve(arch, gpu, engine, fmt, tp, pp, load, start, kv_cache_dtype, native, nodes,
                     cpu_offload_gb=cpu_offload_gb)
    except ValueError:
        return None
