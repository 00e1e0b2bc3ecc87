"""Price truth on a fresh replay snapshot (the real asset graph materialized once by
the ``published`` fixture), read back as a downstream consumer reads it: one meaning per column, quality in the
history, offer facts, and the documented example queries. Expected figures come from the GPU catalog, the family
table or arithmetic shown in the test, never from the code under test."""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from pipeline.cli.main import main as cli
from pipeline.quality.offers import rebuild_offer_quality
from pipeline.sources.offer_facts import INTERCONNECT_PATH
from pipeline.storage.db import connect
from sizing_core.gpus import catalog

DOCS = Path(__file__).resolve().parent.parent / "docs" / "exports.md"
#: sources whose APIs state availability (docs/sources.md): every one of their offers must carry it
STATES_AVAILABILITY = ("runpod", "lambda", "digitalocean", "akash", "vastai")


@pytest.fixture(scope="module")
def snap(published: dict) -> dict:
    latest = (published["tmp"] / "exports" / "latest").resolve()
    con = duckdb.connect()
    yield {"tmp": published["tmp"], "latest": latest, "con": con, "db": published["db"]}
    con.close()


def rows(con, sql: str) -> list[dict]:  # type: ignore[no-untyped-def]
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def gpus_cli(tmp: Path, capsys: pytest.CaptureFixture, *args: str) -> list[dict]:
    assert cli(["gpus", *args, "--json", "--data-dir", str(tmp)]) == 0
    return json.loads(capsys.readouterr().out)


# --- eligible, defined once ------------------------------------------------------------------------------


NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
COLUMNS = ("offer_key", "source", "provider", "instance_type", "gpu_name", "gpu_id", "gpu_count", "fractional",
           "currency", "price_per_hour", "price_per_gpu_hour", "price_per_hour_usd", "price_per_gpu_hour_usd", "unit",
           "allocation", "first_seen", "last_seen", "verified_at", "removed", "stale", "jump_unconfirmed")


def test_the_view_is_the_one_eligible_rule(tmp_path: Path) -> None:
    """sql/020's offers_judged on a real DuckDB file: a healthy offer is eligible; each disqualifier alone makes it
    not; stale and removed are "now" properties (the history's eligible_when_observed keeps the offer)."""
    con = connect(tmp_path / "v.duckdb")
    healthy = dict(source="s", provider="p", instance_type="i", gpu_name="H100", gpu_id="h100", gpu_count=8.0,
                   fractional=False, currency="USD", price_per_hour=16.0, price_per_gpu_hour=2.0,
                   price_per_hour_usd=16.0, price_per_gpu_hour_usd=2.0, unit="instance-hour", allocation="on_demand",
                   first_seen=NOW, last_seen=NOW, verified_at=NOW, removed=False, stale=False, jump_unconfirmed=False)
    variants = {"healthy": {}, "stale": {"stale": True}, "removed": {"removed": True},
                "jump": {"jump_unconfirmed": True}, "fractional": {"fractional": True, "gpu_count": 0.5},
                "unmapped": {"gpu_id": None}, "monthly": {"allocation": "monthly"}}
    for name, change in variants.items():
        row = healthy | change | {"offer_key": name, "instance_type": name}
        con.execute(f"INSERT INTO offers_current ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                    [row[c] for c in COLUMNS])
    assert rows(con, "SELECT count(*) AS n FROM offers_judged WHERE eligible")[0]["n"] == 0  # no verdict yet
    rebuild_offer_quality(con, NOW)
    got = {r["offer_key"]: (r["eligible"], r["eligible_when_observed"])
           for r in rows(con, "SELECT offer_key, eligible, eligible_when_observed FROM offers_judged")}
    assert got == {"healthy": (True, True), "stale": (False, True), "removed": (False, True), "jump": (False, False),
                   "fractional": (False, False), "unmapped": (False, False), "monthly": (False, False)}
    con.close()


def test_published_eligible_is_never_true_for_stale_fractional_or_removed_offers(snap) -> None:  # type: ignore[no-untyped-def]
    """Before: eligible was true for 36 offers of this snapshot that were stale or fractional."""
    bad = rows(snap["con"], f"""SELECT count(*) AS n FROM '{snap["latest"]}/offers_current.parquet'
                                WHERE eligible AND (stale OR fractional OR removed OR jump_unconfirmed
                                                    OR gpu_id IS NULL OR quarantined OR duplicate_of IS NOT NULL)""")
    assert bad[0]["n"] == 0


def test_history_carries_the_quality_verdict(snap) -> None:  # type: ignore[no-untyped-def]
    """Before: price_observations had no quality columns, so every historical minimum included quarantined
    placeholders (Mithril's 1.00 $/GPU-h H100 and H200)."""
    hist = f"read_parquet('{snap['latest']}/price_observations/*/*.parquet', hive_partitioning = true)"
    counts = rows(snap["con"], f"""SELECT count(*) AS n, count(eligible) AS judged,
                                          count(*) FILTER (WHERE quarantined) AS quarantined FROM {hist}""")[0]
    assert counts["n"] > 3000 and counts["judged"] == counts["n"] and counts["quarantined"] > 0
    placeholders = rows(snap["con"], f"""SELECT eligible, quality_reasons FROM {hist}
                                         WHERE source = 'skypilot-mithril' AND allocation = 'on_demand'""")
    assert placeholders and all(not r["eligible"] and "placeholder" in r["quality_reasons"] for r in placeholders)


def test_history_query_per_day_matches_vramlab_gpus_for_the_latest_day(snap, capsys) -> None:  # type: ignore[no-untyped-def]
    """One DuckDB query over the published history gives each GPU's cheapest eligible on-demand price per day;
    on the latest day it equals what `vramlab gpus` lists (cheapest eligible on-demand offer per GPU)."""
    per_day = rows(snap["con"], f"""
        SELECT date, gpu_id, min(price_per_gpu_hour_usd) AS usd
        FROM read_parquet('{snap['latest']}/price_observations/*/*.parquet', hive_partitioning = true)
        WHERE eligible AND allocation = 'on_demand' GROUP BY ALL""")
    latest = max(r["date"] for r in per_day)
    history = {r["gpu_id"]: round(r["usd"], 6) for r in per_day if r["date"] == latest}
    listed = {r["gpu_id"]: round(r["price_per_gpu_hour_usd"], 6) for r in gpus_cli(snap["tmp"], capsys)}
    assert history == listed and len(listed) > 20
    assert listed["h100"] == 1.29 and listed["h200"] == 2.6  # not the quarantined 1.00 placeholders


# --- GPU memory in two stated units ----------------------------------------------------------------------


def test_gpu_memory_gib_at_least_79_keeps_every_h100_80gb_offer(snap) -> None:  # type: ignore[no-untyped-def]
    """An H100 80GB shows 81,559 MiB = 79.65 GiB to the driver (GPU catalog), so `gpu_memory_gib >= 79` keeps
    every whole-GPU H100 80GB offer (SXM and PCIe). The old column, in the sources' mixed units, dropped some of
    them with the obvious `>= 80` filter."""
    offers = f"'{snap['latest']}/offers_current.parquet'"
    h100 = rows(snap["con"], f"""SELECT gpu_memory_gib, gpu_memory_gb FROM {offers}
                                 WHERE gpu_id IN ('h100', 'h100-pcie') AND NOT fractional""")
    assert len(h100) > 100
    assert all(r["gpu_memory_gib"] >= 79 for r in h100)
    assert {r["gpu_memory_gib"] for r in h100} == {round(81559 / 1024, 3)}
    assert any(r["gpu_memory_gb"] is None or r["gpu_memory_gb"] < 80 for r in h100)  # why the old column misled


# --- every unit in the dictionary, checked against values ------------------------------------------------


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def test_every_unit_in_the_dictionary_is_right(snap) -> None:  # type: ignore[no-untyped-def]
    """Reads schemas/dictionary.json and, for every column of the offer tables and the GPU table that has a unit,
    checks the values against that unit: memory against the GPU catalog (sizing_core/data/gpus.csv), per-GPU
    prices against the instance price / GPUs, Gb/s against the family table. A unit without a check fails."""
    dictionary = json.loads((snap["latest"] / "schemas" / "dictionary.json").read_text())["parquet"]
    gpus = catalog()
    families = {(r["provider"], r["instance_pattern"]): r for r in csv.DictReader(INTERCONNECT_PATH.open())}
    stated_gbps = {float(r["cluster_gbps"]) for r in families.values() if r["cluster_gbps"]}
    con, latest = snap["con"], snap["latest"]
    files = {"offers_current.parquet": f"'{latest}/offers_current.parquet'",
             "price_observations": f"read_parquet('{latest}/price_observations/*/*.parquet')",
             "gpus.parquet": f"'{latest}/gpus.parquet'"}
    checked = set()
    for file, table in dictionary.items():
        if file not in files:
            continue
        data = rows(con, f"SELECT * FROM {files[file]}")
        assert data, file
        for column in table["columns"]:
            unit, name = column["unit"], column["name"]
            if not unit:
                continue
            values = [(r, r[name]) for r in data if r.get(name) is not None]
            if unit == "GiB (2^30 bytes)" and name == "gpu_memory_gib":
                assert all(_close(v, round(gpus[r["gpu_id"]].memory_bytes / 2**30 * r["gpu_share"], 3))
                           for r, v in values if r.get("gpu_share") is not None)
            elif unit == "GiB (2^30 bytes)":  # gpus.memory_gib_visible
                assert all(_close(v, gpus[r["id"]].memory_bytes / 2**30) for r, v in values)
                assert _close(dict((r["id"], v) for r, v in values)["h100"], 81559 / 1024)
            elif unit == "GB (as marketed)" and name == "memory_gb":
                assert all(v == gpus[r["id"]].memory_gb for r, v in values)
            elif unit == "GB (as marketed)":
                assert all(_close(v, round(gpus[r["gpu_id"]].memory_gb * r["gpu_share"], 3))
                           for r, v in values if r.get("gpu_share") is not None)
            elif unit == "GPUs":
                assert all(isinstance(v, int) if name in ("gpu_count", "available_count", "gpus_per_node")
                           else 0 < v < 100 for _, v in values), name
                if name == "gpu_fraction":
                    assert all(r["fractional"] and _close(v, r["gpu_share"] * round(v / r["gpu_share"]))
                               for r, v in values if r.get("gpu_share"))
            elif unit == "ratio" and name == "gpu_share":
                assert all(0 < v <= 1 and (v == 1) != r["fractional"] for r, v in values)
            elif unit == "ratio":  # ratio_to_reference: checked with the reference price above
                assert all(v > 0 for _, v in values)
            elif name in ("price_per_gpu_hour_usd", "listed_price_per_gpu_hour"):
                per_hour = "price_per_hour_usd" if unit.startswith("USD") else "listed_price_per_hour"
                assert all(_close(v, round(r[per_hour] / (r["gpu_count"] or r["gpu_fraction"]), 6))
                           for r, v in values), name
            elif unit in ("USD/instance-hour", "currency/instance-hour"):
                assert all(v > 0 and round(v, 6) == v for _, v in values), name  # 6 decimals at parse time
            elif unit == "USD/GPU-hour":  # the reference price and its ratio
                assert all(_close(r["price_per_gpu_hour_usd"] / v, r["ratio_to_reference"]) for r, v in values)
            elif unit == "currency/USD":
                assert all(r["currency"] == "USD" or v > 0 for r, v in values)
                assert all(_close(r["listed_price_per_hour"] / v, r["price_per_hour_usd"]) for r, v in values)
            elif unit == "Gb/s":
                assert values and all(v in stated_gbps for _, v in values)
            elif unit == "vCPUs":
                assert all(isinstance(v, int) and v > 0 for _, v in values)
            elif unit in ("GiB", "as listed (mixed)"):
                assert all(v > 0 for _, v in values)
            elif unit in ("GB/s", "TFLOPS", "W", "USD"):  # catalog figures, published unchanged
                field = {"GB/s": "bandwidth_gbs", "W": "tdp_w", "USD": "launch_msrp_usd"}.get(unit, name)
                assert all(v == getattr(gpus[r["id"]], field) for r, v in values), name
            else:
                pytest.fail(f"{file}.{name}: no check for unit {unit!r}")
            checked.add((file, name))
    assert ("offers_current.parquet", "gpu_memory_gib") in checked and ("gpus.parquet", "memory_gb") in checked


# --- offer facts ---------------------------------------------------------------------------------------------


def test_form_factor_and_interconnect_for_every_offer_of_the_ten_most_offered_gpus(snap) -> None:  # type: ignore[no-untyped-def]
    offers = f"'{snap['latest']}/offers_current.parquet'"
    top = [r["gpu_id"] for r in rows(snap["con"], f"""SELECT gpu_id, count(*) AS n FROM {offers}
                                                     WHERE gpu_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 10""")]
    missing = rows(snap["con"], f"""SELECT gpu_id, count(*) AS n FROM {offers} WHERE gpu_id IN {tuple(top)}
                                    AND (form_factor IS NULL OR gpu_link IS NULL OR cluster_fabric IS NULL
                                         OR interconnect_source IS NULL) GROUP BY 1""")
    assert len(top) == 10 and missing == []


def test_h100_and_h100_pcie_are_never_confused(snap) -> None:  # type: ignore[no-untyped-def]
    got = rows(snap["con"], f"""SELECT gpu_id, form_factor, count(*) AS n
                                FROM '{snap['latest']}/offers_current.parquet'
                                WHERE gpu_id LIKE 'h100%' GROUP BY ALL""")
    pairs = {(r["gpu_id"], r["form_factor"]) for r in got}
    # a plain "H100" whose listing does not say SXM or PCIe is the H100 of unknown form factor, never guessed SXM
    assert {("h100", "SXM"), ("h100-pcie", "PCIe"), ("h100-nvl", "NVL")} <= pairs
    assert pairs <= {("h100", "SXM"), ("h100", "unknown"), ("h100-pcie", "PCIe"), ("h100-nvl", "NVL")}


def test_interconnect_comes_from_the_family_table_or_the_stated_rule(snap) -> None:  # type: ignore[no-untyped-def]
    """AWS p5.48xlarge: NVSwitch inside, EFA 3200 Gb/s across (aws.amazon.com/ec2/instance-types/p5/); an 8x
    RTX 4090 pod (no NVLink on that card: GPU catalog) talks over PCIe with no cluster fabric."""
    offers = f"'{snap['latest']}/offers_current.parquet'"
    [p5] = {(r["gpu_link"], r["cluster_fabric"], r["cluster_gbps"], r["interconnect_source"]) for r in rows(
        snap["con"], f"SELECT * FROM {offers} WHERE source = 'aws' AND instance_type = 'p5.48xlarge'")}
    assert p5 == ("NVSwitch", "EFA", 3200, "https://aws.amazon.com/ec2/instance-types/p5/")
    pods = rows(snap["con"], f"SELECT * FROM {offers} WHERE gpu_id = 'rtx-4090' AND gpu_count = 8")
    assert pods and {(r["gpu_link"], r["cluster_fabric"]) for r in pods} == {("PCIe", "none")}
    single = rows(snap["con"], f"SELECT DISTINCT gpu_link FROM {offers} WHERE gpu_count = 1")
    assert [r["gpu_link"] for r in single] == ["none"]


def test_availability_for_every_source_whose_api_states_it(snap, capsys) -> None:  # type: ignore[no-untyped-def]
    offers = f"'{snap['latest']}/offers_current.parquet'"
    per_source = {r["source"]: r for r in rows(snap["con"], f"""
        SELECT source, count(*) AS n, count(availability_status) AS stated,
               bool_and(availability_observed_at = last_seen) AS when_seen
        FROM {offers} GROUP BY 1""")}
    for source in STATES_AVAILABILITY:
        r = per_source[source]
        assert r["n"] > 0 and r["stated"] == r["n"] and r["when_seen"], r
    silent = [s for s, r in per_source.items() if s not in STATES_AVAILABILITY and r["stated"]]
    assert silent == []  # never invented for a source that does not say
    listed = gpus_cli(snap["tmp"], capsys, "--all")
    assert {"availability_status", "availability_observed_at", "form_factor", "gpu_link", "cluster_fabric",
            "gpu_memory_gib", "gpu_memory_gb_marketed"} <= set(listed[0])


def test_setups_say_whether_capacity_was_stated(snap) -> None:  # type: ignore[no-untyped-def]
    models = [json.loads(p.read_text()) for p in (snap["latest"] / "models").glob("*.json")]
    said = {s["availability"] for m in models for s in m["cheapestSetups"] + m["spotSetups"]}
    assert said and said <= {"available at fetch time", "available at fetch time (low stock)",
                             "unavailable at fetch time", "listed, capacity unknown"}
    assert "listed, capacity unknown" in said


# --- metadata, schemas, documented queries ------------------------------------------------------------------


def test_every_parquet_file_says_mode_and_as_of(snap) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((snap["latest"] / "manifest.json").read_text())
    files = sorted(snap["latest"].rglob("*.parquet"))
    assert len(files) >= 7
    for path in files:
        meta = {r["k"]: r["v"] for r in rows(snap["con"], f"""SELECT decode(key) AS k, decode(value) AS v
                                                                 FROM parquet_kv_metadata('{path}')""")}
        assert (meta.get("vramlab:mode"), meta.get("vramlab:as_of")) == (manifest["mode"], manifest["as_of"]), path


def test_json_schemas_state_formats_and_the_mode_enum(snap) -> None:  # type: ignore[no-untyped-def]
    import jsonschema

    schema = json.loads((snap["latest"] / "schemas" / "manifest.schema.json").read_text())
    props = schema["properties"]
    assert props["mode"]["enum"] == ["replay", "live"]
    assert props["generated_at"]["format"] == props["as_of"]["format"] == "date-time"
    model = json.loads((snap["latest"] / "schemas" / "model.schema.json").read_text())
    assert model["properties"]["updated"]["format"] == "date-time"
    assert model["properties"]["released"]["format"] == "date"
    manifest = json.loads((snap["latest"] / "manifest.json").read_text())
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    jsonschema.Draft202012Validator(schema, format_checker=checker).validate(manifest)
    bad = manifest | {"mode": "recorded"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema, format_checker=checker).validate(bad)


def documented_queries() -> list[str]:
    text = DOCS.read_text()
    block = text.split("<!-- example-queries:start -->")[1].split("<!-- example-queries:end -->")[0]
    sql = re.search(r"```sql\n(.*?)```", block, re.S).group(1)  # type: ignore[union-attr]
    return [q.strip() for q in sql.split(";\n") if q.strip().strip(";")]


def test_documented_example_queries_run_and_say_what_they_claim(snap, capsys) -> None:  # type: ignore[no-untyped-def]
    """docs/exports.md's example queries, run as written against the replayed snapshot (its path in place of
    data/exports/latest). Before the offer-quality stage the first returned H100 and H200 at $1.00 (quarantined placeholders)."""
    queries = documented_queries()
    assert len(queries) == 5
    results = [rows(snap["con"], q.replace("data/exports/latest", str(snap["latest"])).rstrip(";"))
               for q in queries]
    now, per_day, big, available, meta = results
    listed = {r["gpu_id"]: r["price_per_gpu_hour_usd"] for r in gpus_cli(snap["tmp"], capsys)}
    assert {r["gpu_id"]: r["usd_per_gpu_hour"] for r in now} == listed
    assert {r["gpu_id"]: r["usd_per_gpu_hour"] for r in now}["h100"] == 1.29
    latest = max(r["date"] for r in per_day)
    assert {r["gpu_id"]: r["usd_per_gpu_hour"] for r in per_day if r["date"] == latest} == listed
    assert {"h100", "h100-pcie", "h100-nvl", "h200", "b200"} <= {r["gpu_id"] for r in big}
    assert {r["source"] for r in available} >= set(STATES_AVAILABILITY)
    assert {r["key"]: r["value"] for r in meta}["vramlab:mode"] == "replay"



def test_history_parts_from_before_schema_3_still_read(snap, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A data directory keeps its old history parts (schema 2: no quality columns). The documented history query
    (union_by_name) still runs across both, the old rows read as not judged (null) and stay out of the minima, and
    the report loads both kinds of parts."""
    from pipeline.report.data import load_snapshot

    root = tmp_path / "snap"
    root.mkdir()
    for item in snap["latest"].iterdir():  # the snapshot's files, linked, plus one old part sorting first
        (root / item.name).symlink_to(item)
    history = root / "price_observations"
    history.unlink()
    history.mkdir()
    for day in (snap["latest"] / "price_observations").iterdir():
        (history / day.name).symlink_to(day)
    old = history / "date=2000-01-01"
    old.mkdir()
    part = next((snap["latest"] / "price_observations").glob("*/*.parquet"))
    snap["con"].execute(f"""COPY (SELECT * EXCLUDE (quarantined, quality_reasons, eligible)
                                  FROM read_parquet('{part}') LIMIT 50)
                            TO '{old / "part-old.parquet"}' (FORMAT parquet)""")
    query = documented_queries()[1].replace("data/exports/latest", str(root)).rstrip(";")
    per_day = rows(snap["con"], query)
    assert per_day and str(min(r["date"] for r in per_day)) > "2000-01-01"  # old rows: eligible null, left out
    assert load_snapshot(root).history.height > 0
