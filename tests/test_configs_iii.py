"""Configs by rules that generalise: transformers' own field table (aliases, class defaults, sub-configs), encoder-
decoder models (both stacks; decoder KV per token plus the cross-attention cache per request), stub sub-configs.

Genuine files in tests/fixtures/configs_iii, each cited in its SOURCES.csv; every expected figure below is derived
by hand from the config's shapes, written out."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import FIXTURES

from sizing_core.config.defaults import class_defaults, class_fields, class_types, transformers_version
from sizing_core.config.reader import parse_config
from sizing_core.errors import ConfigError
from sizing_core.kv_cache import kv_bytes_per_token, state_bytes_per_request
from sizing_core.parameters import count_parameters

ROOT = Path(__file__).resolve().parent.parent
DIR = FIXTURES / "configs_iii"
SOURCES = {row["file"]: row for row in csv.DictReader((DIR / "SOURCES.csv").open())}


def _config(name: str) -> dict:
    return json.loads((DIR / f"{name}.json").read_text())


def test_every_fixture_is_cited() -> None:
    files = {p.name for p in DIR.glob("*.json")}
    assert files == set(SOURCES), "every config has exactly one SOURCES.csv row"
    for name in files:
        assert SOURCES[name]["source"] and SOURCES[name]["repo_id"]
        assert (".trimmed." in name) == SOURCES[name]["notes"].startswith("TRIMMED"), name


# ------------------------------------------------------------------------------------------ encoder-decoder
def test_whisper_small_sizes_both_stacks_and_its_cross_attention_cache() -> None:
    """openai/whisper-small (refused before: no intermediate_size). d 768, FFN 3072, 12 + 12 layers, 12 heads of
    64, vocab 51,865, 80 mel bins, 1,500 encoder positions, 448 decoder positions; q/v/out biases (k_proj none)."""
    arch = parse_config("openai/whisper-small", _config("openai__whisper-small"))
    d, f, vocab = 768, 3072, 51865
    attention = 4 * d * d + 3 * d                   # q, k, v, out; biases on q, v, out
    mlp = (f * d + f) + (d * f + d)                 # fc1, fc2 with biases
    encoder_layer = attention + mlp + 2 * 2 * d     # two LayerNorms (weight + bias)
    decoder_layer = 2 * attention + mlp + 3 * 2 * d  # self- and cross-attention, three LayerNorms
    front = (d * 80 * 3 + d) + (d * d * 3 + d)      # conv1 (80 -> 768, k 3), conv2 (768 -> 768, k 3)
    positions = 1500 * d + 448 * d                  # encoder table + decoder table
    expected = front + positions + 12 * encoder_layer + 12 * decoder_layer + 2 * 2 * d + vocab * d  # tied proj_out
    assert expected == 241_734_912
    assert count_parameters(arch).total == expected
    # KV: the decoder's self-attention grows per token; the cross-attention keeps K and V of the 1,500 encoder
    # outputs per request (in 16 bits: the float32 checkpoint is served in bf16)
    assert kv_bytes_per_token(arch, "bf16") == 12 * 2 * 12 * 64 * 2 == 36_864
    assert state_bytes_per_request(arch) == 12 * 1500 * 2 * 12 * 64 * 2 == 55_296_000
    assert arch.max_context == 448
    assert any("encoder-decoder" in n and "1,500 encoder tokens" in n for n in arch.notes)
    assert arch.mixer_counts() == {"self_and_cross_attention": 12}


def test_m2m100_takes_the_class_defaults_the_trimmed_config_leaves_out() -> None:
    """facebook/m2m100_418M (trimmed: no decoder_attention_heads, no max_position_embeddings; M2M100Config's 16
    and 1,024 apply). d 1024, FFN 4096, 12 + 12 layers, vocab 128,112, shared (tied) embeddings, sinusoidal
    positions (a buffer, not stored), biases everywhere, a final LayerNorm after each stack."""
    arch = parse_config("facebook/m2m100_418M", _config("facebook__m2m100_418M.trimmed"))
    d, f, vocab = 1024, 4096, 128112
    attention = 4 * d * d + 4 * d
    mlp = (f * d + f) + (d * f + d)
    expected = vocab * d + 12 * (attention + mlp + 4 * d) + 12 * (2 * attention + mlp + 6 * d) + 2 * 2 * d
    assert expected == 483_905_536
    assert count_parameters(arch).total == expected
    assert kv_bytes_per_token(arch, "bf16") == 12 * 2 * 16 * 64 * 2  # decoder heads: the class default 16
    assert state_bytes_per_request(arch) == 12 * 1024 * 2 * 16 * 64 * 2  # the encoder's 1,024 positions, float32 -> 16 bits
    assert any("M2M100Config" in n and "decoder_attention_heads" in n for n in arch.notes)


def test_t5_v1_1_base_reads_t5_names_and_relative_positions() -> None:
    """google/t5-v1_1-base: d 768, d_kv 64 x 12 heads, gated-GELU FFN 2048 (wi_0, wi_1, wo), 12 + 12 layers, no
    biases, RMS norms (weights only), one 32 x 12 relative-position table per stack, untied head."""
    arch = parse_config("google/t5-v1_1-base", _config("google__t5-v1_1-base"))
    d, f, vocab, inner = 768, 2048, 32128, 12 * 64
    attention = 4 * d * inner
    mlp = 3 * d * f
    expected = (2 * vocab * d + 12 * (attention + mlp + 2 * d) + 12 * (2 * attention + mlp + 3 * d)
                + 2 * 32 * 12 + 2 * d)
    assert expected == 247_577_856
    assert count_parameters(arch).total == expected
    assert kv_bytes_per_token(arch, "bf16") == 12 * 2 * 12 * 64 * 2


def test_encoder_decoder_with_experts_is_refused_in_one_line() -> None:
    base = _config("facebook__m2m100_418M.trimmed")
    with pytest.raises(ConfigError, match="expert layers are not modelled"):
        parse_config("nllb-moe-like", {**base, "model_type": "nllb-moe", "num_experts": 128})


# ------------------------------------------------------------------------------------------ aliases, stubs
def test_n_local_heads_is_the_kv_head_count() -> None:
    """fishaudio/s2-pro's text_config (remote code, gpt-fast names): 32 heads, n_local_heads 8 KV heads of 128.
    Before, n_local_heads was not read and the model was sized as full multi-head attention (4x the KV)."""
    arch = parse_config("fishaudio/s2-pro", _config("fishaudio__s2-pro.trimmed"))
    assert (arch.hidden_size, arch.num_layers, arch.vocab_size) == (2560, 36, 155776)
    assert kv_bytes_per_token(arch, "bf16") == 36 * 2 * 8 * 128 * 2 == 147_456


def test_a_stub_text_config_falls_back_to_the_top_level_fields() -> None:
    """A Fuyu-style wrapper (constructed: adept/persimmon-8b-base's genuine values at the top level, the stub
    ``text_config: {"model_type": "persimmon"}`` as adept/fuyu-8b ships it; no genuine Fuyu config.json was
    found). Before, the stub was read as the language model and refused (no hidden_size)."""
    persimmon = _config("adept__persimmon-8b-base")
    wrapper = {**persimmon, "model_type": "fuyu", "architectures": ["FuyuForCausalLM"], "patch_size": 30,
               "num_channels": 3, "text_config": {"model_type": "persimmon"}}
    h, f, vocab, hd = 4096, 16384, 262144, 64
    layer = (3 * h * h + 3 * h) + (h * h + h) + (2 * h * f + f + h) + 2 * 2 * h  # fused qkv, dense, relu² MLP
    qk_layernorm = 2 * 2 * hd  # per-head q and k LayerNorm, weight + bias
    exact = 36 * (layer + qk_layernorm) + 2 * vocab * h + 2 * h
    assert exact == 9_397_175_296
    for name, config in (("adept/persimmon-8b-base", persimmon), ("fuyu-style", wrapper)):
        arch = parse_config(name, config)
        assert arch.model_type == "persimmon"
        total = count_parameters(arch).total
        assert exact - total == 36 * 2 * hd  # the q/k LayerNorm biases, which the per-head q/k norm leaves out
        assert kv_bytes_per_token(arch, "bf16") == 36 * 2 * 64 * 64 * 2


def test_a_text_config_naming_only_a_family_takes_its_defaults() -> None:
    """Constructed (no genuine wrapper of this shape was found): ``text_config: {"model_type": "phi3"}`` and no
    shapes anywhere is Phi3Config's default model, as transformers builds it."""
    arch = parse_config("wrapper", {"model_type": "some_vlm", "text_config": {"model_type": "phi3"}})
    assert (arch.hidden_size, arch.num_layers, arch.vocab_size) == (3072, 32, 32064)
    assert any("Phi3Config" in n for n in arch.notes)


def test_a_genuine_text_config_naming_only_its_family_takes_that_familys_defaults() -> None:
    """llava-hf/llava-1.5-7b-hf's genuine config (tests/fixtures/configs_ii) gives its ``text_config`` only
    ``model_type: llama``, the vocabulary (32,064) and the context (4,096): the decoder's shapes are LlamaConfig's
    defaults (transformers: hidden_size 4096, intermediate_size 11008, 32 layers, 32 heads, KV heads = heads)."""
    arch = parse_config("llava-hf/llava-1.5-7b-hf",
                        json.loads((FIXTURES / "configs_ii" / "llava-hf__llava-1.5-7b-hf.json").read_text()))
    assert (arch.hidden_size, arch.num_layers, arch.vocab_size, arch.max_context) == (4096, 32, 32064, 4096)
    layer = arch.layers[0]
    assert (layer.mixer.num_heads, layer.mixer.num_kv_heads, layer.mlp.intermediate) == (32, 32, 11008)


# ------------------------------------------------------------------------------------------ the field table
def test_the_table_records_its_transformers_version_and_generator() -> None:
    table = json.loads((ROOT / "sizing_core" / "data" / "config_fields.json").read_text())
    assert table["transformers"] == transformers_version() == "4.57.1"
    assert "scripts/gen_config_fields.py" in table["_about"]
    assert (ROOT / "scripts" / "gen_config_fields.py").exists()
    assert len(class_types()) > 400
    assert class_fields("whisper")["encoder_decoder"] is True
    assert class_fields("llava")["sub_configs"]["text_config"] == "auto"
    assert class_fields("gpt2")["aliases"]["hidden_size"] == "n_embd"


_STANDARD_SHAPE = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
#: model_types whose default config is refused in one line, and why (anything else must size).
_REFUSED = {
    "deepseek_v2": "DeepseekV2Config's defaults have routed experts but no num_experts_per_tok",
    "nllb-moe": "encoder-decoder with experts: not modelled",
    "switch_transformers": "encoder-decoder with experts: not modelled",
    "fastspeech2_conformer": "a speech synthesiser: no text FFN width in its fields",
    "t5gemma": "encoder and decoder are sub-configs of their own",
}


def _has_default_shape(model_type: str) -> bool:
    fields, defaults = class_fields(model_type), class_defaults(model_type)
    return all(k in defaults for k in _STANDARD_SHAPE) or bool(fields.get("encoder_decoder")
                                                                   and "vocab_size" in defaults)


def test_one_config_of_every_model_type_with_a_default_shape_sizes() -> None:
    """For every model_type in the table whose class defaults give a shape: a config as its class writes it by
    default (every plain __init__ default) sizes, or is refused in one ConfigError line for a listed reason; no
    traceback."""
    types = [t for t in class_types() if _has_default_shape(t)]
    assert len(types) > 190
    sized, refused = [], []
    for model_type in types:
        defaults = class_fields(model_type).get("defaults") or {}
        config = {"model_type": model_type, **{k: v for k, v in defaults.items() if v is not None}}
        try:
            arch = parse_config(f"table/{model_type}", config)
        except ConfigError:
            refused.append(model_type)
            continue
        assert count_parameters(arch).total > 0
        sized.append(model_type)
    assert sorted(refused) == sorted(_REFUSED)
    assert {"whisper", "m2m_100", "seamless_m4t_v2", "bart", "t5", "llama", "persimmon"} <= set(sized)


def test_fit_states_the_encoder_decoder_cache() -> None:
    """`fit` says what it counted for an encoder-decoder: both stacks and the two caches."""
    from pipeline.cli.fit import fit_result

    arch = parse_config("openai/whisper-small", _config("openai__whisper-small"))
    result = fit_result("openai/whisper-small", "l4", "bf16", context=448, arch=arch)
    assert result["fits"] and result["gpus"] == 1
    [note] = [w for w in result["warnings"] if w.startswith("encoder-decoder")]
    assert "12 encoder and 12 decoder layers" in note and "1,500 encoder tokens per request" in note


def test_the_generator_reads_a_class_as_transformers_defines_it() -> None:
    """scripts/gen_config_fields.py's reading of one configuration class, on a stand-in class of the same shape
    (transformers itself is a build-time tool, not installed here): aliases, signature defaults (a derived
    ``None`` kept as null, bookkeeping left out), sub-config keys, the encoder-decoder flag."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_config_fields", ROOT / "scripts" / "gen_config_fields.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)

    class TextConfig:
        model_type = "toy_text"

    class ToyConfig:
        model_type = "toy"
        attribute_map = {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"}
        sub_configs = {"text_config": TextConfig, "vision_config": object}

        def __init__(self, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                     head_dim=None, dropout=0.1, pad_token_id=1, layer_types=("full", "sliding"),
                     is_encoder_decoder=True, **kwargs):  # noqa: ANN001, ANN003 - a stand-in class
            pass

    assert gen.entry("toy", ToyConfig) == {
        "class": "ToyConfig",
        "aliases": {"hidden_size": "d_model", "num_attention_heads": "encoder_attention_heads"},
        "defaults": {"d_model": 512, "decoder_layers": 6, "encoder_attention_heads": 8, "encoder_layers": 6,
                     "head_dim": None, "is_encoder_decoder": True, "layer_types": ["full", "sliding"]},
        "sub_configs": {"text_config": "toy_text", "vision_config": "auto"},
        "encoder_decoder": True,
    }


def test_experts_switched_off_are_not_counted() -> None:
    """zzmind-0.5B (MiniMind architecture): ``use_moe: false`` beside ``num_experts: 4``. Before, the experts were
    counted (1.61B parameters, 24 MoE layers); the model is dense. Hand count: h 1280, 24 layers, 16 heads and 8 KV
    heads of 80, SwiGLU 4032, vocab 6400 tied. Its design notes audit 497,812,480 instantiated parameters: 3,840
    more, MiniMind's per-head q/k RMSNorm (2 x 80 per layer), which the config does not state."""
    arch = parse_config("zzmind-0.5B", _config("zzmind__zzmind-0.5B"))
    h, heads, kv, hd, f, vocab = 1280, 16, 8, 80, 4032, 6400
    layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * f + 2 * h
    expected = 24 * layer + vocab * h + h
    assert expected == 497_808_640 == 497_812_480 - 24 * 2 * hd
    assert arch.mlp_counts() == {"dense": 24}
    assert count_parameters(arch).total == expected


def test_awq_modules_to_not_convert_are_substrings_of_module_paths() -> None:
    """AWQ loaders keep a module unquantized when a ``modules_to_not_convert`` name is a substring of its path
    (vLLM's ``is_layer_skipped_awq``: ``any(name in prefix ...)``). QuantTrio's DeepSeek-V3.2-Exp-AWQ lists
    ``"indexer"`` and whole layers (``"model.layers.0."``, ``"model.layers.60."``): every layer's indexer and the
    three dense layers and the last MoE layer stay BF16, while ``"model.layers.1."`` leaves layer 10 quantized
    (the dot ends the number). Read as module names or prefixes, none of them matched and all went 4-bit."""
    from sizing_core.formats import tensor_bits

    arch = parse_config("QuantTrio/DeepSeek-V3.2-Exp-AWQ", _config("QuantTrio__DeepSeek-V3.2-Exp-AWQ"))
    assert arch.native.weight_format == "awq_int4"
    bits = dict(zip((t.name for t in arch.tensors), tensor_bits(arch, "native"), strict=True))
    awq = 4 + (16 + 4) / 128  # 4-bit values, an FP16 scale and a packed 4-bit zero per group of 128
    for layer in (0, 1, 2, 60):  # named whole: attention, indexer, MLP or experts all BF16
        assert {b for n, b in bits.items() if n.startswith(f"model.layers.{layer}.")} == {16}
    for layer in (3, 10, 59):
        assert all(b == 16 for n, b in bits.items() if n.startswith(f"model.layers.{layer}.self_attn.indexer."))
        assert bits[f"model.layers.{layer}.self_attn.q_b_proj"] == pytest.approx(awq)
        assert bits[f"model.layers.{layer}.mlp.experts.down_proj"] == pytest.approx(awq)


def test_mlx_per_module_bits_are_the_checkpoints() -> None:
    """mlx-lm writes what its quant_predicate chose per module beside the base ``bits``/``group_size``: Kimi-Linear's
    4-bit conversion keeps the MoE router of layer 1 at 8 bits in groups of 64 (8 + 2 x 16 / 64 = 8.5 bits a value:
    an FP16 scale and bias per group), while the experts are 4-bit (4 + 0.5). A router no entry names stays as it
    was (16): mlx-lm's MoE models whose router is a Linear name it in their quant_predicate (this genuine config
    names every MoE layer's at 8 bits; its quoter kept one), and DeepSeek-style routers are plain parameters that
    ``nn.quantize`` skips. Read as one base width, the named router was 16 bits."""
    from sizing_core.formats import tensor_bits

    arch = parse_config("mlx-community/Kimi-Linear-48B-A3B-Instruct-4bit",
                        _config("mlx-community__Kimi-Linear-48B-A3B-Instruct-4bit.trimmed"))
    assert arch.native.weight_format == "mlx_int4" and arch.native.group_size == 64
    bits = dict(zip((t.name for t in arch.tensors), tensor_bits(arch, "native"), strict=True))
    assert bits["model.layers.1.mlp.gate"] == pytest.approx(8 + 2 * 16 / 64)
    assert bits["model.layers.2.mlp.gate"] == 16
    assert bits["model.layers.1.mlp.experts.down_proj"] == pytest.approx(4 + 2 * 16 / 64)
    # mlx-lm names the routed experts of a MoE block one ``switch_mlp`` (its SwitchGLU; Mixtral's block
    # ``block_sparse_moe``) and some routers ``router`` (gpt-oss): a mixed recipe's entries for them (the same genuine
    # config, four entries added) set those modules' bits or keep them unquantized (``false``); the modules of other
    # layers stay at the base
    mixed = _config("mlx-community__Kimi-Linear-48B-A3B-Instruct-4bit.trimmed")
    mixed["quantization"] = {**mixed["quantization"],
                             "model.layers.3.mlp.switch_mlp.down_proj": {"bits": 8, "group_size": 64},
                             "model.layers.4.block_sparse_moe.switch_mlp.up_proj": {"bits": 6, "group_size": 64},
                             "model.layers.5.mlp.router": {"bits": 8, "group_size": 64},
                             "model.layers.6.block_sparse_moe.switch_mlp.gate_proj": False}
    mixed_bits = dict(zip((t.name for t in arch.tensors),
                          tensor_bits(parse_config("mlx-community/Kimi-Linear-48B-A3B-Instruct-4bit", mixed), "native"),
                          strict=True))
    assert mixed_bits["model.layers.3.mlp.experts.down_proj"] == pytest.approx(8 + 2 * 16 / 64)
    assert mixed_bits["model.layers.4.mlp.experts.up_proj"] == pytest.approx(6 + 2 * 16 / 64)
    assert mixed_bits["model.layers.3.mlp.experts.up_proj"] == mixed_bits["model.layers.5.mlp.experts.down_proj"] \
        == mixed_bits["model.layers.6.mlp.experts.up_proj"] == pytest.approx(4 + 2 * 16 / 64)
    assert mixed_bits["model.layers.5.mlp.gate"] == pytest.approx(8 + 2 * 16 / 64)
    assert mixed_bits["model.layers.6.mlp.experts.gate_proj"] == 16 and mixed_bits["model.layers.6.mlp.gate"] == 16
    # a module mapped to false stayed unquantized at conversion (the same genuine config, one entry added)
    config = _config("mlx-community__Kimi-Linear-48B-A3B-Instruct-4bit.trimmed")
    config["quantization"] = {**config["quantization"], "model.embed_tokens": False}
    kept = parse_config("mlx-community/Kimi-Linear-48B-A3B-Instruct-4bit", config)
    kept_bits = dict(zip((t.name for t in kept.tensors), tensor_bits(kept, "native"), strict=True))
    assert bits["model.embed_tokens"] == pytest.approx(4.5)  # MLX quantizes the embeddings too
    assert kept_bits["model.embed_tokens"] == 16 and kept_bits["lm_head"] == pytest.approx(4.5)


def test_a_tower_the_config_names_but_does_not_shape_is_said_not_counted() -> None:
    """Phi-4-multimodal's config (TensorRT-LLM's copy, tests/fixtures/configs_ii) names an image encoder
    (``embd_layer.image_embd_layer``, built by the model's code) and a Conformer audio encoder
    (``audio_processor``) without shapes the rules read: both are 0 in the counts and each says so, with the key
    and the reason. Phi-3.5-vision, whose named CLIP is known, is counted and has no such note."""
    phi4 = parse_config("microsoft/Phi-4-multimodal-instruct",
                        json.loads((FIXTURES / "configs_ii" / "microsoft__Phi-4-multimodal-instruct.modified.json").read_text()))
    counts = count_parameters(phi4)
    assert counts.vision == 0 and counts.audio == 0
    assert any(n.startswith("vision tower not counted (embd_layer.image_embd_layer") for n in phi4.notes)
    assert any(n.startswith("audio tower not counted (audio_processor") for n in phi4.notes)
    phi35 = parse_config("microsoft/Phi-3.5-vision-instruct",
                         json.loads((FIXTURES / "configs_ii" / "microsoft__Phi-3.5-vision-instruct.json").read_text()))
    assert count_parameters(phi35).vision > 0 and not any("not counted" in n for n in phi35.notes)


def test_the_text_active_count_leaves_out_the_towers() -> None:
    """llava-1.5-7b (genuine): the model card's 7B is the Llama-2-7B decoder. Its text_config gives only the
    vocabulary (32,064), the rest are Llama's defaults: 32 layers of 4 x 4096^2 attention + 3 x 4096 x 11008 MLP and
    two norms, a final norm, and the LM head 32,064 x 4096 (the lookup is not counted as active). ``active`` is
    the full forward, the CLIP tower and projector included; ``active_text`` is the decoder alone."""
    arch = parse_config("llava-hf/llava-1.5-7b-hf",
                        json.loads((FIXTURES / "configs_ii" / "llava-hf__llava-1.5-7b-hf.json").read_text()))
    counts = count_parameters(arch)
    decoder = 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096) + 4096 + 32064 * 4096
    assert counts.active_text == decoder == 6_607_605_760
    assert counts.vision > 0 and counts.active_model_card == decoder + counts.vision
