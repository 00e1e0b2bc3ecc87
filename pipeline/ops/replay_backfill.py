"""Backfill a price history from the replay series (``pipeline/replay/prices/series.json``).

Each earlier step runs through the same Dagster assets as the hourly job, observation by observation: the raw
assets of the sources the step records (served that step's recordings, stamped with their capture times), then
``core__fetch_log``, ``core__price_observations``, ``core__offers_current`` and ``core__offer_quality`` judged as
of the step's time (the quality verdict each observation gets in the history is the one it had when current). The
last step (the current recordings) is the normal whole-graph run, which also publishes a snapshot.

Idempotent: a step whose fetches are already in the fetch log (same source, same capture time) is skipped, and
the loaders add nothing twice, so running the backfill again changes no table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pipeline.sources.landing import ANSWERED, read_log
from pipeline.sources.replay import CURRENT_STEP, ReplayStep, captured_at, load_series

CORE_PRICE_ASSETS = ("core__fetch_log", "core__price_observations", "core__offers_current", "core__offer_quality")


@dataclass
class StepOutcome:
    step: str
    as_of: datetime
    sources: list[str]
    status: str  # "loaded", "skipped (already loaded)", "failed"


def step_done(step: ReplayStep, data_dir: Path) -> bool:
    """True when every recording of the step was fetched and landed before (by source and capture time)."""
    seen = {(e.source, e.started_at) for e in read_log(data_dir) if e.outcome in ANSWERED}
    return all((e["source"], datetime.fromisoformat(captured_at(e))) in seen for e in step.entries)


def backfill_history(data_dir: Path, db_path: Path, instance=None) -> list[StepOutcome]:  # type: ignore[no-untyped-def]
    """Run every series step before the current one through the raw and core price assets."""
    import dagster as dg
    from dagster_duckdb import DuckDBResource

    from pipeline.assets.raw import asset_name
    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import VramlabSettings

    out = []
    for step in load_series():
        if step.id == CURRENT_STEP:
            continue
        if step_done(step, data_dir):
            out.append(StepOutcome(step.id, step.as_of, step.sources, "skipped (already loaded)"))
            continue
        keys = [dg.AssetKey(asset_name(s)) for s in step.sources] + [dg.AssetKey(k) for k in CORE_PRICE_ASSETS]
        resources = {"vramlab": VramlabSettings(data_dir=str(data_dir), db_path=str(db_path), replay_step=step.id),
                     "duckdb": DuckDBResource(database=str(db_path))}
        result = dg.materialize(ALL_ASSETS, selection=keys, resources=resources, instance=instance,
                                raise_on_error=False, tags={"vramlab/replay_step": step.id},
                                run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
        out.append(StepOutcome(step.id, step.as_of, step.sources, "loaded" if result.success else "failed"))
    return out
