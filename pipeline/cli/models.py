"""Read a model description for the CLI: a config.json path, a spec file, a registry id, or a tracked model (watchlist
id or Hub repo id, from the local data or the replay bundle). See ``pipeline/cli/resolve.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.cli.resolve import ModelRef, resolve_model
from sizing_core import Architecture, is_spec, load_json, parse_config, parse_spec


def _sidecar(path: Path) -> dict[str, Any] | None:
    """A ModelOpt sidecar stored next to the config as ``<stem>.hf_quant_config.json`` or ``hf_quant_config.json``."""
    for candidate in (path.with_name(f"{path.stem}.hf_quant_config.json"), path.with_name("hf_quant_config.json")):
        if candidate.is_file() and candidate != path:
            return load_json(path.stem, candidate.read_bytes(), candidate.name)
    return None


def model_repo(ref: str | ModelRef, arch: Architecture) -> str:
    """The Hugging Face repo id to put in launch commands: the resolved repo, else ``org__name`` file stems
    read back as ``org/name``, else the model name."""
    if isinstance(ref, ModelRef) and ref.repo:
        return ref.repo
    name = arch.model
    return name.replace("__", "/", 1) if "__" in name else name


def load_ref(ref: ModelRef, quant_config: dict[str, Any] | None = None) -> Architecture:
    if ref.config is not None:  # an ingested Hub revision
        return parse_config(ref.repo or ref.id, ref.config, quant_config if quant_config is not None
                            else ref.quant_config)
    assert ref.path is not None
    data = load_json(ref.id, ref.path.read_bytes(), ref.path.name)
    if is_spec(data):
        return parse_spec(data, origin=str(ref.path) if ref.kind == "path" else ref.id)[1]
    name = ref.repo if ref.kind in ("watchlist", "bundled") and ref.repo else ref.id
    return parse_config(name, data, quant_config if quant_config is not None else _sidecar(ref.path))


def load_model(ref: str, quant_config: dict[str, Any] | None = None,
               data_dir: Path | None = None) -> Architecture:
    """Resolve ``ref`` and parse it. Raises ResolveError / ConfigError with a message naming it."""
    if data_dir is None:
        from pipeline.settings import settings

        data_dir = settings().data_dir
    return load_ref(resolve_model(ref, data_dir), quant_config)


def ref_config(ref: ModelRef) -> dict[str, Any] | None:
    """The model's config.json as a dict (None for a manual spec): what rope scaling is read from."""
    if ref.config is not None:
        return ref.config
    if ref.path is None or not ref.path.is_file():
        return None
    data = load_json(ref.id, ref.path.read_bytes(), ref.path.name)
    return None if is_spec(data) else data


def context_of(ref: ModelRef, arch: Architecture, rope_scaling: str | None) -> Any:  # noqa: ANN401 - ContextLimit
    """The model's context limit: max_position_embeddings, and rope scaling (its config's, or ``--rope-scaling``)."""
    from sizing_core.context import context_limit

    return context_limit(ref_config(ref), arch.max_context, rope_scaling)
