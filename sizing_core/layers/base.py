"""What every layer kind shares: the base record and how heads split over tensor-parallel ranks."""

from __future__ import annotations

import math
from typing import ClassVar

from ..cache_spec import CacheSpec, StateSpec
from ..record import Record, record


def per_rank(heads: int, tp: int) -> int:
    """Heads one rank holds: split while TP <= heads, replicated (1 per rank) beyond that, as vLLM does."""
    return max(1, math.ceil(heads / tp))


@record
class Kind(Record):
    """Base of every mixer and MLP kind; ``kind`` names it (a class constant, as the configs' layer kinds)."""

    kind: ClassVar[str]
    title: ClassVar[str | None] = None  # how the architecture line names it ("Gated DeltaNet"); None: ``kind``
    text_rank: ClassVar[int | None] = None  # place among the caches that grow with context, first in that line
    attends: ClassVar[bool] = False  # an attention mixer over the request's own tokens (keeps K/V or a latent)

    def describe(self, layers: int) -> str:
        """How the architecture line states this kind on ``layers`` layers ("69 Kimi Delta Attention"); kinds with
        shapes worth naming answer for themselves."""
        return f"{layers} {self.title or self.kind}"

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        """What this mixer caches on one GPU of a TP group, as cache specs: by default a fixed state per request
        when it keeps one (recurrent kinds), nothing otherwise; attention kinds answer for their own. ``context``:
        the reference length of a spec that grows by its own rule; ``state_f32``: every state tensor kept in
        float32 whatever the checkpoint dtype (llama.cpp's r/s buffers)."""
        if not self.state_bytes(tp):  # type: ignore[attr-defined]
            return []
        return [StateSpec(state_bytes=self.kept_state_bytes(tp, state_f32))]

    def kept_state_bytes(self, tp: int, f32: bool) -> float:
        """The state bytes per request as the engine keeps them (``f32``: conv/SSM/state tensors in float32)."""
        m = self
        if f32 and hasattr(m, "conv_dtype_bytes"):
            update = {k: 4 for k in ("conv_dtype_bytes", "ssm_dtype_bytes", "state_dtype_bytes") if hasattr(m, k)}
            m = m.model_copy(update=update)
        return m.state_bytes(tp)  # type: ignore[attr-defined]


@record
class CachesNothing(Kind):
    """A kind that keeps nothing per token or per request (a replacement linear layer, an encoder layer run once)."""

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return 0.0

    def state_bytes(self, tp: int) -> float:
        return 0.0
