"""No traceback for any config: configs generated from real families with keys dropped, renamed,
nulled or set out of range either size or fail with one ConfigError line naming the model. Bounded examples, no
example database written, a fixed derandomized seed so the suite stays reproducible and fast."""

from __future__ import annotations

import json
import math
from copy import deepcopy
from typing import Any

from helpers import CONFIGS, FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sizing_core import size_model
from sizing_core.config.reader import parse_config
from sizing_core.errors import ConfigError

#: Real configs of every kind we read: the replay's and the fixture sets (encoder-decoders among them).
BASES = sorted([*CONFIGS.glob("*.json"), *(FIXTURES / "configs").glob("*.json"), *(FIXTURES / "configs_ii").glob("*.json"),
                *(FIXTURES / "configs_iii").glob("*.json")])
BASES = [p for p in BASES if not p.name.endswith((".hf_quant_config.json", ".quant.json"))]
CONFIG_DATA = {p.stem: json.loads(p.read_text()) for p in BASES}
WRAPPERS = ("text_config", "llm_config", "language_config", "thinker_config", "llm_cfg", "vision_config",
            "quantization_config")
#: Names a renamed key may take: the aliases configs really use, and nonsense.
RENAMES = ("n_embd", "n_embed", "n_head", "n_layer", "num_layers", "ffn_hidden_size", "n_inner", "kv_channels",
           "num_kv_heads", "multi_query_group_num", "padded_vocab_size", "d_model", "not_a_field", "hidden_size",
           "num_hidden_layers", "intermediate_size", "head_dim", "model_type")
#: Keys sizing reads, mutated more often than the rest (a config has dozens of keys nothing reads).
SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
              "intermediate_size", "moe_intermediate_size", "vocab_size", "tie_word_embeddings", "layer_types",
              "sliding_window", "num_experts", "n_routed_experts", "num_local_experts", "num_experts_per_tok",
              "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "n_embd", "n_head",
              "n_layer", "n_embed", "model_type", "torch_dtype", "dtype", "max_position_embeddings", "quant_method",
              "weight_block_size", "group_size", "bits", "config_groups", "ignore", "modules_to_not_convert",
              "depth", "embed_dim", "patch_size", "image_size", "hybrid_override_pattern", "linear_attn_config",
              "full_attention_interval", "first_k_dense_replace", "shared_expert_intermediate_size", "n_shared_experts",
              "multi_query", "new_decoder_architecture", "attention_hidden_size", "head_size", "state_size",
              "cross_attention_layers", "mlp_only_layers", "is_moe_layer", "compress_ratios", "block_configs",
              "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads",
              "encoder_ffn_dim", "decoder_ffn_dim", "max_source_positions", "max_target_positions", "num_mel_bins",
              "d_ff", "d_kv", "num_heads", "num_layers", "num_decoder_layers", "feed_forward_proj",
              "relative_attention_num_buckets", "is_encoder_decoder", "n_local_heads", "dim", "n_layer")
BAD_VALUES = st.one_of(st.none(), st.just(0), st.just(-1), st.just(10**30), st.just(2**40 + 1), st.just(1.5),
                       st.just(float("nan")), st.just(True), st.just("eight"), st.just([]), st.just([1, 2, 3]),
                       st.just({}), st.just({"a": 1}), st.integers(-(2**70), 2**70), st.text(max_size=6))


def _blocks(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The config and its nested blocks a mutation may touch."""
    return [config, *(config[k] for k in WRAPPERS if isinstance(config.get(k), dict))]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(CONFIG_DATA)))
    config = deepcopy(CONFIG_DATA[name])
    for _ in range(draw(st.integers(1, 3))):
        block = draw(st.sampled_from(_blocks(config)))
        if not block:
            continue
        shape = sorted(k for k in block if k in SHAPE_KEYS)
        key = draw(st.sampled_from(shape if shape and draw(st.booleans()) else sorted(block)))
        action = draw(st.sampled_from(("drop", "rename", "null", "bad")))
        if action == "drop":
            del block[key]
        elif action == "rename":
            block[draw(st.sampled_from(RENAMES))] = block.pop(key)
        elif action == "null":
            block[key] = None
        else:
            block[key] = draw(BAD_VALUES)
    return name, config


@settings(max_examples=400, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_a_mutated_config_sizes_or_gives_one_config_error(case: tuple[str, dict[str, Any]]) -> None:
    name, config = case
    try:
        report = size_model(parse_config(name, config))
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith(f"{name}:") and "\n" not in message, message
        return
    assert report.parameters > 0 and math.isfinite(report.parameters)
    assert all(v is None or (math.isfinite(v) and v >= 0) for v in report.weights_gib.values())
    assert all(math.isfinite(v) and v >= 0 for v in report.kv_cache_bytes_per_token.values())
    assert math.isfinite(report.recurrent_state_gib_per_request)
