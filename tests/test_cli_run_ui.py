"""``vramlab run`` talks and records into a persistent Dagster instance, and the UI shows it.

One real ``vramlab run`` (the console script, offline replay) into a temp DAGSTER_HOME, then the real webserver on a
loopback port answers GraphQL as the UI would: the CLI run is the named job with its tags, the assets carry table
metadata, column schemas and the numeric price the Plots tab charts. The CLI and the export agree on setups.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from test_cli_size import CONSOLE_SCRIPT, vramlab
from test_dagster_services import free_port

from pipeline.assets.metadata import column_descriptions

ROOT = Path(__file__).resolve().parent.parent
DUCKDB_ASSETS = ("core__fetch_log", "core__price_observations", "core__offers_current", "core__offer_quality",
                 "core__gpus", "core__models", "out__sizing", "out__cheapest_setups", "out__exports")
#: the assets whose table is published: every column described from the data dictionary (pipeline/exports/tables.py)
DESCRIBED = ("core__price_observations", "core__offers_current", "core__gpus", "core__models", "out__sizing",
             "out__cheapest_setups")

METADATA = """
query ($keys: [AssetKeyInput!]) {
  assetNodes(assetKeys: $keys) {
    assetKey { path }
    description
    assetMaterializations(limit: 1) {
      runId
      metadataEntries {
        label
        __typename
        ... on FloatMetadataEntry { floatValue }
        ... on TableMetadataEntry { table { records schema { columns { name } } } }
        ... on TableSchemaMetadataEntry { schema { columns { name type description } } }
      }
    }
  }
}"""

RUNS = """
{
  runsOrError(filter: {tags: [{key: "vramlab/trigger", value: "cli"}]}) {
    ... on Runs { results { runId jobName status tags { key value } } }
    ... on PythonError { message }
  }
}"""


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("cli_run")
    env = {"DAGSTER_HOME": str(tmp / "home"), "VRAMLAB_DATA_DIR": str(tmp / "data")}
    out = vramlab("run", env=env, timeout=2400)
    # the run this fixture made, by id: later tests of the module may add runs to the same instance, and no test's
    # assertion may depend on the order they run in
    import dagster as dg

    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        run_ids = [r.run_id for r in instance.get_runs()]
    return {"tmp": tmp, "env": env, "out": out, "run_id": run_ids[-1] if len(run_ids) == 1 else None}


def test_run_talks_and_records_into_the_instance(cli_run: dict) -> None:
    out = cli_run["out"]
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    text = out.stdout
    for line in ("snapshot", "models sized", "offers", "quarantined", "cheapest GPU-hour", "failures", "next:"):
        assert line in text, text[-3000:]
    assert "H100 $" in text and "done" in text  # the progress display's last state, then the summary
    home = Path(cli_run["env"]["DAGSTER_HOME"])
    assert (home / "dagster.yaml").read_text() == (ROOT / "dagster.yaml").read_text()  # the pool applies
    snapshot = next(line.split()[-1] for line in text.splitlines() if line.startswith("snapshot"))
    assert Path(snapshot).parent == Path(cli_run["env"]["VRAMLAB_DATA_DIR"]) / "exports"
    index = json.loads((Path(snapshot) / "index.json").read_text())
    sized = sum(1 for m in index["models"] if m.get("status", "ok") == "ok")
    # the summary is a rich table: the label column is as wide as its longest label, so match any run of spaces
    assert re.search(rf"models sized\s+{sized} of {len(index['models'])}\b", text), text[-3000:]
    # a failing check says why (its own result text); in replay, staleness says where the old dates come from
    flat = " ".join(text.split())
    if "source_staleness" in flat:  # in replay a warning naming each old recording's capture date, not a failure
        assert re.search(r"warnings\s+check core__offers_current:source_staleness \(\d+ sources older than 2 h, \d+ "
                         r"older than 24 h: replayed recordings keep their capture dates \(.*lambda 2026-07-30", flat), \
            flat[-3000:]
        assert "failures none" in flat, flat[-3000:]
    # the hints run as printed: the console script by the path the shell finds (not on PATH after tasks.py run)
    hint = next(line for line in text.splitlines() if line.startswith("next:"))
    assert hint.split()[1] in ("vramlab", str(CONSOLE_SCRIPT)) or Path(ROOT / hint.split()[1]).exists(), hint


def test_cli_and_export_agree_on_setups(cli_run: dict) -> None:
    data = Path(cli_run["env"]["VRAMLAB_DATA_DIR"])
    for model in ("qwen3-8b", "llama-3.1-70b"):
        published = json.loads((data / "exports" / "latest" / "models" / f"{model}.json").read_text())["cheapestSetups"]
        out = vramlab("cheapest", model, "--json", "--data-dir", str(data))
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)["setups"][: len(published)]
        keys = ("provider", "instanceType", "region", "format", "engine", "instances", "tensorParallel",
                "pipelineParallel", "pricePerHour", "usdPerMillionTokens", "usdPerMillionTokensBatched")
        assert [{k: r[k] for k in keys} for r in rows] == [{k: p[k] for k in keys} for p in published]
        # $/1M tokens is priced at the decode rate: carried by every setup whose GPU has a decode rate (the catalog
        # has no bandwidth for e.g. RTX A4000/A5000, so neither figure exists there)
        assert all((p["usdPerMillionTokens"] is not None) == (p["decodeTokensPerS"] is not None) for p in published)


def test_a_run_leaves_the_cli_offers_cache_so_the_first_query_needs_no_pyarrow(cli_run: dict) -> None:
    """Start-up: the run writes the CLI's offers cache of the snapshot it publishes, so the first
    ``gpus``/``fit`` after it answers without reading Parquet; the cached answer equals the Parquet one."""
    data = Path(cli_run["env"]["VRAMLAB_DATA_DIR"])
    snapshot = (data / "exports" / "latest").resolve()
    cache = data / "cache" / "cli" / f"offers-{snapshot.name}.json"
    assert cache.is_file()
    probe = ("import contextlib, io, sys\nfrom pipeline.cli.main import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(sys.argv[1:]) == 0\n"
             "print('pyarrow' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = ["gpus", "h100", "--json", "--data-dir", str(data)]
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr[-2000:]
    cached = vramlab(*args)
    cache.unlink()  # the same question answered from the Parquet file
    from_parquet = vramlab(*args)
    assert cached.returncode == 0 and from_parquet.returncode == 0
    assert json.loads(cached.stdout) == json.loads(from_parquet.stdout) and json.loads(cached.stdout)


def test_the_ui_shows_the_cli_run_tables_schemas_and_plots(cli_run: dict) -> None:
    assert cli_run["out"].returncode == 0
    port = free_port()
    env = {**os.environ, **cli_run["env"], "PYTHONPATH": str(ROOT)}
    webserver = Path(sys.executable).parent / "dagster-webserver"
    proc = subprocess.Popen([str(webserver), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/graphql"
    try:
        deadline = time.time() + 300
        nodes = None
        while time.time() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:] if proc.stdout else ""
            try:
                answer = httpx.post(url, json={"query": METADATA, "variables": {
                    "keys": [{"path": [k]} for k in DUCKDB_ASSETS]}}, timeout=30).json()
                nodes = answer.get("data", {}).get("assetNodes")
                if nodes:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        assert nodes, "the webserver never served the asset graph"
        runs = httpx.post(url, json={"query": RUNS}, timeout=30).json()["data"]["runsOrError"]["results"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # the CLI's run: the named job, tagged as a refresh (so the run limit and the schedule's guard see it)
    assert cli_run["run_id"], "the fixture's instance should hold exactly the CLI's one run right after it"
    by_id = {r["runId"]: r for r in runs}  # every CLI-tagged run (a later test of this module may add one)
    mine = by_id[cli_run["run_id"]]
    assert mine["jobName"] == "vramlab_refresh" and mine["status"] == "SUCCESS"
    for run in by_id.values():
        tags = {t["key"]: t["value"] for t in run["tags"]}
        assert run["jobName"] == "vramlab_refresh" and tags["vramlab/refresh"] == "hourly" \
            and tags["vramlab/trigger"] == "cli"
    by_key = {n["assetKey"]["path"][0]: n for n in nodes}
    for key in DUCKDB_ASSETS:  # every DuckDB/Parquet asset: materialized by a CLI run, with its column schema
        mats = by_key[key]["assetMaterializations"]
        assert mats and mats[0]["runId"] in by_id and by_id[mats[0]["runId"]]["status"] == "SUCCESS", key
        entries = {e["label"]: e for e in mats[0]["metadataEntries"]}
        schema = entries.get("dagster/column_schema")
        assert schema and schema["__typename"] == "TableSchemaMetadataEntry" and schema["schema"]["columns"], key
        if key in DESCRIBED:  # a published table's columns carry the data dictionary's meaning
            described = {c["name"]: c["description"] for c in schema["schema"]["columns"]}
            assert all(described.values()), (key, [n for n, d in described.items() if not d])
    offers_schema = {c["name"]: c["description"] for c in {e["label"]: e for e in by_key["core__offers_current"][
        "assetMaterializations"][0]["metadataEntries"]}["dagster/column_schema"]["schema"]["columns"]}
    assert offers_schema["offer_key"] == column_descriptions("offers_current")["offer_key"]
    offers = {e["label"]: e for e in by_key["core__offers_current"]["assetMaterializations"][0]["metadataEntries"]}
    assert offers["cheapest_gpu_hour_before_quality"]["__typename"] == "TableMetadataEntry"
    # the rentable cheapest per GPU (quality verdict applied, what `vramlab gpus` lists) is the quality asset's
    quality = {e["label"]: e for e in by_key["core__offer_quality"]["assetMaterializations"][0]["metadataEntries"]}
    cheapest = quality["cheapest_gpu_hour"]
    assert cheapest["__typename"] == "TableMetadataEntry"
    records = [json.loads(r) for r in cheapest["table"]["records"]]
    h100 = next(r for r in records if r["gpu"] == "h100")
    plot = quality["cheapest_h100_usd_per_gpu_hour"]  # a float: the asset's Plots tab charts it across runs
    assert plot["__typename"] == "FloatMetadataEntry" and plot["floatValue"] == pytest.approx(h100["usd_per_gpu_hour"])
    assert offers["source_outcomes"]["__typename"] == "TableMetadataEntry"
    setups = {e["label"]: e for e in by_key["out__cheapest_setups"]["assetMaterializations"][0]["metadataEntries"]}
    top = [json.loads(r) for r in setups["top_setups"]["table"]["records"]]
    assert setups["top_setups"]["__typename"] == "TableMetadataEntry" and {r["model"] for r in top} >= {"qwen3-8b"}
    description = by_key["out__exports"]["description"]
    assert "//" not in description and "<" not in description and "SNAPSHOT_ID" in description


def test_a_run_whose_reader_went_away_still_finishes(cli_run: dict) -> None:
    """``vramlab run | head -1`` (the reader gone before the first write): the run is not cut short, it publishes
    a new snapshot and exits 0 without a traceback. It adds a second run to the instance; the UI test holds in
    either order (it checks the fixture's run by id)."""
    env, data = cli_run["env"], Path(cli_run["env"]["VRAMLAB_DATA_DIR"])
    before = (data / "exports" / "latest").resolve()
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([str(CONSOLE_SCRIPT), "run"], stdout=write_end,
                              stderr=subprocess.PIPE, cwd=ROOT, timeout=2400, env={**os.environ, **env})
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err, err[-3000:]
    assert proc.returncode == 0, (proc.returncode, err[-3000:])
    after = (data / "exports" / "latest").resolve()
    assert after != before and (after / "manifest.json").is_file()
