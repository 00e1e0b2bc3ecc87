"""``vramlab rebuild``: re-create the DuckDB file from the raw landing.

The raw landing (``data/raw``: every payload as fetched, plus ``fetch_log.jsonl``) is the source of truth; the
DuckDB file is derived from it. After a damaged database (or a lost one), ``rebuild`` moves the old file aside
(never deletes it), creates a fresh one by the migrations, and materializes the core and out assets without
fetching anything (every asset of the graph but the raw ones): the fetch log is loaded from ``fetch_log.jsonl``,
every landed payload is parsed again with its original fetch time, offers and their quality are recomputed, the GPU catalog and the models are reloaded, sizing and cheapest
setups are recomputed and a snapshot is published. Same landing, same code: same offers and exports.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from pipeline.data_dir import DataDir
from pipeline.settings import variable


def move_aside(db_path: Path, now: datetime | None = None) -> Path | None:
    """Rename the DuckDB file (and its WAL) to ``<name>.aside-<UTC stamp>``; return the new path."""
    if not db_path.exists():
        return None
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    aside = db_path.with_name(f"{db_path.name}.aside-{stamp}")
    db_path.rename(aside)
    wal = db_path.with_name(db_path.name + ".wal")
    if wal.exists():
        wal.rename(aside.with_name(aside.name + ".wal"))
    return aside


def derived_assets() -> list:
    """Every asset of the graph but the raw ones (which fetch): everything DuckDB and the exports hold, the
    offer-quality stage included (without it no offer is eligible and no cheapest setup is found)."""
    from pipeline.assets.raw import RAW_ASSETS
    from pipeline.definitions import ALL_ASSETS

    return [a for a in ALL_ASSETS if a not in RAW_ASSETS]


def rebuild(data_dir: Path, db_path: Path, *, live: bool = False, instance=None):  # type: ignore[no-untyped-def]
    """Move ``db_path`` aside and re-create it from ``data_dir/raw``. Returns (moved-aside path, Dagster result)."""
    import dagster as dg
    from dagster_duckdb import DuckDBResource

    from pipeline.resources import VramlabSettings

    layout = DataDir(data_dir)
    if not layout.fetch_log.exists():
        raise FileNotFoundError(f"no raw landing under {layout.raw}: nothing to rebuild from")
    aside = move_aside(db_path)
    resources = {"vramlab": VramlabSettings(data_dir=str(data_dir), db_path=str(db_path), live=live),
                 "duckdb": DuckDBResource(database=str(db_path))}
    instance = instance or (dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME")
                            else dg.DagsterInstance.ephemeral())
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    result = dg.materialize(derived_assets(), resources=resources, instance=instance,
                            raise_on_error=False, run_config=quiet)
    return aside, result


def rebuild_main(data_dir: Path | None = None) -> int:
    """The ``vramlab rebuild`` command: exit 0 when every table and the snapshot were re-created."""
    from rich.console import Console

    from pipeline.settings import settings

    console = Console()
    s = settings()
    data_dir = data_dir or s.data_dir
    db_path = s.db_path if variable("VRAMLAB_DB").text() else DataDir(data_dir).database
    console.print(f"vramlab rebuild: re-creating {db_path} from {DataDir(data_dir).raw} (nothing is fetched)")
    if os.environ.get("DAGSTER_HOME"):
        from pipeline.ops.run import ensure_instance_config

        ensure_instance_config(Path(os.environ["DAGSTER_HOME"]), console)
    from pipeline.ops.run import run_lock

    # never under a running `vramlab run` (or another rebuild) on this data directory: it would move the database
    # aside mid-run; waits for it, saying so (the same lock as `vramlab run`)
    with run_lock(data_dir, console):
        try:
            aside, result = rebuild(data_dir, db_path, live=not s.replay)
        except FileNotFoundError as exc:
            console.print(f"[red]vramlab: error: {exc}[/red]")
            return 2
    if aside is not None:
        console.print(f"the previous database was moved aside to {aside} (delete it once you are satisfied)")
    failed = sorted({e.step_key for e in result.all_node_events if e.is_step_failure and e.step_key})
    if failed:
        console.print(f"[red]rebuild incomplete: steps failed: {', '.join(failed)}[/red]")
        return 1
    from pipeline.storage.db import open_database
    from pipeline.storage.tables import row_count

    con = open_database(db_path)
    try:
        counts = {t: row_count(con, t) for t in ("fetch_log", "price_observations", "offers_current", "models",
                                                 "sizing", "cheapest_setups")}
    finally:
        con.close()
    console.print("rebuilt: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return 0
