"""The calibration set: public engine measurements (package data ``data/calibration/``, each row with its citation
and the quoted log line), our prediction for each, and the error bands published with every estimate.

- ``memory.csv``: start-up memory (weights as loaded, KV pool GiB, KV tokens, maximum concurrency) of vLLM,
  SGLang and llama.cpp, with the columns that map a row onto our inputs (``config``, ``gpu_id``, ``format``,
  ``kv_dtype``, ``context``, ``concurrency``, ``version``) and how it is used (``use``: ``fit`` and ``check`` count
  in the figures, ``soft`` rows are reporter-rounded and shown apart, ``out`` rows say why they cannot be predicted).
- ``throughput.csv``: batch-1 decode, batched decode, prefill and time to first token, mapped the same way.
- ``configs/``: the model configs the rows need (sources in ``configs/SOURCES.md``).
- ``bands.json``: measured / predicted ratios per quantity, engine, GPU class and model class, written by
  ``scripts/calibrate.py`` from :func:`comparisons`; :func:`band` reads it at run time.

Reading package data is the only I/O here, as for the GPU catalog.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .architecture import Architecture
from .engines import Engine, get_engine
from .gpus import GPU, get_gpu

DATA = Path(__file__).parent / "data" / "calibration"
COUNTED = ("fit", "check")  # rows whose residuals count in the published figures and bands


def gpu_class(gpu: GPU) -> str:
    """Bands group GPUs by memory system: HBM data-centre parts, GDDR cards, unified memory."""
    if gpu.kind in ("unified", "apple"):
        return "unified"
    return "datacenter" if gpu.kind == "datacenter" else "gddr"


def model_class(arch: Architecture) -> str:
    """hybrid (linear attention / SSM layers) > mla > sliding (sliding-window or chunked layers) > moe > dense."""
    kinds = set(arch.mixer_counts())
    if kinds & {"gated_deltanet", "kimi_delta_attention", "mamba2", "linear_attention", "short_conv",
                "parallel_hybrid"}:
        return "hybrid"
    if kinds & {"mla", "compressed_sparse_attention"}:
        return "mla"
    if kinds & {"sliding_attention", "chunked_attention"}:
        return "sliding"
    return "moe" if arch.is_moe else "dense"


def read_csv(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as f:
        return list(csv.DictReader(f))


@lru_cache(maxsize=64)
def case_arch(config: str) -> Architecture:
    """A calibration config by its file stem, with its ``.hf_quant_config.json`` sidecar when present."""
    from .hf_config import load_json, parse_config

    path = DATA / "configs" / f"{config}.json"
    sidecar = path.with_name(f"{config}.hf_quant_config.json")
    hf_quant = load_json(config, sidecar.read_bytes(), "hf_quant_config.json") if sidecar.exists() else None
    return parse_config(config, load_json(config, path.read_bytes()), hf_quant)


def _int(text: str | None) -> int | None:
    return int(float(text)) if text not in (None, "") else None


def _float(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def case_engine(row: dict[str, str]) -> Engine:
    """The engine of a row with the settings its log or command line states (others: the engine's defaults)."""
    engine = get_engine(row["engine"].split(" ")[0])
    util = _float(row.get("gpu_memory_utilization"))
    return engine.with_settings(memory_fraction=util, version=row.get("version") or None,
                                max_num_batched_tokens=_int(row.get("max_num_batched_tokens")),
                                max_num_seqs=_int(row.get("max_num_seqs")),
                                enforce_eager=row.get("enforce_eager") == "true" or None)


@dataclass(frozen=True)
class Comparison:
    """One measured quantity of one case against our prediction."""

    case: str
    quantity: str  # weights_gib, kv_gib, kv_tokens, max_concurrency; decode_tok_s, prefill_tok_s, ttft_ms, ...
    engine: str
    gpu: str
    gpu_class: str
    model_class: str
    measured: float
    predicted: float
    use: str
    note: str
    citation: str

    @property
    def ratio(self) -> float:
        """measured / predicted (a pool that is negative in both compares by its difference: ratio undefined)."""
        if self.predicted == 0 or (self.measured <= 0 or self.predicted <= 0):
            return math.nan
        return self.measured / self.predicted


MEMORY_QUANTITIES = {"weights_gib": "measured_weights_gib", "kv_gib": "measured_kv_cache_gib",
                     "kv_tokens": "measured_kv_tokens", "max_concurrency": "measured_max_concurrency"}


def _other(row: dict[str, str]) -> dict[str, str]:
    """``measured_other``'s ``key=value`` pairs."""
    out = {}
    for part in row.get("measured_other", "").split(";"):
        if "=" in part:
            key, value = part.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def _number(text: str | None) -> float | None:
    """A leading number of ``text`` (``~55k`` -> 55000, ``0.35`` -> 0.35), or None."""
    import re

    m = re.match(r"^~?\s*(-?[\d.]+)\s*([kKmM]?)", text or "")
    if not m:
        return None
    return float(m.group(1)) * {"": 1, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}[m.group(2)]


def measured_memory(row: dict[str, str]) -> dict[str, float]:
    """The row's measured quantities: the named columns, plus what its log gives in ``measured_other`` (V0 block
    counts x 16 tokens, the profiled activation peak, reporter-rounded token counts on soft rows)."""
    out = {q: v for q, c in MEMORY_QUANTITIES.items() if (v := _float(row[c])) is not None}
    other = _other(row)
    for key in ("gpu_blocks", "cuda_blocks", "gpu_blocks_after_fix"):
        if key in other and "kv_tokens" not in out and (blocks := _number(other[key])) is not None:
            out["kv_tokens"] = blocks * 16
    for key in ("activation_peak_gib", "peak_activation_gib"):
        if key in other and (value := _number(other[key])) is not None:
            out["activation_gib"] = value
    if "peak_torch_memory_gib" in other and "weights_gib" in out:
        out["activation_gib"] = (_number(other["peak_torch_memory_gib"]) or 0) - out["weights_gib"]
    if "approx_kv_tokens" in other and "kv_tokens" not in out:
        out["kv_tokens"] = _number(other["approx_kv_tokens"]) or 0
    return out


def memory_comparisons() -> list[Comparison]:
    from .deployment import engine_startup

    out = []
    for row in read_csv("memory.csv"):
        if row["use"] == "out" or not row["config"]:
            continue
        arch = case_arch(row["config"])
        gpu = get_gpu(row["gpu_id"])
        engine = case_engine(row)
        tp = _int(row["tp"]) or 1
        pp = _int(row["pp"]) or 1
        gpus = _int(row["gpu_count"]) or 1
        if engine.id == "llama.cpp":
            tp, pp = 1, gpus
        context = _int(row["context"]) or _int(row["max_model_len"]) or arch.max_context or 8192
        concurrency = _int(row["concurrency"]) or 1
        start = engine_startup(arch, gpu, engine, row["format"], tp, pp, context, row["kv_dtype"] or "bf16",
                               concurrency)
        predicted = {"weights_gib": start.weights_gib_per_gpu, "kv_gib": start.kv_cache_gib_per_gpu,
                     "kv_tokens": float(start.kv_cache_tokens), "max_concurrency": start.max_concurrency,
                     "activation_gib": start.activation_gib}
        skip = set(filter(None, row.get("skip", "").split(";")))
        for quantity, measured in measured_memory(row).items():
            if quantity in skip:
                continue
            out.append(Comparison(case=row["id"], quantity=quantity, engine=engine.id, gpu=gpu.id,
                                  gpu_class=gpu_class(gpu), model_class=model_class(arch), measured=measured,
                                  predicted=predicted[quantity], use=row["use"], note=row["use_note"],
                                  citation=row["citation"]))
    return out


@lru_cache(maxsize=1)
def _bands() -> dict:
    path = DATA / "bands.json"
    return json.loads(path.read_text()) if path.exists() else {}


def band(quantity: str, engine: str, gpu: GPU, arch: Architecture) -> tuple[float, float]:
    """(low, high) factors on a prediction of ``quantity``: the spread of measured / predicted on the calibration set
    for the most specific group with enough cases (engine x GPU class x model class, then engine x model class,
    engine x GPU class, engine, every engine); (1, 1) when the set has nothing to say."""
    table = _bands().get(quantity, {})
    g, m = gpu_class(gpu), model_class(arch)
    for key in (f"{engine}|{g}|{m}", f"{engine}|*|{m}", f"{engine}|{g}|*", f"{engine}|*|*", "*|*|*"):
        if key in table:
            low, high = table[key]["band"]
            return float(low), float(high)
    return 1.0, 1.0


def _speed_engine(row: dict[str, str]) -> Engine:
    return get_engine(row["engine_id"]).with_settings(version=row.get("version") or None,
                                                      enforce_eager=row.get("eager") == "1" or None)


def speed_comparisons() -> list[Comparison]:
    """Each usable throughput row against :mod:`engine_speed`: batch-1 decode (``decode_tok_s``), per-request
    decode at a larger batch (``decode_batch_tok_s``), all requests together (``aggregate_tok_s``), prefill and
    time to first token."""
    from .engine_speed import decode_step, prefill_tokens_per_s, ttft_ms
    from .engines import effective_format

    out = []
    for row in read_csv("throughput.csv"):
        if row["use"] == "out":
            continue
        arch = case_arch(row["config"])
        gpu = get_gpu(row["gpu_id"])
        engine = _speed_engine(row)
        gpus = _int(row["gpu_count"]) or 1
        tp = _int(row["tp"]) or 1
        pp = _int(row["pp"]) or max(1, gpus // tp)
        nodes = math.ceil(gpus / gpu.node_size)
        fmt = row["format"]
        stored = effective_format(arch, fmt)
        native = engine.supports(gpu, fmt, arch).native
        prompt, output = _int(row["input_len"]) or 0, _int(row["output_len"]) or 0
        context = max(1, prompt + output // 2)
        batch = _int(row["batch_or_concurrency"]) if row["batch_or_concurrency"].strip().isdigit() else None
        skip = set(filter(None, row.get("skip", "").split(";")))
        found: dict[str, tuple[float, float]] = {}
        if batch:
            step = decode_step(arch, gpu, engine, fmt, tp, pp, context, batch, "bf16", native, nodes)
            per_request = _float(row["measured_decode_tok_s_per_request"])
            if step is not None and per_request is not None:
                found["decode_tok_s" if batch == 1 else "decode_batch_tok_s"] = (per_request, 1000 / step.total_ms)
            total = _float(row["measured_decode_tok_s_total"])
            if step is not None and total is not None and batch > 1:
                found["aggregate_tok_s"] = (total, batch * 1000 / step.total_ms)
        prefill = _float(row["measured_prefill_tok_s"])
        if prefill is not None and prompt:
            rate = prefill_tokens_per_s(arch, gpu, engine, stored, tp, prompt, native)
            if rate:
                found["prefill_tok_s"] = (prefill, rate)
        ttft = _float(row["measured_ttft_ms"])
        if ttft is not None and prompt and batch == 1:
            predicted = ttft_ms(arch, gpu, engine, stored, tp, pp, prompt, native, nodes)
            if predicted:
                found["ttft_ms"] = (ttft, predicted)
        for quantity, (measured, predicted) in found.items():
            if quantity in skip:
                continue
            out.append(Comparison(case=row["id"], quantity=quantity, engine=engine.id, gpu=gpu.id,
                                  gpu_class=gpu_class(gpu), model_class=model_class(arch), measured=measured,
                                  predicted=predicted, use=row["use"], note=row["use_note"],
                                  citation=row["citation"]))
    return out
