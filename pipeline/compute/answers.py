"""What the cheapest setups answer: the row shape of ``cheapest_setups`` (DuckDB and the published Parquet), the
most faithful format per rented configuration (the overall list the model JSON and ``vramlab cheapest`` show) and
the standard loads every model is answered at ."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from pipeline.compute.setups import MULTI_MACHINE_RANK_FACTOR, Setup
from sizing_core.gpus import catalog

#: a Setup field whose ``cheapest_setups`` column has another name
_COLUMN_OF_FIELD = {"gpu": "gpu_id"}
#: Setup fields that are not columns (the catalog gives the GPU's name back from its id)
_NOT_COLUMNS = ("gpu_name",)


_ROW_FIELDS = tuple(f for f in Setup.__dataclass_fields__ if f not in _NOT_COLUMNS)
#: the ``cheapest_setups`` columns a Setup fills, in :func:`setup_values` order
SETUP_COLUMNS = tuple(_COLUMN_OF_FIELD.get(f, f) for f in _ROW_FIELDS)


def setup_row(s: Setup) -> dict[str, Any]:
    """A Setup as its ``cheapest_setups`` table row (sql/ DDL; ``exports/tables.py::CheapestSetups`` publishes it):
    every field under its column name. The one place the row shape is written; :func:`setup_from_row` reads it."""
    return dict(zip(SETUP_COLUMNS, setup_values(s), strict=True))


def setup_values(s: Setup) -> tuple[Any, ...]:
    """:func:`setup_row`'s values alone, in :data:`SETUP_COLUMNS` order (rows inserted as typed tuples, not
    inferred dicts)."""
    return tuple(getattr(s, f) for f in _ROW_FIELDS)


def setup_from_row(row: dict[str, Any]) -> Setup:
    """A ``cheapest_setups`` table row (DuckDB or the published Parquet) back as a Setup. A column an older
    snapshot lacks (or holds null) takes the field's default."""
    gpu = catalog().get(row["gpu_id"])
    values: dict[str, Any] = {"gpu_name": gpu.name if gpu else row["gpu_id"]}
    for name, f in Setup.__dataclass_fields__.items():
        if name in _NOT_COLUMNS:
            continue
        value = row.get(_COLUMN_OF_FIELD.get(name, name))
        if value is None and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING):
            continue  # the default
        values[name] = value
    if not row.get("nodes"):
        values["nodes"] = row["instances"]
    for name in ("flags", "regions"):
        if name in values:
            values[name] = list(values[name])
    return Setup(**values)


#: setups per published list (each format's, each sort's, the floor's): the overall answer read from the
#: per-format lists is exact up to this many rows (a configuration among the k cheapest overall is among the k
#: cheapest of its own format), not beyond
TOP = 5

#: formats from most to least faithful; the overall list reports, for each rented configuration, the most faithful
#: format it can run, and leaves out the 2- and 3-bit mixes (they stay in the per-format Parquet table)
FIDELITY = ("native", "bf16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "awq_int4", "nvfp4", "q4_k_m", "mxfp4",
            "iq4_xs")


def fidelity_rank(fmt: str) -> int:
    """A format's place from most to least faithful (:data:`FIDELITY`); the 2- and 3-bit mixes after them all."""
    return FIDELITY.index(fmt) if fmt in FIDELITY else len(FIDELITY)


def configuration(s: Setup, by_region: bool = False) -> tuple:
    """What is rented, whatever the format it runs: provider x instance type x instances x price (with
    ``by_region`` each region apart)."""
    return (s.provider, s.instance_type, s.instances, s.price_per_hour) + ((s.region,) if by_region else ())


def overall(setups: list[Setup], top: int = 5, sort: str = "price", by_region: bool = False,
            allow_rpc: bool = False) -> list[Setup]:
    """For each rented configuration (provider x instance type x instances x price; with ``by_region`` each region
    apart) the most faithful format it runs, 4-bit and above; the ``top`` cheapest by price (the rank price:
    multi-machine setups at 1.25x) or by cost per output token at the load (the same factor; setups without a
    decode rate left out). llama.cpp RPC chains over separately rented machines come after every other setup
    unless ``allow_rpc`` (``pipeline/compute/service_setups.py``)."""
    best: dict[tuple, Setup] = {}
    for s in setups:
        if s.format not in FIDELITY or (sort == "per_token" and s.usd_per_million_tokens_at_load is None):
            continue
        key = configuration(s, by_region)
        if key not in best or (fidelity_rank(s.format), s.rank_key) < (fidelity_rank(best[key].format),
                                                                        best[key].rank_key):
            best[key] = s
    return sorted(best.values(), key=lambda x: (not allow_rpc and x.deployment == "llama.cpp-rpc",
                                                rank_value(x, sort), fidelity_rank(x.format), x.rank_key))[:top]


def rank_value(s: Setup, sort: str = "price") -> float:
    """What a list is ordered by: the rank price, or the cost per output token at the load with the same
    multi-machine factor (``Setup.rank_key[0]`` and ``cheapest_setups``' own rule)."""
    if sort in ("price", "floor"):  # the floor list: the cheapest by price meeting the default floor
        return s.rank_key[0]
    factor = MULTI_MACHINE_RANK_FACTOR if s.nodes > 1 else 1.0
    return round((s.usd_per_million_tokens_at_load or math.inf) * factor, 6)


@dataclass(frozen=True)
class Load:
    """A question answered for every model: ``concurrency`` requests of ``context`` tokens at once."""

    context: int
    concurrency: int
    label: str  # "8K x 1", "32K x 8", "128K x 1", "max 1M x 1"


def _k(tokens: int) -> str:
    if tokens % 2**20 == 0:
        return f"{tokens // 2**20}M"
    return f"{tokens // 1024}K" if tokens % 1024 == 0 else f"{tokens:,}"


#: the loads every model's published answers cover (8K x 1 is the question cheapestSetups has always answered)
PUBLISHED = Load(8192, 1, "8K x 1")
STANDARD = (PUBLISHED, Load(32768, 8, "32K x 8"), Load(131072, 1, "128K x 1"))


def standard_loads(max_context: int | None) -> list[Load]:
    """8K x 1, 32K x 8 and 128K x 1 where the model reaches them, and its maximum context x 1 (a model without a
    stated maximum: the first three)."""
    loads = [load for load in STANDARD if max_context is None or load.context <= max_context]
    if max_context is not None and all(load.context != max_context for load in loads):
        loads.append(Load(max_context, 1, f"max {_k(max_context)} x 1"))
    return loads
