"""Manual model specs: models whose config.json is not public, described in a small file of our own.

A spec carries a config-shaped ``config`` block (the same keys a Hugging Face config would have, so it goes
through the same parser), optional ModelOpt-style ``hf_quant_config`` for the checkpoint's own format, and
``declared_parameters`` for counts the lab states. Anything the spec leaves out is an error, as for configs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .architecture import Architecture, DeclaredParameters
from .errors import ConfigError
from .hf_config import parse_config
from .record import Record, record


@record
class ModelSpec(Record):
    """A spec file's fields. Spec files are written by hand, so they are validated by pydantic (types, unknown
    keys, the declared counts' checks), imported only here: sizing a config.json or a tracked model never loads
    it (start-up of ``vramlab size``, issue #12)."""

    __pydantic_config__ = {"extra": "forbid"}  # noqa: RUF012 - read by pydantic, a ConfigDict (a TypedDict)

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


@lru_cache(maxsize=1)
def _validator() -> Any:  # noqa: ANN401 - a pydantic TypeAdapter
    from pydantic import TypeAdapter

    return TypeAdapter(ModelSpec)


def parse_spec(data: dict[str, Any], origin: str = "spec") -> tuple[ModelSpec, Architecture]:
    from pydantic import ValidationError

    try:
        spec = _validator().validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ConfigError(str(data.get("id", origin)), field, err["msg"]) from exc
    arch = parse_config(spec.id, spec.config, spec.hf_quant_config, declared=spec.declared_parameters)
    return spec, arch
