"""``vramlab sources list`` and ``vramlab sources parse``: contracts used by other tools."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ROOT
from test_cli_size import vramlab

REPLAY = ROOT / "pipeline" / "replay" / "prices"
OFFER_KEYS = {"instance_type", "region", "gpu_id", "gpu_count", "allocation", "price_per_hour_usd",
              "price_per_gpu_hour_usd", "observed_at"}


def test_sources_list_json(tmp_path: Path) -> None:
    out = vramlab("sources", "list", "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    names = {r["source"] for r in rows}
    assert {"azure", "scaleway", "runpod", "skypilot-lambda", "ecb"} <= names and len(rows) >= 21
    runpod = next(r for r in rows if r["source"] == "runpod")
    assert runpod["auth"].startswith("API key") and runpod["last_fetch"] is None


def test_sources_list_table() -> None:
    out = vramlab("sources", "list")
    assert out.returncode == 0 and "skypilot-vast" in out.stdout and "configured" in out.stdout


def test_sources_parse_skypilot_csv_json() -> None:
    out = vramlab("sources", "parse", "skypilot-verda", str(REPLAY / "skypilot-verda" / "vms.csv"), "--json",
                  "--observed-at", "2026-11-05T00:00:00+00:00")
    assert out.returncode == 0, out.stderr
    offers = json.loads(out.stdout)
    assert offers and all(OFFER_KEYS <= set(o) for o in offers)
    assert {o["observed_at"] for o in offers} == {"2026-11-05T00:00:00Z"}
    assert all(o["gpu_id"] for o in offers)


def test_sources_parse_eur_payload_with_rates() -> None:
    out = vramlab("sources", "parse", "scaleway", str(REPLAY / "scaleway" / "servers.fr-par-2.json"), "--rates",
                  str(REPLAY / "ecb" / "eurofxref-daily.xml"), "--json")
    offer = next(o for o in json.loads(out.stdout) if o["instance_type"] == "H100-SXM-8-80G")
    assert offer["price_per_hour_usd"] == round(25.3308 * 1.0856, 6) and offer["fx_date"] == "2024-02-27"  # 6 dp


def test_sources_parse_errors_are_one_line(tmp_path: Path) -> None:
    out = vramlab("sources", "parse", "nope", str(REPLAY / "ecb" / "eurofxref-daily.xml"))
    assert out.returncode != 0 and "unknown source 'nope'" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    bad = tmp_path / "broken.json"
    bad.write_text('{"data": {')
    out = vramlab("sources", "parse", "lambda", str(bad))
    assert out.returncode != 0 and "not valid JSON" in out.stderr and len(out.stderr.strip().splitlines()) == 1
