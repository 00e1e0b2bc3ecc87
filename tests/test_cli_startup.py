"""The quick commands stay light. ``size``, ``fit`` and ``gpus`` never import Dagster, and size/fit of a
tracked model, a spec or a config.json import no pydantic either (sizing_core's types are plain dataclasses);
JSON answers import no rich; ``gpus`` imports none of them. Timing itself is
not tested (it depends on the machine): ``benchmarks/startup.py`` measures it.

Each case runs the CLI's ``main`` in a fresh interpreter (as the console script does) and reports which heavy
packages ended up imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_newcomer import OFFERS, write_snapshot

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import contextlib, io, json, sys
from pipeline.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
heavy = ("dagster", "duckdb", "polars", "rich", "pydantic", "httpx")
print(json.dumps({"code": code, "imported": [m for m in heavy if m in sys.modules]}))
"""


def imported(*args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    return result["imported"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snapshot")
    write_snapshot(path, OFFERS)
    return path


def test_gpus_imports_no_dagster_duckdb_rich_or_pydantic(data_dir: Path) -> None:
    assert imported("gpus", "h100", "--json", "--data-dir", str(data_dir)) == []
    assert imported("gpus", "--data-dir", str(data_dir)) == ["rich"]  # the table


CONFIG = ROOT / "pipeline" / "replay" / "hub" / "configs" / "Qwen__Qwen3-8B.json"


@pytest.mark.parametrize("model", ["qwen3-8b", str(CONFIG)], ids=["tracked id", "config path"])
def test_size_imports_no_pydantic_or_dagster(data_dir: Path, model: str) -> None:
    assert imported("size", model, "--json", "--data-dir", str(data_dir)) == []
    assert imported("size", model, "--data-dir", str(data_dir)) == ["rich"]  # the tables


@pytest.mark.parametrize("model", ["qwen3-8b", str(CONFIG)], ids=["tracked id", "config path"])
def test_fit_imports_no_pydantic_dagster_or_duckdb(data_dir: Path, model: str) -> None:
    """One format and every format; the snapshot's offers are read (``data_dir`` holds one), so the cost path is in."""
    assert imported("fit", model, "--gpu", "h100", "--format", "fp8", "--json", "--data-dir", str(data_dir)) == []
    assert imported("fit", model, "--gpu", "h100", "--json", "--data-dir", str(data_dir)) == []
    assert imported("fit", model, "--gpu", "h100", "--data-dir", str(data_dir)) == ["rich"]


def test_a_spec_file_imports_no_pydantic_either(data_dir: Path) -> None:
    """A bundled spec (checked key by key by sizing_core's records, tests/test_records.py)."""
    assert imported("size", "kimi-k3.1-pro", "--json", "--data-dir", str(data_dir)) == []
    assert imported("fit", "kimi-k3.1-pro", "--gpu", "h100", "--format", "fp8", "--json", "--data-dir",
                    str(data_dir)) == []


def test_gpu_names_read_from_the_csv_match_the_validated_catalog() -> None:
    from pipeline.cli.resolve import gpu_names
    from sizing_core.gpus import catalog

    gpus = catalog()
    assert [(g.id, g.aliases, g.name) for g in gpus.values()] == list(gpu_names())


def test_offers_cache_gives_the_same_answers_and_a_bad_cache_is_ignored(tmp_path: Path) -> None:
    from test_cli_size import vramlab

    snap = write_snapshot(tmp_path, OFFERS)

    def gpus(*args: str) -> list[dict]:
        out = vramlab("gpus", *args, "--json", "--data-dir", str(tmp_path))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    cache = tmp_path / "cache" / "cli" / f"offers-{snap.name}.json"
    assert not cache.exists()
    first = gpus("h100")  # reads the Parquet file, keeps the offers
    assert cache.is_file()
    # the cheapest on-demand H100 rows of OFFERS, by $/GPU-hour: beta 1 x $2.10, then alpha 8 x $20.00 = $2.50;
    # gamma's spot and stale offers are not on-demand rentable offers
    assert [(r["provider"], r["price_per_gpu_hour_usd"]) for r in first] == [("beta", 2.10), ("alpha", 2.50)]
    assert gpus("h100") == first  # from the cache
    assert gpus("--all") == gpus("--all")
    cache.write_text("{not json")  # damaged: ignored, and rewritten
    assert gpus("h100") == first
    assert json.loads(cache.read_text())["stamp"]["snapshot"] == snap.name
    stale = json.loads(cache.read_text())
    stale["columns"]["price_per_gpu_hour_usd"] = [0.01 for _ in stale["columns"]["price_per_gpu_hour_usd"]]
    stale["stamp"]["size"] += 1  # a cache of another version of the file is never used
    cache.write_text(json.dumps(stale))
    assert gpus("h100") == first
