"""One engine step at a load: ``B`` running requests each decoding one token while holding ``held``
tokens of KV, plus ``p`` prompt tokens of waiting requests in the same step (chunked prefill), on one GPU of the TP
group::

    bandwidth = (dense weights + distinct experts touched by the step's B + p tokens / expert efficiency) / TP
                + B x KV bytes of ``held`` tokens                       over  bandwidth x efficiency(memory kind)
    compute   = ((B + p) x 2 x active params + B x attention over held + p x attention over the prompt) / TP
                                                                         over  peak x MFU (per GPU generation)
    step      = roof(weight bytes, matrix FLOPs) + roof(KV bytes, attention FLOPs) + fixed costs (``engines.speed``)
                + B x SEQ_US + (B + p) x routed picks per token x ROUTE_US (MoE)
                + a hop per step between pipeline stages on different machines (NODE_HOP_MS)
    roof(a, b) = max(a, b) + OVERLAP x min(a, b)  (the matrix products and attention run as kernels of their own)

The distinct experts a layer's routed experts see for ``n`` tokens: ``E (1 - (1 - k/E)^n)`` (``k`` at one token,
all ``E`` for many). Fixed costs (launches, routing, MLA kernels, TP all-reduces) and the MFU, the expert streaming
share and the batch-1 efficiency are ``engines.speed``'s, fitted on the batch-1 set; the efficiency is scaled per
memory kind by :data:`MEMORY_KIND_FACTOR` and mixed steps pay :data:`OVERLAP`, both fitted at a load
(``scripts/calibrate_serving.py``; ``docs/calibration.md``, "At a load").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..architecture import Architecture
from ..engines import Engine, effective_format
from ..engines.speed import (
    EXPERT_EFFICIENCY,
    PREFILL_MFU,
    _peak,
    bandwidth_efficiency,
    decode_step_floor,
    family,
    fixed_ms,
)
from ..gpus import GPU
from ..layers import MoE
from ..memo import model_memo, remembered
from ..roofline import _active_params, _attention_flops_per_token, _cache_bytes_per_request, _step_terms
from ..units import GB, GIB

# --- fitted at a load (scripts/calibrate_serving.py --fit; docs/calibration.md "At a load") ----------------------
# on serving.csv (149 of 213 cases predicted): vLLM/SGLang stream at 0.86 of the spec bandwidth on HBM2e (A100
# 80GB), 0.63 on HBM2 (A100 40GB), at the cap of 0.95 on HBM3e (H200, B200), 0.80 on HBM3 (H100, MI300X), 0.74 on
# GDDR6X (RTX 3090) and 0.63 on GDDR6 (L4, L40S); the matrix products and attention each hide 53% of the smaller of
# their bandwidth and compute time (overlap 0.47); a step pays 34 us per running request and 0.098 us per routed
# (token, expert) pick and MoE layer (1.6x that on Ampere), its matrix work at 1.01x the batch-1 prefill MFU (1.3x
# that on Ampere); a pipeline hop between machines costs 1.0 ms a step
#: vLLM/SGLang batched steps stream at engines.speed's batch-1 efficiency times this, per memory kind
MEMORY_KIND_FACTOR = {"HBM2": 1.066, "HBM2e": 1.472, "HBM3": 1.368, "HBM3e": 1.63, "GDDR6": 0.6322, "GDDR6X": 0.7425,
                      "GDDR7": 1.0, "LPDDR": 1.0}
#: share of the smaller of bandwidth and compute time a kernel (the matrix products, attention) does not hide under
#: the larger one
OVERLAP = 0.4671
#: per running request and step (vLLM/SGLang): scheduling, sampling, detokenising, attention metadata
SEQ_US = 34.13
#: per distinct routed expert a MoE layer runs in a step (a grouped-GEMM tile set of its own); fitted at 2.7 us it
#: made small-batch MoE steps twice too slow (DeepSeek, Qwen3-Coder-480B, MiniMax at 4-64 clients): left at zero
EXPERT_US = 0.0
#: a step's matrix work at a load (decode batch and prompt chunks) runs at engines.speed's prefill MFU times this
MFU_FACTOR = 1.006
#: and times this on a GPU generation whose tensor cores the engines' kernels bring nearer to (or further from)
#: their peak than the batch-1 MFU says: Ampere's dense peak is reached with plain MMA tiles, Hopper's needs
#: warp-group MMA and TMA pipelines that not every kernel of a step uses
MFU_GENERATION = {"Ampere": 1.299}
#: per token and routed expert it picks, per MoE layer and step (vLLM/SGLang fused MoE): the router's top-k, the
#: permute/unpermute of the token's hidden state to its experts and the weighted sum back, on every rank of the TP
#: group (each rank runs every token's experts, sharded; with expert parallelism a rank runs its share). It is what
#: makes a MoE step at a batch of hundreds (and a MoE prompt) slower than its bytes and FLOPs
ROUTE_US = 0.09841
#: and times this on a GPU generation whose SMs run those small kernels slower (Ampere: fewer SMs at a lower clock
#: than Hopper, no TMA for the gathers)
ROUTE_GENERATION = {"Ampere": 1.606}
#: per pipeline hop between machines and step (vLLM's pipeline stages on two machines over Ray: the activations'
#: send and each remote stage's own step dispatch); hops inside one machine cost what engines.speed's HOP_MS says
NODE_HOP_MS = 1.047
# ------------------------------------------------------------------------------------------------------------------
MAX_EFFICIENCY = 0.95  # no kernel streams more than this share of the spec bandwidth
PCIE_GBS = 25.0  # host-to-device streaming of --cpu-offload-gb weights (PCIe 4.0 x16 in practice; offload.py)


def memory_kind(gpu: GPU) -> str:
    """The catalog's memory kind in the fitted groups (HBM2 and unnamed HBM generations as HBM2, other GDDR as
    GDDR6, unified as LPDDR)."""
    text = (gpu.memory_kind or "").upper()
    if gpu.kind in ("unified", "apple") or "LPDDR" in text:
        return "LPDDR"
    if text.startswith("HBM3E"):
        return "HBM3e"
    if text.startswith("HBM3"):
        return "HBM3"
    if text.startswith("HBM2E"):
        return "HBM2e"
    if text.startswith("HBM"):
        return "HBM2"
    if text.startswith("GDDR7"):
        return "GDDR7"
    return "GDDR6X" if text.startswith("GDDR6X") else "GDDR6"


def distinct_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts ``tokens`` tokens route to in one layer (each picks ``top_k`` of
    ``num_experts`` uniformly): ``E (1 - (1 - k/E)^n)``; ``k`` at one token, all ``E`` for many."""
    if tokens <= 0:
        return 0.0
    return num_experts * (1 - (1 - top_k / num_experts) ** tokens)


def step_efficiency(engine: Engine, gpu: GPU) -> float:
    """The share of the spec bandwidth a step at a load streams at: engines.speed's batch-1 efficiency, for
    vLLM/SGLang times :data:`MEMORY_KIND_FACTOR` (at most :data:`MAX_EFFICIENCY`)."""
    eff = bandwidth_efficiency(engine, gpu)
    if family(engine) == "server":
        eff = min(MAX_EFFICIENCY, eff * MEMORY_KIND_FACTOR.get(memory_kind(gpu), 1.0))
    return eff


def tensor_rate(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, native: bool) -> float | None:
    """Dense tensor FLOPS the engine's kernels reach for ``arch`` in ``fmt`` on ``gpu`` (None: the catalog has no
    tensor-core rate for it, so a step's compute, and a prompt's, is not known)."""
    return _peak(gpu, effective_format(arch, fmt), native, engine)


def least_step_ms(arch: Architecture, gpu: GPU, engine: Engine, weights: float, held: float, max_tp: int,
                  kv_cache_dtype: str = "bf16") -> float | None:
    """A lower bound of one request's step (:meth:`StepModel.step` at batch 1 holding ``held`` tokens) on every
    layout of at most ``max_tp`` GPUs per TP group, any pipeline stages, machines and support, in any format whose
    active weights are at least ``weights`` bytes: engines.speed's :func:`decode_step_floor` (the bytes over the
    bandwidth, the fixed costs every layout pays) at the step's own bandwidth efficiency. The ITL of any load on
    such a layout is at least this (a step only grows with the batch, the tokens held and the prompt chunks).
    None without a bandwidth figure."""
    floor = decode_step_floor(arch, gpu, engine, weights, max(1, round(held)), 1, kv_cache_dtype)
    if floor is None:
        return None
    spread, fixed = floor
    return spread * bandwidth_efficiency(engine, gpu) / step_efficiency(engine, gpu) / max(1, max_tp) + fixed


@dataclass(frozen=True)
class Step:
    bandwidth_ms: float
    compute_ms: float
    fixed_ms: float
    total_ms: float


#: (id(arch), format) -> (arch, weight terms): a setup search builds a step model per layout of one model and
#: format, and walking every tensor each time was a third of serving a candidate
_TERMS: dict[tuple[int, str], tuple[Architecture, tuple]] = model_memo()


def step_terms(arch: Architecture, fmt: str) -> tuple:
    """:func:`~sizing_core.roofline._step_terms`, memoised per model object and format (identity-checked)."""
    return remembered(_TERMS, (id(arch), fmt), arch, lambda: _step_terms(arch, fmt))


class StepModel:
    """The step of one setup (model, GPU, engine, format, layout), its per-setup terms computed once."""

    def __init__(self, arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int,
                 kv_cache_dtype: str = "bf16", native: bool = True, nodes: int = 1,
                 cpu_offload_gb: float | None = None, dp_attention: int = 1, expert_parallel: int = 1) -> None:
        self.arch, self.gpu, self.engine, self.tp, self.pp, self.kv = arch, gpu, engine, tp, pp, kv_cache_dtype
        #: SGLang's --enable-dp-attention: the TP group's ranks each run attention for their own share of the batch
        #: (their own KV, their own requests); the MoE and dense layers run every rank's tokens together
        self.dp_attention = max(1, dp_attention)
        #: expert parallelism (vLLM --enable-expert-parallel, SGLang --ep-size): each rank runs its own experts, so
        #: only its share of the routed (token, expert) picks
        self.expert_parallel = max(1, expert_parallel)
        self.family = family(engine)
        dense, row, self.experts = step_terms(arch, fmt)
        groups: dict[tuple[int, int], int] = {}
        for layer in arch.layers:
            if isinstance(layer.mlp, MoE):
                key = (layer.mlp.num_experts, layer.mlp.top_k)
                groups[key] = groups.get(key, 0) + 1
        self.moe_layers = tuple((e, k, n) for (e, k), n in groups.items())
        self.routed = sum(k * n for _, k, n in self.moe_layers)  # routed (token, expert) picks per token
        self.dense, self.row = dense, row
        eff = self.efficiency = step_efficiency(engine, gpu)
        self.bandwidth = (gpu.bandwidth_gbs or 0.0) * GB * eff  # bytes/s one GPU streams
        self.server = self.family == "server"
        self.route_us = ROUTE_US * ROUTE_GENERATION.get(gpu.generation, 1.0)  # per routed pick and MoE layer
        #: the at-load MFU over engines.speed's prefill MFU (vLLM/SGLang; the others as at batch 1)
        self.mfu_factor = MFU_FACTOR * MFU_GENERATION.get(gpu.generation, 1.0) if self.server else 1.0
        flops = tensor_rate(arch, gpu, engine, fmt, native)
        self.flops = flops * PREFILL_MFU[self.family] * self.mfu_factor if flops else None
        self.active = _active_params(arch)
        self.fixed = fixed_ms(arch, gpu, engine, tp, pp, nodes)
        if self.server and pp > 1 and nodes > 1:  # the stages' hops that cross machines
            self.fixed += (min(pp, nodes) - 1) * NODE_HOP_MS
        if cpu_offload_gb:  # vLLM's UVA offload: the offloaded weights cross PCIe in every forward pass
            self.fixed += cpu_offload_gb * GIB / (PCIE_GBS * GB) * 1000

    def kv_bytes(self, held: float) -> float:
        """KV cache and state bytes one request holding ``held`` tokens reads per step on one GPU."""
        return _cache_bytes_per_request(self.arch, max(1, round(held)), self.kv, max(1, self.tp // self.dp_attention))

    def weight_bytes(self, tokens: float) -> float:
        """Weight bytes a step of ``tokens`` tokens (decode and prompt) streams, on one GPU; routed experts as
        the distinct ones those tokens touch, at the experts' slower streaming."""
        experts = sum(nbytes * distinct_experts(e, k, tokens) / e for e, k, nbytes in self.experts)
        return (self.dense + min(tokens, 1e6) * self.row + experts / EXPERT_EFFICIENCY) / self.tp

    def step(self, batch: float, held: float, prefill: float = 0.0, prompt: float = 0.0) -> Step:
        """One step: ``batch`` decoding requests holding ``held`` tokens each, ``prefill`` prompt tokens of
        prompts ``prompt`` tokens long (their attention spans half the prompt on average)."""
        tokens = batch + prefill
        ranks = self.dp_attention  # attention over held KV: each DP-attention rank its own share of the batch
        rate = self.bandwidth / 1000 if self.bandwidth else 0.0  # bytes per ms
        weights_ms = self.weight_bytes(max(tokens, 1.0)) / rate if rate else 0.0
        kv_ms = batch / ranks * self.kv_bytes(held) / rate if rate else 0.0
        gemm_ms = attention_ms = 0.0
        if self.flops:
            per_ms = self.tp * self.flops / 1000
            gemm_ms = tokens * 2 * self.active / per_ms
            attention = batch * _attention_flops_per_token(self.arch, 2 * max(1, round(held)))
            if prefill:
                attention += prefill * _attention_flops_per_token(self.arch, max(1, round(prompt)))
            attention_ms = attention / per_ms
        # two kinds of kernel, one after the other: the matrix products stream the weights, attention the KV
        total = (max(weights_ms, gemm_ms) + OVERLAP * min(weights_ms, gemm_ms)
                 + max(kv_ms, attention_ms) + OVERLAP * min(kv_ms, attention_ms) + self.fixed)
        bandwidth_ms, compute_ms = weights_ms + kv_ms, gemm_ms + attention_ms
        if self.server:
            total += batch / ranks * SEQ_US / 1000
            if self.route_us and self.routed:
                total += tokens * self.routed / self.expert_parallel * self.route_us / 1000
        if EXPERT_US and self.moe_layers:
            total += sum(n * distinct_experts(e, k, max(tokens, 1.0)) for e, k, n in self.moe_layers) * EXPERT_US / 1000
        return Step(bandwidth_ms=bandwidth_ms, compute_ms=compute_ms, fixed_ms=self.fixed, total_ms=total)

    def prefill_ms(self, tokens: float, prompt: float) -> float:
        """A prefill-only step of ``tokens`` prompt tokens (SGLang's prefill batches)."""
        return self.step(0.0, 0.0, tokens, prompt).total_ms
