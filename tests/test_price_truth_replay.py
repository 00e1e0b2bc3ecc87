"""Price truth on a fresh replay snapshot: the real asset graph materialized once
(``published`` fixture) into a real DuckDB file and a published snapshot, read back as a consumer would.

Before the offer-quality stage, 40 of the 43 models' #1 on-demand setups rested on offers named below (a 0.138 $/h
V100, Lium marketplace rows, Hetzner monthly servers, Mithril placeholders, swapped RunPod L40S rows) and chained
up to 31 single-GPU machines. Each rule here fails on that snapshot.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipeline.cli.main import main as cli
from pipeline.compute.answers import FIDELITY
from pipeline.compute.setups import MULTI_MACHINE_RANK_FACTOR


@pytest.fixture(scope="module")
def snap(published: dict) -> dict:
    tmp: Path = published["tmp"]
    latest = tmp / "exports" / "latest"
    models = {p.stem: json.loads(p.read_text()) for p in sorted((latest / "models").glob("*.json"))}
    con = duckdb.connect(str(published["db"]), read_only=True)
    yield {"tmp": tmp, "latest": latest, "models": models, "con": con, "result": published["result"]}
    con.close()


def q(con, sql: str, *params):  # type: ignore[no-untyped-def]
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_no_first_on_demand_setup_uses_a_quarantined_marketplace_monthly_or_duplicate_offer(snap) -> None:  # type: ignore[no-untyped-def]
    con = snap["con"]
    firsts = [(m, d["cheapestSetups"][0]) for m, d in snap["models"].items() if d.get("cheapestSetups")]
    assert len(firsts) >= 40
    for model, s in firsts:
        # the offer behind the setup: same source, instance type, region (zones of one region are one offer) and
        # the setup's price per instance
        rows = q(con, """SELECT quarantined, reasons, duplicate_of, eligible FROM offers_judged
                         WHERE source = ? AND instance_type = ? AND coalesce(region, '') = coalesce(?, '')
                           AND allocation_class = 'on_demand' AND abs(price_per_hour_usd * ? - ?) < 0.001""",
                 s["source"], s["instanceType"], s["region"], s["instances"], s["pricePerHour"])
        assert rows, (model, s["source"], s["instanceType"])
        assert any(r["eligible"] for r in rows), (model, rows)
        assert not any(r["quarantined"] for r in rows), (model, rows)
        assert s["allocation"] == "on_demand"
        assert s["provider"] not in ("lium", "vast", "akash", "hetzner")  # marketplace and monthly providers


def test_every_published_on_demand_setup_rests_on_an_eligible_offer(snap) -> None:  # type: ignore[no-untyped-def]
    bad = q(snap["con"], """
        SELECT DISTINCT c.source, c.instance_type, c.region FROM cheapest_setups c
        WHERE c.list = 'on_demand' AND NOT EXISTS (
            SELECT 1 FROM offers_judged o WHERE o.source = c.source AND o.instance_type = c.instance_type
               AND coalesce(o.region, '') = coalesce(c.region, '') AND o.allocation_class = 'on_demand'
               AND o.eligible)""")
    assert bad == []


def test_the_offers_the_issue_names_are_quarantined_or_reclassified_with_reasons(snap) -> None:  # type: ignore[no-untyped-def]
    con = snap["con"]
    [v100] = q(con, "SELECT * FROM offer_quality WHERE source = 'skypilot-verda' AND instance_type = '1V100.6V' "
                    "AND allocation_class = 'on_demand'")
    # the V100 reference is the median of providers' medians; 0.138 is far below a third of it
    assert v100["quarantined"] and "below_band" in v100["reasons"] and v100["ratio_to_reference"] < 1 / 3
    mithril = q(con, "SELECT DISTINCT reasons FROM offer_quality WHERE source = 'skypilot-mithril'")
    assert all("placeholder" in r["reasons"] for r in mithril)
    l40s = q(con, "SELECT allocation_class, bool_and(spot_reversed AND quarantined) AS all_q, count(*) AS n "
                  "FROM offer_quality WHERE source = 'skypilot-runpod' AND gpu_id = 'l40s' GROUP BY ALL")
    assert {r["allocation_class"] for r in l40s} == {"on_demand", "spot"} and all(r["all_q"] for r in l40s)
    classes = dict(con.execute("SELECT provider, any_value(allocation_class) FROM offer_quality "
                               "WHERE provider IN ('lium', 'hetzner') GROUP BY ALL").fetchall())
    assert classes == {"lium": "marketplace", "hetzner": "monthly"}
    assert con.execute("SELECT count(*) FROM offer_quality WHERE quarantined AND len(reasons) = 0"
                       ).fetchall()[0][0] == 0
    assert con.execute("SELECT count(DISTINCT canonical_provider) FROM offer_quality "
                       "WHERE canonical_provider IN ('oci', 'oracle')").fetchall()[0][0] == 1


def test_a_non_native_format_says_so(snap) -> None:  # type: ignore[no-untyped-def]
    for model, d in snap["models"].items():
        for s in d.get("cheapestSetups") or []:
            if not s["nativeSupport"]:
                assert s["supportNote"] and any(f.startswith("not native") for f in s["flags"]), model
            if s["gpu"] in ("v100", "v100-32gb"):
                assert s["format"] not in ("int8", "fp8", "nvfp4"), model  # not runnable on Volta at all


def test_no_first_setup_spans_machines_when_one_machine_is_within_25_percent(snap) -> None:  # type: ignore[no-untyped-def]
    con = snap["con"]
    for model, d in snap["models"].items():
        first = (d.get("cheapestSetups") or [None])[0]
        if not first or first["nodes"] == 1:
            continue
        assert first["deployment"] in ("cluster", "llama.cpp-rpc")
        if first["deployment"] == "llama.cpp-rpc":
            assert first["nodes"] <= 4 and any("RPC" in f for f in first["flags"])
        singles = q(con, "SELECT min(price_per_hour) AS p FROM cheapest_setups WHERE model_id = ? AND list = "
                         "'on_demand' AND nodes = 1 AND format IN (SELECT UNNEST(?))", model, list(FIDELITY))
        cheapest_single = singles[0]["p"]
        assert cheapest_single is None or cheapest_single > MULTI_MACHINE_RANK_FACTOR * first["pricePerHour"], model


def test_cli_and_json_list_the_same_setups_in_the_same_order(snap, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every model: `vramlab cheapest --json`, the `vramlab cheapest` table and the published model JSON name the
    same setups (every identifying field) in the same order."""
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    checked = 0
    for model, d in snap["models"].items():
        published = [(s["provider"], s["source"], s["instanceType"], s["region"], s["gpu"], s["instances"],
                      s["gpusPerInstance"], s["format"], s["pricePerHour"], s["nodes"], s["tensorParallel"],
                      s["pipelineParallel"]) for s in d.get("cheapestSetups") or []]
        assert cli(["cheapest", model, "--json", "--top", "5", "--data-dir", str(snap["tmp"])]) == 0
        rows = json.loads(capsys.readouterr().out)["setups"]
        key = [(r["provider"], r["source"], r["instance_type"], r["region"], r["gpu_id"], r["instances"],
                r["gpus_per_instance"], r["format"], r["price_per_hour"], r["nodes"], r["tensor_parallel"],
                r["pipeline_parallel"]) for r in rows]
        assert key == published, model
        if not rows:
            continue
        assert cli(["cheapest", model, "--top", "5", "--data-dir", str(snap["tmp"])]) == 0
        out = capsys.readouterr().out.splitlines()
        starts = [i for i, ln in enumerate(out)
                  if any(ln.lstrip().startswith(f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']} ")
                         for r in rows)]  # a setup's first line (a note below the table may name one too)
        assert len(starts) == len(rows), model
        for i, r in zip(starts, rows, strict=True):
            line, below = out[i], out[i + 1]  # a setup is two lines: figures, then instance type, fabric, regions
            assert f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']} " in line, (model, line)
            assert f" {r['provider']} " in line and r["format"] in line, (model, line)
            assert (r["region"] or "-") in below, (model, below)
        checked += 1
    assert checked >= 40


def test_ties_are_broken_by_a_total_order(snap) -> None:  # type: ignore[no-untyped-def]
    """Within every published list (model, list, format, load, order) the setups follow their rank value (llama.cpp
    RPC chains after every other setup), then ``Setup.rank_key``, strictly: no two
    setups share a key, so no order depends on how offers happened to arrive; the overall list of every model
    file follows the rank price, then fidelity."""
    from pipeline.compute.answers import rank_value, setup_from_row

    rows = q(snap["con"], "SELECT * FROM cheapest_setups ORDER BY model_id, list, format, context, concurrency, "
                          "sort, rank")
    lists: dict[tuple, list] = {}
    for r in rows:  # a list per load and order: by price (the rank price) or by cost per output token
        s = setup_from_row(r)
        lists.setdefault((r["model_id"], r["list"], r["format"], r["context"], r["concurrency"], r["sort"]),
                         []).append((s.deployment == "llama.cpp-rpc", rank_value(s, r["sort"]), s.rank_key))
    assert len(lists) > 100
    for where, keys in lists.items():
        assert all(a < b for a, b in zip(keys, keys[1:], strict=False)), where
    for model, d in snap["models"].items():
        ranks = [(round(s["pricePerHour"] * (MULTI_MACHINE_RANK_FACTOR if s["nodes"] > 1 else 1), 6),
                  FIDELITY.index(s["format"])) for s in d.get("cheapestSetups") or []]
        assert ranks == sorted(ranks), model


def test_dagster_cheapest_gpu_hour_is_what_vramlab_gpus_lists(snap, capsys) -> None:  # type: ignore[no-untyped-def]
    """The UI's cheapest $/GPU-hour per GPU (core__offer_quality, quality verdict applied) names the same offer as
    `vramlab gpus`; before, core__offers_current's table listed raw cheapest offers, quarantined ones included
    (that table is still shown, labelled "before quality")."""
    result: dg.ExecuteInProcessResult = snap["result"]
    md = result.asset_materializations_for_node("core__offer_quality")[0].metadata
    ui = {r.data["gpu"]: (r.data["usd_per_gpu_hour"], r.data["provider"], r.data["instance"])
          for r in md["cheapest_gpu_hour"].records}
    raw = result.asset_materializations_for_node("core__offers_current")[0].metadata
    assert "cheapest_gpu_hour" not in raw and isinstance(raw["cheapest_gpu_hour_before_quality"], dg.TableMetadataValue)
    assert cli(["gpus", "--json", "--data-dir", str(snap["tmp"])]) == 0
    listed = {r["gpu_id"]: (round(r["price_per_gpu_hour_usd"], 4), r["provider"], r["instance_type"])
              for r in json.loads(capsys.readouterr().out)}
    assert ui == listed and len(ui) > 20
    for gpu, (price, provider, instance) in ui.items():
        rows = q(snap["con"], """SELECT bool_or(c.eligible) AS ok, bool_or(c.quarantined) AS bad
                                 FROM offers_judged c
                                 WHERE c.gpu_id = ? AND c.provider = ? AND c.instance_type = ?
                                   AND abs(c.price_per_gpu_hour_usd - ?) < 0.0001 AND c.allocation = 'on_demand'""",
                 gpu, provider, instance, price)
        assert rows[0]["ok"] and not rows[0]["bad"], gpu
    plotted = {k: v.value for k, v in md.items() if k.startswith("cheapest_") and k.endswith("_usd_per_gpu_hour")}
    assert plotted and all(abs(v - ui[k[len("cheapest_"):-len("_usd_per_gpu_hour")].replace("_", "-")][0]) < 1e-4
                           for k, v in plotted.items())


def test_replay_says_so_in_the_manifest_and_every_model_file(snap) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((snap["latest"] / "manifest.json").read_text())
    assert manifest["mode"] == "replay"
    assert all(d["provenance"]["mode"] == "replay" for d in snap["models"].values())


def test_dagster_shows_quality_figures_as_tables(snap) -> None:  # type: ignore[no-untyped-def]
    result: dg.ExecuteInProcessResult = snap["result"]
    md = result.asset_materializations_for_node("core__offer_quality")[0].metadata
    for key in ("reference_prices", "quarantined_per_reason", "offers_per_source", "offers_per_class"):
        assert isinstance(md[key], dg.TableMetadataValue), key
    reference = {r.data["gpu"]: r.data for r in md["reference_prices"].records}
    assert reference["h100"]["providers"] >= 3 and reference["h100"]["band_low"] is not None
    reasons = {r.data["reason"]: r.data["offers"] for r in md["quarantined_per_reason"].records}
    assert reasons["spot_reversed"] > 0 and reasons["placeholder"] > 0 and reasons["below_band"] > 0
    assert md["duplicates_merged"].value > 0
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()
              if e.asset_key.to_user_string() == "core__offer_quality"}
    assert checks["quarantine_has_reason"].passed
    assert checks["quarantined_offers"].metadata["quarantined_placeholder"].value == reasons["placeholder"]
