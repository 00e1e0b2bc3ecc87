"""The main job: materialize the whole asset graph once (offline replay unless ``VRAMLAB_LIVE=1``), then print
what happened. With ``DAGSTER_HOME`` set, the run is recorded in that instance (and its pool limits apply);
otherwise an ephemeral instance is used."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipeline.settings import settings


def resolve_data_dir(override: str | None = None) -> Path:
    """``override``, else ``$VRAMLAB_DATA_DIR``, else ``data/`` at the repository root."""
    return Path(override) if override else settings().data_dir


def run_main_job(data_dir: str | None = None) -> int:
    import dagster as dg

    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import default_resources

    if data_dir:
        os.environ["VRAMLAB_DATA_DIR"] = data_dir
    console = Console()
    resources = default_resources()
    settings = resources["vramlab"].settings  # type: ignore[attr-defined]
    console.print(f"vramlab: materializing {len(ALL_ASSETS)} assets "
                  f"({'live sources' if not settings.replay else 'offline replay'}) into {settings.data_dir}")
    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    result = dg.materialize(ALL_ASSETS, instance=instance, resources=resources, raise_on_error=False,
                            run_config=quiet)
    table = Table(title="Sources")
    for col in ("source", "outcome", "offers", "message"):
        table.add_column(col)
    for key, md in sorted(_raw_price_metadata(result).items()):
        table.add_row(key.removeprefix("raw_prices__"), str(md["outcome"].value), str(md["offers"].value),
                      str(md["message"].value)[:60])
    console.print(table)
    failed_checks = [f"{e.asset_key.to_user_string()}:{e.check_name}" for e in result.get_asset_check_evaluations()
                     if not e.passed]
    for check in failed_checks:
        console.print(f"[yellow]check failed[/yellow] {check}")
    console.print(("[green]run succeeded[/green]" if result.success else "[red]run failed[/red]")
                  + f"; DuckDB: {settings.db_path}")
    return 0 if result.success else 1


def _raw_price_metadata(result) -> dict:  # type: ignore[no-untyped-def]
    """Metadata of each raw price asset by key (the price sources are one multi-asset step, so by key, not node)."""
    out = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        key = mat.asset_key.to_user_string()
        if key.startswith("raw_prices__"):
            out[key] = mat.metadata
    return out
