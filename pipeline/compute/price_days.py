"""A GPU's price per UTC day, like for like: from the cheapest price each provider asked on each day, the day's
cheapest across providers, its spread, which providers the day has and how that set differs from the previous
observed day. A chart or a comparison that crosses a change of provider set compares different markets (one
provider's $12.29 against sixteen providers' $1.29 is not a price drop), so each day says what changed, and a
comparison of two days is made over the providers both days have.

Pure Python over rows ``{day, provider, price, ...}`` (``day`` an ISO date string): the command line
(``pipeline/exports/price_history.py``, DuckDB over the published parts) and the report
(``pipeline/report/data.py``, Polars over the same parts) both build their days here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def day_summaries(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per day, oldest first: ``cheapest`` with its ``provider`` and ``gpu_id`` (ties: the provider first by
    name), ``highest`` (the dearest provider's cheapest: the spread), ``providers`` (how many), ``providerList``
    (their names, sorted), ``added`` / ``removed`` (against the previous day in the list; empty on the first day)
    and ``changed`` (the set differs from the previous day's)."""
    per_day: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        kept = per_day.setdefault(r["day"], {})
        best = kept.get(r["provider"])
        if best is None or r["price"] < best["price"]:
            kept[r["provider"]] = r
    out: list[dict[str, Any]] = []
    previous: set[str] | None = None
    for day in sorted(per_day):
        cells = sorted(per_day[day].values(), key=lambda r: (r["price"], r["provider"]))
        names = {c["provider"] for c in cells}
        added = sorted(names - previous) if previous is not None else []
        removed = sorted(previous - names) if previous is not None else []
        out.append({"day": day, "cheapest": cells[0]["price"], "provider": cells[0]["provider"],
                    "gpu_id": cells[0].get("gpu_id"), "highest": cells[-1]["price"], "providers": len(cells),
                    "providerList": sorted(names), "added": added, "removed": removed,
                    "changed": bool(added or removed)})
        previous = names
    return out


def like_for_like(rows: Iterable[dict[str, Any]], first: str, last: str) -> dict[str, Any]:
    """The cheapest price on ``first`` and on ``last`` over only the providers both days have: ``{providers,
    first, last}`` (``first`` / ``last``: ``{day, price, provider}``), or ``providers == []`` when the two days
    share no provider (then no like-for-like change exists)."""
    rows = list(rows)
    on = {d: {r["provider"] for r in rows if r["day"] == d} for d in (first, last)}
    common = sorted(on[first] & on[last])
    out: dict[str, Any] = {"providers": common, "first": None, "last": None}
    for key, day in (("first", first), ("last", last)):
        cells = [r for r in rows if r["day"] == day and r["provider"] in common]
        if cells:
            best = min(cells, key=lambda r: (r["price"], r["provider"]))
            out[key] = {"day": day, "price": best["price"], "provider": best["provider"]}
    return out


def joined(days: list[dict[str, Any]], observed: Iterable[str]) -> list[dict[str, Any]]:
    """``days`` (from :func:`day_summaries`) each with ``gap`` (the price history has an observed day between this
    one and the previous day in ``days``: a day the GPU had no price) and ``joined`` (a line may join this day to
    the previous one: no gap and the same provider set). ``observed``: every day the price history holds (any GPU)."""
    order = {d: i for i, d in enumerate(sorted(set(observed) | {d["day"] for d in days}))}
    out = []
    for i, d in enumerate(days):
        gap = i > 0 and order[d["day"]] - order[days[i - 1]["day"]] > 1
        out.append({**d, "gap": gap, "joined": i > 0 and not gap and not d["changed"]})
    return out
