"""What a user types, resolved to what vramlab knows: models, GPUs, formats, contexts.

Every lookup is case-insensitive and forgiving about separators (``Qwen/Qwen3-8B``, ``qwen3-8b``, ``QWEN3_8B``,
``H100``, ``h100-sxm``, ``FP8``, ``q4km``); an unknown value raises one line naming the closest matches.
Light on purpose: no Dagster, DuckDB or httpx import (``size``, ``fit`` and ``gpus`` start fast).

A model is, in order: a path to a config.json (or its folder) or spec file; a bundled registry id; a watchlist id
or Hugging Face repo id, read from the local data (``data/hub``: the latest ingested revision) or, before the first
run, from the replay bundle (``pipeline/replay/hub/configs``); any other Hub repo id, from the data directory's
look-up cache or fetched into it through the Hub source (``pipeline/ingest/lookup.py``: live with
``VRAMLAB_LIVE=1``, else from the replay bundle). The watchlist is the data directory's own copy when ``vramlab
track`` wrote one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.cli.errors import CliError
from pipeline.data_dir import DataDir

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
    kind: str  # "path" | "registry" | "watchlist" | "hub" (a look-up) | "bundled" (a config the project ships)
    path: Path | None = None  # config/spec file (path and replay-bundle cases)
    config: dict[str, Any] | None = None  # an ingested revision's config (local data case)
    quant_config: dict[str, Any] | None = None
    origin: str = ""  # "data/hub (sha ...)", "replay bundle", "registry", or the path
    hub: dict[str, Any] | None = None  # a Hub look-up's stored revision (checkpoint facts: exact bytes, parameters)


def watchlist_entries(data_dir: Path | None = None) -> tuple[dict[str, Any], ...]:
    """The watchlist's entries: the data directory's own copy (``vramlab track``) when it has one."""
    own = DataDir(data_dir).watchlist if data_dir is not None else None
    return _watchlist(own if own is not None and own.is_file() else WATCHLIST)


@lru_cache(maxsize=2)
def _watchlist(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(path.read_text())["models"])


@lru_cache(maxsize=1)
def registry_ids() -> tuple[str, ...]:
    return tuple(sorted(p.name.removesuffix(".json") for p in REGISTRY.glob("*.json")))


def model_choices(data_dir: Path | None = None) -> dict[str, str]:
    """What an unknown name is compared with, as the spelling compared -> the name to show: the tracked ids, the
    registry ids, the tracked repos, then the repos whose configs ship with the project (also by their name
    without the org, as a bare name is typed)."""
    entries = watchlist_entries(data_dir)
    names = [*(e["id"] for e in entries), *registry_ids(), *(e["repo"] for e in entries), *bundled_repos()]
    return {n: n for n in names} | {r.split("/", 1)[1]: r for r in bundled_repos() if r.split("/", 1)[1] not in names}


def _hub_record(data_dir: Path | None, repo: str) -> tuple[dict[str, Any], str] | None:
    """The latest ingested revision of ``repo`` under ``<data_dir>/hub`` (as ``HubState`` writes it)."""
    from pipeline.ingest.lookup import hub_record

    return None if data_dir is None else hub_record(DataDir(data_dir), repo)


def _bundled_config(key: str) -> Path | None:
    """A Hub repo id that is not tracked but whose config ships with the project: the Hub replay's configs, then
    the calibration set's (``sizing_core/data/calibration/configs``), by normalized ``org/name``."""
    for folder in (REPLAY_CONFIGS, CALIBRATION_CONFIGS):
        for path in sorted(folder.glob("*.json")):
            if not path.name.endswith(".hf_quant_config.json") and norm(path.stem.replace("__", "/")) == key:
                return path
    return None


def resolve_model(ref: str, data_dir: Path | None = None, *, live: bool | None = None) -> ModelRef:
    """``ref`` as a path, registry id, watchlist id or repo id (case-insensitive), or any Hub repo id (look-up;
    ``live`` defaults to ``VRAMLAB_LIVE``; a config the project ships answers when the Hub, or offline its replay,
    has none); ResolveError otherwise."""
    path = Path(ref)
    if path.exists():
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise ResolveError(f"{ref}: a folder without config.json; pass a Hugging Face checkpoint's "
                                   "config.json or the folder that holds it")
            path = path / "config.json"
        stem = path.stem if path.name != "config.json" else path.parent.resolve().name
        return ModelRef(id=stem, repo=None, kind="path", path=path, origin=str(path))
    key = norm(ref)
    for rid in registry_ids():
        if norm(rid) == key:
            spec = json.loads((REGISTRY / f"{rid}.json").read_text())
            return ModelRef(id=rid, repo=spec.get("repo"), kind="registry", path=REGISTRY / f"{rid}.json",
                            origin="bundled registry")
    entries = watchlist_entries(data_dir)
    entry = next((e for e in entries if key in (norm(e["id"]), norm(e["repo"]))), None)
    if entry is None:  # a repo id without its org ("Qwen3-8B")
        matches = [e for e in entries if norm(e["repo"].split("/")[-1]) == key]
        entry = matches[0] if len(matches) == 1 else None
    if entry is not None:
        if entry.get("spec"):
            return resolve_model(entry["spec"])
        record = _hub_record(data_dir, entry["repo"])
        if record is not None:
            hub, sha = record
            return ModelRef(id=entry["id"], repo=entry["repo"], kind="watchlist", config=hub["config"],
                            quant_config=hub.get("hf_quant_config"), origin=f"data/hub revision {sha[:12]}",
                            hub=hub)
        bundled = REPLAY_CONFIGS / f"{entry['repo'].replace('/', '__')}.json"
        if bundled.is_file():
            return ModelRef(id=entry["id"], repo=entry["repo"], kind="watchlist", path=bundled,
                            origin="replay bundle")
        looked_up = _looked_up(entry["repo"], data_dir, live, entry["id"])  # tracked with `vramlab track`, not run
        if looked_up is not None:
            return looked_up
        raise ResolveError(f"{entry['id']} ({entry['repo']}) has no config yet: run `vramlab run` first")
    from pipeline.ingest.lookup import is_repo_id

    if is_repo_id(ref):
        from pipeline.ingest.lookup import LookupError_

        try:
            looked_up = _looked_up(ref, data_dir, live)
        except LookupError_ as exc:
            bundled = _bundled_config(key)
            if bundled is not None:
                return _bundled_ref(bundled)
            if exc.outcome == "missing":
                _typo(ref, data_dir, exc)
            raise
        assert looked_up is not None
        return looked_up
    if ref.endswith(".json") or "/" in ref or "\\" in ref:
        raise ResolveError(f"no such file or registry id: {ref!r}; pass a config.json (or its folder), a spec file, "
                           "a tracked or registry id, or a Hub repo id like Qwen/Qwen3-8B")
    found = _bare_name(ref, data_dir, live)
    if found is not None:
        return found
    raise ResolveError(f"unknown model {ref!r}{did_you_mean(ref, model_choices(data_dir))}; `vramlab models` lists "
                       "them, and any Hub repo id (org/name) is looked up")


def _bundled_ref(path: Path) -> ModelRef:
    """A config the project ships, named by the repo it stands for (``Qwen/Qwen3-32B``, not its file stem)."""
    repo = path.stem.replace("__", "/", 1)
    return ModelRef(id=repo.split("/")[-1].lower(), repo=repo, kind="bundled", path=path,
                    origin=f"bundled config ({path.parent.parent.name}/{path.parent.name})")


@lru_cache(maxsize=1)
def bundled_repos() -> tuple[str, ...]:
    """The Hub repo ids whose configs ship with the project: the Hub replay's (tracked and look-up recordings) and
    the calibration set's."""
    found = {p.stem.replace("__", "/", 1) for folder in (REPLAY_CONFIGS, REPLAY_CONFIGS.parent / "lookups",
                                                          CALIBRATION_CONFIGS)
             for p in folder.glob("*.json") if "__" in p.stem and not p.name.endswith(".hf_quant_config.json")}
    return tuple(sorted(found))


def known_repos(data_dir: Path | None = None) -> list[str]:
    """Every Hub repo id vramlab knows without asking the Hub: the watchlist's, the registry specs' and the
    bundle's."""
    registry = [json.loads((REGISTRY / f"{rid}.json").read_text()).get("repo") for rid in registry_ids()]
    return list(dict.fromkeys([*(e["repo"] for e in watchlist_entries(data_dir)), *(r for r in registry if r),
                               *bundled_repos()]))


def _typo(ref: str, data_dir: Path | None, exc: Exception) -> None:
    """A repo id no one has (offline: the bundle) that is an obvious typo of what vramlab knows: an unknown org
    close to a known one (``meta-lama``), or an id within two edits of a known repo (``Qwen/Qwen3-8G``). Then one
    line with the corrected id, the tracked model a bare name would find and the closest known repos, without the
    advice to fetch it live (the Hub has no such repo either). Otherwise the closest known repos are added to the
    look-up's own advice (``Qwen/Qwen3-32B-AWQ`` may exist on the Hub)."""
    import difflib

    org, name = ref.split("/", 1)
    repos = known_repos(data_dir)
    orgs = {r.split("/", 1)[0].lower(): r.split("/", 1)[0] for r in repos}
    lowered = {r.lower(): r for r in repos}
    shown: list[str] = []
    if org.lower() not in orgs:
        close = difflib.get_close_matches(org.lower(), list(orgs), n=1, cutoff=0.75)
        if not close:
            return
        fixed = f"{orgs[close[0]]}/{name}"
        why = f"no Hub org {org!r} is known here"
        shown.append(lowered.get(fixed.lower(), fixed))
    else:
        fixed = ref
        # two edits apart with the same numbers: a slip (Qwen3-8G); other numbers name another model (Llama-3.1-8B
        # is not a typo of Llama-3.2-3B) that the Hub may well have
        near = [r for r in repos if _edits(norm(r), norm(ref)) <= 2 and _numbers(r) == _numbers(ref)]
        if not near:
            hint = did_you_mean(ref, repos)
            if hint:
                raise ResolveError(f"{exc}{hint}") from None
            return
        why = "no such repo is known here"
        shown += near
    tracked = _variant_of(name, data_dir)
    if tracked is not None:
        shown.append(f"{tracked['id']} ({tracked['repo']})")
    shown += [lowered[n] for n in difflib.get_close_matches(fixed.lower(), list(lowered), n=3, cutoff=0.6)]
    shown = list(dict.fromkeys(s for s in shown if s.lower() != ref.lower()))[:3]
    raise ResolveError(f"unknown model {ref!r}: {why} (did you mean: {', '.join(shown)}?); `vramlab models` lists "
                       "the tracked ones") from None


def _numbers(ref: str) -> list[str]:
    """The numbers in a repo id, in order (sizes, versions)."""
    return re.findall(r"\d+", ref)


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (short strings: model ids)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


#: what a fine-tune adds to its base model's repo name (``Llama-3.1-8B-Instruct`` of ``Llama-3.1-8B``)
VARIANT_SUFFIXES = ("instruct", "chat", "it")


def _variant_of(name: str, data_dir: Path | None) -> dict[str, Any] | None:
    """The one tracked model whose repo name ``name`` is with a fine-tune's suffix (``Llama-3.1-8B-Instruct``)."""
    key = norm(name)
    base = next((key[:-len(s)] for s in VARIANT_SUFFIXES if key.endswith(s) and len(key) > len(s)), None)
    if base is None:
        return None
    entries = [e for e in watchlist_entries(data_dir) if base in (norm(e["id"]), norm(e["repo"].split("/")[-1]))]
    return entries[0] if len(entries) == 1 else None


def _bare_name(ref: str, data_dir: Path | None, live: bool | None) -> ModelRef | None:
    """A repo name without its org: the repo the bundle knows by that name (when one has it), else the tracked model
    it is a fine-tune of (``Llama-3.1-8B-Instruct`` -> ``llama-3.1-8b``, said on stderr: the architecture is the
    base model's)."""
    key = norm(ref)
    bundled = [r for r in bundled_repos() if norm(r.split("/", 1)[1]) == key]
    if len(bundled) == 1:  # answered as its repo id is (a look-up, else the bundled config)
        return resolve_model(bundled[0], data_dir, live=live)
    entry = _variant_of(ref, data_dir)
    if entry is None:
        return None
    import sys

    from pipeline.cli.text import clean

    print(clean(f"vramlab: note: {ref} is answered with the tracked {entry['id']} ({entry['repo']}), the model it "
                "fine-tunes: the same architecture and weights in size"), file=sys.stderr)
    return resolve_model(entry["id"], data_dir)


def _looked_up(repo: str, data_dir: Path | None, live: bool | None, model_id: str | None = None,
               *, fetch: bool = True) -> ModelRef | None:
    """A Hub repo from the look-up cache, fetched into it on first use (``pipeline/ingest/lookup.py``)."""
    from pipeline.ingest import lookup
    from pipeline.settings import settings

    if data_dir is None or live is None:
        current = settings()
        data_dir = data_dir or current.data_dir
        live = (not current.replay) if live is None else live
    hub = lookup.cached(data_dir, repo)
    if hub is None and not fetch:
        return None
    if hub is None:
        hub = lookup.fetch(data_dir, lookup.canonical_repo(repo, live=live), live=live)
    when = (f"recorded {str(hub['recorded_at'])[:10]}, offline replay" if hub.get("recorded_at")
            else f"fetched {str(hub.get('fetched_at') or '')[:10]}")
    return ModelRef(id=model_id or hub["repo"].split("/")[-1].lower(), repo=hub["repo"], kind="hub",
                    config=hub["config"], quant_config=hub.get("hf_quant_config"),
                    origin=f"Hub look-up {hub['repo']}@{hub['sha'][:12]} ({when})", hub=hub)


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
    family = _family_ids(value)
    if len(family) > 1:  # a family name (A100, a100-80gb): the cards differ in memory or form, the answer with them
        shown = ", ".join(family[:8]) + (f" and {len(family) - 8} more (`vramlab gpus --catalog`)" if len(family) > 8
                                          else "")
        raise ResolveError(f"GPU {value!r} names {len(family)} cards: {shown}; `--gpu` one of them")
    choices = {g: g for g, _, _ in gpus} | {a: g for g, aliases, _ in gpus for a in aliases}
    raise ResolveError(f"unknown GPU {value!r}{did_you_mean(value, choices)}; `vramlab gpus --catalog` lists them")


def split_count(value: str) -> tuple[str, int | None]:
    """``H100:8`` -> (``H100``, 8); ``H100`` -> (``H100``, None)."""
    name, _, count = value.partition(":")
    if not count:
        return name, None
    if not count.isdigit() or int(count) < 1:
        raise ResolveError(f"GPU count in {value!r} must be a whole number >= 1 (H100:8)")
    return name, int(count)


def resolve_gpu_count(value: str) -> tuple[str, int | None]:
    """``H100:8`` -> (``h100``, 8); ``h100`` -> (``h100``, None)."""
    name, count = split_count(value)
    return resolve_gpu(name), count


def gpu_family(value: str) -> tuple[str, ...]:
    """The catalog GPUs a name stands for where several may (``gpus``, ``cheapest --gpu``, ``history``): a family
    name matches every variant (``H100``: h100 SXM, h100-pcie, h100-nvl; ``A100``: the 40 GB and both 80 GB
    cards), an alias or a variant's own id only itself (``h100-sxm``, ``h100-pcie``). The family of ``x`` is the
    catalog id ``x`` and every id ``x-...``."""
    ids = [g for g, _, _ in gpu_names()]
    aliases = {norm(a) for _, als, _ in gpu_names() for a in als}
    if norm(value) in aliases and _family_name(value) not in ids:
        return (resolve_gpu(value),)
    family = _family_ids(value)
    return tuple(family) if family else (resolve_gpu(value),)


def _family_name(value: str) -> str:
    return re.sub(r"[\s_]+", "-", value.strip().lower())


def _family_ids(value: str) -> list[str]:
    """The catalog ids of the family ``value`` names: the id itself and every id ``value-...``."""
    raw = _family_name(value)
    return [g for g, _, _ in gpu_names() if g == raw or g.startswith(raw + "-")]


def family_note(value: str, family: tuple[str, ...]) -> str | None:
    """``H100 matches 3 GPUs: h100 (H100 80GB SXM5), h100-pcie (...), h100-nvl (...)`` when a name stands for
    several, else None."""
    if len(family) < 2:
        return None
    names = {g: name for g, _, name in gpu_names()}
    alone = {g: next(iter(aliases), g) if g == family[0] and aliases else g for g, aliases, _ in gpu_names()}
    return (f"{value} matches {len(family)} GPUs: " + ", ".join(f"{g} ({names[g]})" for g in family)
            + f"; {', '.join(alone[g] for g in family[:-1])} or {alone[family[-1]]} for one alone")


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


def published_snapshot(data_dir: Path, provider: str | None = None) -> Any:  # noqa: ANN401 - a Snapshot
    """The latest published snapshot, checked to list ``provider`` when one is asked for (one-line errors)."""
    from pipeline.exports.snapshot_offers import latest_snapshot, providers

    snapshot = latest_snapshot(data_dir)
    if snapshot is None:
        raise CliError("no published snapshot yet: run `vramlab run` first")
    if provider:
        known = providers(snapshot)
        if provider.lower() not in (p.lower() for p in known):
            raise CliError(f"no provider {provider!r} in snapshot {snapshot.id}{did_you_mean(provider, known)}")
    return snapshot
