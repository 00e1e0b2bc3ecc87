"""Manual model specs: models whose config.json is not public, described in a small file of our own.

A spec carries a config-shaped ``config`` block (the same keys a Hugging Face config would have, so it goes
through the same parser), optional ModelOpt-style ``hf_quant_config`` for the checkpoint's own format, and
``declared_parameters`` for counts the lab states. Anything the spec leaves out is an error, as for configs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .architecture import Architecture, DeclaredParameters
from .errors import ConfigError
from .hf_config import parse_config


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    vramlab_spec: int  # format version of this file
    id: str
    name: str
    repo: str | None = None
    source: str  # where the architecture numbers come from
    declared_parameters: DeclaredParameters | None = None
    hf_quant_config: dict[str, Any] | None = None
    config: dict[str, Any]


def is_spec(data: dict[str, Any]) -> bool:
    return "vramlab_spec" in data


def parse_spec(data: dict[str, Any], origin: str = "spec") -> tuple[ModelSpec, Architecture]:
    try:
        spec = ModelSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ConfigError(str(data.get("id", origin)), field, err["msg"]) from exc
    arch = parse_config(spec.id, spec.config, spec.hf_quant_config, declared=spec.declared_parameters)
    return spec, arch
