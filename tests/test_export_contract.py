"""The export contract as a downstream consumer relies on it.

``CONSUMER`` runs in a fresh interpreter with only duckdb, polars and jsonschema (cwd=/, nothing of this project
importable) against a published snapshot: every file validates against the snapshot's own schemas; mutated files
fail; the published dictionary covers every Parquet column and JSON key; history partitions are UTC days without
duplicates; sizing's est_gpus equals the model files' gpusNeeded for every cell they show. The integer check is
strict (a JSON ``24.0`` is not an integer), as Go's or serde's decoders are; JSON Schema itself would accept 24.0.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from pipeline.compute.tracked import tracked_models
from pipeline.exports import dictionary
from pipeline.exports.build import publish
from pipeline.exports.history import HISTORY_DIR
from pipeline.exports.publish import check_snapshot
from pipeline.exports.tables import TABLES, columns
from pipeline.storage.db import table_columns

CONSUMER = r'''
import copy, json, sys
from pathlib import Path
import duckdb, jsonschema, polars as pl

snap = Path(sys.argv[1])
history_only = sys.argv[2:] == ["--history-only"]
report = {"invalid": {}, "mutations_accepted": [], "mutations_tried": 0, "columns": {}, "undescribed_keys": [],
          "binary_columns": [], "kv_metadata_mismatch": [], "history": {}, "cells": {}}

def strict(schema):
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _c, v: isinstance(v, int) and not isinstance(v, bool))
    return jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)(schema)

def load(rel):
    return json.loads((snap / rel).read_text())

validators = {name: strict(load(f"schemas/{name}.schema.json")) for name in ("model", "index", "manifest")}
def errors(kind, doc):
    return [f"{list(e.absolute_path)}: {e.message}" for e in validators[kind].iter_errors(doc)]

files = [("model", p.relative_to(snap).as_posix()) for p in sorted((snap / "models").glob("*.json"))]
files += [("index", "index.json"), ("manifest", "manifest.json")]
for kind, rel in files:
    errs = errors(kind, load(rel))
    if errs:
        report["invalid"][rel] = errs[:3]

def mutations():
    kimi = load("models/kimi-k3.1-pro.json")
    report["kimi_types"] = {"activeParameters": type(kimi["activeParameters"]).__name__,
                            "kv_1m_bf16": type(kimi["kvCacheGiBPerRequest"][-1]["bf16"]).__name__}
    def mutate(kind, doc, name, change):
        doc = copy.deepcopy(doc)
        change(doc)
        report["mutations_tried"] += 1
        if not errors(kind, doc):
            report["mutations_accepted"].append(name)
    gpu0 = lambda d: d["gpusNeeded"]["gpus"][0]
    for name, change in [
        ("weightsGiB.native removed", lambda d: d["weightsGiB"].pop("native")),
        ("weightsGiB.q4_k_m removed", lambda d: d["weightsGiB"].pop("q4_k_m")),
        ("byFormat key removed", lambda d: gpu0(d)["byFormat"].pop("bf16")),
        ("one GPU row", lambda d: d["gpusNeeded"].update(gpus=d["gpusNeeded"]["gpus"][:1])),
        ("empty KV list", lambda d: d.update(kvCacheGiBPerRequest=[])),
        ("KV row key removed", lambda d: d["kvCacheGiBPerRequest"][0].pop("fp8")),
        ("junk setup object", lambda d: d["cheapestSetups"].append({"junk": 1})),
        ("setup key removed", lambda d: d["cheapestSetups"][0].pop("pricePerHour")),
        ("spot setup price as string", lambda d: d["spotSetups"][0].update(pricePerHour="5.9")),
        ("top-level key removed", lambda d: d.pop("runsWith")),
        ("nullable key removed", lambda d: d.pop("released")),
        ("wrong type: activeParameters string", lambda d: d.update(activeParameters="106")),
        ("wrong type: runsWith string", lambda d: d.update(runsWith="SGLang")),
        ("float for an integer: memoryGB", lambda d: gpu0(d).update(memoryGB=24.0)),
        ("float for an integer: KV context", lambda d: d["kvCacheGiBPerRequest"][0].update(context=8192.0)),
        ("float for an integer: byFormat", lambda d: gpu0(d)["byFormat"].update(q4_k_m=96.0)),
        ("float for an integer: setup gpus", lambda d: d["cheapestSetups"][0].update(gpus=36.0)),
        ("unknown key", lambda d: d.update(surprise=True)),
    ]:
        mutate("model", kimi, name, change)
    index = load("index.json")
    mutate("index", index, "index entry status removed", lambda d: d["models"][0].pop("status"))
    mutate("index", index, "index status unknown", lambda d: d["models"][0].update(status="maybe"))
    manifest = load("manifest.json")
    mutate("manifest", manifest, "manifest history rows float", lambda d: d["history"][0].update(rows=1.0))
    mutate("manifest", manifest, "manifest files removed", lambda d: d.pop("files"))

if not history_only:
    mutations()
manifest = load("manifest.json")

# the dictionary against the files
dic = load("schemas/dictionary.json")
con = duckdb.connect()
con.execute("SET TimeZone = 'America/Los_Angeles'")  # a consumer in another zone sees the same UTC days
norm = {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE"}
for file, spec in dic["parquet"].items():
    target = snap / file
    source = (f"read_parquet('{target}/*/*.parquet', hive_partitioning = true)" if target.is_dir()
              else f"read_parquet('{target}')")
    actual = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    described = [(c["name"], norm.get(c["sql_type"], c["sql_type"])) for c in spec["columns"]]
    undescribed = sorted(set(actual) - set(described))
    missing = sorted(set(described) - set(actual))
    empty = [c["name"] for c in spec["columns"] if not c["meaning"]]
    report["columns"][file] = {"undescribed": undescribed, "missing": missing, "no_meaning": empty,
                               "count": len(actual)}
    paths = sorted(target.glob("*/*.parquet")) if target.is_dir() else [target]
    for path in paths:
        kv = dict(con.execute(f"SELECT decode(key), decode(value) FROM parquet_kv_metadata('{path}')").fetchall())
        in_file = [c["name"] for c in json.loads(kv["vramlab:columns"]) if c["name"] != spec["partition_key"]]
        inside = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}', hive_partitioning = false)").fetchall()
        if in_file != [r[0] for r in inside]:
            report["kv_metadata_mismatch"].append(str(path.relative_to(snap)))
        frame = pl.read_parquet(path)
        report["binary_columns"] += [f"{file}:{n}" for n, t in frame.schema.items() if t == pl.Binary]

def walk(value, path, entries, parent_open, out):
    if isinstance(value, dict):
        for key, sub in value.items():
            exact, star = (f"{path}.{key}" if path else key), (f"{path}.*" if path else "*")
            name = exact if exact in entries else star if star in entries else None
            if name is None:
                if not parent_open:
                    out.add(exact)
                continue
            if not entries[name]["meaning"]:
                out.add(name + " (no meaning)")
            if not entries[name]["open"]:  # open entries (provenance, derived values) hold undescribed data
                walk(sub, name, entries, False, out)
    elif isinstance(value, list):
        if value and f"{path}[]" not in entries:
            out.add(f"{path}[]")
        for item in value:
            walk(item, f"{path}[]", entries, parent_open, out)

undescribed = set()
for kind, rel in files:
    spec = dic["json"]["models/<id>.json" if kind == "model" else f"{kind}.json"]
    entries = {e["path"]: e for e in spec["keys"]}
    walk(load(rel), "", entries, False, undescribed)
report["undescribed_keys"] = sorted(undescribed)

# history: UTC day partitions, listed with hashes, no observation twice
listed = {h["path"].split("/", 2)[2]: h for h in manifest["history"]}
parts = sorted((snap / "price_observations").glob("date=*/*.parquet"))
wrong_day = 0
for part in parts:
    day = part.parent.name.removeprefix("date=")
    wrong_day += con.execute(f"SELECT count(*) FROM read_parquet('{part}') "
                             f"WHERE (observed_at AT TIME ZONE 'UTC')::DATE <> DATE '{day}'").fetchall()[0][0]
rows, distinct = con.execute(
    f"SELECT count(*), count(DISTINCT (offer_key, observed_at)) FROM read_parquet('{snap}/price_observations/*/*.parquet')"
).fetchall()[0]
report["history"] = {"parts": len(parts), "listed": sorted(listed) == sorted(p.relative_to(snap / "price_observations").as_posix() for p in parts),
                     "wrong_day_rows": wrong_day, "rows": rows, "distinct": distinct,
                     "manifest_rows": sum(h["rows"] for h in manifest["history"])}

# one GPU count per cell
shown = {(r[0], r[1], r[2]): (r[3], r[4], r[5], r[6]) for r in con.execute(
    f"SELECT model_id, gpu_id, json_column, est_gpus, est_gpus_reason, gpus_rule, closed_form_gpus "
    f"FROM read_parquet('{snap}/sizing.parquet') WHERE json_column IS NOT NULL AND context = 8192").fetchall()}
cells = differ = no_row = unexplained = closed_form_off = 0
for kind, rel in files:
    if kind != "model" or history_only:
        continue
    model = load(rel)
    for g in model["gpusNeeded"]["gpus"]:
        for column, value in g["byFormat"].items():
            cells += 1
            row = shown.get((model["id"], g["gpu"], column))
            if row is None:
                no_row += 1
                continue
            est, reason, rule, closed = row
            if est != value and not reason:
                differ += 1
            if est is None and not reason:
                unexplained += 1
            closed_form_off += closed != est
null_without_reason = con.execute(f"SELECT count(*) FROM read_parquet('{snap}/sizing.parquet') "
                                  "WHERE est_gpus IS NULL AND est_gpus_reason IS NULL").fetchall()[0][0]
report["cells"] = {"cells": cells, "differ": differ, "no_row": no_row, "unexplained_null": unexplained,
                   "closed_form_differs": closed_form_off, "null_without_reason": null_without_reason,
                   "rules": sorted({r[2] for r in shown.values()})}
print(json.dumps(report))
'''


def run_consumer(snapshot: Path, *extra: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CONSUMER, str(snapshot), *extra], capture_output=True, text=True,
                         timeout=300, cwd="/")
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def consumer(published: dict) -> dict:
    return run_consumer(published["tmp"] / "exports" / "latest")


def test_every_file_validates_strictly(consumer: dict) -> None:
    assert consumer["invalid"] == {}
    # seed 004 writes 106 and 27: JavaScript numbers, integers where whole
    assert consumer["kimi_types"] == {"activeParameters": "int", "kv_1m_bf16": "int"}


def test_mutated_files_fail_validation(consumer: dict) -> None:
    assert consumer["mutations_tried"] == 22
    assert consumer["mutations_accepted"] == []


def test_dictionary_covers_every_column_and_key(consumer: dict) -> None:
    for file, cols in consumer["columns"].items():
        assert cols["undescribed"] == [] and cols["missing"] == [] and cols["no_meaning"] == [], file
        assert cols["count"] > 5, file
    assert set(consumer["columns"]) == {t.file for t in TABLES}
    assert consumer["undescribed_keys"] == []
    assert consumer["kv_metadata_mismatch"] == []
    assert consumer["binary_columns"] == []  # JSON columns are strings readers decode, not Binary


def test_history_partitions_are_utc_and_listed(consumer: dict) -> None:
    h = consumer["history"]
    assert h["parts"] >= 1 and h["listed"] and h["wrong_day_rows"] == 0
    assert h["rows"] == h["distinct"] == h["manifest_rows"] > 3000


def test_est_gpus_equals_gpus_needed_for_every_shown_cell(consumer: dict) -> None:
    c = consumer["cells"]
    assert c["cells"] == 43 * 9 * 4 and c["no_row"] == 0
    assert c["differ"] == 0 and c["unexplained_null"] == 0 and c["null_without_reason"] == 0
    assert c["rules"] == ["exact_planner"]
    assert c["closed_form_differs"] == 0  # the grid's count is the planner's rule: 146 of these differed before


def test_docs_dictionary_is_current() -> None:
    assert dictionary.main(["--check"]) == 0


def test_every_duckdb_column_is_published_or_excused(published: dict) -> None:
    con = duckdb.connect(str(published["db"]), read_only=True)
    try:
        for table in TABLES:
            declared = {c.sql for c in columns(table)} | set(table.unpublished)
            used = " ".join(declared)
            missing = [c for c in table_columns(con, table.db_table.split()[0]) if c not in declared and c not in used]
            assert missing == [], f"{table.db_table}: add {missing} to pipeline/exports/tables.py ({table.__name__})"
    finally:
        con.close()


def test_history_grows_without_copies_and_pins_utc(published: dict, tmp_path: Path) -> None:
    """Two more snapshots over a copy of the published store: the first part is shared (same inode, same hash) by
    every snapshot, a new observation at 03:00Z lands on its UTC day even with a US session time zone, and no
    observation is written twice."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(published["db"], data / "vramlab.duckdb")
    shutil.copytree(published["tmp"] / "exports", data / "exports", symlinks=True)
    shutil.copytree(published["tmp"] / "hub", data / "hub")  # tracked_models reads the data dir's Hub state
    con = duckdb.connect(str(data / "vramlab.duckdb"))
    con.execute("SET TimeZone = 'America/New_York'")
    tracked = tracked_models(data)[:2]
    try:
        first = publish(con, data / "exports", tracked, {}, as_of=datetime(2026, 11, 28, 12, tzinfo=UTC),
                        mode="replay", now=datetime(2026, 12, 1, 1, tzinfo=UTC), provenance={"code_version": "t"})
        # 2026-11-29 03:00Z is 2026-11-28 22:00 in New York: the partition must be the UTC day
        con.execute("INSERT INTO price_observations SELECT * REPLACE (TIMESTAMPTZ '2026-11-29 03:00:00+00' AS "
                    "observed_at, TIMESTAMPTZ '2026-11-29 03:00:00+00' AS observed_hour) "
                    "FROM (SELECT DISTINCT ON (offer_key) * FROM price_observations) LIMIT 5")
        second = publish(con, data / "exports", tracked, {}, as_of=datetime(2026, 11, 29, 4, tzinfo=UTC),
                         mode="replay", now=datetime(2026, 12, 1, 2, tzinfo=UTC), provenance={"code_version": "t"})
        db_rows = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
    finally:
        con.close()
    m1, m2 = (json.loads((s / "manifest.json").read_text())["history"] for s in (first, second))
    assert {p["path"] for p in m1} <= {p["path"] for p in m2}
    assert all(p in m2 for p in m1)  # the same parts with the same hashes: nothing rewritten
    new = [p for p in m2 if p not in m1]
    assert [(p["date"], p["rows"]) for p in new] == [("2026-11-29", 5)]
    assert sum(p["rows"] for p in m2) == db_rows
    for p in m1:
        linked = [(s / "price_observations" / Path(p["path"]).relative_to(HISTORY_DIR)).stat().st_ino
                  for s in (first, second)]
        assert linked[0] == linked[1] == (data / "exports" / p["path"]).stat().st_ino
    assert check_snapshot(first) == [] and check_snapshot(second) == []
    report = run_consumer(second, "--history-only")
    assert report["history"]["wrong_day_rows"] == 0 and report["history"]["rows"] == report["history"]["distinct"]


def test_released_falls_back_to_the_hub_creation_day_in_utc() -> None:
    from pipeline.exports.model_json import released_date

    assert released_date("2025-03-06", "2024-01-01T00:00:00.000Z") == "2025-03-06"  # the watchlist wins
    # the Hub's createdAt (model API) is UTC; 23:30 at UTC-5 is already the next UTC day
    assert released_date(None, "2024-04-17T23:30:00-05:00") == "2024-04-18"
    assert released_date(None, "2024-04-17T15:41:08.000Z") == "2024-04-17"
    assert released_date(None, None) is None


def test_numbers_are_written_as_javascript_writes_them() -> None:
    from pipeline.exports.model_json import js_numbers

    doc = {"activeParameters": 106.0, "parameters": 2780.110363392, "kv": [{"bf16": 27.0, "fp8": 13.5}], "ok": True}
    assert json.dumps(js_numbers(doc)) == ('{"activeParameters": 106, "parameters": 2780.110363392, '
                                           '"kv": [{"bf16": 27, "fp8": 13.5}], "ok": true}')


def test_runs_with_follows_native_format_and_layer_kinds() -> None:
    """llama.cpp loads BF16 checkpoints (after GGUF conversion) but not FP8/NVFP4 ones; vLLM and SGLang load both.
    Seed 004 lists only SGLang for Kimi K3.1; our spec models it as KimiLinearForCausalLM with an NVFP4 checkpoint,
    which vLLM implements (vllm/model_executor/models/kimi_linear.py) and serves (NVFP4 on Blackwell), so vLLM is
    listed too — a deliberate difference from the seed."""
    from helpers import arch

    from pipeline.exports.runs_with import runs_with
    from sizing_core.registry import load_registered

    assert runs_with(arch("meta-llama__Llama-3.1-8B")) == ["SGLang", "llama.cpp", "vLLM"]
    assert runs_with(arch("deepseek-ai__DeepSeek-V3")) == ["SGLang", "vLLM"]  # FP8 block checkpoint
    assert runs_with(load_registered("kimi-k3.1-pro")[1]) == ["SGLang", "vLLM"]


def test_parquet_fields_carry_their_dictionary(published: dict) -> None:
    import pyarrow.parquet as pq

    snap = published["tmp"] / "exports" / "latest"
    schema = pq.read_schema(snap / "sizing.parquet")
    est = schema.field("est_gpus")
    assert est.metadata[b"unit"] == b"GPUs" and b"exact planner" in est.metadata[b"description"]
    assert schema.field("engine_usable_gib").metadata[b"unit"].startswith(b"GiB")
    assert schema.metadata[b"vramlab:schema_version"] == b"3"
    offers = pq.read_schema(snap / "offers_current.parquet")
    assert str(offers.field("gpu_count").type) == "int32" and str(offers.field("verified_at").type) == \
        "timestamp[us, tz=UTC]"
    assert "listed_price_per_hour" in offers.names and "price_per_hour" not in offers.names


def test_a_model_breaking_the_contract_is_listed_as_failed(published: dict, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose file would not validate is left out with its reason; the other models are published."""
    import pipeline.exports.model_json as model_json

    real = model_json.gpus_needed

    def one_row_for_qwq(arch):  # type: ignore[no-untyped-def]
        needed, placements = real(arch)
        if arch.model.startswith("Qwen/QwQ"):
            needed = {"scenario": needed.scenario, "gpus": [g.model_dump() for g in needed.gpus[:1]]}  # < 9 rows
        return needed, placements

    monkeypatch.setattr(model_json, "gpus_needed", one_row_for_qwq)
    con = duckdb.connect(str(published["db"]), read_only=True)
    try:
        tracked = [t for t in tracked_models(published["tmp"]) if t.entry.id in ("qwq-32b", "qwen3-8b")]
        snap = publish(con, tmp_path / "exports", tracked, {}, as_of=datetime(2026, 11, 28, 12, tzinfo=UTC),
                       mode="replay", now=datetime(2026, 12, 1, 3, tzinfo=UTC), provenance={"code_version": "t"})
    finally:
        con.close()
    index = {m["id"]: m for m in json.loads((snap / "index.json").read_text())["models"]}
    assert index["qwen3-8b"]["status"] == "ok" and (snap / "models" / "qwen3-8b.json").exists()
    assert index["qwq-32b"]["status"] == "failed" and "gpusNeeded.gpus" in index["qwq-32b"]["reason"]
    assert not (snap / "models" / "qwq-32b.json").exists()


def test_released_comes_from_the_hub_when_the_watchlist_has_none(published: dict, tmp_path: Path) -> None:
    """The bundled Hub recordings carry no createdAt; a live payload does (model API ``createdAt``). Given one, the
    model file and models.parquet both publish its UTC day."""
    import dataclasses

    con = duckdb.connect(str(published["db"]), read_only=True)
    try:
        t = next(t for t in tracked_models(published["tmp"]) if t.hub is not None and not t.entry.released)
        t = dataclasses.replace(t, hub=t.hub.model_copy(update={"created_at": "2025-01-20T03:00:00.000Z"}))
        snap = publish(con, tmp_path / "exports", [t], {}, as_of=datetime(2026, 11, 28, 12, tzinfo=UTC),
                       mode="replay", now=datetime(2026, 12, 1, 3, tzinfo=UTC), provenance={"code_version": "t"})
        row = con.execute(f"SELECT released, hub_created_at FROM '{snap}/models.parquet' WHERE id = ?",
                          [t.entry.id]).fetchall()[0]
    finally:
        con.close()
    assert json.loads((snap / "models" / f"{t.entry.id}.json").read_text())["released"] == "2025-01-20"
    assert row[0] == "2025-01-20" and row[1] == datetime(2025, 1, 20, 3, tzinfo=UTC)
