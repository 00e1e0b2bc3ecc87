"""What a user types, resolved to what vramlab knows: models, GPUs, formats, contexts.

Every lookup is case-insensitive and forgiving about separators (``Qwen/Qwen3-8B``, ``qwen3-8b``, ``QWEN3_8B``,
``H100``, ``h100-sxm``, ``FP8``, ``q4km``); an unknown value raises one line naming the closest matches.
Light on purpose: no Dagster, DuckDB or httpx import (``size``, ``fit`` and ``gpus`` start fast).

A model is, in order: a path to a config.json (or its folder) or spec file; a bundled registry id; a watchlist id
or Hugging Face repo id, read from the local data (``data/hub``: the latest ingested revision) or, before the first
run, from the replay bundle (``pipeline/replay/hub/configs``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.cli.errors import CliError

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
WATCHLIST = REPO_ROOT / "pipeline" / "data" / "watchlist.json"
REPLAY_CONFIGS = REPO_ROOT / "pipeline" / "replay" / "hub" / "configs"
REGISTRY = REPO_ROOT / "sizing_core" / "data" / "models"
CALIBRATION_CONFIGS = REPO_ROOT / "sizing_core" / "data" / "calibration" / "configs"


class ResolveError(CliError):
    """An unknown model, GPU, format or context: one line with the closest matches."""


def norm(text: str) -> str:
    """Lower case without separators: ``Qwen/Qwen3-8B`` and ``qwen3_8b`` compare on ``qwen3`` + ``8b``."""
    return re.sub(r"[^a-z0-9.]", "", text.lower())


def did_you_mean(value: str, choices: list[str] | dict[str, str], n: int = 3) -> str:
    """`` (did you mean: a, b?)`` from the closest choices, or ''. ``choices`` may map a spelling to the name
    to show (an alias to its canonical name)."""
    shown = choices if isinstance(choices, dict) else {c: c for c in choices}
    by_norm: dict[str, str] = {}
    for choice, display in shown.items():
        by_norm.setdefault(norm(choice), display)
    import difflib  # only when a value is wrong: kept off the start-up of every answer

    key = norm(value)
    close = difflib.get_close_matches(key, list(by_norm), n=n, cutoff=0.6)
    close += [k for k in by_norm if key and (k.startswith(key) or key in k) and k not in close]
    names = list(dict.fromkeys(by_norm[k] for k in close))[:n]
    return f" (did you mean: {', '.join(names)}?)" if names else ""


# ---------------------------------------------------------------------------------------------- models

@dataclass(frozen=True)
class ModelRef:
    """Where a model's description comes from."""

    id: str  # watchlist id, registry id, or the file's stem
    repo: str | None  # Hugging Face repo id when known
    kind: str  # "path" | "registry" | "watchlist"
    path: Path | None = None  # config/spec file (path and replay-bundle cases)
    config: dict[str, Any] | None = None  # an ingested revision's config (local data case)
    quant_config: dict[str, Any] | None = None
    origin: str = ""  # "data/hub (sha ...)", "replay bundle", "registry", or the path


@lru_cache(maxsize=1)
def watchlist_entries() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(WATCHLIST.read_text())["models"])


@lru_cache(maxsize=1)
def registry_ids() -> tuple[str, ...]:
    return tuple(sorted(p.name.removesuffix(".json") for p in REGISTRY.glob("*.json")))


def model_choices() -> list[str]:
    entries = watchlist_entries()
    return [*(e["id"] for e in entries), *registry_ids(), *(e["repo"] for e in entries)]


def _hub_record(data_dir: Path | None, repo: str) -> tuple[dict[str, Any], str] | None:
    """The latest ingested revision of ``repo`` under ``<data_dir>/hub`` (as ``HubState`` writes it)."""
    if data_dir is None:
        return None
    state_path = data_dir / "hub" / "state.json"
    try:
        sha = (json.loads(state_path.read_text()).get(repo) or {}).get("sha")
    except (OSError, ValueError):
        return None
    record = data_dir / "hub" / "models" / repo.replace("/", "__") / f"{sha}.json"
    if not sha or not record.is_file():
        return None
    try:
        return json.loads(record.read_text()), sha
    except ValueError:
        return None


def _bundled_config(key: str) -> Path | None:
    """A Hub repo id that is not tracked but whose config ships with the project: the Hub replay's configs, then
    the calibration set's (``sizing_core/data/calibration/configs``, issue #22), by normalized ``org/name``."""
    for folder in (REPLAY_CONFIGS, CALIBRATION_CONFIGS):
        for path in sorted(folder.glob("*.json")):
            if not path.name.endswith(".hf_quant_config.json") and norm(path.stem.replace("__", "/")) == key:
                return path
    return None


def resolve_model(ref: str, data_dir: Path | None = None) -> ModelRef:
    """``ref`` as a path, registry id, watchlist id or repo id (case-insensitive); ResolveError otherwise."""
    path = Path(ref)
    if path.exists():
        if path.is_dir():
            path = path / "config.json"
        stem = path.stem if path.name != "config.json" else path.parent.name
        return ModelRef(id=stem, repo=None, kind="path", path=path, origin=str(path))
    key = norm(ref)
    for rid in registry_ids():
        if norm(rid) == key:
            spec = json.loads((REGISTRY / f"{rid}.json").read_text())
            return ModelRef(id=rid, repo=spec.get("repo"), kind="registry", path=REGISTRY / f"{rid}.json",
                            origin="bundled registry")
    entry = next((e for e in watchlist_entries() if key in (norm(e["id"]), norm(e["repo"]))), None)
    if entry is None:  # a repo id without its org ("Qwen3-8B")
        matches = [e for e in watchlist_entries() if norm(e["repo"].split("/")[-1]) == key]
        entry = matches[0] if len(matches) == 1 else None
    if entry is not None:
        if entry.get("spec"):
            return resolve_model(entry["spec"])
        record = _hub_record(data_dir, entry["repo"])
        if record is not None:
            hub, sha = record
            return ModelRef(id=entry["id"], repo=entry["repo"], kind="watchlist", config=hub["config"],
                            quant_config=hub.get("hf_quant_config"), origin=f"data/hub revision {sha[:12]}")
        bundled = REPLAY_CONFIGS / f"{entry['repo'].replace('/', '__')}.json"
        if bundled.is_file():
            return ModelRef(id=entry["id"], repo=entry["repo"], kind="watchlist", path=bundled,
                            origin="replay bundle")
        raise ResolveError(f"{entry['id']} ({entry['repo']}) has no config yet: run `vramlab run` first")
    bundled = _bundled_config(key) if "/" in ref else None
    if bundled is not None:
        return ModelRef(id=bundled.stem, repo=bundled.stem.replace("__", "/"), kind="path", path=bundled,
                        origin=f"bundled config ({bundled.parent.parent.name}/{bundled.parent.name})")
    if "/" in ref or ref.endswith(".json"):
        raise ResolveError(f"no such file or registry id: {ref!r}, nor a tracked model"
                           f"{did_you_mean(ref, model_choices())}; `vramlab models` lists them")
    raise ResolveError(f"unknown model {ref!r}{did_you_mean(ref, model_choices())}; `vramlab models` lists them")


# ---------------------------------------------------------------------------------------------- formats

#: spellings people use for a format, by normalized form
FORMAT_ALIASES = {"awq": "awq_int4", "awqint4": "awq_int4", "int4awq": "awq_int4", "w4a16": "awq_int4",
                  "q8": "q8_0", "q4": "q4_k_m", "q4k": "q4_k_m", "q5": "q5_k_m", "q5k": "q5_k_m", "q6": "q6_k",
                  "q3": "q3_k_m", "q3k": "q3_k_m", "q2": "q2_k", "iq4": "iq4_xs", "fp4": "nvfp4",
                  "mxfp4moe": "mxfp4", "w8a8": "int8", "fp8dynamic": "fp8", "e4m3": "fp8", "bfloat16": "bf16",
                  "float16": "fp16", "f16": "fp16", "half": "fp16"}


def format_names() -> tuple[str, ...]:
    from sizing_core.formats import WEIGHT_FORMATS

    return (*WEIGHT_FORMATS, "native")


def resolve_format(value: str) -> str:
    """``FP8`` -> ``fp8``, ``q4km``/``Q4_K_M`` -> ``q4_k_m``, ``awq`` -> ``awq_int4``; ResolveError otherwise."""
    names = format_names()
    key = norm(value).replace(".", "")
    for name in names:
        if norm(name) == key:
            return name
    if key in FORMAT_ALIASES:
        return FORMAT_ALIASES[key]
    raise ResolveError(f"unknown format {value!r}{did_you_mean(value, {n: n for n in names} | FORMAT_ALIASES)} "
                       f"(formats: {', '.join(names)})")


# ---------------------------------------------------------------------------------------------- GPUs

@lru_cache(maxsize=1)
def _catalog_rows() -> tuple[dict[str, str], ...]:
    """The GPU catalog's CSV rows as text, read straight from the file: resolving a GPU or labelling an offer
    needs no validated catalog (``sizing_core.gpus.catalog()`` builds the records, which ``vramlab gpus`` never
    uses)."""
    import csv

    import sizing_core  # light: the package's names load on first use

    with (Path(sizing_core.__file__).parent / "data" / "gpus.csv").open(newline="") as f:
        return tuple(csv.DictReader(f))


@lru_cache(maxsize=1)
def gpu_names() -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """(id, aliases, name) of every catalog GPU; aliases are split as the catalog splits them (``;``)."""
    return tuple((r["id"], tuple(a for a in (r.get("aliases") or "").split(";") if a), r["name"])
                 for r in _catalog_rows())


@lru_cache(maxsize=1)
def catalog_memory_gb() -> dict[str, float]:
    """The catalog's memory per GPU (``memory_gb``) by GPU id: what an offer's GPU has when its source does not
    say (most price lists give the GPU model, not its memory)."""
    return {r["id"]: float(r["memory_gb"]) for r in _catalog_rows() if r.get("memory_gb")}


def resolve_gpu(value: str) -> str:
    """A catalog GPU id from an id or alias in any case or separator (``H100``, ``h100-sxm``, ``RTX4090``)."""
    gpus = gpu_names()
    key = norm(value)
    for gpu_id, aliases, _ in gpus:
        if key == norm(gpu_id) or key in (norm(a) for a in aliases):
            return gpu_id
    for gpu_id, _, name in gpus:  # "rtx4090" for "rtx-4090" is covered above; "geforce rtx 4090 24gb" by name
        if key == norm(name):
            return gpu_id
    choices = {g: g for g, _, _ in gpus} | {a: g for g, aliases, _ in gpus for a in aliases}
    raise ResolveError(f"unknown GPU {value!r}{did_you_mean(value, choices)}; `vramlab gpus --catalog` lists them")


def resolve_gpu_count(value: str) -> tuple[str, int | None]:
    """``H100:8`` -> (``h100``, 8); ``h100`` -> (``h100``, None)."""
    name, _, count = value.partition(":")
    if count:
        if not count.isdigit() or int(count) < 1:
            raise ResolveError(f"GPU count in {value!r} must be a whole number >= 1")
        return resolve_gpu(name), int(count)
    return resolve_gpu(name), None


# ---------------------------------------------------------------------------------------------- contexts

_CONTEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_context(text: str) -> int:
    """Tokens: ``8192``, ``32k`` (= 32,768), ``128K`` (= 131,072), ``1M`` (= 1,048,576). K and M are binary
    (1,024 and 1,048,576), as context windows are quoted (a "128K" model has 131,072 positions)."""
    m = _CONTEXT.match(text)
    if not m:
        raise ValueError(f"expected a token count like 8192, 32k or 1M, got {text!r}")
    number, unit = float(m.group(1)), m.group(2).lower()
    value = number * {"": 1, "k": 1024, "m": 1024 * 1024}[unit]
    if value != int(value) or value < 1:
        raise ValueError(f"expected a whole positive token count, got {text!r}")
    return int(value)
