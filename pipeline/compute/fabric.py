"""The cluster fabric an instance family is rented with (InfiniBand, RoCE, EFA, ...): whether and how several
instances of an offer run one deployment (:func:`deployment`, used by ``pipeline/compute/setups.py``)."""

from __future__ import annotations

import csv
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from sizing_core.engines import get_engine

#: llama.cpp RPC across at most this many separately rented machines
MAX_RPC_MACHINES = 4
Deployment = Literal["single_machine", "cluster", "llama.cpp-rpc"]

#: the instance-family table (``pipeline/sources/offer_facts.py`` joins it onto offers); by path: ``fit``'s start-up
INTERCONNECT_TABLE = Path(__file__).resolve().parents[1] / "sources" / "data" / "interconnect.csv"


@lru_cache(maxsize=1)
def interconnects() -> tuple[tuple[str, str, str], ...]:
    """(provider, instance pattern, fabric) of the families rented with a cluster fabric."""
    text = INTERCONNECT_TABLE.read_text()  # not importlib.resources: start-up
    return tuple((r["provider"], r["instance_pattern"], r["fabric"]) for r in csv.DictReader(text.splitlines())
                 if r["cluster_fabric"])


@lru_cache(maxsize=1)
def fabric_names() -> tuple[str, ...]:
    """The short names of the cluster fabrics the table knows (``EFA``, ``InfiniBand``, ``RoCE``, ...), sorted."""
    text = INTERCONNECT_TABLE.read_text()
    return tuple(sorted({r["cluster_fabric"] for r in csv.DictReader(text.splitlines()) if r["cluster_fabric"]}))


@lru_cache(maxsize=1)
def fabric_short_names() -> dict[str, str]:
    """Each fabric description (a setup's ``interconnect``) to its short name (``InfiniBand``, ``EFA``)."""
    text = INTERCONNECT_TABLE.read_text()
    return {r["fabric"]: r["cluster_fabric"] for r in csv.DictReader(text.splitlines()) if r["cluster_fabric"]}


@lru_cache(maxsize=65536)
def cluster_fabric(provider: str, instance_type: str) -> str | None:
    """The fabric joining a provider's instances of this type (the first row of the table matching it), or None."""
    for prov, pattern, fabric in interconnects():
        if prov == provider and fnmatchcase(instance_type, pattern):
            return fabric
    return None


#: how one instance is deployed, whatever the engine and offer (the setups search takes it without a call)
ONE_MACHINE: tuple[Deployment, None] = ("single_machine", None)


def deployment(engine_id: str, machines: int, offer: dict[str, Any]) -> tuple[Deployment, str | None] | None:
    """How ``machines`` instances of ``offer`` would be deployed, or None when a user would not do it."""
    if machines == 1:
        return ONE_MACHINE
    if get_engine(engine_id).joins_machines_over_rpc:
        return ("llama.cpp-rpc", None) if machines <= MAX_RPC_MACHINES else None
    fabric = cluster_fabric(offer["provider"], offer["instance_type"])
    return ("cluster", fabric) if fabric else None
