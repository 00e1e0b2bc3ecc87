"""Raw GPU names (and instance families) to canonical catalog ids: a versioned table plus overrides.

``data/gpu_map.csv`` is read top to bottom; the first row whose provider (``*`` = any), normalised raw name,
instance-type regex and per-GPU memory bounds all match wins. Rows for a provider's known API mistakes sit at
the top (the override table of ``shared/reference/prices/NOTES.md``). An unmatched name maps to ``None``:
the offer is kept with ``gpu_id = null`` and reported, never guessed. A row's ``form_factor`` is empty where
its name does not say the form of a card sold in several (a plain ``H100``, ``A100``, ``V100``): the offer's form
factor is then what the listing's own words state, else ``unknown`` (``offer_facts.form_factor``).

``data/gpu_memory_bounds.csv`` holds, per canonical GPU, the per-GPU memory a listing may state (0.85x to 1.16x
the marketed size: GiB vs GB, driver-visible vs marketed). A row whose GPU cannot have the stated per-GPU memory
is passed over, so a machine total misread as per-GPU memory (640 GB "per H100", 128 GB "per V100") or a figure
in the wrong unit (0.078 GB) leaves the offer unmapped instead of mapping it to the wrong card.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pipeline.sources.gpu_words import with_instance_tiers, without_interconnects
from sizing_core.gpus import catalog

MAP_PATH = Path(__file__).parent / "data" / "gpu_map.csv"
BOUNDS_PATH = Path(__file__).parent / "data" / "gpu_memory_bounds.csv"
MAPPING_VERSION = "2026-12-07.1"  # bump whenever gpu_map.csv or the matching rule changes


@dataclass(frozen=True)
class MapRow:
    provider: str
    raw: str
    instance_regex: re.Pattern[str] | None
    min_memory_gb: float | None
    max_memory_gb: float | None
    gpu_id: str
    form_factor: str


def normalise(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).lower().removeprefix("nvidia").removeprefix("amd")


@lru_cache(maxsize=1)
def rows() -> tuple[MapRow, ...]:
    known = catalog()
    out = []
    for line, r in enumerate(csv.DictReader(MAP_PATH.open()), start=2):
        if r["gpu_id"] not in known:
            raise ValueError(f"{MAP_PATH.name} line {line}: gpu_id {r['gpu_id']!r} is not in the GPU catalog")
        out.append(MapRow(
            provider=r["provider"], raw=normalise(r["raw_name"]),
            instance_regex=re.compile(r["instance_regex"], re.I) if r["instance_regex"] else None,
            min_memory_gb=float(r["min_memory_gb"]) if r["min_memory_gb"] else None,
            max_memory_gb=float(r["max_memory_gb"]) if r["max_memory_gb"] else None,
            gpu_id=r["gpu_id"], form_factor=r["form_factor"]))
    return tuple(out)


@lru_cache(maxsize=1)
def memory_bounds() -> dict[str, tuple[float, float]]:
    """gpu_id -> (min, max) per-GPU memory in GB that a listing of that GPU may state."""
    return {r["gpu_id"]: (float(r["min_memory_gb"]), float(r["max_memory_gb"]))
            for r in csv.DictReader(BOUNDS_PATH.open())}


def memory_fits(gpu_id: str, memory_gb: float | None) -> bool:
    """Can a listing of ``gpu_id`` state ``memory_gb`` per GPU? True when either is unknown."""
    if memory_gb is None or gpu_id not in memory_bounds():
        return True
    low, high = memory_bounds()[gpu_id]
    return low <= memory_gb <= high


def resolve(provider: str, raw_name: str, instance_type: str = "", memory_gb: float | None = None
            ) -> tuple[str | None, str]:
    """(canonical gpu id or None, mapping version)."""
    row = match(provider, raw_name, instance_type, memory_gb)
    return (row.gpu_id if row else None), MAPPING_VERSION


@lru_cache(maxsize=8192)
def match(provider: str, raw_name: str, instance_type: str = "", memory_gb: float | None = None) -> MapRow | None:
    """The first map row that accepts the listing (:func:`resolve`'s rule), or None. Cached: a catalog repeats
    the same few hundred (name, instance, memory) listings over thousands of rows.

    Read as words first (``gpu_words.py``): tier words the instance type adds after the name's model number are
    part of the card's name (``RTX5070`` on ``1x-RTX_5070_Ti-...`` is the 5070 Ti; when the map has no such card
    the offer stays unmapped, never the plain card), and interconnect words are taken out of the instance type
    before a row's instance pattern is tried (``NVLink`` is not ``NVL``). A name no row accepts as written is
    tried without its interconnect words (Fluidstack's ``H100-NVLINK`` is an H100; a row may still name the
    interconnect, as Hyperstack's ``H100-80G-PCIe-NVLink``)."""
    instance = without_interconnects(instance_type or "")
    row = _first_row(provider, normalise(with_instance_tiers(raw_name, instance_type)), instance, memory_gb)
    bare = without_interconnects(raw_name)
    if row is None and bare != raw_name:
        row = _first_row(provider, normalise(with_instance_tiers(bare, instance_type)), instance, memory_gb)
    return row


def _first_row(provider: str, key: str, instance: str, memory_gb: float | None) -> MapRow | None:
    for row in rows():
        if row.provider not in ("*", provider) or row.raw != key:
            continue
        if row.instance_regex and not row.instance_regex.search(instance):
            continue
        if memory_gb is not None:
            if row.min_memory_gb is not None and memory_gb < row.min_memory_gb:
                continue
            if row.max_memory_gb is not None and memory_gb > row.max_memory_gb:
                continue
        elif row.min_memory_gb is not None or row.max_memory_gb is not None:
            continue
        if not memory_fits(row.gpu_id, memory_gb):
            continue  # e.g. a machine total read as per-GPU memory: never the bigger card
        return row
    return None


#: a MIG slice named by its profile or its memory: "PRO 6000 MIG 24GB", "RTX PRO 6000 MIG 2g.48gb", "1g.10gb"
MIG_NAME = re.compile(r"(?:^|\s|[_-])MIG[\s_-]*(?:(?P<slices>\d+)g\.)?(?P<gb>\d+(?:\.\d+)?)\s*gb\b", re.I)
MIG_PROFILE = re.compile(r"^(?P<slices>\d+)g\.(?P<gb>\d+(?:\.\d+)?)gb$", re.I)


def mig_slice(name: str) -> tuple[str, float] | None:
    """``(parent card name, slice memory in GB)`` of a MIG slice's display name, or None for a whole card:
    ``"PRO 6000 MIG 24GB"`` -> ``("PRO 6000", 24.0)``."""
    m = MIG_NAME.search(name)
    if m is None:
        return None
    return name[:m.start()].strip(" _-"), float(m["gb"])


def slice_of(provider: str, parent_name: str, slice_memory_gb: float, instance_type: str = ""
             ) -> tuple[str, float, float] | None:
    """A slice of a card: ``(parent gpu id, share of the card, the card's marketed memory)``, the share being the
    slice's memory over the card's (a MIG 1g.24gb slice of a 96 GB RTX PRO 6000 is 0.25, 2g.48gb 0.5: MIG divides
    memory in these steps). None when the parent card is not in the map (the slice cannot be sized)."""
    gpu_id, _ = resolve(provider, parent_name, instance_type)
    if gpu_id is None:
        return None
    card = catalog()[gpu_id].memory_gb
    if not 0 < slice_memory_gb < card:
        return None
    return gpu_id, slice_memory_gb / card, card


def per_gpu_memory(provider: str, raw_name: str, instance_type: str, memory_gb: float | None, count: float
                   ) -> float | None:
    """Per-GPU memory from a field that some listings fill per GPU and others with the machine total: the
    as-listed reading when the GPU map accepts it for that name, else the total divided by the count when that
    is accepted, else as listed (the offer then stays unmapped and is reported)."""
    if memory_gb is None or count <= 1:
        return memory_gb
    if resolve(provider, raw_name, instance_type, memory_gb)[0] is not None:
        return memory_gb
    if resolve(provider, raw_name, instance_type, memory_gb / count)[0] is not None:
        return memory_gb / count
    return memory_gb
