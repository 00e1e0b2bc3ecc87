"""sizing_core's types are plain dataclasses (``sizing_core/record.py``) that must publish exactly what the pydantic
models they replaced published, and still refuse bad values with a message naming the field.

The reference for "what pydantic publishes" is pydantic itself: each record is mirrored by a pydantic model with the
same fields and the configuration the old classes had (camelCase aliases, ``serialize_by_alias``), built here from
the dataclass, and both are dumped from the same real objects (configs of the replay bundle, the GPU catalog).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import pkgutil
import re
import typing
from datetime import UTC, datetime, timedelta, timezone

import pytest
from helpers import ROOT, arch, config_path
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel as pydantic_to_camel

import sizing_core
from sizing_core import ConfigError, SizingError, load_json, parse_config, parse_spec, size_model
from sizing_core.architecture import QuantScheme
from sizing_core.engines import default_engine
from sizing_core.finetune import finetune_memory
from sizing_core.gpus import GPU, catalog, get_gpu
from sizing_core.launch import launch_command
from sizing_core.layers import FullAttention, MoE
from sizing_core.placement.search import fewest_gpus
from sizing_core.record import InvalidField, Record, to_camel
from sizing_core.throughput import estimate


def _records() -> list[type[Record]]:
    for info in pkgutil.iter_modules(sizing_core.__path__):
        importlib.import_module(f"sizing_core.{info.name}")
    seen: list[type[Record]] = []
    todo = list(Record.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if dataclasses.is_dataclass(cls) and cls not in seen:
            seen.append(cls)
    return seen


def _holds_records(hint: object) -> bool:
    return (isinstance(hint, type) and issubclass(hint, Record)) or any(_holds_records(a)
                                                                        for a in typing.get_args(hint))


@functools.cache
def _pydantic_twin(cls: type[Record]) -> type[BaseModel]:
    """The pydantic model the record replaced: same fields, defaults and published names (fields holding records
    are typed ``Any``: pydantic then serializes the nested twins by their own models, as it did the old ones)."""
    hints = typing.get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        default = ... if f.default is dataclasses.MISSING else f.default
        hint = typing.Any if _holds_records(hints[f.name]) else hints[f.name]
        fields[f.name] = (hint, Field(default, serialization_alias=f.metadata.get("alias")))
    config = ConfigDict(arbitrary_types_allowed=True)
    if cls.camel:
        config |= ConfigDict(alias_generator=pydantic_to_camel, serialize_by_alias=True, populate_by_name=True)
    return create_model(f"Twin{cls.__name__}", __config__=config, **fields)


def _twin_of(obj: Record) -> BaseModel:
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    nested = {k: (_twin_of(v) if isinstance(v, Record) else
                  type(v)(_twin_of(x) if isinstance(x, Record) else x for x in v) if isinstance(v, list | tuple)
                  else v) for k, v in values.items()}
    return _pydantic_twin(type(obj)).model_construct(**nested)


def test_every_published_key_is_the_one_pydantics_camel_case_gives() -> None:
    names = {f.name for cls in _records() for f in dataclasses.fields(cls)}
    assert len(names) > 150  # every record of sizing_core, not an empty loop
    assert {n: to_camel(n) for n in names} == {n: pydantic_to_camel(n) for n in names}


def _same_as_pydantic(obj: Record) -> None:
    twin = _twin_of(obj)
    assert obj.model_dump(mode="json") == twin.model_dump(mode="json")
    assert obj.model_dump() == twin.model_dump()
    assert obj.model_dump(mode="json", by_alias=False) == twin.model_dump(mode="json", by_alias=False)
    assert obj.model_dump_json() == twin.model_dump_json()


@pytest.mark.parametrize("name", ["Qwen__Qwen3-8B", "Qwen__Qwen3-Next-80B-A3B-Thinking", "deepseek-ai__DeepSeek-V3",
                                  "deepseek-ai__DeepSeek-V4-Flash", "openai__gpt-oss-20b"])
def test_dumps_equal_pydantics_for_real_answers(name: str) -> None:
    if not config_path(name).is_file():
        pytest.fail(f"bundled config {name} missing")
    a = arch(name)
    report = size_model(a, 2, (8192, 131072))
    _same_as_pydantic(report)
    assert "weightsGiB" in report.model_dump() and "kvCacheGiBPerRequest" in report.model_dump(mode="json")
    assert isinstance(report.model_dump()["kvCacheGiBPerRequest"], list)
    h100 = get_gpu("h100")
    placed = fewest_gpus(a, h100, default_engine(h100), "fp8", 32768, 4)
    assert placed.plan is not None
    _same_as_pydantic(placed)
    assert isinstance(placed.model_dump()["plan"]["layersPerStage"], tuple)  # python mode keeps tuples
    assert isinstance(placed.model_dump(mode="json")["plan"]["layersPerStage"], list)
    _same_as_pydantic(estimate(a, h100, default_engine(h100), placed))
    launch = launch_command(placed, name)
    assert launch is not None
    _same_as_pydantic(launch)
    _same_as_pydantic(finetune_memory(a, "qlora"))
    _same_as_pydantic(a.native)


def test_gpu_rows_dump_as_pydantic_did() -> None:
    """The GPU row hash (placement cache, GPU catalog table) is taken over ``model_dump_json``: it must not move."""
    for gpu in catalog().values():
        _same_as_pydantic(gpu)


def test_catalog_cells_are_read_as_their_types() -> None:
    from sizing_core.gpus import gpu_from_row

    row = {f.name: None if (v := getattr(get_gpu("h100"), f.name)) is None else
           ";".join(v) if isinstance(v, tuple) else str(v).lower() if isinstance(v, bool) else str(v)
           for f in dataclasses.fields(GPU)}
    assert gpu_from_row(row) == get_gpu("h100")
    assert gpu_from_row(row | {"visible_mib": "81559.0", "supports_fp8": "yes"}).visible_mib == 81559
    for column, text, message in (("visible_mib", "81559.5", "must be an integer"), ("memory_gb", "80 GB", "number"),
                                  ("supports_fp8", "maybe", "true or false"), ("name", "", "is missing")):
        with pytest.raises(InvalidField, match=f"GPU.{column} .*{message}"):
            gpu_from_row(row | {column: text})


def test_model_copy_replaces_and_checks_again() -> None:
    h100 = get_gpu("h100")
    two = h100.model_copy(update={"max_gpus_per_node": 2})
    assert two.max_gpus_per_node == 2 and two.node_size == 2 and h100.node_size == 8 and two is not h100
    with pytest.raises(InvalidField, match=r"GPU.max_gpus_per_node must be greater than 0, got 0"):
        h100.model_copy(update={"max_gpus_per_node": 0})


def test_bad_values_are_refused_naming_the_field() -> None:
    with pytest.raises(InvalidField, match=r"FullAttention.num_kv_heads must be greater than 0, got 0"):
        FullAttention(num_heads=32, num_kv_heads=0, head_dim=128)
    with pytest.raises(InvalidField, match=r"MoE.top_k must be of type int, got 2.5"):
        MoE(num_experts=8, top_k=2.5, expert_intermediate=1024)
    with pytest.raises(TypeError, match="window"):  # unknown keywords: the dataclass refuses them
        FullAttention(num_heads=32, num_kv_heads=8, head_dim=128, window=4096)
    fields = {f.name: getattr(get_gpu("h100"), f.name) for f in dataclasses.fields(GPU)}
    with pytest.raises(InvalidField, match=r"GPU.id must match the pattern"):
        GPU(**fields | {"id": "H100 SXM"})
    with pytest.raises(InvalidField, match=r"GPU.kind must be one of 'datacenter', .*got 'server'"):
        GPU(**fields | {"kind": "server"})
    with pytest.raises(InvalidField, match=r"GPU.unified_fraction must be less than or equal to 1, got 1.5"):
        GPU(**fields | {"unified_fraction": 1.5})
    assert isinstance(InvalidField("A", "b", "c"), SizingError)  # the CLI prints it as one line


def test_tuple_fields_take_lists_as_pydantic_did() -> None:
    scheme = QuantScheme(source="spec", weight_format="fp8", exclude=["lm_head"], block_size=[128, 128])
    assert scheme.exclude == ("lm_head",) and scheme.block_size == (128, 128)
    assert hash(scheme) == hash(QuantScheme(source="spec", weight_format="fp8", exclude=("lm_head",),
                                            block_size=(128, 128)))


def test_a_bad_group_size_in_a_quant_config_leaves_native_unknown_instead_of_crashing() -> None:
    """Before, a ModelOpt sidecar with ``group_size: "abc"`` ended in a pydantic traceback; now the checkpoint's own
    format is unknown with the reason, and every other figure is still computed."""
    config = load_json("llama", config_path("meta-llama__Llama-3.1-8B").read_bytes())
    sidecar = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "W4A16_AWQ", "group_size": "abc"}}
    a = parse_config("llama", config, sidecar)
    assert a.native.weight_format == "unknown"
    assert "QuantScheme.group_size must be of type int, got 'abc'" in (a.native.unsupported or "")
    report = size_model(a)
    assert report.weights_gib["native"] is None and report.weights_gib["bf16"] > 14


def test_spec_files_are_still_checked_key_by_key() -> None:
    """Spec files are written by hand: a bad, unknown or missing key is one ConfigError naming it (checked by the
    records' own declarations, no pydantic)."""
    spec = json.loads((ROOT / "sizing_core" / "data" / "models" / "kimi-k3.1-pro.json").read_text())
    declared = spec["declared_parameters"]
    cases = [
        ({"declared_parameters": {**declared, "total": 0}},
         "field 'declared_parameters.total' must be greater than 0, got 0"),
        ({"declared_parameters": {"total": 5}}, "field 'declared_parameters.source' is missing"),
        ({"declared_parameters": 5}, "field 'declared_parameters' must be an object, got 5"),
        ({"colour": "blue"}, "field 'colour' is not a known key"),
        ({"vramlab_spec": "one"}, "field 'vramlab_spec' must be of type int, got 'one'"),
        ({"config": None}, "field 'config' must not be null"),
        ({"hf_quant_config": []}, "field 'hf_quant_config' must be of type dict, got []"),
    ]
    for change, message in cases:
        with pytest.raises(ConfigError, match=re.escape(f"kimi-k3.1-pro: {message}")):
            parse_spec(spec | change)
    with pytest.raises(ConfigError, match=re.escape("kimi-k3.1-pro: field 'name' is missing")):
        parse_spec({k: v for k, v in spec.items() if k != "name"})
    parsed, a = parse_spec(spec)
    assert parsed.declared_parameters == a.declared
    assert (a.declared.total, a.declared.active) == (declared["total"], declared["active"])


@pytest.mark.parametrize("when", [datetime(2026, 11, 30, 10, 0, tzinfo=UTC),
                                  datetime(2026, 11, 30, 10, 0, 0, 120000, tzinfo=UTC),
                                  datetime(2026, 11, 30, 10, 0, tzinfo=timezone(timedelta(hours=2))),
                                  datetime(2026, 11, 30, 10, 0)])
def test_datetimes_are_written_as_pydantic_writes_them(when: datetime) -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Stamped(Record):
        at: datetime
        day: typing.Any = None

    class Twin(BaseModel):
        at: datetime
        day: typing.Any = None

    ours, theirs = Stamped(at=when, day=when.date()), Twin(at=when, day=when.date())
    assert ours.model_dump(mode="json") == theirs.model_dump(mode="json")
    assert ours.model_dump_json() == theirs.model_dump_json()
    assert ours.model_dump() == theirs.model_dump()


def test_records_are_immutable_and_compare_by_value() -> None:
    a, b = arch("Qwen__Qwen3-8B"), arch("Qwen__Qwen3-8B")
    assert a is not b and a == b and hash(a) == hash(b) and a.layers[0] == b.layers[0]
    assert a != a.model_copy(update={"vocab_size": a.vocab_size + 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.hidden_size = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.layers[0].mixer.num_heads = 1  # type: ignore[union-attr]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.colour = "blue"  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del a.model
    assert a.tensors is a.tensors and len(a.tensors) > 36 * 9  # cached once per object, kept beside the fields
    assert repr(a.layers[0].mlp) == "DenseMLP(intermediate=12288, gated=True, bias=False)"


def test_a_record_built_many_times_is_the_same_record() -> None:
    """``@record(many=True)`` (Setup) only changes how ``__init__`` sets fields: immutability, equality, checks,
    tuple coercion and copies behave as for any record."""
    from sizing_core.record import CamelRecord, checked, record

    @record(many=True)
    class Row(CamelRecord):
        gpu_count: int = checked(gt=0)
        tags: tuple[str, ...] = ()

    row = Row(gpu_count=2, tags=["a"])
    assert row.tags == ("a",) and row == Row(gpu_count=2, tags=("a",)) and row != Row(gpu_count=2)
    assert row.model_dump() == {"gpuCount": 2, "tags": ("a",)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.gpu_count = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del row.tags
    with pytest.raises(SizingError, match="Row.gpu_count must be greater than 0"):
        row.model_copy(update={"gpu_count": 0})
    assert "__setattr__" not in vars(Row) and dataclasses.is_dataclass(Row)
