"""Rows for ``vramlab models`` and ``vramlab gpus --catalog``: what can be named on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.cli.models import load_ref
from pipeline.cli.resolve import (
    CALIBRATION_CONFIGS,
    REPLAY_CONFIGS,
    ResolveError,
    norm,
    registry_ids,
    resolve_model,
    watchlist_entries,
)
from sizing_core import SizingError
from sizing_core.parameters import count_parameters


def model_names(data_dir: Path) -> list[tuple[str, str | None, str, str]]:
    """(id, repo, name, lab) of every tracked model (watchlist order), then bundled registry specs not on the
    watchlist: the models ``vramlab models`` lists and ``models --fits`` answers for."""
    entries = watchlist_entries(data_dir)
    listed = {e.get("spec") for e in entries}
    refs: list[tuple[str, str | None, str, str]] = [(e["id"], e["repo"], e["name"], e["lab"]) for e in entries]
    return refs + [(rid, None, rid, "") for rid in registry_ids() if rid not in listed]


def shipped_configs(known: set[str]) -> list[tuple[str, str | None, str, str]]:
    """(id, repo, name, lab) of the Hub configs the project ships (the replay's, the calibration set's) whose repo
    is not among ``known`` (normalized ids and repos already listed): answered offline by repo id or name."""
    out: dict[str, tuple[str, str | None, str, str]] = {}
    for folder in (REPLAY_CONFIGS, CALIBRATION_CONFIGS):
        for path in sorted(folder.glob("*.json")):
            if path.name.endswith(".hf_quant_config.json"):
                continue
            repo = path.stem.replace("__", "/", 1)
            name = repo.split("/")[-1]
            if not ({norm(repo), norm(name)} & known) and norm(repo) not in out:
                out[norm(repo)] = (name.lower(), repo, name, repo.split("/")[0])
    return list(out.values())


def model_rows(data_dir: Path) -> list[dict[str, Any]]:
    """Every tracked model (watchlist order), then bundled registry specs not on the watchlist, then the Hub
    configs the project ships that neither lists (``source``: where each is read from)."""
    rows = []
    names = model_names(data_dir)
    known = {norm(k) for model_id, repo, _, _ in names for k in (model_id, repo) if k}
    for model_id, repo, name, lab in names + shipped_configs(known):
        row: dict[str, Any] = {"id": model_id, "repo": repo, "name": name, "lab": lab, "parameters": None,
                               "activeParameters": None, "maxContext": None, "nativeFormat": None, "source": None,
                               "error": None}
        try:
            ref = resolve_model(model_id, data_dir)
            arch = load_ref(ref)
        except (ResolveError, SizingError) as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        counts = count_parameters(arch)
        row |= {"repo": repo or ref.repo, "parameters": round(counts.total / 1e9, 2),
                "activeParameters": round(counts.active / 1e9, 2),
                "maxContext": arch.max_context, "nativeFormat": arch.native.weight_format, "source": ref.origin}
        rows.append(row)
    return rows


def gpu_rows() -> list[dict[str, Any]]:
    from sizing_core.gpus import catalog

    return [{"id": g.id, "aliases": list(g.aliases), "name": g.name, "kind": g.kind, "memory_gb": g.memory_gb,
             "usable_memory_gib": round(g.memory_bytes / 2**30, 1), "bandwidth_gbs": g.bandwidth_gbs,
             "tdp_w": g.tdp_w, "launch_msrp_usd": g.launch_msrp_usd, "fp16_tflops_dense": g.fp16_tflops_dense,
             "fp8_tflops_dense": g.fp8_tflops_dense, "fp4_tflops_dense": g.fp4_tflops_dense}
            for g in catalog().values()]
