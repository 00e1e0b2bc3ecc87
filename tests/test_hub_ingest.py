"""Hugging Face Hub ingestion on the bundled replay: the whole watchlist, faults, incremental revisions."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from pipeline.ingest.models import ingest_hub, size_entry
from pipeline.sources.http import make_client
from pipeline.sources.huggingface import HUB, HubState, gguf_files, ingest_model, load_watchlist
from pipeline.sources.landing import read_log
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport
from sizing_core import parse_config
from sizing_core.parameters import count_parameters

MANIFEST = REPLAY_ROOT / "hub" / "manifest.json"
WATCHLIST = load_watchlist()


def entry(repo: str):  # type: ignore[no-untyped-def]
    return next(m for m in WATCHLIST.models if m.repo == repo)


def client(overrides: dict | None = None) -> tuple:
    transport = ReplayTransport(MANIFEST, overrides=overrides)
    return make_client(transport, sleep=lambda _s: None, min_interval=0.0), transport


def sha_of(repo: str) -> str:
    stem = repo.replace("/", "__")
    return json.loads((REPLAY_ROOT / "hub" / "api" / f"{stem}.json").read_text())["sha"]


def test_watchlist_spans_the_families() -> None:
    assert WATCHLIST.version >= 1 and len(WATCHLIST.models) >= 40
    configs = {p.stem.replace("__", "/", 1) for p in (REPLAY_ROOT / "hub" / "configs").glob("*.json")
               if not p.name.endswith(".hf_quant_config.json")}
    assert configs <= {m.repo for m in WATCHLIST.models}
    assert any(m.id == "kimi-k3.1-pro" and m.spec == "kimi-k3.1-pro" for m in WATCHLIST.models)


def test_whole_watchlist_ingests_and_sizes_offline(tmp_path: Path) -> None:
    results = ingest_hub(tmp_path, replay=True)
    assert len(results) == len(WATCHLIST.models)
    failures = {}
    for watch, log, model in results:
        if log is not None:
            assert log.outcome == "ok", log.message
        try:
            report = size_entry(watch, model)
        except Exception as exc:  # noqa: BLE001
            failures[watch.repo] = str(exc)
            continue
        assert report.parameters > 0
    assert not failures
    assert {e.outcome for e in read_log(tmp_path)} == {"ok"}


def test_sha_unchanged_means_no_new_revision_and_no_refetch(tmp_path: Path) -> None:
    state = HubState(tmp_path)
    c, transport = client()
    assert ingest_model(entry("Qwen/Qwen3-8B"), c, tmp_path, state)[0].outcome == "ok"
    first = len(transport.requests)
    log, model = ingest_model(entry("Qwen/Qwen3-8B"), c, tmp_path, HubState(tmp_path))
    assert log.outcome == "unchanged" and model is not None and model.sha == sha_of("Qwen/Qwen3-8B")
    assert len(transport.requests) - first == 1  # the model info only: no config, no GGUF listing
    assert len(HubState(tmp_path).revisions()) == 1


def test_sha_changed_lands_a_new_revision(tmp_path: Path) -> None:
    repo = "Qwen/Qwen3-1.7B"
    ingest_model(entry(repo), client()[0], tmp_path, HubState(tmp_path))
    info = json.loads((REPLAY_ROOT / "hub" / "api" / "Qwen__Qwen3-1.7B.json").read_text())
    info["sha"] = "f" * 40
    config = (REPLAY_ROOT / "hub" / "configs" / "Qwen__Qwen3-1.7B.json").read_bytes()
    c, _ = client({f"{HUB}/api/models/{repo}?blobs=true": httpx.Response(200, json=info),
                   f"{HUB}/{repo}/resolve/{'f' * 40}/config.json": httpx.Response(200, content=config)})
    log, model = ingest_model(entry(repo), c, tmp_path, HubState(tmp_path))
    assert log.outcome == "ok" and "new revision" in log.message
    revisions = HubState(tmp_path).revisions()
    assert [r["sha"] for r in revisions] == [sha_of(repo), "f" * 40]
    assert revisions[1]["previous_sha"] == sha_of(repo)  # history kept, both revisions stored
    assert HubState(tmp_path).record_path(repo, sha_of(repo)).exists()


def test_gated_repo_without_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    repo = "meta-llama/Llama-3.1-8B"
    c, _ = client({f"{HUB}/{repo}/resolve/{sha_of(repo)}/config.json":
                   httpx.Response(401, json={"error": "Access to model meta-llama/Llama-3.1-8B is restricted."})})
    log, model = ingest_model(entry(repo), c, tmp_path, HubState(tmp_path))
    assert (log.outcome, log.http_status, model) == ("gated", 401, None)
    assert json.loads(Path(log.raw_path).read_text())["parts"][-1]["status"] == 401


def test_missing_repo(tmp_path: Path) -> None:
    repo = "openai/gpt-oss-20b"
    c, _ = client({f"{HUB}/api/models/{repo}?blobs=true": httpx.Response(404, json={"error": "Repository not found"})})
    log, model = ingest_model(entry(repo), c, tmp_path, HubState(tmp_path))
    assert (log.outcome, log.http_status, model) == ("missing", 404, None)


def test_malformed_config_names_the_field(tmp_path: Path) -> None:
    repo = "microsoft/phi-4"
    config = json.loads((REPLAY_ROOT / "hub" / "configs" / "microsoft__phi-4.json").read_text())
    config["num_hidden_layers"] = "forty"  # (left out, Phi3Config's default of 32 would apply)
    c, _ = client({f"{HUB}/{repo}/resolve/{sha_of(repo)}/config.json": httpx.Response(200, json=config)})
    log, model = ingest_model(entry(repo), c, tmp_path, HubState(tmp_path))
    assert log.outcome == "parse_error" and model is None
    assert "microsoft/phi-4: field 'num_hidden_layers' must be an integer" in log.message


def test_huge_config_is_refused_by_the_size_cap(tmp_path: Path) -> None:
    repo = "Qwen/Qwen3-14B"
    five_gb = httpx.Response(200, headers={"content-length": str(5 * 10**9)}, content=b"{}")
    c, _ = client({f"{HUB}/{repo}/resolve/{sha_of(repo)}/config.json": five_gb})
    log, model = ingest_model(entry(repo), c, tmp_path, HubState(tmp_path))
    assert log.outcome == "too_large" and "larger than 10,485,760 bytes" in log.message and model is None


def test_token_is_sent_but_never_landed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    seen = []

    class Spy(ReplayTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request.headers.get("authorization"))
            return super().handle_request(request)

    c = make_client(Spy(MANIFEST), sleep=lambda _s: None, min_interval=0.0)
    assert ingest_model(entry("Qwen/Qwen3-8B"), c, tmp_path, HubState(tmp_path))[0].outcome == "ok"
    assert seen and all(h == "Bearer hf_secret_token_value" for h in seen)
    landed = "".join(p.read_text() for p in tmp_path.rglob("*.json*"))
    assert "hf_secret_token_value" not in landed


def test_gguf_listing_groups_split_files() -> None:
    listing = [{"type": "file", "path": "Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf", "size": 10},
               {"type": "file", "path": "Q4_K_M/Model-Q4_K_M-00002-of-00002.gguf", "size": 5},
               {"type": "file", "path": "Model-UD-Q2_K_XL.gguf", "size": 7},
               {"type": "file", "path": "mmproj-F16.gguf", "size": 3}, {"type": "directory", "path": "Q4_K_M"}]
    files = gguf_files(listing, "org/Model-GGUF")
    assert files["Q4_K_M"]["bytes"] == 15 and len(files["Q4_K_M"]["files"]) == 2
    assert files["UD-Q2_K_XL"]["bytes"] == 7 and "F16" not in files  # the vision projector is not a weight file


def test_derived_facts_from_chat_template(tmp_path: Path) -> None:
    repo = "Qwen/Qwen3-VL-8B-Instruct"
    info = json.loads((REPLAY_ROOT / "hub" / "api" / "Qwen__Qwen3-VL-8B-Instruct.json").read_text())
    info["siblings"].append({"rfilename": "tokenizer_config.json", "size": 100})
    info["cardData"] = {"license": "apache-2.0"}
    template = "{% if tools %}...{% endif %}<think>\n"
    c, _ = client({f"{HUB}/api/models/{repo}?blobs=true": httpx.Response(200, json=info),
                   f"{HUB}/{repo}/resolve/{info['sha']}/tokenizer_config.json":
                       httpx.Response(200, json={"chat_template": template})})
    _, model = ingest_model(entry(repo), c, tmp_path, HubState(tmp_path))
    d = model.derived
    assert d["modalities"].value == ["text", "image", "video"]  # vision_config, video_token_id in config.json
    assert d["tool_calling"].value is True
    assert d["reasoning"].value is True and d["license"].value == "apache-2.0"
    assert d["max_context"].value == 262144 and d["tool_calling"].rule


def test_discovery_adds_new_repos(tmp_path: Path) -> None:
    from pipeline.sources.huggingface import discover

    listing = [{"id": "Qwen/Qwen3-8B", "downloads": 2_500_000}, {"id": "someone/new-model-7b", "downloads": 50_000}]
    url = f"{HUB}/api/models?pipeline_tag=text-generation&sort=trendingScore&direction=-1&limit=50"
    c, _ = client({url: httpx.Response(200, json=listing)})
    assert discover(c, tmp_path, WATCHLIST) == ["someone/new-model-7b"]
    results = ingest_hub(tmp_path, replay=True, discovery=True, client=client({url: httpx.Response(200, json=listing)})[0])
    new = [r for r in results if r[0].repo == "someone/new-model-7b"]
    assert new and new[0][1].outcome == "missing"  # not in the replay: recorded, the others continue


@pytest.mark.parametrize("repo", [r for r in ("meta-llama/Llama-3.2-3B-Instruct", "Qwen/Qwen3-8B",
                                              "moonshotai/Kimi-Linear-48B-A3B-Instruct",
                                              "deepseek-ai/DeepSeek-V2-Lite-Chat", "openai/gpt-oss-20b")])
def test_safetensors_and_config_counts_agree_or_are_explained(tmp_path: Path, repo: str) -> None:
    _, model = ingest_model(entry(repo), client()[0], tmp_path, HubState(tmp_path))
    arch = parse_config(repo, model.config, model.hf_quant_config)
    counts = count_parameters(arch)
    stored = model.safetensors_total
    if repo == "openai/gpt-oss-20b":
        # MXFP4 experts are stored as uint8 blocks (2 values per byte) plus one uint8 scale per 32 values, so the
        # file's element count is experts x (1/2 + 1/32) + the BF16 rest: 11.96B elements for 20.91B parameters.
        experts = sum(t.numel for t in arch.tensors if t.is_routed_expert)
        packed = counts.total - experts + experts * (1 / 2 + 1 / 32)
        assert packed == pytest.approx(stored, rel=0.01)
        assert counts.total / stored > 1.7
    else:
        assert counts.total == pytest.approx(stored, rel=0.01)


def test_discovery_sizes_what_it_finds_and_says_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovered repos go through the same path; the summary (the discovery metadata of
    raw_hub__models) counts how many sized by family/generic rule, how many exactly from headers, and why the
    others failed. The minimum download count is configurable."""
    from pipeline.ingest.models import discovery_summary
    from pipeline.sources.huggingface import discovery_url

    monkeypatch.setenv("VRAMLAB_DISCOVERY_MIN_DOWNLOADS", "1000")
    trending = [{"id": "sentence-transformers/all-MiniLM-L6-v2", "downloads": 90_000_000},  # genuine headers
                {"id": "someone/new-model-7b", "downloads": 50_000},  # not in the replay: fetch fails (404)
                {"id": "someone/tiny-experiment", "downloads": 5},  # below the minimum: not discovered
                {"id": "Qwen/Qwen3-8B", "downloads": 2_500_000}]  # already tracked
    c, _ = client({discovery_url("trendingScore", 50): httpx.Response(200, json=trending)})
    results = ingest_hub(tmp_path, replay=True, discovery=True, client=c)
    summary = discovery_summary(results, tmp_path)
    assert summary["new"] == ["sentence-transformers/all-MiniLM-L6-v2", "someone/new-model-7b"]
    assert summary["below_min_downloads"] == 1 and summary["min_downloads"] == 1000
    assert summary["already_tracked"] == 1 + 3  # Qwen3-8B in trending; the 3 of the downloads listing
    assert summary["sized"] == {"family": 1, "generic": 0, "exact_from_headers": 1}
    assert summary["failed"] == {"fetch missing": 1}
    minilm = next(m for m in summary["models"] if m["repo"].startswith("sentence-transformers"))
    assert minilm["exact"] and "unknown model_type" not in minilm["why"], minilm

    monkeypatch.setenv("VRAMLAB_DISCOVERY_MIN_DOWNLOADS", "many")
    with pytest.raises(ValueError, match="VRAMLAB_DISCOVERY_MIN_DOWNLOADS"):
        ingest_hub(tmp_path / "again", replay=True, discovery=True, client=c)


def test_index_total_size_is_recorded_and_reported(tmp_path: Path) -> None:
    """A revision's model.safetensors.index.json total_size is recorded with the revision and reported
    as parameterCounts.checkpointBytes beside the Hub's exact count of the checkpoint's tensors. Qwen3-8B's index
    says 16,381,470,720 bytes: 8,190,735,360 BF16 parameters, the Hub's count and exactly the config arithmetic."""
    http, _ = client()
    log, model = ingest_model(entry("Qwen/Qwen3-8B"), http, tmp_path, HubState(tmp_path))
    assert log.outcome == "ok" and model is not None
    assert model.checkpoint_bytes == 16_381_470_720
    assert model.checkpoint_headers is None  # the recorded index has no weight_map: no shard headers are read
    counts = size_entry(entry("Qwen/Qwen3-8B"), model).parameter_counts
    assert counts.checkpoint_bytes == 16_381_470_720
    # the Hub counts the BF16 checkpoint's tensors (8,190,735,360: its API answer), exactly half the index's bytes:
    # that exact count is the total, and the config arithmetic, equal to it, is the estimate beside
    assert counts.checkpoint_parameters == 8_190_735_360 == 16_381_470_720 // 2 == counts.config_total
    assert counts.checkpoint_parameters_source.startswith("Hub safetensors counts") and counts.difference_pct == 0.0
    assert counts.checkpoint_bytes_difference_pct == 0.0 and counts.config_native_bytes == 16_381_470_720
    assert counts.used == "safetensors" and counts.exact and counts.total == 8_190_735_360
    assert counts.checkpoint_bytes_by_dtype == {"BF16": 16_381_470_720}
