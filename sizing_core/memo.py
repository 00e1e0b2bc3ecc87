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


#: entries a memo holds before it empties itself
MEMO_LIMIT = 4096


def remembered(memo: dict[Any, Any], key: tuple, arch: Any, make: Any) -> Any:  # noqa: ANN401 - any model, any value
    """``make()`` for ``arch`` under ``key`` (``key[0]`` is ``id(arch)``), computed once: an entry keeps the model
    itself and a hit is checked by ``is``; the memo empties itself past :data:`MEMO_LIMIT` entries."""
    hit = memo.get(key)
    if hit is None or hit[0] is not arch:
        if len(memo) > MEMO_LIMIT:
            memo.clear()
        hit = memo[key] = (arch, make())
    return hit[1]
