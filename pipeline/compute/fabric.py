"""The cluster fabric an instance family is rented with (InfiniBand, RoCE, EFA, ...): whether several instances
of an offer can run one deployment (``pipeline/compute/setups.py::deployment``)."""

from __future__ import annotations

import csv
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

#: the instance-family table (``pipeline/sources/offer_facts.py`` joins it onto offers); by path: ``fit``'s start-up
INTERCONNECT_TABLE = Path(__file__).resolve().parents[1] / "sources" / "data" / "interconnect.csv"


@lru_cache(maxsize=1)
def interconnects() -> tuple[tuple[str, str, str], ...]:
    """(provider, instance pattern, fabric) of the families rented with a cluster fabric."""
    text = INTERCONNECT_TABLE.read_text()  # not importlib.resources: start-up
    return tuple((r["provider"], r["instance_pattern"], r["fabric"]) for r in csv.DictReader(text.splitlines())
                 if r["cluster_fabric"])


def cluster_fabric(provider: str, instance_type: str) -> str | None:
    for prov, pattern, fabric in interconnects():
        if prov == provider and fnmatchcase(instance_type, pattern):
            return fabric
    return None
