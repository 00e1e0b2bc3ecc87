"""How long a context a model takes, and how rope scaling stretches it.

``max_position_embeddings`` is what a config allows as shipped. A ``rope_scaling`` block (``rope_parameters`` in
transformers 5 re-serialisations) says how positions were stretched: YaRN, dynamic NTK or linear interpolation by
``factor`` over ``original_max_position_embeddings`` (Llama 3's ``llama3`` frequency scaling likewise). Such a config
already reaches ``original x factor`` (its ``max_position_embeddings`` usually says so); a config without one can be
served further by turning rope scaling on at load time, as vLLM's ``--hf-overrides``/``--rope-scaling`` and
llama.cpp's ``--rope-scaling yarn --rope-scale F --yarn-orig-ctx N`` do (Qwen3's model card: YaRN x4 over 32,768 to
reach 131,072). :func:`context_limit` states both, with the method.
"""

from __future__ import annotations

from typing import Any

from .errors import SizingError
from .record import Record, record

METHODS = {"yarn": "YaRN", "dynamic": "dynamic NTK", "linear": "linear interpolation", "llama3": "Llama 3 scaling",
           "longrope": "LongRoPE"}


@record
class ContextLimit(Record):
    """The longest context: as configured, and as stretched by rope scaling (the config's own or one asked for)."""

    max_context: int | None  # max_position_embeddings (None: the config does not say)
    rope_type: str | None = None  # yarn, dynamic, linear, llama3, longrope; None: no scaling
    factor: float | None = None
    original: int | None = None  # original_max_position_embeddings the factor applies to
    extended: int | None = None  # the longest context with that scaling (>= max_context)
    source: str | None = None  # "config.json" or "--rope-scaling"
    method: str = ""  # one sentence: how the maximum is reached

    def allows(self, context: int) -> bool:
        limit = self.extended or self.max_context
        return limit is None or context <= limit


def _rope_block(config: dict[str, Any]) -> dict[str, Any] | None:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    for holder in (text, config):
        for key in ("rope_scaling", "rope_parameters"):
            block = holder.get(key)
            if isinstance(block, dict) and (block.get("rope_type") or block.get("type")):
                return block
    return None


def parse_override(text: str) -> tuple[str, float, int | None]:
    """``yarn:4`` or ``yarn:4:32768`` / ``yarn:4:32k`` -> (type, factor, original or None)."""
    parts = text.strip().lower().split(":")
    kind = parts[0]
    if kind not in METHODS or len(parts) not in (2, 3):
        raise SizingError(f"--rope-scaling {text!r}: use TYPE:FACTOR[:ORIGINAL] with TYPE one of "
                          f"{', '.join(METHODS)} (yarn:4, yarn:4:32k)")
    try:
        factor = float(parts[1])
        original = None
        if len(parts) == 3:
            raw = parts[2]
            original = int(float(raw[:-1]) * 1024) if raw.endswith("k") else int(raw)
    except ValueError:
        raise SizingError(f"--rope-scaling {text!r}: FACTOR and ORIGINAL must be numbers (yarn:4:32768)") from None
    if factor <= 1 or (original is not None and original < 1):
        raise SizingError(f"--rope-scaling {text!r}: FACTOR must be above 1 and ORIGINAL positive")
    return kind, factor, original


def context_limit(config: dict[str, Any] | None, max_context: int | None, override: str | None = None) -> ContextLimit:
    """The model's context limit from its config (``rope_scaling`` read) or, with ``override``
    (``--rope-scaling yarn:4[:32768]``), the scaling a user turns on at load time."""
    block = _rope_block(config) if config else None
    source = "config.json"
    if override:
        kind, factor, original = parse_override(override)
        base = original or (int(block["original_max_position_embeddings"]) if block and
                            block.get("original_max_position_embeddings") else max_context)
        source = "--rope-scaling"
    elif block is not None:
        kind = str(block.get("rope_type") or block.get("type")).lower()
        if kind not in METHODS or not block.get("factor"):
            return ContextLimit(max_context=max_context, method=_plain(max_context))
        factor = float(block["factor"])
        base = int(block.get("original_max_position_embeddings") or max_context or 0) or None
    else:
        return ContextLimit(max_context=max_context, method=_plain(max_context))
    reach = int(base * factor) if base else None
    extended = max(x for x in (reach, max_context) if x is not None) if (reach or max_context) else None
    name = METHODS[kind]
    how = f"{name} x{factor:g}" + (f" over {base:,} positions" if base else "")
    if source == "--rope-scaling":
        method = (f"max_position_embeddings {max_context:,}; " if max_context else "") + \
                 f"{how} (--rope-scaling) reaches {extended:,}" if extended else how
    elif reach is not None and max_context is not None and reach < max_context:  # Llama 3: trained further
        method = f"{max_context:,} tokens (max_position_embeddings; rope_scaling in config.json: {how})"
    else:
        method = (f"{extended:,} tokens by {how} (rope_scaling in config.json)" if extended
                  else f"{how} (rope_scaling in config.json)")
    return ContextLimit(max_context=max_context, rope_type=kind, factor=factor, original=base, extended=extended,
                        source=source, method=method)


def _plain(max_context: int | None) -> str:
    if max_context is None:
        return "the config states no maximum context"
    return (f"{max_context:,} tokens (max_position_embeddings, no rope scaling; --rope-scaling yarn:F reaches "
            "further where the model card documents it)")
