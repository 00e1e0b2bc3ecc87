"""What every layer kind shares: the base record and how heads split over tensor-parallel ranks."""

from __future__ import annotations

import math
from typing import ClassVar

from ..record import Record, record


def per_rank(heads: int, tp: int) -> int:
    """Heads one rank holds: split while TP <= heads, replicated (1 per rank) beyond that, as vLLM does."""
    return max(1, math.ceil(heads / tp))


@record
class Kind(Record):
    """Base of every mixer and MLP kind; ``kind`` names it (a class constant, as the configs' layer kinds)."""

    kind: ClassVar[str]
