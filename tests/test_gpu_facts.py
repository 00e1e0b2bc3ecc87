"""GPU facts and engine support that match the hardware ( item 3).

Memory: what the driver reports decides a fit, not the marketing number. Format support: vLLM's own hardware table
by compute capability (https://docs.vllm.ai/en/v0.11.2/features/quantization/ — AWQ from Turing 7.5, GPTQ from
Volta 7.0, Marlin from Ampere 8.0, INT8 W8A8 from Turing 7.5, FP8 W8A8 from Ada 8.9; AMD GPU: none of AWQ, GPTQ,
INT8 W8A8) and the FP8 page (v0.32.0: FP8 checkpoints run weight-only W8A16 through FP8-Marlin from 7.5).
"""

from __future__ import annotations

import pytest
from helpers import arch

from sizing_core.engines import ENGINES
from sizing_core.gpus import catalog, get_gpu
from sizing_core.units import GIB, MIB

VLLM = ENGINES["vllm"]


@pytest.mark.parametrize("gpu_id", ["l40", "l40s", "a40"])
def test_48gb_ada_and_ampere_cards_have_46068_mib(gpu_id: str) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.visible_mib == 46068
    # 46,068 MiB = 44.99 GiB, not the 48 GiB the marketing number would give: 3,084 MiB (3.01 GiB) less
    assert gpu.memory_bytes == 46068 * MIB
    assert round((48 * GIB - gpu.memory_bytes) / GIB, 2) == 3.01
    assert "46068MiB" in gpu.source


def test_every_gpu_the_sources_rent_has_a_measured_or_stated_memory_basis() -> None:
    """Every NVIDIA GPU the replay offers rent, except the few with no public nvidia-smi total, is driver-measured."""
    rented = {"a10", "a100-40gb", "a100-80gb-pcie", "a100-80gb-sxm", "a30", "a40", "b200", "gh200-96gb", "h100",
              "h100-nvl", "h100-pcie", "h200", "l4", "l40", "l40s", "rtx-3090", "rtx-4000-ada", "rtx-4090",
              "rtx-5090", "rtx-6000-ada", "rtx-a4000", "rtx-a4500", "rtx-a5000", "rtx-a6000", "rtx-pro-6000",
              "v100", "v100-32gb"}
    gpus = catalog()
    assert {g for g in rented if gpus[g].visible_mib is None} == set()
    assert gpus["v100"].visible_mib == 16160 and gpus["v100-32gb"].visible_mib == 32510
    assert gpus["a100-40gb"].visible_mib == 40960 and gpus["h100-nvl"].visible_mib == 95830


def test_volta_runs_no_int8_w8a8_no_awq_no_marlin_no_fp8() -> None:
    v100 = get_gpu("v100")
    assert v100.compute_capability == 7.0
    int8 = VLLM.supports(v100, "int8")
    assert not int8.runs and "7.5" in int8.note  # before: "INT8 W8A8", native
    awq = VLLM.supports(v100, "awq_int4")
    assert awq.runs and not awq.native and "GPTQ" in awq.note and "Marlin" in awq.note  # before: native Marlin
    assert not VLLM.supports(v100, "fp8").runs
    assert not VLLM.supports(v100, "nvfp4").runs


def test_turing_runs_int8_and_awq_natively_and_fp8_weight_only() -> None:
    turing = get_gpu("quadro-rtx-6000")
    assert turing.compute_capability == 7.5
    assert VLLM.supports(turing, "int8").native
    awq = VLLM.supports(turing, "awq_int4")
    assert awq.runs and awq.native and "without Marlin" in awq.note
    fp8 = VLLM.supports(turing, "fp8", arch("meta-llama__Llama-3.1-8B"))
    assert fp8.runs and not fp8.native and "W8A16" in fp8.note  # before: refused below 8.0


def test_amd_runs_fp8_but_not_int8_or_awq_in_vllm() -> None:
    mi300x = get_gpu("mi300x")
    assert VLLM.supports(mi300x, "fp8").native
    assert not VLLM.supports(mi300x, "int8").runs  # before: "INT8 W8A8", native
    assert not VLLM.supports(mi300x, "awq_int4").runs


def test_ampere_and_later_keep_native_int4_and_int8() -> None:
    for gpu_id in ("a100-80gb-sxm", "l40s", "h100"):
        gpu = get_gpu(gpu_id)
        assert VLLM.supports(gpu, "int8").native and VLLM.supports(gpu, "awq_int4").native


def test_gpus_table_reports_the_driver_figure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pipeline.storage.db import connect
    from pipeline.storage.loaders import load_gpus

    con = connect(tmp_path / "g.duckdb")
    load_gpus(con)
    usable, source = con.execute("SELECT memory_gib_usable, memory_source FROM gpus WHERE id = 'l40s'").fetchall()[0]
    con.close()
    assert round(usable, 3) == round(46068 / 1024, 3) == 44.988 and source == "driver-reported 46,068 MiB"


def test_datacenter_accelerators_carry_their_driver_reported_memory() -> None:
    """These were sized on marketed memory. The figures are the totals nvidia-smi / rocm-smi /
    hl-smi print on real machines (public logs named in each row's ``source``); MI300X's "192 GB" was read as
    192 x 10^9 bytes (183,105 MiB) while rocm-smi reports 205,822,885,888 bytes (196,288 MiB)."""
    gpus = catalog()
    measured = {"b300": 275040, "gb200": 189471, "gb300": 284208, "mi300x": 196288, "gaudi2": 98304, "a16": 15356,
                "quadro-rtx-6000": 24576}
    assert {g: gpus[g].visible_mib for g in measured} == measured
    assert gpus["mi300x"].memory_bytes == 205_822_885_888
    assert all(f"{mib}" in gpus[g].source or f"{mib:,}" in gpus[g].source or "205822885888" in gpus[g].source
               for g, mib in measured.items())
    assert gpus["mi355x"].visible_mib is None  # no public rocm-smi total found: marketed 288 GB (docs/sources.md)
