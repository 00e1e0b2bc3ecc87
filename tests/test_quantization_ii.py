"""The checkpoint's own quantization decides which modules are in which format: bitsandbytes, GPTQ of any
width, compressed-tensors groups and ignore lists, MLX, FBGEMM FP8, ModelOpt sidecars; towers keep the checkpoint
dtype unless the scheme converts them."""

from __future__ import annotations

import json
from copy import deepcopy

import pytest
from helpers import CONFIGS, FIXTURES

from sizing_core import size_model
from sizing_core.config.reader import parse_config
from sizing_core.formats import tensor_bits, weight_bytes
from sizing_core.tensors import Role

DIR = FIXTURES / "configs_ii"


def _load(name: str) -> dict:
    return json.loads((DIR / f"{name}.json").read_text())


def _bits(arch, name_part: str) -> float:  # noqa: ANN001 - an Architecture
    return next(b for t, b in zip(arch.tensors, tensor_bits(arch, "native"), strict=True) if name_part in t.name)


def test_bitsandbytes_nf4_matches_the_checkpoint_bytes() -> None:
    """Molmo-7B-D NF4 (once: native unknown and the CLI crashed on None + float): linear weights of the
    language model at 4 bits + a float32 absmax per 64 = 4.5 bits; embeddings, LM head and the vision backbone
    (llm_int8_skip_modules) in float16. The index's total_size is 6,661,964,712 bytes."""
    arch = parse_config("molmo", _load("reubzdubz__Molmo7B_D_NF4Quant"))
    assert arch.native.weight_format == "bnb_nf4" and not arch.native.towers
    assert _bits(arch, "mlp.up_proj") == 4 + 32 / 64
    assert _bits(arch, "model.vision_backbone.image_vit.transformer.resblocks.attn.q_proj") == 16
    checkpoint = 6_661_964_712
    assert abs(weight_bytes(arch, "native") - checkpoint) / checkpoint < 1e-4  # 16 KB short: bnb's quant maps


def test_gptq_3bit_is_not_4bit() -> None:
    """TheBloke/Genz-70b-GPTQ gptq-3bit branch: bits 3, group_size -1 (one scale and zero per output row over the
    whole input), desc_act (an int32 g_idx per input channel): 3 + (16 + 3) / in + 32 / out bits."""
    arch = parse_config("genz", _load("TheBloke__Genz-70b-GPTQ"))
    assert arch.native.weight_format == "gptq_int3"
    assert _bits(arch, "layers.0.self_attn.q_proj") == 3 + 19 / 8192 + 32 / 8192
    assert _bits(arch, "layers.0.mlp.down_proj") == 3 + 19 / 28672 + 32 / 8192
    assert _bits(arch, "embed_tokens") == 16 and _bits(arch, "lm_head") == 16
    # once every GPTQ checkpoint was read as AWQ 4-bit: 4 + 20/128 bits
    assert size_model(arch).weights_gib["native"] < 0.8 * size_model(arch).weights_gib["awq_int4"]


def test_compressed_tensors_w4a16_and_w8a8_keep_the_ignored_lm_head() -> None:
    """EXAONE 4.0 1.2B exports: int4 group 128 (4 + 16/128 bits) and int8 per channel (8 + 32/in); ignore
    [lm_head], and the LM head is the tied embedding: BF16 either way."""
    w4 = parse_config("w4", _load("his0si__EXAONE-4.0-1.2B.w4a16"))
    assert w4.native.weight_format == "int4" and _bits(w4, "mlp.up_proj") == 4 + 16 / 128
    w8 = parse_config("w8", _load("his0si__EXAONE-4.0-1.2B.w8a8"))
    assert w8.native.weight_format == "int8" and _bits(w8, "mlp.up_proj") == 8 + 32 / 2048
    assert _bits(w8, "embed_tokens") == 16


def test_mlx_quantizes_embeddings_too() -> None:
    """An MLX 3-bit conversion (no quant_method): every linear layer and the embeddings / LM head in 3 bits plus a
    16-bit scale and bias per 64; norms stay BF16."""
    arch = parse_config("mlx", _load("roshinpv__mpx.mlx-3bit"))
    assert arch.native.weight_format == "mlx_int3"
    assert _bits(arch, "self_attn.q_proj") == _bits(arch, "embed_tokens") == _bits(arch, "lm_head") == 3 + 32 / 64
    assert _bits(arch, "layernorms") == 16


def test_modelopt_sidecar_keeps_mla_attention_in_bf16() -> None:
    """nvidia's DeepSeek-R1 NVFP4 hf_quant_config.json (with DeepSeek-V3's config): exclude_modules lists every MLA
    projection, so attention stays BF16 while experts, shared experts and dense MLPs are NVFP4 (4 + 8/16 bits)."""
    quant = json.loads((DIR / "nvidia__DeepSeek-R1-FP4.quant.json").read_text())
    arch = parse_config("r1", json.loads((CONFIGS / "deepseek-ai__DeepSeek-V3.json").read_text()), quant)
    assert _bits(arch, "layers.5.self_attn.q_b_proj") == 16 and _bits(arch, "layers.5.self_attn.kv_b_proj") == 16
    assert _bits(arch, "layers.5.mlp.experts.up_proj") == 4.5 and _bits(arch, "layers.0.mlp.up_proj") == 4.5
    # asking the NVFP4 checkpoint for NVFP4 is asking for the checkpoint; NVFP4 made from DeepSeek-V3's own
    # (FP8-block) checkpoint quantizes attention too, so it is smaller than nvidia's
    assert weight_bytes(arch, "nvfp4") == weight_bytes(arch, "native")
    v3 = parse_config("v3", json.loads((CONFIGS / "deepseek-ai__DeepSeek-V3.json").read_text()))
    assert v3.native.weight_format == "fp8_block"
    assert weight_bytes(v3, "nvfp4") < weight_bytes(arch, "native")


def _llama405_fbgemm() -> dict:
    """Constructed (no genuine Llama-3.1-405B-Instruct-FP8 config was found): the 405B shape with an FBGEMM FP8
    quantization_config keeping, as Meta's checkpoint does, every attention projection (and the first and last
    layers' MLP) in BF16 through modules_to_not_convert."""
    cfg = {"model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126,
           "num_attention_heads": 128, "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16",
           "max_position_embeddings": 131072}
    keep = [f"model.layers.{i}.self_attn.{p}" for i in range(126) for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
    keep += [f"model.layers.{i}.mlp.{p}" for i in (0, 125) for p in ("gate_proj", "up_proj", "down_proj")]
    return {**cfg, "quantization_config": {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                                           "modules_to_not_convert": [*keep, "lm_head"]}}


def test_fbgemm_fp8_honours_modules_to_not_convert() -> None:
    arch = parse_config("405b-fp8", _llama405_fbgemm())
    assert arch.native.weight_format == "fp8_channel"
    assert _bits(arch, "layers.7.self_attn.q_proj") == 16 and _bits(arch, "layers.0.mlp.up_proj") == 16
    assert _bits(arch, "layers.7.mlp.up_proj") == 8 + 32 / 16384  # FP8 with a float32 scale per output row
    h, i, hd = 16384, 53248, 128
    attn = h * 128 * hd + 2 * h * 8 * hd + 128 * hd * h
    bf16_linear = 126 * attn + 2 * 3 * h * i
    fp8_linear = 124 * (2 * i * h * (8 + 32 / h) + h * i * (8 + 32 / i)) / 8
    other = 2 * 128256 * h + 126 * 2 * h + h  # embeddings, LM head, norms: BF16
    assert weight_bytes(arch, "native") == pytest.approx(2 * (bf16_linear + other) + fp8_linear)
    # as if every linear layer were FP8 (what the old rule gave: 0.83 x the engine's logged weights): 0.84 x here
    everything = parse_config("405b-all", {**_llama405_fbgemm(), "quantization_config": {
        "quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head"]}})
    assert 0.80 < weight_bytes(everything, "native") / weight_bytes(arch, "native") < 0.86


def test_towers_follow_the_checkpoint() -> None:
    """A scheme that converts every linear layer (bitsandbytes, compressed-tensors, ModelOpt, FP8) quantizes the
    vision tower too unless its exclusions name one; GPTQ/AWQ quantize the language model only; a scheme inside
    text_config covers the language model only."""
    llava = _load("llava-hf__llava-1.5-7b-hf")
    bnb = parse_config("llava-bnb", {**llava, "quantization_config": {"quant_method": "bitsandbytes",
                                                                      "load_in_4bit": True,
                                                                      "bnb_4bit_quant_type": "nf4"}})
    assert bnb.native.towers and _bits(bnb, "vision_tower.encoder.layers.mlp.fc1") == 4.5
    assert _bits(bnb, "vision_tower.encoder.layers.mlp.fc1.bias") == 16  # biases, norms, embeddings are not linear
    skip = deepcopy(llava) | {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                                      "llm_int8_skip_modules": ["vision_tower", "multi_modal_projector"]}}
    assert _bits(parse_config("llava-skip", skip), "vision_tower.encoder.layers.mlp.fc1") == 16
    awq = parse_config("llava-awq", {**llava, "quantization_config": {"quant_method": "awq", "bits": 4,
                                                                      "group_size": 128}})
    assert _bits(awq, "vision_tower.encoder.layers.mlp.fc1") == 16 and _bits(awq, "mlp.up_proj") == 4 + 20 / 128
    kimi = parse_config("kimi", json.loads((CONFIGS / "moonshotai__Kimi-K2.5.json").read_text()))
    assert all(b == 16 for t, b in zip(kimi.tensors, tensor_bits(kimi, "native"), strict=True) if t.is_tower)


def test_compressed_tensors_groups_with_their_own_targets() -> None:
    """Constructed: NVFP4 on routed experts (a regex target) and FP8 per channel on every other linear layer."""
    cfg = json.loads((CONFIGS / "Qwen__Qwen3-30B-A3B.json").read_text())
    cfg["quantization_config"] = {"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {
        "experts": {"targets": ["re:.*mlp\\.experts.*"], "weights": {"num_bits": 4, "type": "float", "group_size": 16}},
        "rest": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}
    arch = parse_config("mixed", cfg)
    assert arch.native.weight_format == "mixed"
    assert _bits(arch, "layers.3.mlp.experts.down_proj") == 4.5
    assert _bits(arch, "layers.3.self_attn.q_proj") == 8 + 32 / 2048
    assert next(b for t, b in zip(arch.tensors, tensor_bits(arch, "native"), strict=True)
                if t.role == Role.ROUTER) == 16


def test_an_unknown_method_is_a_reason_not_a_failure() -> None:
    cfg = _load("mistralai__Mistral-7B-Instruct-v0.3") | {"quantization_config": {"quant_method": "hqq"}}
    report = size_model(parse_config("hqq", cfg))
    assert report.weights_gib["native"] is None and "hqq" in report.native_unsupported
    assert report.weights_gib["bf16"] > 13


def test_a_checkpoint_asked_for_its_own_format_is_the_checkpoint() -> None:
    """gpt-oss ships its routed experts in MXFP4 and attention, router and embeddings in BF16
    (``modules_to_not_convert`` of its config). ``--format mxfp4`` is that checkpoint, not MXFP4 made again from it
    with attention quantized too; another format (FP8) is still ours, quantizing attention as well."""
    from pathlib import Path

    import sizing_core

    path = Path(sizing_core.__file__).parent / "data" / "calibration" / "configs" / "openai__gpt-oss-120b.json"
    arch = parse_config("gpt-oss-120b", json.loads(path.read_text()))
    assert arch.native.experts_only and (arch.native.expert_format or arch.native.weight_format) == "mxfp4"
    assert weight_bytes(arch, "mxfp4") == weight_bytes(arch, "native")
    assert _bits(arch, "self_attn.q_proj") == 16
    fp8 = next(b for t, b in zip(arch.tensors, tensor_bits(arch, "fp8"), strict=True) if "self_attn.q_proj" in t.name)
    assert fp8 == 8.0  # our FP8 quantizes attention too: 8 bits (one scale per tensor)
