"""The cheapest-setups table is kept when a run's inputs are those it was computed from: what the digest of those
inputs covers, and that whatever empties the table drops the record (a real DuckDB file)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.compute.setups_table import OUTPUT, setups_inputs_digest
from pipeline.storage import cheapest_setups, step_inputs
from pipeline.storage.db import connect

AS_OF = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
OFFERS = [{"offer_key": "a", "gpu_id": "h100", "price_per_hour_usd": 2.5, "verified_at": AS_OF},
          {"offer_key": "b", "gpu_id": "a100-80gb", "price_per_hour_usd": 1.2, "verified_at": AS_OF}]


def tracked(revision: str = "sha-1") -> list:
    return [SimpleNamespace(entry=SimpleNamespace(id="qwen3-8b"), revision=revision, arch=object()),
            SimpleNamespace(entry=SimpleNamespace(id="unsized"), revision=None, arch=None)]


@pytest.fixture
def con(tmp_path: Path):  # type: ignore[no-untyped-def]
    con = connect(tmp_path / "vramlab.duckdb")
    yield con
    con.close()


def test_the_digest_moves_with_every_input_and_nothing_else(con, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from pipeline.compute import setups_table
    from sizing_core.gpus import catalog

    base = setups_inputs_digest(con, tracked(), OFFERS, AS_OF)
    assert setups_inputs_digest(con, tracked(), [dict(o) for o in OFFERS], AS_OF.replace(hour=23)) == base
    cheaper = [OFFERS[0] | {"price_per_hour_usd": 2.4}, OFFERS[1]]
    seen_later = [OFFERS[0] | {"verified_at": AS_OF.replace(hour=10)}, OFFERS[1]]
    changed = {"a price": setups_inputs_digest(con, tracked(), cheaper, AS_OF),
               "a verification time": setups_inputs_digest(con, tracked(), seen_later, AS_OF),
               "an offer gone": setups_inputs_digest(con, tracked(), OFFERS[:1], AS_OF),
               "a revision": setups_inputs_digest(con, tracked("sha-2"), OFFERS, AS_OF),
               "the as-of date (ECB rates age in days)": setups_inputs_digest(con, tracked(), OFFERS,
                                                                               AS_OF.replace(day=8))}
    more = tracked() + [SimpleNamespace(entry=SimpleNamespace(id="qwen3-30b-a3b"), revision="sha-3", arch=object())]
    changed["a model tracked"] = setups_inputs_digest(con, more, OFFERS, AS_OF)
    gpus = dict(catalog())
    gpus["h100"] = gpus["h100"].model_copy(update={"bandwidth_gbs": (gpus["h100"].bandwidth_gbs or 0) + 1})
    with monkeypatch.context() as m:
        m.setattr(setups_table, "catalog", lambda: gpus)
        changed["a GPU catalog row"] = setups_inputs_digest(con, tracked(), OFFERS, AS_OF)
    with monkeypatch.context() as m:
        m.setattr(setups_table, "setups_code_version", lambda: "other-code")
        changed["the code"] = setups_inputs_digest(con, tracked(), OFFERS, AS_OF)
    con.execute("ALTER TABLE cheapest_setups ADD COLUMN probe INTEGER")
    changed["the table's columns"] = setups_inputs_digest(con, tracked(), OFFERS, AS_OF)
    assert all(d != base for d in changed.values()), [k for k, d in changed.items() if d == base]
    assert len(set(changed.values())) == len(changed)


def test_emptying_the_table_drops_its_record(con) -> None:  # type: ignore[no-untyped-def]
    step_inputs.record(con, OUTPUT, "digest", '{"rows": 0}', AS_OF)
    assert step_inputs.recorded(con, OUTPUT)[:2] == ("digest", '{"rows": 0}')
    cheapest_setups.clear(con)  # what the partitioned graph's publishing step and every full write do first
    assert step_inputs.recorded(con, OUTPUT) is None
