"""Published snapshots as consumers see them, atomic publishing, and the export CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from helpers import FIXTURES
from test_cli_size import vramlab

from pipeline.compute.tracked import tracked_models
from pipeline.exports.build import publish
from pipeline.exports.publish import check_snapshot, latest

CONSUMER = r'''
import hashlib, json, sys
from pathlib import Path
import duckdb, jsonschema, polars as pl

latest, seed_path = Path(sys.argv[1]), Path(sys.argv[2])
seed = json.loads(seed_path.read_text())
kimi = json.loads((latest / "models" / "kimi-k3.1-pro.json").read_text())

def kind(v):
    return "number" if isinstance(v, (int, float)) and not isinstance(v, bool) else type(v).__name__

problems = []
for key, value in seed.items():
    if key not in kimi:
        problems.append(f"missing key {key}")
    elif value is not None and kimi[key] is not None and kind(value) != kind(kimi[key]):
        problems.append(f"{key}: {kind(kimi[key])} instead of {kind(value)}")
for sub in ("weightsGiB", "lab"):
    problems += [f"{sub}.{k} missing" for k in seed[sub] if k not in kimi[sub]]
row_keys = set(seed["kvCacheGiBPerRequest"][0])
problems += [f"kv row keys {set(r)}" for r in kimi["kvCacheGiBPerRequest"] if set(r) != row_keys]
gpu_keys = set(seed["gpusNeeded"]["gpus"][0])
problems += [f"gpusNeeded row keys" for g in kimi["gpusNeeded"]["gpus"] if not gpu_keys <= set(g)]
schema = json.loads((latest / "schemas" / "model.schema.json").read_text())
models = sorted((latest / "models").glob("*.json"))
for path in models:
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(json.loads(path.read_text())))
    problems += [f"{path.name}: {e.message}" for e in errors[:2]]
manifest = json.loads((latest / "manifest.json").read_text())
for rel, digest in manifest["files"].items():
    if hashlib.sha256((latest / rel).read_bytes()).hexdigest() != digest:
        problems.append(f"hash mismatch {rel}")
con = duckdb.connect()
offers = con.execute(f"SELECT count(*), min(snapshot_id), max(snapshot_id) FROM '{latest}/offers_current.parquet'").fetchall()[0]
obs = con.execute(f"SELECT count(*) FROM read_parquet('{latest}/price_observations/*/*.parquet', hive_partitioning=true)").fetchall()[0][0]
sizing = pl.read_parquet(latest / "sizing.parquet")
setups = pl.read_parquet(latest / "cheapest_setups.parquet")
print(json.dumps({"problems": problems, "models": len(models), "offers": offers[0],
                  "snapshot_ids": [offers[1], offers[2]], "manifest_id": manifest["snapshot_id"],
                  "observations": obs, "sizing_rows": sizing.height, "sizing_ids": sizing["snapshot_id"].unique().to_list(),
                  "setups_lists": sorted(setups["list"].unique().to_list()), "row_counts": manifest["row_counts"]}))
'''


def test_consumer_reads_latest_with_duckdb_and_polars_only(published: dict) -> None:
    latest_dir = published["tmp"] / "exports" / "latest"
    out = subprocess.run([sys.executable, "-c", CONSUMER, str(latest_dir),
                          str(FIXTURES / "seeds" / "004_kimi-k3.1-pro.json")],
                         capture_output=True, text=True, timeout=120, cwd="/")  # cwd=/: no project on the path
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout)
    assert data["problems"] == []
    assert data["models"] == 43
    assert data["snapshot_ids"] == [data["manifest_id"]] * 2 and data["sizing_ids"] == [data["manifest_id"]]
    assert data["offers"] == data["row_counts"]["offers_current"] and data["observations"] > 3000
    assert data["setups_lists"] == ["on_demand", "spot"]


def test_kimi_export_matches_seed_values(published: dict) -> None:
    kimi = json.loads((published["tmp"] / "exports" / "latest" / "models" / "kimi-k3.1-pro.json").read_text())
    seed = json.loads((FIXTURES / "seeds" / "004_kimi-k3.1-pro.json").read_text())
    assert kimi["kvCacheGiBPerRequest"] == seed["kvCacheGiBPerRequest"]
    assert kimi["architecture"] == seed["architecture"] and kimi["parameters"] == seed["parameters"]
    assert [g["gpu"] for g in kimi["gpusNeeded"]["gpus"]] == [g["gpu"] for g in seed["gpusNeeded"]["gpus"]]
    b200 = next(g for g in kimi["gpusNeeded"]["gpus"] if g["gpu"] == "b200")
    assert b200["byFormat"]["bf16"] == 40 and b200["plans"]["bf16"]["pipelineParallel"] == 5
    assert kimi["verified"] == "2026-11-28"  # the replayed snapshot's observation date, not today
    assert kimi["cheapestSetups"] and all(s["allocation"] == "on_demand" for s in kimi["cheapestSetups"])
    assert all(s["allocation"] != "on_demand" for s in kimi["spotSetups"])


def test_export_check_cli(published: dict) -> None:
    out = vramlab("export", "--check", "--data-dir", str(published["tmp"]))
    assert out.returncode == 0 and "OK" in out.stdout


def test_tampered_snapshot_fails_the_check(published: dict, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "snap"
    shutil.copytree(published["tmp"] / "exports" / "latest", copy)
    (copy / "index.json").write_text("{}")
    (copy / "extra.txt").write_text("x")
    problems = check_snapshot(copy)
    assert "index.json: sha256 differs from the manifest" in problems and "extra.txt: not listed in the manifest" in problems
    out = vramlab("export", "--check", "--snapshot", str(copy))
    assert out.returncode == 1


def test_crash_between_files_keeps_latest(published: dict) -> None:
    exports = published["tmp"] / "exports"
    before = latest(exports)
    snapshots = {p.name for p in exports.iterdir()}

    def crash(name: str) -> None:
        if name == "index.json":
            raise RuntimeError("simulated crash between files")

    con = duckdb.connect(str(published["db"]))
    from datetime import UTC, datetime

    try:
        with pytest.raises(RuntimeError, match="simulated crash"):
            publish(con, exports, tracked_models(published["tmp"])[:3], {}, as_of=datetime.now(UTC), mode="replay",
                    now=datetime.now(UTC), provenance={}, between_files=crash)
    finally:
        con.close()
    assert latest(exports) == before and check_snapshot(before) == []
    assert {p.name for p in exports.iterdir()} == snapshots  # no half snapshot, no temp folder left


def test_old_snapshots_pruned_after_latest_moves(tmp_path: Path) -> None:
    from pipeline.exports.publish import prune, switch_latest

    for name in ("20260101T000000Z", "20260102T000000Z", "20260103T000000Z"):
        (tmp_path / name).mkdir()
    switch_latest(tmp_path, "20260101T000000Z")  # latest points at the oldest
    removed = prune(tmp_path, keep=1)
    assert removed == ["20260102T000000Z"] and (tmp_path / "20260101T000000Z").exists()
    assert latest(tmp_path).name == "20260101T000000Z"


def test_cheapest_cli_reads_the_snapshot(published: dict) -> None:
    out = vramlab("cheapest", "kimi-k3.1-pro", "--top", "3", "--json", "--data-dir", str(published["tmp"]))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(data["setups"]) == 3 and data["context"] == 8192
    # cheapest first, llama.cpp RPC chains over rented machines' public network after every other setup (Kimi
    # K3.1's cheapest by price alone is such a chain)
    ranked = [(s["deployment"] == "llama.cpp-rpc", round(s["price_per_hour"] * (1.25 if s["nodes"] > 1 else 1), 6))
              for s in data["setups"]]  # the rank price: several machines at 1.25x
    assert ranked == sorted(ranked) and data["setups"][0]["deployment"] != "llama.cpp-rpc"
    chained = json.loads(vramlab("cheapest", "kimi-k3.1-pro", "--top", "3", "--json", "--allow-rpc", "--data-dir",
                                 str(published["tmp"])).stdout)["setups"]
    rank = [round(s["price_per_hour"] * (1.25 if s["nodes"] > 1 else 1), 6) for s in chained]
    assert rank == sorted(rank) and chained[0]["deployment"] == "llama.cpp-rpc"
    table = vramlab("cheapest", "kimi-k3.1-pro", "--format", "native", "--data-dir", str(published["tmp"]))
    assert table.returncode == 0 and "provider" in table.stdout and "native" in table.stdout
    missing = vramlab("cheapest", "no-such-model", "--data-dir", str(published["tmp"]))
    # any model is priced now: an id that is neither tracked, registered, a path nor a Hub repo is unknown
    assert missing.returncode == 2 and "unknown model 'no-such-model'" in missing.stderr


def test_checkpoint_bytes_published_for_every_recorded_index(published: dict) -> None:
    """parameterCounts.checkpointBytes was null in 43 of 43 published models: the export passed only
    safetensors-header facts, and the replay recorded neither headers nor an index for any tracked model. Now the
    index's total_size (recorded for every tracked model with a sourced one) is published with the parameters it
    implies and the config model's difference; models without an index keep nulls."""
    from pipeline.sources.replay import REPLAY_ROOT

    recorded = {p.name.removesuffix(".model.safetensors.index.json").replace("__", "/", 1):
                json.loads(p.read_text())["metadata"]["total_size"]
                for p in (REPLAY_ROOT / "hub" / "index").glob("*.json")}
    assert len(recorded) >= 10
    models = [json.loads(p.read_text()) for p in (published["tmp"] / "exports" / "latest" / "models").glob("*.json")]
    seen = 0
    for m in models:
        counts = m["parameterCounts"]
        if m["repo"] in recorded:
            seen += 1
            total = recorded[m["repo"]]
            assert counts["checkpointBytes"] == total and counts["checkpointParameters"] == total // 2, m["id"]
            assert counts["checkpointBytesDifferencePct"] == 0.0 and counts["differencePct"] == 0.0, m["id"]
            assert m["weightsGiB"]["native"] == round(total / 2**30, 2)
        else:
            assert counts["checkpointBytes"] is None
        assert m["activeParametersModelCard"] <= m["activeParameters"]
    assert seen == len(recorded)
