"""Launch commands derived from a placement: ``vllm serve``, SGLang's server, ``llama-server``. Each engine class
builds its own (``engines/``); this module picks the placement's engine and says which checkpoints are known to
exist (``engines/commands.py`` has the naming rules)."""

from __future__ import annotations

from typing import Any

from .engines import Engine, get_engine
from .engines.commands import GGUF_NAMES, Launch
from .placement.search import Placement

__all__ = ["Launch", "known_sources", "launch_command"]


def known_sources(p: Placement, repo: str, native_format: str,
                  gguf_files: dict[str, dict[str, Any]] | None) -> dict[str, str | None]:
    """The ``gguf_repo`` / ``quantized_repo`` arguments of :func:`launch_command` from what is known to exist: the
    GGUF repos a model's Hub revision lists by quant type (``HubModel.gguf_files``: ``{"Q4_K_M": {"repo": ...}}``)
    and the repo itself when the checkpoint is already stored in the plan's format."""
    quant = GGUF_NAMES.get(p.weight_format, p.weight_format.upper())
    gguf = (gguf_files or {}).get(quant) or next((v for k, v in (gguf_files or {}).items() if k.upper() == quant),
                                                  None)
    own = repo if p.format == "native" or p.weight_format == native_format else None
    return {"gguf_repo": gguf.get("repo") if gguf else None, "quantized_repo": own}


def launch_command(p: Placement, repo: str, gguf_repo: str | None = None,
                   quantized_repo: str | None = None, engine: Engine | None = None) -> Launch | None:
    """The command that starts ``p``'s engine (``engine``: with its start-up settings, e.g. the utilisation asked;
    default: the engine's defaults)."""
    if p.plan is None:
        return None
    return (engine or get_engine(p.engine)).launch(p, repo, gguf_repo, quantized_repo)
