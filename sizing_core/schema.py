"""pydantic base for models that are published as JSON with camelCase keys (as seed 004 writes them), snake_case
in Python, immutable: the pipeline's setups (``pipeline/compute/setups.py``) and the safetensors header summaries
stored inside the Hub state files. sizing_core's own sizing types are plain dataclasses (``record.py``): importing
this module imports pydantic, so nothing on the path of ``vramlab size``/``fit`` does."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class CamelModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True, alias_generator=to_camel, frozen=True,
                              defer_build=True)
