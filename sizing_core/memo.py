"""Per-model memos, registered so that a caller done with a batch of models can drop them all at once.

sizing_core memoises what the planner and the grid ask per GPU kind (weight loads, step bytes, stage weights, ...)
in dicts keyed by the model object's identity, each entry keeping the object itself (an ``id`` is re-used once its
object is freed, so a hit is checked by ``is``). Each dict clears itself past a few thousand entries, but a worker
process that plans a thousand models still holds several hundred MiB of them; :func:`forget_models` lets it
drop them after each batch, since a batch's models are not asked about again."""

from __future__ import annotations

from typing import Any

_MEMOS: list[dict[Any, Any]] = []


def model_memo() -> dict[Any, Any]:
    """A new identity-keyed memo, emptied by :func:`forget_models`."""
    memo: dict[Any, Any] = {}
    _MEMOS.append(memo)
    return memo


def forget_models() -> None:
    """Empty every per-model memo (the values are recomputed when asked again)."""
    for memo in _MEMOS:
        memo.clear()
