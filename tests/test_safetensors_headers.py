"""Safetensors headers read as ground truth, on real header bytes.

``fixtures/safetensors/all-MiniLM-L6-v2.model.safetensors.header`` is the first 8 + N bytes of the real
``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2 (see tests/fixtures/README.md).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from helpers import FIXTURES

from sizing_core.config.safetensors import HeaderError, header_length, parse_header, shard_files, summarize

HEADER = (FIXTURES / "safetensors" / "all-MiniLM-L6-v2.model.safetensors.header").read_bytes()


def test_real_header_length_and_tensors() -> None:
    assert header_length(HEADER) == 11_408 == len(HEADER) - 8
    shard = parse_header(HEADER, "model.safetensors")
    assert shard.metadata == {"format": "pt"}
    # BERT with 6 layers: 6 embedding tensors (word, position, token type, LayerNorm w/b, position_ids buffer),
    # 16 per layer (q/k/v/o + intermediate + output, weight and bias, 2 LayerNorms x w/b), pooler dense w/b.
    assert len(shard.tensors) == 6 + 6 * 16 + 2 == 104


def test_real_header_gives_exact_parameters_and_file_bytes() -> None:
    shard = parse_header(HEADER, "model.safetensors")
    h, inter, vocab = 384, 1536, 30522
    embeddings = vocab * h + 512 * h + 2 * h + 2 * h  # word, position, token type, LayerNorm
    layer = 4 * (h * h + h) + 2 * h + (h * inter + inter) + (inter * h + h) + 2 * h
    pooler = h * h + h
    params = embeddings + 6 * layer + pooler
    assert params == 22_713_216  # the model card's 22.7M
    summary = summarize([shard])
    assert summary.parameters == params  # position_ids (512 x I64) is a buffer, not a parameter
    assert summary.stored_elements == params + 512
    # Every parameter is F32 (4 bytes); the buffer is I64 (8 bytes).
    assert summary.data_bytes == params * 4 + 512 * 8 == 90_856_960
    # The file's size: 8-byte length + 11,408-byte header + data = 90,868,376 bytes, the size the Hub lists.
    assert summary.file_bytes == 8 + 11_408 + 90_856_960 == 90_868_376
    assert summary.bytes_by_dtype == {"F32": params * 4, "I64": 512 * 8}


def test_truncated_or_corrupt_headers_are_named_errors() -> None:
    with pytest.raises(HeaderError, match="fewer than 8 bytes"):
        header_length(HEADER[:5])
    with pytest.raises(HeaderError, match="only 1000 were read"):
        parse_header(HEADER[:1008], "model-00001-of-00002.safetensors")
    bad = bytearray(HEADER)
    bad[8] = ord("[")
    with pytest.raises(HeaderError, match="not JSON|must be a JSON object"):
        parse_header(bytes(bad))
    with pytest.raises(HeaderError, match="header length"):
        header_length(struct.pack("<Q", 2**40))


def _header(tensors: dict) -> bytes:
    offset, entries = 0, {}
    for name, (dtype, shape, size) in tensors.items():
        entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    body = json.dumps(entries).encode()
    return struct.pack("<Q", len(body)) + body


def test_packed_fp4_scales_mtp_and_tied_copies() -> None:
    """Constructed header: gpt-oss-style MXFP4 blocks (2 values per byte) and E8M0 scales, an FP8 block-scaled
    weight with its scale_inv, an MTP layer past num_hidden_layers, a stored copy of tied embeddings."""
    raw = _header({
        "model.embed_tokens.weight": ("BF16", [100, 64], 100 * 64 * 2),
        "lm_head.weight": ("BF16", [100, 64], 100 * 64 * 2),
        "model.layers.0.mlp.experts.gate_up_proj_blocks": ("U8", [4, 256, 2, 16], 4 * 256 * 2 * 16),
        "model.layers.0.mlp.experts.gate_up_proj_scales": ("U8", [4, 256, 2], 4 * 256 * 2),
        "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [128, 64], 128 * 64),
        "model.layers.0.self_attn.q_proj.weight_scale_inv": ("F32", [1, 1], 4),
        "model.layers.1.self_attn.q_proj.weight": ("BF16", [128, 64], 128 * 64 * 2),
    })
    s = summarize([parse_header(raw)], num_hidden_layers=1, tied=True)
    blocks = 4 * 256 * 2 * 16 * 2  # 32,768 FP4 values from 16,384 bytes
    assert s.parameters == 100 * 64 + blocks + 128 * 64
    assert s.tied_copy_parameters == 100 * 64 and s.mtp_parameters == 128 * 64
    assert s.quant_metadata_bytes == 4 * 256 * 2 + 4


def test_shard_files_from_index_or_listing() -> None:
    index = {"weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                            "c": "model-00001-of-00002.safetensors"}}
    assert shard_files(index, []) == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert shard_files(None, ["model.safetensors", "README.md", "onnx/model.safetensors"]) == ["model.safetensors"]


# ------------------------------------------------------------------------------------------ through the pipeline
def test_headers_are_read_by_range_requests_through_the_replay(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The real header bytes, replayed through the project's httpx stack (retrying transport, size caps, landing):
    ranged requests only, the revision records exact bytes and parameters, DuckDB stores them, and sizing
    reports which count it used and why."""
    from pipeline.ingest.models import size_entry
    from pipeline.sources.http import make_client
    from pipeline.sources.huggingface import HubState, WatchEntry, ingest_model
    from pipeline.sources.landing import load_landed
    from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport
    from pipeline.storage.checkpoints import load_checkpoint_headers
    from pipeline.storage.db import connect

    transport = ReplayTransport(REPLAY_ROOT / "hub" / "manifest.json")
    client = make_client(transport, sleep=lambda _s: None, min_interval=0.0)
    watch = WatchEntry(id="all-minilm-l6-v2", repo="sentence-transformers/all-MiniLM-L6-v2", name="all-MiniLM-L6-v2",
                       lab="sentence-transformers", country="unknown")
    log, model = ingest_model(watch, client, tmp_path, HubState(tmp_path))
    assert log.outcome == "ok" and model is not None
    shard_requests = [u for u in transport.requests if u.endswith("/model.safetensors")]
    assert len(shard_requests) == 1  # the 11,416-byte header fits the first 64 KiB range
    headers = model.checkpoint_headers
    assert headers is not None and headers.error is None
    assert [(s.file, s.header_length, s.file_bytes) for s in headers.shards] == [
        ("model.safetensors", 11_408, 90_868_376)]
    assert headers.summary.parameters == 22_713_216
    # The header bytes are landed with the revision's other parts (raw payload kept as fetched).
    raw_path = Path(log.raw_path or "")
    raw = load_landed(raw_path if raw_path.is_absolute() else tmp_path / raw_path)
    landed = [p for p in raw.parts if p.url.endswith("/model.safetensors")]
    assert landed and landed[0].status == 206 and landed[0].body[:8] == HEADER[:8]

    report = size_entry(watch, model)
    counts = report.parameter_counts
    assert report.architecture_source == "family"  # BertModel, the family row
    assert counts.checkpoint_parameters == 22_713_216 and counts.used == "safetensors" and counts.exact
    # config arithmetic agrees to the parameter: embeddings 30,522 x 384 words, 512 x 384 positions, 2 x 384 token
    # types, their LayerNorm 2 x 384; per layer (6) q/k/v/o 4 x (384 x 384 + 384), the MLP 384 x 1,536 + 1,536 +
    # 1,536 x 384 + 384 and two LayerNorms 4 x 384; the pooler 384 x 384 + 384
    by_hand = (30_522 * 384 + 512 * 384 + 2 * 384 + 2 * 384
               + 6 * (4 * (384 * 384 + 384) + 384 * 1_536 + 1_536 + 1_536 * 384 + 384 + 4 * 384) + 384 * 384 + 384)
    assert counts.config_total == by_hand == counts.total == 22_713_216 and not counts.difference_pct
    assert counts.embedding == 30_522 * 384 + 512 * 384 + 2 * 384  # token, position and token-type tables
    assert counts.non_embedding == counts.total - counts.embedding > 0
    # the header's bytes per dtype: 22,713,216 float32 parameters x 4 bytes, and the int64 position_ids buffer
    # (512 positions x 8 bytes) the checkpoint stores beside them
    assert counts.checkpoint_bytes_by_dtype == {"F32": 22_713_216 * 4, "I64": 512 * 8}
    assert report.weights_gib["native"] == round(90_868_376 / 2**30, 2)  # the checkpoint's own bytes

    con = connect(tmp_path / "db.duckdb")
    assert load_checkpoint_headers(con, [model])["checkpoint_revisions"] == 1
    assert load_checkpoint_headers(con, [model])["checkpoint_revisions"] == 0  # idempotent
    row = con.execute("SELECT file_bytes, parameters, used, difference_pct FROM checkpoint_summaries").fetchall()
    assert row[0][:3] == (90_868_376, 22_713_216, "safetensors")
    assert con.execute("SELECT header_length FROM checkpoint_shards").fetchall() == [(11_408,)]


def test_header_failure_never_fails_the_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import httpx

    from pipeline.sources.http import make_client
    from pipeline.sources.huggingface import HUB, HubState, WatchEntry, ingest_model
    from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

    manifest = REPLAY_ROOT / "hub" / "manifest.json"
    url = next(e["url"] for e in json.loads(manifest.read_text())["responses"]
               if e["url"].startswith(f"{HUB}/sentence-transformers") and e["url"].endswith("model.safetensors"))
    transport = ReplayTransport(manifest, overrides={url: httpx.Response(403, text="denied")})
    client = make_client(transport, sleep=lambda _s: None, min_interval=0.0)
    watch = WatchEntry(id="m", repo="sentence-transformers/all-MiniLM-L6-v2", name="m", lab="x", country="unknown")
    log, model = ingest_model(watch, client, tmp_path, HubState(tmp_path))
    assert log.outcome == "ok" and model is not None
    assert model.checkpoint_headers.summary is None and "HTTP 403" in model.checkpoint_headers.error


def test_the_hubs_count_of_an_unquantized_checkpoint_is_exact_less_its_mtp_heads() -> None:
    """The Hub counts a checkpoint's stored elements per dtype from its headers. All float dtypes: every element
    is a parameter, so that count less the multi-token-prediction heads it ships (served by no default launch)
    is the exact total and config arithmetic becomes the estimate beside it; a packed dtype (U8 holding 4-bit
    values) makes the count no parameter count, and config arithmetic stays the total. MiMo-7B-Base's genuine
    config ships one MTP layer."""
    from sizing_core.config.reader import parse_config
    from sizing_core.parameters import CheckpointFacts, count_parameters

    config = json.loads((Path(__file__).resolve().parent.parent / "pipeline" / "replay" / "hub" / "configs"
                         / "XiaomiMiMo__MiMo-7B-Base.json").read_text())
    arch = parse_config("XiaomiMiMo/MiMo-7B-Base", config)
    plain = count_parameters(arch)
    assert plain.mtp > 0 and not plain.exact and plain.used == "config"
    stored = plain.config_total + plain.mtp + 4096  # 4,096 elements the config rule does not model
    hub = count_parameters(arch, CheckpointFacts(parameters_by_dtype={"BF16": stored}, parameter_total=stored,
                                                 source="hub XiaomiMiMo/MiMo-7B-Base@test"))
    assert hub.exact and hub.used == "safetensors" and hub.total == plain.config_total + 4096
    assert hub.checkpoint_parameters == plain.config_total + 4096
    assert hub.difference_pct == round(-4096 / (plain.config_total + 4096) * 100, 3)
    assert "is an estimate" in (hub.used_reason or "") and hub.checkpoint_bytes_by_dtype == {"BF16": 2 * stored}
    packed = count_parameters(arch, CheckpointFacts(parameters_by_dtype={"BF16": 10**9, "U8": 3 * 10**9},
                                                    parameter_total=4 * 10**9, source="hub packed@test"))
    assert not packed.exact and packed.used == "config" and packed.total == plain.config_total
    assert packed.checkpoint_bytes_by_dtype is None
