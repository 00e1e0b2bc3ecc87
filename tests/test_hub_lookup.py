"""Any Hub model on demand: the look-up through the Hub source's client, its cache in the data directory, the
live branch (network boundary replaced by the replay transport), and the one line a miss gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.ingest import lookup
from pipeline.sources.http import make_client
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

REPO = "openai/gpt-oss-120b"


@pytest.fixture
def recorded_hub(monkeypatch: pytest.MonkeyPatch) -> ReplayTransport:
    """The live client with the Hub's answers replayed (only the network boundary is replaced)."""
    transport = ReplayTransport(REPLAY_ROOT / "hub" / "manifest.json")
    monkeypatch.setattr("pipeline.ingest.models.hub_client",
                        lambda replay: make_client(transport, sleep=lambda _s: None, min_interval=0.0))
    return transport


def test_a_live_look_up_fetches_through_the_hub_source_and_is_kept(tmp_path: Path, recorded_hub) -> None:  # noqa: ANN001
    got = lookup.hub_model(tmp_path, REPO, live=True)
    config = json.loads((REPLAY_ROOT / "hub" / "lookups" / "openai__gpt-oss-120b.json").read_text())
    assert got["repo"] == REPO and got["config"] == config
    # the Hub source's own path: model info, then config.json at the revision's sha
    assert recorded_hub.requests[0].endswith(f"/api/models/{REPO}?blobs=true")
    assert recorded_hub.requests[1].endswith(f"/{REPO}/resolve/{got['sha']}/config.json")
    root = tmp_path / "cache" / "hub-lookups"
    assert (root / "hub" / "state.json").is_file() and any((root / "raw").rglob("*.json"))
    assert not (tmp_path / "hub").exists() and not (tmp_path / "raw").exists()  # the pipeline's own data untouched
    asked = len(recorded_hub.requests)
    assert lookup.hub_model(tmp_path, REPO.upper(), live=True)["sha"] == got["sha"]  # any case, from the cache
    assert len(recorded_hub.requests) == asked  # no second fetch


def test_a_miss_is_one_line_saying_how_to_get_an_answer(tmp_path: Path, recorded_hub) -> None:  # noqa: ANN001
    with pytest.raises(lookup.LookupError_) as live:
        lookup.fetch(tmp_path, "nobody/no-such-model", live=True)
    assert str(live.value) == ("nobody/no-such-model is not tracked, not in the local data, and huggingface.co has "
                               "no such repo; pass the path of its config.json (or its folder) instead")
    with pytest.raises(lookup.LookupError_) as offline:
        lookup.fetch(tmp_path, "nobody/no-such-model", live=False)
    assert "offline replay bundle" in str(offline.value) and "VRAMLAB_LIVE=1" in str(offline.value)
    assert "\n" not in str(live.value) + str(offline.value)


def test_gated_repos_say_what_to_do() -> None:
    line = lookup.failure("meta-llama/Llama-4-Behemoth", "gated", "HTTP 403", 403, live=True)
    assert "HF_TOKEN" in line and "config.json" in line and "\n" not in line


def test_repo_ids_and_the_replay_spelling() -> None:
    assert lookup.is_repo_id("Qwen/Qwen3-235B-A22B") and not lookup.is_repo_id("configs/model.json")
    assert not lookup.is_repo_id("qwen3-8b") and not lookup.is_repo_id("a/b/c")
    assert lookup.canonical_repo("qwen/qwen3-235b-a22b", live=False) == "Qwen/Qwen3-235B-A22B"
    assert lookup.canonical_repo("qwen/qwen3-235b-a22b", live=True) == "qwen/qwen3-235b-a22b"  # the Hub resolves it
