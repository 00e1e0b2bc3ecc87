"""The per-day rule shared by `vramlab history` and the report's charts (pipeline/compute/price_days.py), on
hand-made rows: each day's providers and changes, like-for-like comparisons, and where a line may join two days;
the staleness check's texts, one per verdict; and the note a setup renting more GPUs than its plan uses gets."""

from __future__ import annotations

from pipeline.assets.core import staleness_text
from pipeline.cli.tables import _idle_note, _rented
from pipeline.compute.price_days import day_summaries, joined, like_for_like

ROWS = [{"day": "2026-09-16", "provider": "azure", "price": 12.29},
        {"day": "2026-11-21", "provider": "lambda", "price": 2.49},
        {"day": "2026-11-21", "provider": "jarvislabs", "price": 2.69},
        {"day": "2026-11-28", "provider": "lambda", "price": 3.29},
        {"day": "2026-11-28", "provider": "hyperbolic", "price": 1.29},
        {"day": "2026-11-28", "provider": "jarvislabs", "price": 3.49},
        {"day": "2026-11-29", "provider": "lambda", "price": 3.19},
        {"day": "2026-11-29", "provider": "hyperbolic", "price": 1.39},
        {"day": "2026-11-29", "provider": "jarvislabs", "price": 3.49},
        {"day": "2026-11-29", "provider": "lambda", "price": 3.99}]  # a dearer lambda offer the same day


def test_each_day_names_its_providers_and_what_changed() -> None:
    days = day_summaries(reversed(ROWS))  # any input order
    assert [d["day"] for d in days] == ["2026-09-16", "2026-11-21", "2026-11-28", "2026-11-29"]
    assert [(d["cheapest"], d["provider"], d["highest"], d["providers"]) for d in days] == [
        (12.29, "azure", 12.29, 1), (2.49, "lambda", 2.69, 2), (1.29, "hyperbolic", 3.49, 3),
        (1.39, "hyperbolic", 3.49, 3)]
    assert days[0]["added"] == days[0]["removed"] == [] and not days[0]["changed"]
    assert (days[1]["added"], days[1]["removed"], days[1]["changed"]) == (["jarvislabs", "lambda"], ["azure"], True)
    assert (days[2]["added"], days[2]["removed"]) == (["hyperbolic"], [])
    assert not days[3]["changed"] and days[3]["providerList"] == ["hyperbolic", "jarvislabs", "lambda"]


def test_like_for_like_compares_only_providers_both_days_have() -> None:
    same = like_for_like(ROWS, "2026-11-21", "2026-11-29")
    assert same["providers"] == ["jarvislabs", "lambda"]
    assert same["first"] == {"day": "2026-11-21", "price": 2.49, "provider": "lambda"}
    assert same["last"] == {"day": "2026-11-29", "price": 3.19, "provider": "lambda"}  # not hyperbolic's 1.39
    none = like_for_like(ROWS, "2026-09-16", "2026-11-29")
    assert none == {"providers": [], "first": None, "last": None}


def test_lines_join_consecutive_observed_days_with_the_same_providers() -> None:
    observed = ["2026-09-16", "2026-10-01", "2026-11-21", "2026-11-28", "2026-11-29"]
    days = joined(day_summaries(ROWS), observed)
    # 10-01 was observed (other GPUs) without a price here: a gap before 11-21; 11-28 changed providers; 11-29 the
    # same providers as the observed day before: joined
    assert [(d["gap"], d["joined"]) for d in days] == [(False, False), (True, False), (False, False), (False, True)]


def test_staleness_says_pass_warning_and_failure_differently() -> None:
    fresh = staleness_text([], [], live=True)
    late = [{"source": "vultr", "verified_at": "2026-11-28T09:00:00+00:00"}]
    warn = staleness_text(late, [], live=True)
    fail = staleness_text(late, late, live=True)
    replay = staleness_text(late, late, live=False)
    assert len({fresh, warn, fail, replay}) == 4
    assert "passes" in fresh and "warns" in warn and "vultr" in warn and "fails" in fail and "vultr" in fail
    assert "never a failure in replay" in replay and "vultr 2026-11-28" in replay


def test_a_plan_using_fewer_gpus_than_it_rents_is_priced_whole_and_says_so() -> None:
    assert _rented({"gpusUsed": 2, "gpusRented": 4}) == (
        "; uses 2 of the 4 GPUs rented: priced as the whole instance, the rest idle")
    assert _rented({"gpusUsed": 4, "gpusRented": 4}) == ""
    row = {"instances": 1, "gpus_per_instance": 4, "gpu_id": "mi300x", "tensor_parallel": 2, "pipeline_parallel": 1,
           "gpus_needed": 2, "gpus": 4}
    note = _idle_note([row, row | {"gpus_needed": 4}])
    assert note is not None and note.startswith("1x4 mi300x (plan 2x1 uses 2 of 4): priced as the whole instance")
    assert _idle_note([row | {"gpus_needed": 4}]) is None
