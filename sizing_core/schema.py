"""Base class for results that are published as JSON: camelCase keys (as seed 004 writes them), snake_case in
Python, immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, alias_generator=to_camel, frozen=True,
                              defer_build=True)
