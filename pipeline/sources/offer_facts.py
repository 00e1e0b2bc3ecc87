"""Facts about an offer that the price APIs leave out and no open catalog publishes, derived once at parse time
from cited tables, so every reader gets the same answer:

- **GPU memory in two stated units.** ``gpu_memory_gib``: what the driver shows per GPU (the GPU catalog's
  ``visible_mib``: 81,559 MiB = 79.65 GiB for an H100), ``gpu_memory_gb_marketed``: the vendor's figure (80). For
  a slice of a card both are the card's figure times ``gpu_share`` (an approximation: MIG reserves a little more).
  ``Offer.gpu_memory_gb`` keeps what the source listed, whatever its unit (deprecated for consumers).
- **Form factor** (``SXM``, ``PCIe``, ``NVL``, ``OAM``, ``Superchip``, or ``unknown``): the GPU-map row that named
  the card when its name says it (``data/gpu_map.csv``: an ``H100`` on an instance that says PCIe is the PCIe
  card); for a row whose name does not say it (a plain ``H100``, sold as SXM and PCIe), what the listing's own
  words state (``gpu_words.stated_form_factor``: ``1x-H100_SXM`` says SXM; ``NVLink`` says nothing), else
  ``unknown``, never guessed; the catalog's for a card the map did not name.
- **Interconnect** within a machine (``gpu_link``: NVSwitch, NVLink, NVLink bridge, xGMI, PCIe; ``none`` for one
  GPU or a slice) and across machines (``cluster_fabric``: InfiniBand, RoCE, EFA, NVLink domain + RoCE, or
  ``none``, with ``cluster_gbps`` per instance) from ``data/interconnect.csv`` (one row per instance family, each
  with its source); without a row, the link follows from the form factor (SXM and superchip modules sit on an
  NVLink baseboard, OAM accelerators on an Infinity Fabric (xGMI) mesh, PCIe cards talk over PCIe: an NVLink
  bridge some cards accept is never assumed) and no cluster fabric is rented. ``interconnect_source`` says which.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pipeline.sources.gpu_names import match
from pipeline.sources.gpu_words import stated_form_factor
from sizing_core.gpus import catalog

INTERCONNECT_PATH = Path(__file__).parent / "data" / "interconnect.csv"
FORM_FACTORS = ("SXM", "PCIe", "NVL", "OAM", "Superchip")
UNKNOWN = "unknown"  # a form factor (and so a link) the listing does not state, of a card sold in several
GPU_LINKS = ("NVSwitch", "NVLink", "NVLink bridge", "xGMI", "PCIe", "none", UNKNOWN)
CLUSTER_FABRICS = ("InfiniBand", "RoCE", "EFA", "NVLink domain + RoCE", "none")
AvailabilityStatus = Literal["available", "low", "unavailable"]
AVAILABILITY = ("available", "low", "unavailable")


@dataclass(frozen=True)
class Family:
    provider: str
    pattern: str
    gpu_link: str | None
    cluster_fabric: str | None
    cluster_gbps: float | None
    fabric: str
    source: str


@dataclass(frozen=True)
class Interconnect:
    gpu_link: str | None
    cluster_fabric: str
    cluster_gbps: float | None
    source: str


@lru_cache(maxsize=1)
def families() -> tuple[Family, ...]:
    out = []
    for line, r in enumerate(csv.DictReader(INTERCONNECT_PATH.open()), start=2):
        if r["gpu_link"] and r["gpu_link"] not in GPU_LINKS:
            raise ValueError(f"{INTERCONNECT_PATH.name} line {line}: gpu_link {r['gpu_link']!r} not in {GPU_LINKS}")
        if r["cluster_fabric"] and r["cluster_fabric"] not in CLUSTER_FABRICS:
            raise ValueError(f"{INTERCONNECT_PATH.name} line {line}: cluster_fabric {r['cluster_fabric']!r} "
                             f"not in {CLUSTER_FABRICS}")
        if not r["source"].startswith("http"):
            raise ValueError(f"{INTERCONNECT_PATH.name} line {line}: every row needs its source URL")
        out.append(Family(r["provider"], r["instance_pattern"], r["gpu_link"] or None, r["cluster_fabric"] or None,
                          float(r["cluster_gbps"]) if r["cluster_gbps"] else None, r["fabric"], r["source"]))
    return tuple(out)


def family(provider: str, instance_type: str) -> Family | None:
    for f in families():
        if f.provider == provider and fnmatchcase(instance_type, f.pattern):
            return f
    return None


def form_factor(provider: str, map_name: str, instance_type: str, memory_gb: float | None,
                gpu_id: str | None) -> str | None:
    """The form factor of the card the offer rents: the matching GPU-map row's when its name states it, else the
    listing's own words, else ``unknown`` (the row's card is sold in several); the catalog's for other cards."""
    if gpu_id is None:
        return None
    row = match(provider, map_name, instance_type, memory_gb)
    if row is not None and row.gpu_id == gpu_id:
        if row.form_factor in FORM_FACTORS:
            return row.form_factor
        return stated_form_factor(map_name, instance_type or "") or UNKNOWN
    return catalog_form_factor(gpu_id)


@lru_cache(maxsize=512)
def catalog_form_factor(gpu_id: str) -> str | None:
    gpu = catalog().get(gpu_id)
    if gpu is None:
        return None
    text = gpu.form_factor
    if gpu_id.endswith("-nvl"):
        return "NVL"
    for ff in ("SXM", "OAM", "Superchip", "PCIe"):
        if text.startswith(ff):
            return ff
    return None  # SoC, TPU or accelerator chips: not rented as GPU cards


def memory(gpu_id: str | None, share: float) -> tuple[float | None, float | None]:
    """(driver-visible GiB, marketed GB) per GPU device the offer rents (a slice: the card's x share)."""
    gpu = catalog().get(gpu_id) if gpu_id else None
    if gpu is None:
        return None, None
    return round(gpu.memory_bytes / 2**30 * share, 3), round(gpu.memory_gb * share, 3)


def interconnect(provider: str, instance_type: str, gpu_id: str | None, ff: str | None, gpus_per_instance: float,
                 fractional: bool) -> Interconnect:
    """How the GPUs of one instance talk to each other, and which fabric joins instances (see the module doc)."""
    fam = family(provider, instance_type)
    cluster = fam.cluster_fabric if fam and fam.cluster_fabric else "none"
    gbps = fam.cluster_gbps if fam else None
    gpu = catalog().get(gpu_id) if gpu_id else None
    detail = f" (GPU catalog: {gpu.interconnect})" if gpu is not None and gpu.interconnect else ""
    if fractional or gpus_per_instance <= 1:
        link: str | None = "none"
        why = "rule: one GPU (or a slice of one) per instance"
    elif fam is not None and fam.gpu_link:
        link, why = fam.gpu_link, ""
    elif ff in ("SXM", "Superchip"):
        link, why = "NVLink", f"rule: {ff} modules share an NVLink baseboard{detail}"
    elif ff == "OAM" and gpu is not None and "Infinity Fabric" in (gpu.interconnect or ""):
        link, why = "xGMI", f"rule: OAM accelerators on an Infinity Fabric (xGMI) mesh{detail}"
    elif ff == "NVL":
        link, why = "NVLink bridge", f"rule: NVL cards are sold in NVLink-bridged pairs{detail}"
    elif ff == "PCIe":
        link, why = "PCIe", f"rule: PCIe cards talk over PCIe; an NVLink bridge is never assumed{detail}"
    elif ff == UNKNOWN:
        link, why = UNKNOWN, "rule: the listing does not say SXM or PCIe of a card sold as both, so neither is its link"
    else:
        link, why = None, "unknown: GPU not mapped to the catalog"
    if fam is not None:
        why = f"{fam.source}" + (f"; {why}" if why else "")
    elif cluster == "none":
        why += "; no cluster fabric listed for this instance family"
    return Interconnect(link, cluster, gbps, why)
