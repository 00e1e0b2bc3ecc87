"""The bundled model registry: manual specs shipped as package data under ``sizing_core/data/models``."""

from __future__ import annotations

import json
from importlib import resources

from .architecture import Architecture
from .spec import ModelSpec, parse_spec


def registry_ids() -> list[str]:
    folder = resources.files("sizing_core") / "data" / "models"
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def load_registered(model_id: str) -> tuple[ModelSpec, Architecture]:
    """Spec and architecture of a bundled model; ``KeyError`` naming the known ids when absent."""
    path = resources.files("sizing_core") / "data" / "models" / f"{model_id}.json"
    if not path.is_file():
        raise KeyError(f"unknown model id {model_id!r} (bundled: {', '.join(registry_ids())})")
    return parse_spec(json.loads(path.read_text()), origin=model_id)
