"""The sizing report: what ``vramlab size --json`` prints and what exports build on.

Key names and rounding follow seed ``004`` (weights in GiB to 2 decimals, KV GiB per request to 3, recurrent
state GiB to 4, parameters in billions).
"""

from __future__ import annotations

from .architecture import Architecture
from .formats import WEIGHT_FORMATS, weight_bytes
from .kv_cache import kv_bytes_per_request, kv_bytes_per_token, state_bytes_per_request
from .parameters import CheckpointFacts, ParameterCounts, count_parameters
from .record import CamelRecord, alias, record
from .units import GIB

DEFAULT_CONTEXTS = (8192, 32768, 131072, 1048576)


@record
class KVRow(CamelRecord):
    context: int
    bf16: float
    fp8: float
    within_max_context: bool


@record
class SizingReport(CamelRecord):

    model: str
    model_type: str
    tensor_parallel: int
    parameters: float  # billions
    active_parameters: float  # MoE: total minus the routed experts a token skips (embedding lookup included)
    #: the model-card convention: the embedding lookup left out (gpt-oss-120b: 5.13B; activeParameters 5.71B)
    parameter_counts: ParameterCounts
    layers: dict[str, int]  # decoder layers per mixer kind, plus "total"
    mlp_layers: dict[str, int]
    max_context: int | None
    architecture_source: str  # "family", "generic" (unknown model_type, standard fields) or "spec"
    notes: list[str]  # what was assumed (generic rule, family defaults, unknown quantization): warnings
    native_format: str
    native_source: str
    native_unsupported: str | None = None  # why weightsGiB.native is null
    weights_gib: dict[str, float | None] = alias("weightsGiB")
    kv_cache_bytes_per_token: dict[str, int | float] = alias("kvCacheBytesPerToken")
    kv_cache_gib_per_request: list[KVRow] = alias("kvCacheGiBPerRequest")
    recurrent_state_gib_per_request: float = alias("recurrentStateGiBPerRequest")
    recurrent_state_bytes_per_request: int
    active_parameters_model_card: float = 0.0


def _per_token(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 4)


def size_model(arch: Architecture, tensor_parallel: int = 1, contexts: tuple[int, ...] = DEFAULT_CONTEXTS,
               checkpoint: CheckpointFacts | None = None) -> SizingReport:
    """Memory figures for ``arch``. When ``checkpoint`` states the file size, ``native`` weights are that fact
    (``nativeSource`` says so); otherwise they are computed from the native quantization scheme."""
    if tensor_parallel < 1:
        raise ValueError(f"tensor-parallel size must be >= 1, got {tensor_parallel}")
    if not contexts or any(c <= 0 for c in contexts):
        raise ValueError(f"contexts must be positive token counts, got {list(contexts)}")
    counts = count_parameters(arch, checkpoint)
    weights: dict[str, float | None] = {fmt: round(weight_bytes(arch, fmt) / GIB, 2) for fmt in WEIGHT_FORMATS}
    native_bytes = None if arch.native.unsupported else weight_bytes(arch, "native")
    weights["native"] = None if native_bytes is None else round(native_bytes / GIB, 2)
    native_source = arch.native.source
    if checkpoint is not None and checkpoint.total_bytes:
        weights["native"] = round(checkpoint.total_bytes / GIB, 2)
        native_source = f"checkpoint size ({checkpoint.source})"
        if native_bytes is not None:  # the config model against the file: how far the arithmetic is off
            counts = counts.model_copy(update=dict(
                config_native_bytes=int(native_bytes),
                checkpoint_bytes_difference_pct=round((native_bytes - checkpoint.total_bytes)
                                                      / checkpoint.total_bytes * 100, 3)))
    tp = tensor_parallel
    per_token = {dtype: _per_token(kv_bytes_per_token(arch, dtype, tp)) for dtype in ("bf16", "fp8", "q8_0", "q4_0")}
    rows = [
        KVRow(context=c, bf16=round(kv_bytes_per_request(arch, c, "bf16", tp) / GIB, 3),
              fp8=round(kv_bytes_per_request(arch, c, "fp8", tp) / GIB, 3),
              within_max_context=arch.max_context is None or c <= arch.max_context)
        for c in contexts
    ]
    state = state_bytes_per_request(arch, tp)
    layers = {"total": arch.num_layers, **arch.mixer_counts()}
    return SizingReport(
        model=arch.model, model_type=arch.model_type, tensor_parallel=tp,
        architecture_source=arch.architecture_source, notes=list(arch.notes), native_unsupported=arch.native.unsupported,
        parameters=counts.total / 1e9, active_parameters=counts.active / 1e9, parameter_counts=counts,
        active_parameters_model_card=counts.active_model_card / 1e9,
        layers=layers, mlp_layers=arch.mlp_counts(), max_context=arch.max_context,
        native_format=arch.native.weight_format + (f"+{arch.native.expert_format} experts"
                                                   if arch.native.expert_format else ""),
        native_source=native_source, weights_gib=weights, kv_cache_bytes_per_token=per_token,
        kv_cache_gib_per_request=rows, recurrent_state_gib_per_request=round(state / GIB, 4),
        recurrent_state_bytes_per_request=int(state),
    )
