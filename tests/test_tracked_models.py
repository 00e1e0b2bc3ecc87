"""Within one process, ``tracked_models`` hands every step the same parsed Architecture for a model whose inputs did
not change (sizing_core memoises per object, so the exports step re-uses the setups step's work), a
freshly parsed one when its revision or config changed, and never one object to two watchlist entries."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipeline.compute import tracked as tracked_module
from pipeline.compute.tracked import tracked_models
from pipeline.sources.huggingface import HubState, load_watchlist
from sizing_core import parse_config


@pytest.fixture
def data(published: dict, tmp_path: Path) -> Path:
    """A private copy of the published run's data directory (its Hub state is what tracked_models reads)."""
    target = tmp_path / "data"
    shutil.copytree(published["tmp"], target, symlinks=True)
    return target


def _by_id(data: Path) -> dict:
    return {t.entry.id: t for t in tracked_models(data)}


def test_unchanged_models_get_the_same_object_and_equal_a_fresh_parse(data: Path) -> None:
    first, second = _by_id(data), _by_id(data)
    sized = [m for m, t in first.items() if t.arch is not None and t.hub is not None]
    assert len(sized) > 10
    assert all(second[m].arch is first[m].arch for m in sized)
    for m in sized[:5]:  # the kept object is what parsing the same inputs gives
        t = first[m]
        assert t.arch == parse_config(t.entry.repo, t.hub.config, t.hub.hf_quant_config)


def test_a_changed_config_or_revision_is_parsed_again_for_that_model_only(data: Path) -> None:
    before = _by_id(data)
    model_id = next(m for m, t in before.items() if t.entry.repo == "meta-llama/Llama-3.1-8B")
    repo = before[model_id].entry.repo
    state = HubState(data)
    hub = state.latest(repo)
    layers = hub.config["num_hidden_layers"]
    # the same sha with another config (a re-ingested record) and then a new sha: both are new inputs
    state.save(hub.model_copy(update={"config": hub.config | {"num_hidden_layers": layers - 1}}))
    after = _by_id(data)
    assert after[model_id].arch is not before[model_id].arch
    assert after[model_id].arch.num_layers == layers - 1
    assert all(after[m].arch is t.arch for m, t in before.items() if m != model_id and t.arch is not None
               and before[m].entry.repo != repo)
    state.save(state.latest(repo).model_copy(update={"sha": "e" * 40}))
    again = _by_id(data)
    assert again[model_id].arch is not after[model_id].arch and again[model_id].revision == "e" * 40


def test_two_entries_of_one_repo_never_share_an_object(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wl = load_watchlist()
    first = next(e for e in wl.models if not e.spec)
    twin = first.model_copy(update={"id": first.id + "-twin"})
    monkeypatch.setattr(tracked_module, "load_watchlist",
                        lambda data_dir=None: wl.model_copy(update={"models": [*wl.models, twin]}))
    found = _by_id(data)
    assert found[twin.id].arch is not None and found[first.id].arch is not None
    assert found[twin.id].arch is not found[first.id].arch
    assert found[twin.id].arch == found[first.id].arch  # the same config parsed twice
