"""Family defaults as data: what a ``model_type``'s config class fills in when ``config.json`` leaves a key out.

The table is package data (``data/family_defaults.json``), one entry per ``model_type``, each citing the file it was
read from: the other names a family's configs use for the standard fields (``n_embd``, ``n_head``, ``n_embed``,
``num_layers``, ``kv_channels``, ...), the class defaults applied when a key is absent (``tie_word_embeddings``,
literal ``num_key_value_heads`` / ``head_dim`` defaults, ...), the MLP width rule (``4 x hidden`` when absent,
Qwen v1's ``intermediate_size`` counting both matrices), norm kind and biases, learned position tables, LM-head
biases. :func:`normalise` rewrites a config block into the standard field names before any builder reads it, so a
builder only ever sees ``hidden_size``, ``num_hidden_layers``, ``intermediate_size``, ...

Beneath the hand-written table lies the generated one, ``data/config_fields.json`` (``scripts/gen_config_fields.py``
writes it from an installed transformers, whose version it records): for every model_type transformers defines, its
configuration class's ``attribute_map`` aliases and the ``__init__`` defaults of the shape fields. Its aliases are read
for every block of that model_type and its defaults fill the shape fields a config leaves out, at the top level and in
a wrapper's sub-config alike; a hand-written row wins wherever it says something.

"Absent" means the key is not in the block: an explicit ``null`` is what the config class receives as ``None``
(``num_key_value_heads: null`` means "as many as the attention heads", not the class's literal default).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..tensors import Role, Tensor, vector
from .fields import Fields

_DATA = Path(__file__).parents[1] / "data" / "family_defaults.json"
_CLASS_FIELDS = Path(__file__).parents[1] / "data" / "config_fields.json"

#: Other names for the standard fields that any config may use (GPT-2 / Falcon / ChatGLM / MPT style), read for
#: every model_type after its own aliases.
GENERIC_ALIASES = {
    "num_hidden_layers": ("n_layers", "num_layers", "n_layer", "num_blocks"),
    "hidden_size": ("d_model", "n_embd", "n_embed", "dim", "embedding_dim"),
    "num_attention_heads": ("n_heads", "n_head", "num_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_kv_heads", "n_head_kv", "num_multi_query_heads", "n_local_heads"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim", "dff", "d_inner", "dim_ff"),
    "vocab_size": ("padded_vocab_size", "n_vocab"),
    "head_dim": ("kv_channels", "attention_head_dim"),
}


#: The fields that state a model's size: a block with none of them (under any name) only names a family.
_SHAPE_NAMES = frozenset({"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                          "encoder_layers", "decoder_layers",
                          *(n for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size")
                            for n in GENERIC_ALIASES[k])})


def states_a_shape(data: dict[str, Any]) -> bool:
    """Whether a config block gives any of the model's shape fields (else it is a stub naming a family)."""
    return any(data.get(k) is not None for k in _SHAPE_NAMES)


@lru_cache(maxsize=1)
def _families() -> dict[str, dict[str, Any]]:
    return json.loads(_DATA.read_text())["families"]


def family_data(model_type: str) -> dict[str, Any]:
    """The table's entry for ``model_type`` (empty when the table has none)."""
    return _families().get(model_type, {})


def known_types() -> tuple[str, ...]:
    return tuple(_families())


@lru_cache(maxsize=1)
def _class_table() -> dict[str, Any]:
    return json.loads(_CLASS_FIELDS.read_text())


def class_fields(model_type: str) -> dict[str, Any]:
    """The generated table's entry for ``model_type``: what transformers' configuration class says (``class``,
    ``aliases`` standard name -> config.json name, ``defaults`` under config.json names, ``sub_configs``,
    ``encoder_decoder``); empty for a model_type transformers does not define."""
    return _class_table()["model_types"].get(model_type, {})


def class_types() -> tuple[str, ...]:
    return tuple(_class_table()["model_types"])


def transformers_version() -> str:
    """The transformers release the generated table was read from."""
    return str(_class_table()["transformers"])


def class_defaults(model_type: str) -> dict[str, Any]:
    """The class's shape defaults, each under its config.json name and the standard names its attribute_map gives
    it (WhisperConfig's ``d_model`` is also ``hidden_size``); ``null`` defaults (derived by the class) left out."""
    return {name: value for names, value in _default_groups(model_type) for name in names}


def _default_groups(model_type: str) -> list[tuple[tuple[str, ...], Any]]:
    """Each shape default with every name it goes by (its config.json name first)."""
    fields = class_fields(model_type)
    aliases = fields.get("aliases") or {}
    shape = set(_class_table()["shape_fields"])
    groups = []
    for stored, value in (fields.get("defaults") or {}).items():
        names = (stored, *(c for c, target in aliases.items() if target == stored and c != stored))
        if value is not None and shape.intersection(names):
            groups.append((names, value))
    return groups


# ------------------------------------------------------------------------------------------ normalisation
def _absent(data: dict[str, Any], key: str) -> bool:
    return key not in data


def _width(rule: str, hidden: int) -> int:
    """The MLP width a rule names: ``4*hidden_size`` (GPT-2/Falcon/BLOOM/MPT), ``3.5*hidden_size`` rounded down to a
    multiple of 32 (RWKV-5/6)."""
    if rule == "4*hidden_size":
        return 4 * hidden
    if rule == "int(3.5*hidden_size)//32*32":
        return int(hidden * 3.5) // 32 * 32
    raise ValueError(f"unknown width rule {rule!r}")  # a table error, caught by tests/test_family_defaults.py


def normalise(text: Fields, top: Fields, model_type: str, *, nested: bool) -> tuple[Fields, list[str]]:
    """``text`` with the family's aliases resolved, its class defaults filled in and its width rule applied.

    ``nested``: the block is a multimodal wrapper's text sub-config, which its class builds with the text family's
    default model size (llava-hf's ``text_config`` often gives only ``vocab_size``: LlamaConfig's 4096 / 32 layers
    / 11008 are the model). Returns the new block and one note per kind of change (empty when nothing changed)."""
    entry = family_data(model_type)
    data = dict(text.data)
    notes: list[str] = []
    renamed = []  # only the generic names are noted: a family's own names are its facts, not assumptions
    for stored, canonical in (entry.get("aliases") or {}).items():
        if _absent(data, canonical) and not _absent(data, stored):
            data[canonical] = data[stored]
    for canonical, stored in (class_fields(model_type).get("aliases") or {}).items():
        if _absent(data, canonical) and _count(data.get(stored)):
            data[canonical] = data[stored]
    for canonical, stored_names in GENERIC_ALIASES.items():
        if data.get(canonical) is None:
            stored = next((s for s in stored_names if isinstance(data.get(s), int) and not isinstance(data[s], bool)),
                          None)
            if stored is not None:
                data[canonical] = data[stored]
                renamed.append(f"{canonical} from {stored}")
    if renamed:
        notes.append("aliases: " + ", ".join(renamed))
    hand = {**(entry.get("nested_defaults") or {} if nested else {}), **(entry.get("defaults") or {})}
    defaults = dict(hand)
    for names, value in _default_groups(model_type):  # a group is filled only when none of its names is given
        if all(_absent(data, k) and _absent(top.data, k) and k not in hand for k in names):
            defaults.update(dict.fromkeys(names, value))
    filled = sorted(k for k in defaults if _absent(data, k) and _absent(top.data, k))
    for key in filled:
        data[key] = defaults[key]
    if filled:
        generated = [k for k in filled if k not in hand]
        source = f" (transformers {transformers_version()} {class_fields(model_type)['class']})" if generated else ""
        notes.append(f"{model_type} config-class defaults used for: {', '.join(filled)}{source}")
    mlp = entry.get("mlp") or {}
    rule = mlp.get("width_absent") or _derived_width(model_type)
    if rule and isinstance(data.get("hidden_size"), int) and (
            data.get("intermediate_size") is None or mlp.get("width_rule") == "always"):
        data["intermediate_size"] = _width(rule, data["hidden_size"])
        notes.append(f"MLP width {rule} = {data['intermediate_size']:,} ({model_type} modelling code)")
    divisor = mlp.get("width_divisor")
    if divisor and isinstance(data.get("intermediate_size"), int) and not isinstance(data["intermediate_size"], bool):
        data["intermediate_size"] = data["intermediate_size"] // divisor
        notes.append(f"per-matrix MLP width intermediate_size / {divisor} = {data['intermediate_size']:,} "
                     f"({model_type}'s intermediate_size counts gate and up together)")
    _kv_rule(entry, data, notes)
    if "num_key_value_heads" in filled and not _divides(data.get("num_key_value_heads"), data.get("num_attention_heads")):
        data["num_key_value_heads"] = None  # older than the class default (Qwen2's 32 for a 28-head model): all heads
        notes.append("num_key_value_heads: the class default does not divide the heads; all heads")
    return Fields(text.model, data, text.path), notes


_WIDTH_FIELDS = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size")


def _derived_width(model_type: str) -> str | None:
    """The MLP width rule of a transformers class that states no width (a null default, or no width field at all:
    GPT-Neo, CodeGen, ImageGPT, OpenAI GPT, XLM): its modelling code's 4 x hidden_size."""
    fields = class_fields(model_type)
    if not fields or "encoder_decoder" in fields:
        return None
    defaults = fields.get("defaults") or {}
    if any(defaults.get(k) is not None for k in _WIDTH_FIELDS):
        return None
    return "4*hidden_size"


def _count(value: Any) -> bool:  # noqa: ANN401 - a config value
    return isinstance(value, int) and not isinstance(value, bool)


def _kv_rule(entry: dict[str, Any], data: dict[str, Any], notes: list[str]) -> None:
    """Families whose KV head count is a switch rather than a number."""
    rule = (entry.get("attention") or {}).get("kv_heads")
    if rule == "multi_query":  # GPT-BigCode
        data["num_key_value_heads"] = 1 if data.get("multi_query") else data.get("num_attention_heads")
        notes.append(f"KV heads {'1 (multi_query)' if data.get('multi_query') else 'all (no multi_query)'}")
    elif rule == "chatglm" and data.get("multi_query_attention"):
        data["num_key_value_heads"] = data.get("multi_query_group_num")
    elif rule == "chatglm":
        data["num_key_value_heads"] = data.get("num_attention_heads")


def _divides(kv: Any, heads: Any) -> bool:  # noqa: ANN401 - config values of any type
    """KV heads that can serve these attention heads (or values the field checks will name later)."""
    if not (isinstance(kv, int) and isinstance(heads, int)) or isinstance(kv, bool) or kv <= 0 or heads <= 0:
        return True
    return kv <= heads and heads % kv == 0


# ------------------------------------------------------------------------------------------ shapes
def _switch(c: Fields, value: Any) -> bool | None:  # noqa: ANN401 - a table value
    """A table switch: true/false, the name of the config key that decides it, or None (the decoder reads the
    config's own keys)."""
    if isinstance(value, str):
        return c.bool(value)
    return value


def decoder_switches(c: Fields, model_type: str) -> dict[str, Any]:
    """What the table fixes for the standard decoder of ``model_type`` (config.fields._decoder's keyword switches)."""
    entry = family_data(model_type)
    out: dict[str, Any] = {}
    mlp, attention = entry.get("mlp") or {}, entry.get("attention") or {}
    if "gated" in mlp:
        out["gated"] = mlp["gated"]
    if "bias" in mlp:
        out["mlp_bias"] = _switch(c, mlp["bias"])
    for key, switch in (("bias", "attn_bias"), ("o_bias", "o_bias"), ("fused_qkv", "fused_qkv")):
        if key in attention:
            out[switch] = _switch(c, attention[key])
    norms = layer_norm_vectors(model_type, int(entry.get("norms_per_layer", 2)))
    if norms is not None:
        out["norms"] = norms
    return out


_NORM_VECTORS = {"rms": 1, "layernorm_no_bias": 1, "layernorm": 2, "none": 0}


def layer_norm_vectors(model_type: str, norms_per_layer: int) -> int | None:
    """Hidden-size vectors the norms of one layer hold (LayerNorm: weight and bias), or None for the default."""
    kind = family_data(model_type).get("norm")
    if kind is None and norms_per_layer == 2:
        return None
    return norms_per_layer * _NORM_VECTORS[kind or "rms"]


def final_norm_vectors(c: Fields, model_type: str) -> int:
    """Hidden-size vectors of the final norm; none where a switch removes it (OPT without do_layer_norm_before)."""
    entry = family_data(model_type)
    if entry.get("final_norm") is False:  # BERT: every layer ends in its own LayerNorm
        return 0
    if entry.get("final_norm_key") and not c.bool(entry["final_norm_key"], True):
        return 0
    return _NORM_VECTORS[entry.get("norm") or "rms"]


def extra_tensors(c: Fields, model_type: str) -> list[Tensor]:
    """Model-level tensors the standard decoder does not have: a learned position table, token-type embeddings
    and a pooler (BERT), a LayerNorm after the word embeddings (BLOOM, BERT), an LM-head bias (GPT-J, Phi)."""
    entry = family_data(model_type)
    h = c.int("hidden_size")
    out: list[Tensor] = []
    if entry.get("positions") == "learned":
        rows = c.int("max_position_embeddings") + int(entry.get("position_offset", 0))
        out.append(Tensor("model.embed_positions", Role.POSITION, rows, h))
    if entry.get("token_types_key") and c.int(entry["token_types_key"], 0, minimum=0):
        out.append(Tensor("model.embed_token_types", Role.POSITION, c.int(entry["token_types_key"]), h))
    if entry.get("pooler"):
        out += [Tensor("model.pooler.dense", Role.ATTN_OTHER, h, h), vector("model.pooler", "bias", h, None)]
    if entry.get("embedding_norm"):
        out.append(vector("model", "word_embeddings_layernorm", 2 * h, None))
    if entry.get("lm_head_bias"):
        out.append(vector("lm_head", "bias", c.int("vocab_size"), None))
    if entry.get("ln0"):  # RWKV: a LayerNorm on the embeddings before the first block
        out.append(vector("model", "ln0", 2 * h, None))
    e = embedding_dim(c, model_type)
    if e is not None:  # OPT-350m: embeddings of word_embed_proj_dim, projected in and out of the decoder width
        out += [Tensor("model.project_in", Role.ATTN_OTHER, h, e), Tensor("model.project_out", Role.ATTN_OTHER, e, h)]
    if entry.get("extra_embedding_rows"):  # Molmo's new_embedding, Mllama's image tokens: rows beyond vocab_size
        out.append(Tensor("model.embed_tokens_extra", Role.TOKEN_EMBD, int(entry["extra_embedding_rows"]), h))
    return out


def embedding_dim(c: Fields, model_type: str) -> int | None:
    """The token embeddings' width when a family lets it differ from hidden_size (OPT's word_embed_proj_dim)."""
    key = family_data(model_type).get("embedding_dim_key")
    if not key or not c.has(key) or c.int(key) == c.int("hidden_size"):
        return None
    return c.int(key)


def structure(model_type: str) -> str:
    return str(family_data(model_type).get("structure", "decoder"))

