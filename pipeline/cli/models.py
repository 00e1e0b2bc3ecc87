"""Find and read a model description: a config.json path, a spec file path, or a bundled registry id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sizing_core import Architecture, is_spec, load_json, parse_config, parse_spec
from sizing_core.registry import load_registered, registry_ids


def _sidecar(path: Path) -> dict[str, Any] | None:
    """A ModelOpt sidecar stored next to the config as ``<stem>.hf_quant_config.json`` or ``hf_quant_config.json``."""
    for candidate in (path.with_name(f"{path.stem}.hf_quant_config.json"), path.with_name("hf_quant_config.json")):
        if candidate.is_file() and candidate != path:
            return load_json(path.stem, candidate.read_bytes(), candidate.name)
    return None


def model_repo(ref: str, arch: Architecture) -> str:
    """The Hugging Face repo id to put in launch commands: the spec's ``repo``, else ``org__name`` file stems
    read back as ``org/name``, else the model name."""
    if ref in registry_ids():
        spec = load_registered(ref)[0]
        return spec.repo or spec.id
    name = arch.model
    return name.replace("__", "/", 1) if "__" in name else name


def load_model(ref: str, quant_config: dict[str, Any] | None = None) -> Architecture:
    """``ref`` is a file path or a registry id. Raises ConfigError / KeyError with a message naming it."""
    path = Path(ref)
    if not path.exists():
        if ref in registry_ids():
            return load_registered(ref)[1]
        raise KeyError(f"no such file or registry id: {ref!r} (bundled: {', '.join(registry_ids())})")
    if path.is_dir():
        path = path / "config.json"
    name = path.stem if path.name != "config.json" else path.parent.name
    data = load_json(name, path.read_bytes(), path.name)
    if is_spec(data):
        return parse_spec(data, origin=str(path))[1]
    return parse_config(name, data, quant_config if quant_config is not None else _sidecar(path))

