"""Parameter counts from config arithmetic, alongside counts declared by a spec or safetensors metadata."""

from __future__ import annotations

from typing import Any, Literal

from .architecture import Architecture
from .record import CamelRecord, record
from .tensors import Role
from .units import SAFETENSORS_DTYPE_BYTES


@record
class CheckpointFacts(CamelRecord):
    """What a checkpoint's safetensors metadata states: the Hub API's ``safetensors`` block (parameter counts
    per dtype and their total) and/or ``model.safetensors.index.json`` (``metadata.total_size`` in bytes)."""

    parameters_by_dtype: dict[str, int] | None = None
    parameter_total: int | None = None
    total_bytes: int | None = None
    source: str
    #: exact served parameters from the shards' headers (packed values unpacked, scales, MTP and tied copies
    #: left out): comparable with config arithmetic, unlike the Hub's stored-element count
    header_parameters: int | None = None
    #: bytes per stored dtype from the shards' headers (None: headers not read)
    header_bytes_by_dtype: dict[str, int] | None = None


def checkpoint_facts(data: dict[str, Any], source: str) -> CheckpointFacts:
    """Read either metadata shape; ``ValueError`` naming the field when neither is present or usable."""
    by_dtype = total = nbytes = None
    st = data.get("safetensors")
    if isinstance(st, dict):
        params = st.get("parameters")
        if params is not None:
            if not isinstance(params, dict) or not all(isinstance(v, int) and v >= 0 for v in params.values()):
                raise ValueError(f"{source}: field 'safetensors.parameters' must map dtype to a count")
            by_dtype = dict(params)
        total = st.get("total") if isinstance(st.get("total"), int) else (sum(by_dtype.values()) if by_dtype else None)
    meta = data.get("metadata")
    if isinstance(meta, dict) and meta.get("total_size") is not None:
        nbytes = meta["total_size"]
        if not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"{source}: field 'metadata.total_size' must be a positive integer")
    if total is None and nbytes is None:
        raise ValueError(f"{source}: neither 'safetensors.parameters' nor 'metadata.total_size' present")
    return CheckpointFacts(parameters_by_dtype=by_dtype, parameter_total=total, total_bytes=nbytes, source=source)


@record
class ParameterCounts(CamelRecord):
    """``total``/``active`` are what sizing reports; ``used`` says where they came from.

    Tied embeddings are counted once. MTP heads (shipped in the checkpoint, not served by default) and the
    vision tower are reported separately; ``total`` includes the vision tower (it is loaded to serve images)
    and excludes MTP heads.
    """

    total: int
    active: int  # total minus the routed experts a token does not use (the embedding lookup counted as active)
    embedding: int  # input embeddings (and a learned position table) + untied LM head
    non_embedding: int
    vision: int
    mtp: int
    config_total: int
    config_active: int
    declared_total: int | None = None
    declared_active: int | None = None
    used: Literal["config", "spec", "safetensors"] = "config"
    declared_source: str | None = None
    safetensors_total: int | None = None  # as stored: includes MTP heads, duplicated tied heads, packed FP4
    checkpoint_bytes: int | None = None
    checkpoint_parameters: int | None = None  # served parameters read from the shards' safetensors headers
    difference_pct: float | None = None  # (config - checkpoint) / checkpoint, in percent
    used_reason: str | None = None  # why ``total`` is what it is when config and checkpoint disagree
    audio: int = 0  # Whisper-style audio encoder and its projector (included in total, like the vision tower)
    #: active parameters as model cards count them: the embedding lookup (token and position tables) is not
    #: compute, so it is left out; an LM head is counted (tied: the shared matrix counts once, as the head)
    active_model_card: int = 0
    #: the text decoder's active parameters as model cards of multimodal models quote them: ``active_model_card``
    #: without the vision and audio towers (``active`` is the full forward's, towers and lookup included)
    active_text: int = 0
    #: how checkpoint_parameters was found: "safetensors headers" or the Hub's counts of an unquantized
    #: checkpoint (both exact), or "index total_size / <n> bytes" (an unquantized single-dtype checkpoint's bytes
    #: divided by the dtype width: an estimate, not used for total)
    checkpoint_parameters_source: str | None = None
    config_native_bytes: int | None = None  # the native weights by config arithmetic, to compare with the file
    checkpoint_bytes_difference_pct: float | None = None  # (config_native_bytes - checkpoint_bytes) / checkpoint_bytes
    #: ``total`` is counted from the checkpoint's own tensor shapes (its shards' headers, or the Hub's per-dtype
    #: counts of an unquantized checkpoint); False: config arithmetic or a spec, an estimate
    exact: bool = False
    #: bytes the checkpoint stores per dtype (headers; or the Hub's per-dtype counts x the dtype's width)
    checkpoint_bytes_by_dtype: dict[str, int] | None = None

#: Config arithmetic further than this from the checkpoint's count is named as missing tensors in the reason.
AGREEMENT_PCT = 1.0
#: the float dtypes of an unquantized checkpoint: each stored element is one parameter (packed integer dtypes
#: such as U8 hold several values per element and are not counted this way); widths are SAFETENSORS_DTYPE_BYTES
_FLOAT_DTYPES = frozenset({"BF16", "F16", "F32", "F64"})


def _unquantized(by_dtype: dict[str, int] | None) -> bool:
    return bool(by_dtype) and all(d.upper() in _FLOAT_DTYPES for d in by_dtype)


def _exact_count(checkpoint: CheckpointFacts, mtp: int) -> tuple[int, str] | None:
    """(served parameters, where from) counted from the checkpoint's tensor shapes: its shards' headers, else the
    Hub's per-dtype counts when every stored dtype is a float one (an unquantized checkpoint: each element is a
    parameter; the multi-token-prediction heads it ships are not served). None: no exact count."""
    if checkpoint.header_parameters:
        return checkpoint.header_parameters, "safetensors headers"
    by_dtype = checkpoint.parameters_by_dtype
    if _unquantized(by_dtype) and sum(by_dtype.values()) > mtp:
        return sum(by_dtype.values()) - mtp, "Hub safetensors counts (unquantized: stored elements less MTP heads)"
    return None


def _bytes_by_dtype(checkpoint: CheckpointFacts) -> dict[str, int] | None:
    if checkpoint.header_bytes_by_dtype:
        return dict(checkpoint.header_bytes_by_dtype)
    by_dtype = checkpoint.parameters_by_dtype
    if _unquantized(by_dtype):
        return {d: int(n * SAFETENSORS_DTYPE_BYTES[d.upper()]) for d, n in sorted(by_dtype.items())}
    return None


def count_parameters(arch: Architecture, checkpoint: CheckpointFacts | None = None) -> ParameterCounts:
    """Config arithmetic always; a spec's declared counts replace it for ``total``/``active``; else the
    checkpoint's exact count (its tensor shapes, :func:`_exact_count`) replaces it, the arithmetic then kept
    beside as an estimate with its difference. The Hub's stored-element count of a quantized checkpoint is
    reported beside, never used (packed values, scales)."""
    total = sum(t.numel for t in arch.tensors)
    inactive = sum(layer.inactive_params(arch.hidden_size) for layer in arch.layers)
    embedding = sum(t.numel for t in arch.tensors if t.role in (Role.TOKEN_EMBD, Role.OUTPUT, Role.POSITION))
    vision = sum(t.numel for t in arch.tensors if t.role == Role.VISION)
    audio = sum(t.numel for t in arch.tensors if t.role == Role.AUDIO)
    lookup = sum(t.numel for t in arch.tensors if t.role in (Role.TOKEN_EMBD, Role.POSITION)) \
        if not arch.tie_word_embeddings else sum(t.numel for t in arch.tensors if t.role == Role.POSITION)
    mtp = sum(t.numel for t in arch.mtp_tensors)
    counts = ParameterCounts(total=total, active=total - inactive, embedding=embedding,
                             non_embedding=total - embedding, vision=vision, mtp=mtp, config_total=total,
                             config_active=total - inactive, audio=audio, active_model_card=total - inactive - lookup)
    if arch.declared is not None:
        d = arch.declared
        used = "safetensors" if d.source.startswith("safetensors") else "spec"
        active = d.active or counts.active
        counts = counts.model_copy(update=dict(
            total=d.total, active=active, non_embedding=d.total - embedding, declared_total=d.total,
            declared_active=d.active, used=used, declared_source=d.source,
            active_model_card=max(1, active - (counts.active - counts.active_model_card))))
    if checkpoint is not None:
        counts = counts.model_copy(update=dict(safetensors_total=checkpoint.parameter_total,
                                               checkpoint_bytes=checkpoint.total_bytes,
                                               checkpoint_bytes_by_dtype=_bytes_by_dtype(checkpoint)))
        found = _exact_count(checkpoint, mtp)
        if found:
            exact, where = found
            diff = (total - exact) / exact * 100
            update: dict[str, Any] = dict(checkpoint_parameters=exact, difference_pct=round(diff, 3),
                                          checkpoint_parameters_source=where)
            if arch.declared is None:
                missing = (f"; more than {AGREEMENT_PCT}% apart: tensors the {arch.architecture_source} rule does "
                           "not model" if abs(diff) > AGREEMENT_PCT else "")
                update |= dict(total=exact, active=max(1, counts.active - (total - exact)),
                               active_model_card=max(1, counts.active_model_card - (total - exact)),
                               non_embedding=exact - embedding, used="safetensors", exact=True,
                               declared_source=checkpoint.source,
                               used_reason=f"counted from the checkpoint's {where}: {exact:,}; config arithmetic "
                                           f"({total:,}) is an estimate, {diff:+.3f}% off{missing}")
            else:
                update |= dict(used_reason=f"the {counts.used} count is used; the checkpoint's {where} count "
                                           f"{exact:,} ({diff:+.3f}% from config arithmetic)")
            counts = counts.model_copy(update=update)
        elif checkpoint.total_bytes and arch.native.weight_format in _WIDTH and not arch.native.unsupported:
            width = _WIDTH[arch.native.weight_format]
            from_bytes = checkpoint.total_bytes // width
            diff = (total - from_bytes) / from_bytes * 100
            counts = counts.model_copy(update=dict(
                checkpoint_parameters=from_bytes, difference_pct=round(diff, 3),
                checkpoint_parameters_source=f"index total_size / {width} bytes",
                used_reason=f"config arithmetic vs the checkpoint's total_size / {width} bytes: {diff:+.3f}% "
                            "(an estimate of the stored count: a checkpoint may keep some tensors in another dtype)"))
    return counts.model_copy(update=dict(active_text=max(1, counts.active_model_card - vision - audio)))


#: Bytes per parameter of an unquantized checkpoint, to turn an index's total_size into a parameter count.
_WIDTH = {"bf16": 2, "fp16": 2, "fp32": 4}
