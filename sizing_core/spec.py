"""Manual model specs: models whose config.json is not public, described in a small file of our own.

A spec carries a config-shaped ``config`` block (the same keys a Hugging Face config would have, so it goes
through the same parser), optional ModelOpt-style ``hf_quant_config`` for the checkpoint's own format, and
``declared_parameters`` for counts the lab states. Anything the spec leaves out is an error, as for configs.
"""

from __future__ import annotations

from typing import Any

from .architecture import Architecture, DeclaredParameters
from .config.reader import parse_config
from .errors import ConfigError
from .record import InvalidField, Record, checked, from_mapping, record


@record
class ModelSpec(Record):
    """A spec file's keys, each checked (type, unknown keys, missing keys, the declared counts' checks): spec
    files are written by hand. Checked by the record's own declarations, so loading one imports no pydantic (a
    bundled spec such as ``kimi-k3.1-pro`` is sized as quickly as a config)."""

    vramlab_spec: int = checked(kind=int)  # format version of this file
    id: str = checked(kind=str)
    name: str = checked(kind=str)
    repo: str | None = checked(None, kind=str)
    source: str = checked(kind=str)  # where the architecture numbers come from
    declared_parameters: DeclaredParameters | None = checked(None, kind=DeclaredParameters)
    hf_quant_config: dict[str, Any] | None = checked(None, kind=dict)
    config: dict[str, Any] = checked(kind=dict)


def is_spec(data: dict[str, Any]) -> bool:
    return "vramlab_spec" in data


def _spec(data: dict[str, Any]) -> ModelSpec:
    values = dict(data)
    declared = values.get("declared_parameters")
    if declared is not None:
        if not isinstance(declared, dict):
            raise InvalidField("ModelSpec", "declared_parameters", f"must be an object, got {declared!r}")
        try:
            values["declared_parameters"] = from_mapping(DeclaredParameters, declared)
        except InvalidField as exc:
            raise InvalidField("ModelSpec", f"declared_parameters.{exc.field}",
                               str(exc).removeprefix(f"DeclaredParameters.{exc.field} ")) from None
    return from_mapping(ModelSpec, values)


def parse_spec(data: dict[str, Any], origin: str = "spec") -> tuple[ModelSpec, Architecture]:
    try:
        spec = _spec(data)
    except InvalidField as exc:
        message = str(exc).removeprefix(f"{exc.owner}.{exc.field} ")
        raise ConfigError(str(data.get("id", origin)), exc.field, message) from None
    arch = parse_config(spec.id, spec.config, spec.hf_quant_config, declared=spec.declared_parameters)
    return spec, arch
