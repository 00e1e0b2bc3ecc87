"""The roofline's inputs, shared by the speed model (``engines.speed``) and ``throughput``: the bytes a decode step
reads (weights a batch touches, routed experts apart, each request's KV cache and state), FLOPs per token, and
the dense tensor rate of a format on a GPU. Identity-keyed caches: setups and exports ask for the same
model and format many times."""

from __future__ import annotations

from .architecture import Architecture
from .formats import tensor_bits
from .gpus import GPU
from .kv_cache import cache_bytes
from .layers import CompressedSparseAttention, FullAttention, MLAAttention, MoE, SelfAndCrossAttention
from .memo import model_memo, remembered


def peak_flops(gpu: GPU, weight_format: str, native: bool) -> float | None:
    """Dense tensor FLOPS for the format's compute type. GeForce headline rates use FP16 accumulate; the FP32
    accumulation engines use runs at half that (``shared/reference/gpus/NOTES.md``)."""
    tflops = None
    if native and weight_format in ("nvfp4", "mxfp4") and gpu.fp4_tflops_dense:
        tflops = gpu.fp4_tflops_dense
    elif native and weight_format in ("fp8", "int8", "nvfp4", "mxfp4") and gpu.fp8_tflops_dense:
        tflops = gpu.fp8_tflops_dense
    elif gpu.fp16_tflops_dense:
        tflops = gpu.fp16_tflops_dense
    if tflops is None:
        return None
    if gpu.kind == "consumer" and gpu.vendor == "NVIDIA":
        tflops /= 2
    return tflops * 1e12


#: (bytes of the tensors every step reads, bytes of one row of the token embeddings, and per routed-expert group
#: (experts, top-k, bytes of all its experts))
StepTerms = tuple[float, float, tuple[tuple[int, int, float], ...]]

#: (id(arch), format) -> (arch, :func:`_step_terms`, {batch: bytes}); identity-keyed like placement's weight
#: loads (setups and exports estimate the same model and format many times)
_STEP_CACHE: dict[tuple[int, str], tuple[Architecture, StepTerms, dict[int, float]]] = model_memo()


def _step_terms(arch: Architecture, fmt: str) -> StepTerms:
    """The model's weights in :func:`_step_bytes`'s terms, summed per kind: a few numbers instead of one term per
    tensor (per-tensor terms of a thousand models are several hundred MiB in each worker process)."""
    dense = row = 0.0
    experts: dict[tuple[int, int], float] = {}
    for t, b in zip(arch.tensors, tensor_bits(arch, fmt), strict=True):
        if t.role == "token_embd":
            row += t.cols * b / 8  # a lookup reads one row per sequence
        elif t.is_routed_expert and t.layer is not None:
            mlp = arch.layers[t.layer].mlp
            assert isinstance(mlp, MoE)
            experts[mlp.num_experts, mlp.top_k] = experts.get((mlp.num_experts, mlp.top_k), 0.0) + t.numel * b / 8
        else:
            dense += t.numel * b / 8
    return dense, row, tuple((e, k, nbytes) for (e, k), nbytes in experts.items())


def _step_bytes(arch: Architecture, fmt: str, batch: int) -> float:
    """Weight bytes one decode step reads for a batch of ``batch`` sequences (all GPUs together): every dense
    tensor, one embedding row per sequence, and of each routed-expert group the expected distinct experts the
    batch's tokens pick, ``E(1 - (1 - k/E)^batch)`` of ``E``."""
    key = (id(arch), fmt)
    hit = _STEP_CACHE.get(key)
    if hit is None or hit[0] is not arch:
        if len(_STEP_CACHE) > 4096:
            _STEP_CACHE.clear()
        hit = _STEP_CACHE[key] = (arch, _step_terms(arch, fmt), {})
    totals = hit[2]
    if batch not in totals:
        dense, row, _ = hit[1]
        totals[batch] = dense + batch * row + _expert_step_bytes(arch, fmt, batch)
    return totals[batch]


def _expert_step_bytes(arch: Architecture, fmt: str, batch: int) -> float:
    """The routed-expert part of :func:`_step_bytes` (the expected distinct experts of the batch)."""
    hit = _STEP_CACHE.get((id(arch), fmt))
    if hit is None or hit[0] is not arch:
        _step_bytes(arch, fmt, batch)  # fills the terms
        hit = _STEP_CACHE[(id(arch), fmt)]
    experts = _EXPERT_CACHE.get((id(arch), fmt, batch))  # memoised like the totals (asked per GPU and plan)
    if experts is None or experts[0] is not arch:
        if len(_EXPERT_CACHE) > 16384:
            _EXPERT_CACHE.clear()
        experts = _EXPERT_CACHE[(id(arch), fmt, batch)] = (
            arch, sum(nbytes * (1 - (1 - k / e) ** batch) for e, k, nbytes in hit[1][2]))
    return experts[1]


_EXPERT_CACHE: dict[tuple[int, str, int], tuple[Architecture, float]] = model_memo()


_FLOPS_CACHE: dict[tuple[int, int], tuple[Architecture, float]] = model_memo()


def _attention_flops_per_token(arch: Architecture, context: int) -> float:
    """Causal attention FLOPs per prompt token, averaged over a prompt of ``context`` tokens."""
    return remembered(_FLOPS_CACHE, (id(arch), context), arch, lambda: _compute_attention_flops(arch, context))


def _compute_attention_flops(arch: Architecture, context: int) -> float:
    flops = 0.0
    for layer in arch.layers:
        m = layer.mixer
        if isinstance(m, SelfAndCrossAttention):  # each token also attends to every encoder output
            flops += 2 * m.cross.encoder_tokens * m.cross.num_heads * 2 * m.cross.head_dim
            m = m.attention
        if isinstance(m, FullAttention):
            span = m.cached_tokens(context) / 2
            flops += 2 * span * m.num_heads * (m.head_dim + m.vdim)
        elif isinstance(m, MLAAttention):
            flops += 2 * (context / 2) * m.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
        elif isinstance(m, CompressedSparseAttention):
            flops += m.attention_flops(context)
    return flops


_ACTIVE_CACHE: dict[int, tuple[Architecture, float]] = model_memo()


def _active_params(arch: Architecture) -> float:
    hit = _ACTIVE_CACHE.get(id(arch))
    if hit is None or hit[0] is not arch:
        if len(_ACTIVE_CACHE) > 4096:
            _ACTIVE_CACHE.clear()
        total = sum(t.numel for t in arch.tensors if t.role != "token_embd")
        hit = _ACTIVE_CACHE[id(arch)] = (arch, total - sum(layer.inactive_params(arch.hidden_size)
                                                           for layer in arch.layers))
    return hit[1]




_REQUEST_CACHE: dict[tuple, tuple[Architecture, float]] = model_memo()


def _cache_bytes_per_request(arch: Architecture, context: int, kv_dtype: str, tp: int) -> float:
    key = (id(arch), context, kv_dtype, tp)
    hit = _REQUEST_CACHE.get(key)
    if hit is None or hit[0] is not arch:
        if len(_REQUEST_CACHE) > 4096:
            _REQUEST_CACHE.clear()
        b = cache_bytes(kv_dtype)
        hit = _REQUEST_CACHE[key] = (arch, sum(layer.mixer.kv_bytes_per_request(context, b, tp)
                                               + layer.mixer.state_bytes(tp)
                                               for layer in arch.layers if layer.mixer is not None))
    return hit[1]
