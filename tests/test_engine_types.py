"""Engines and cache specs as types: the registry resolves every id to its class, each engine answers for itself,
and each cache spec's bytes and blocks are the ones derived by hand from a config's numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sizing_core.cache_spec import (
    CacheSpec,
    ChunkedLocalSpec,
    FullAttentionSpec,
    MLALatentSpec,
    SlidingWindowSpec,
    StateSpec,
)
from sizing_core.calibration import case_arch
from sizing_core.engines import (
    ENGINES,
    MLX,
    VLLM,
    LlamaCpp,
    ServerEngine,
    SGLang,
    UnknownEngineError,
    engines_on,
    get_engine,
)
from sizing_core.gpus import get_gpu
from sizing_core.kv_layout import layer_specs, llamacpp_pool, vllm_pool
from sizing_core.layers import FullAttention, SlidingWindowAttention

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "sizing_core" / "data" / "calibration" / "configs"


# --------------------------------------------------------------------------------------------------- engines
@pytest.mark.parametrize(("engine_id", "cls"), [("vllm", VLLM), ("sglang", SGLang), ("llama.cpp", LlamaCpp),
                                                 ("mlx", MLX)])
def test_every_registered_id_resolves_to_its_class(engine_id: str, cls: type) -> None:
    engine = get_engine(engine_id)
    assert type(engine) is cls and engine.id == engine_id
    assert get_engine(engine_id.upper()) is engine  # case-insensitive
    assert type(engine.with_settings(version="0.10.1", max_num_seqs=8)) is cls  # settings keep the class


def test_registry_holds_each_engine_class_once() -> None:
    assert sorted(ENGINES) == ["llama.cpp", "mlx", "sglang", "vllm"]
    assert len({type(e) for e in ENGINES.values()}) == len(ENGINES)
    assert get_engine("Ollama") is get_engine("llama-cpp") is get_engine("llamacpp") is ENGINES["llama.cpp"]


def test_unknown_engine_names_the_known_ones() -> None:
    with pytest.raises(UnknownEngineError, match=r"unknown engine 'tgi' \(known: vllm, sglang, llama.cpp, mlx, "
                                                 r"ollama\)"):
        get_engine("tgi")


def test_each_engine_answers_its_own_differences() -> None:
    h100, rtx4090, mac = get_gpu("h100"), get_gpu("rtx-4090"), get_gpu("mac-m4-max-128")
    vllm, sglang, llama, mlx = (get_engine(e) for e in ("vllm", "sglang", "llama.cpp", "mlx"))
    # scheduler defaults: vLLM since 0.9 gives >= 70 GiB cards 8,192 tokens and 1,024 sequences, others 2,048 / 256
    assert (vllm.scheduler(h100).max_num_batched_tokens, vllm.scheduler(h100).max_num_seqs) == (8192, 1024)
    assert (vllm.scheduler(rtx4090).max_num_batched_tokens, vllm.scheduler(rtx4090).max_num_seqs) == (2048, 256)
    assert vllm.with_settings(max_num_seqs=4).scheduler(h100).max_num_seqs == 4
    assert llama.scheduler(h100).max_num_batched_tokens == 512 and llama.scheduler(h100).max_num_seqs is None
    assert sglang.scheduler(h100).max_num_batched_tokens == 8192  # chunked prefill of a 60-160 GB card
    # memory: CUDA graphs only for vLLM with graphs on; non-torch memory for the servers only
    assert vllm.cuda_graph_bytes() > 0 and vllm.with_settings(enforce_eager=True).cuda_graph_bytes() == 0
    assert sglang.cuda_graph_bytes() == llama.cuda_graph_bytes() == 0
    assert vllm.non_torch_bytes(4) == sglang.non_torch_bytes(4) == (0.15 + 0.15 * 3) * 2**30
    assert llama.non_torch_bytes(4) == mlx.non_torch_bytes(4) == 0
    assert isinstance(vllm, ServerEngine) and not isinstance(llama, ServerEngine)
    assert vllm.repacks("mxfp4") and not llama.repacks("mxfp4") and not vllm.repacks("fp8")
    # formats: MLX only on Apple silicon, llama.cpp no AWQ, the servers no GGUF
    assert mlx.supports(mac, "q8_0").runs and not mlx.supports(h100, "q8_0").runs
    assert not llama.supports(h100, "awq_int4").runs and not vllm.supports(h100, "q4_k_m").runs
    # eager: asked for, or vLLM before CUDA graphs (0.3)
    assert vllm.with_settings(version="0.2.7").eager() and not llama.with_settings(version="0.2.7").eager()
    assert llama.with_settings(version="b3000").layer_cost_key() == "llama.cpp-2024"
    assert vllm.with_settings(version="b3000").layer_cost_key() == "server"


def test_mlx_launches_llama_server_and_takes_its_rope_flags() -> None:
    """MLX's command is llama-server's, so turning rope scaling on uses llama-server's flags."""
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert get_engine("mlx").rope_flags(scaling) == get_engine("llama.cpp").rope_flags(scaling) == \
        " \\\n  --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768"
    assert "--json-model-override-args" in get_engine("sglang").rope_flags(scaling)


def test_no_engine_id_switch_outside_the_engines_package() -> None:
    switch = re.compile(r"(engine(_id)?\.id|engine_id|\bp\.engine|\bc\.engine)\s*(==|!=|in \(|not in \()|"
                        r"\b\w+\.kind\s*(==|!=|in \()\s*\(?\"(full|sliding|mla|state|other)\"|"
                        r"\.(mixer|mlp)\.kind\s*(==|!=|in )")
    found = [f"{path.relative_to(ROOT)}: {line.strip()}"
             for folder in ("sizing_core", "pipeline", "scripts") for path in (ROOT / folder).rglob("*.py")
             if "engines" not in path.relative_to(ROOT).parts
             for line in path.read_text().splitlines() if switch.search(line)]
    assert found == []


@pytest.mark.parametrize(("gpu_id", "expected"), [
    ("h100", {"vllm", "sglang", "llama.cpp"}),     # CUDA: every server engine and llama.cpp
    ("mi300x", {"vllm", "sglang", "llama.cpp"}),   # ROCm builds of all three
    ("mac-m4-max-128", {"llama.cpp", "mlx"}),      # Metal: llama.cpp and MLX, no CUDA/ROCm server
    ("dgx-spark", {"vllm", "llama.cpp"}),          # NVIDIA's unified-memory box: vLLM's aarch64 CUDA build
    ("gaudi3", {"vllm"}),                          # Intel's vLLM fork only (no llama.cpp or SGLang backend)
    ("rx-7900-xtx", {"llama.cpp"}),                # consumer Radeon: llama.cpp (ROCm/Vulkan)
])
def test_each_engine_says_which_gpus_it_runs_on(gpu_id: str, expected: set[str]) -> None:
    assert {engine.id for engine in engines_on(get_gpu(gpu_id))} == expected


# ----------------------------------------------------------------------------------------------- cache specs
def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


def test_full_attention_page_bytes_by_hand() -> None:
    """Qwen3-0.6B: 28 layers x 8 KV heads x head_dim 128, BF16 (2 bytes), K and V, 16-token blocks."""
    c = _config("Qwen__Qwen3-0.6B.json")
    layers, kv_heads, head_dim = c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"]
    arch = case_arch("Qwen__Qwen3-0.6B")
    specs = layer_specs(arch, range(arch.num_layers), "bf16", 1, 4096)
    assert len(specs) == layers and all(type(s) is FullAttentionSpec for s in specs)
    assert sum(s.page_bytes(16) for s in specs) == 2 * layers * kv_heads * head_dim * 2 * 16  # 7,340,032
    # TP 2: each rank holds half the KV heads
    half = layer_specs(arch, range(arch.num_layers), "bf16", 2, 4096)
    assert sum(s.page_bytes(16) for s in half) == 2 * layers * (kv_heads // 2) * head_dim * 2 * 16
    # a request of 1,000 tokens takes ceil(1000 / 16) = 63 blocks per layer
    assert specs[0].blocks_per_request(16, 1000, 8192) == 63
    assert specs[0].bytes_per_request(1000, 8192, 16) == 63 * 2 * kv_heads * head_dim * 2 * 16


def test_layer_classes_give_their_own_specs() -> None:
    full = FullAttention(num_heads=8, num_kv_heads=2, head_dim=64)
    sliding = SlidingWindowAttention(num_heads=8, num_kv_heads=2, head_dim=64, window=512)
    assert full.cache_specs(2, 1, 4096) == [FullAttentionSpec(token_bytes=2 * 2 * 64 * 2)]
    assert sliding.cache_specs(2, 1, 4096) == [SlidingWindowSpec(token_bytes=2 * 2 * 64 * 2, sliding_window=512)]


def test_sliding_window_blocks_are_capped_by_the_window() -> None:
    """gpt-oss-20b's sliding layers: window 128, 8 KV heads x 64, BF16: 2 x 8 x 64 x 2 = 2,048 B per token."""
    c = _config("openai__gpt-oss-20b.json")
    arch = case_arch("openai__gpt-oss-20b")
    specs = layer_specs(arch, range(arch.num_layers), "bf16", 1, 131072)
    sliding = [s for s in specs if isinstance(s, SlidingWindowSpec)]
    assert len(sliding) == c["layer_types"].count("sliding_attention") == 12
    s = sliding[0]
    assert (s.window, s.token_bytes) == (c["sliding_window"], 2 * c["num_key_value_heads"] * c["head_dim"] * 2)
    # vLLM keeps window - 1 + max_num_batched_tokens tokens, plus one block: ceil((128 - 1 + 2048) / 16) + 1 = 137
    assert s.blocks_per_request(16, 131072, 2048) == s.blocks_per_request(16, 1_000_000, 2048) == 137
    assert s.blocks_per_request(16, 1000, 2048) == 63 + 1  # a short request: its own length
    assert s.as_full_attention() == FullAttentionSpec(token_bytes=s.token_bytes)
    # llama.cpp: pad256(min(n_ctx_seq, window + n_ubatch)) cells per sequence: pad256(128 + 512) = 768
    assert s.llamacpp_kv_bytes(131072, 1, 512) == 768 * s.token_bytes
    assert ChunkedLocalSpec(token_bytes=1.0, sliding_window=8192).blocks_per_request(16, 131072, 8192) == \
        -(-(8192 - 1 + 8192) // 16) + 1


def test_mla_latent_bytes_are_one_latent_on_every_rank() -> None:
    """DeepSeek-V3: (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes = 1,152 B per token per layer, no factor 2,
    the same on every TP rank."""
    c = _config("deepseek-ai__DeepSeek-V3.json")
    arch = case_arch("deepseek-ai__DeepSeek-V3")
    one, eight = (layer_specs(arch, range(arch.num_layers), "bf16", tp, 8192) for tp in (1, 8))
    per_token = (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2
    assert all(type(s) is MLALatentSpec for s in one) and len(one) == c["num_hidden_layers"]
    assert {s.token_bytes for s in one} == {s.token_bytes for s in eight} == {per_token}
    assert one[0].page_bytes(16) == per_token * 16


def test_state_spec_is_one_page_per_request() -> None:
    state = StateSpec(state_bytes=1_000_000.0)
    assert state.page_bytes(16) == 1_000_000.0
    assert state.blocks_per_request(16, 1_000_000, 8192, state_pages=2) == 2
    assert state.llamacpp_kv_bytes(131072, 4, 512) == 0.0
    assert llamacpp_pool([state, FullAttentionSpec(token_bytes=10.0)], 1000, 4, 512) == (10_000.0, 4_000_000.0)


def test_a_group_merges_only_equal_specs() -> None:
    a = FullAttentionSpec(token_bytes=4096.0)
    assert CacheSpec.merge([a, FullAttentionSpec(token_bytes=4096.0)]) is a
    with pytest.raises(ValueError, match="differ"):
        CacheSpec.merge([a, MLALatentSpec(token_bytes=4096.0)])  # same bytes, another kind: separate groups


def test_vllm_hybrid_pool_raises_the_attention_block_to_hold_a_state_page() -> None:
    """One full-attention layer of 4,096 B per token and one state layer of 1 MiB: the block grows to
    16 x ceil(1 MiB / (4,096 x 16)) = 256 tokens, one 1 MiB page; 10 pages of pool; a request of 4,096 tokens
    takes 16 attention blocks + 1 state page."""
    specs = [FullAttentionSpec(token_bytes=4096.0), StateSpec(state_bytes=float(2**20))]
    pool = vllm_pool(specs, 10 * 2**20, 4096, 2048)
    assert (pool.block_size, pool.groups, pool.max_concurrency) == (256, 2, 10 / 17)


def test_stand_in_formats_have_one_home() -> None:
    """The formats that stand for another (fit's substitute, the model JSON's fp8 and q4_k_m columns) are the
    engine's ``substitute_format``, nowhere else: the JSON's column format is that method's answer."""
    from pipeline.exports.model_json import column_format
    from pipeline.exports.schema import COLUMNS
    from sizing_core.engines import ENGINES
    from sizing_core.gpus import catalog

    for engine in ENGINES.values():
        assert not hasattr(engine, "column_format")
        for gpu in catalog().values():
            for column in COLUMNS:
                assert column_format(engine.id, column, gpu) == engine.substitute_format(column, gpu)
    h100, l40s, a100 = catalog()["h100"], catalog()["l40s"], catalog()["a100-80gb-sxm"]
    vllm, llama = ENGINES["vllm"], ENGINES["llama.cpp"]
    assert [vllm.substitute_format(f, h100) for f in ("fp8", "q4_k_m", "q8_0", "bf16")] == \
        ["fp8", "awq_int4", "fp8", "bf16"]
    assert vllm.substitute_format("fp8", a100) == "int8" and l40s.supports_fp8
    assert [llama.substitute_format(f, h100) for f in ("fp8", "int8", "awq_int4", "nvfp4", "q4_k_m")] == \
        ["q8_0", "q8_0", "q4_k_m", "q4_k_m", "q4_k_m"]
