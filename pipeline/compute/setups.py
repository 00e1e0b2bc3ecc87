"""Cheapest setups: the fewest-GPU deployment of a model priced on what providers really rent.

For each GPU kind with current offers, the planner (``sizing_core.placement``) gives the fewest GPUs under the
engine's rules, re-planned for each instance shape (TP cannot exceed the GPUs in one instance). A provider that
sells 8-GPU instances charges for 8 even when 6 would do. Only offers the quality stage keeps are used (see
:func:`eligible_offers`); on-demand and spot/marketplace prices are separate lists, never mixed.

What a user would really deploy:

- **One machine first.** A setup spans several instances (always of one offer: same provider, instance type and
  region) only in two cases: the instance family is rented with a cluster interconnect (InfiniBand, RoCE, EFA or an
  NVLink domain, named per family in ``pipeline/sources/data/interconnect.csv``) and the engine splits layers
  across nodes (vLLM pipeline stages: TP inside a node, PP across nodes); or llama.cpp's RPC backend over up to
  :data:`MAX_RPC_MACHINES` separately rented machines, which is shown as such and flagged (its own README calls
  it a fragile, insecure proof of concept that must never run on an open network).
- **Ranking.** Any setup of more than one machine is ranked as if it cost :data:`MULTI_MACHINE_RANK_FACTOR` times
  its price, so it never ranks above a single-machine setup within 25 % of its price. Ties break on price, fewer
  machines, then provider, source, instance type, region, GPU, format and every other field of the setup
  (:attr:`Setup.rank_key` is a total order), so every reader (CLI, JSON, Parquet) gets the same order.
- **Formats** say whether the GPU runs them natively (``native_support``, ``support_note`` names the fallback).
"""

from __future__ import annotations

import bisect
import csv
import dataclasses
import heapq
import math
from collections.abc import Iterable
from datetime import date, datetime
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pipeline.compute.placement_cache import Key, Placed, PlacementCache, Rates, gpu_row_hash
from pipeline.compute.setup_costs import costs_from_rates, placement_rates
from sizing_core import Architecture
from sizing_core.calibration import band
from sizing_core.cost import HOURS_PER_MONTH
from sizing_core.engines import default_engine
from sizing_core.gpus import GPU, catalog
from sizing_core.placement import Placement, PlanSearch, check_load, fewest_gpus
from sizing_core.record import CamelRecord, described, record

#: the ECB publishes a reference rate every TARGET working day: a weekend plus a holiday leaves at most 4 days
#: between two rate dates, so an older rate is stale, like a source not fetched for that long
FX_STALE_AFTER_DAYS = 4
#: a setup of several machines ranks as if it cost this much more (never above a one-machine setup within 25 %)
MULTI_MACHINE_RANK_FACTOR = 1.25
#: llama.cpp RPC over separately rented machines: at most this many machines (every token crosses every hop)
MAX_RPC_MACHINES = 4
RPC_FLAG = ("llama.cpp RPC across separately rented machines over their public network: the RPC backend is a "
            "proof of concept, fragile and insecure on an open network (ggml-org/llama.cpp tools/rpc/README.md)")
Deployment = Literal["single_machine", "cluster", "llama.cpp-rpc"]

ON_DEMAND = ("on_demand",)
SPOT_LIKE = ("spot", "marketplace", "marketplace_median", "bid_statistics")
#: what a setup says about capacity, from its offer's ``availability_status`` (stated by the source's API at fetch)
AVAILABILITY_NOTES = {"available": "available at fetch time", "low": "available at fetch time (low stock)",
                      "unavailable": "unavailable at fetch time"}
CAPACITY_UNKNOWN = "listed, capacity unknown"


def eligible_offers(con: Any) -> list[dict[str, Any]]:
    """Current offers a setup may use: the ``offers_judged`` view's ``eligible`` (sql/020, the one definition),
    with the canonical provider and the allocation class in place of the source's own labels."""
    cursor = con.execute("""
        SELECT * REPLACE (canonical_provider AS provider, allocation_class AS allocation)
        FROM offers_judged WHERE eligible ORDER BY offer_key""")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


@record(many=True)
class Setup(CamelRecord):
    """One rentable deployment (a plain dataclass like sizing_core's results: ``fit`` prices plans with these and
    must not import pydantic; ``pipeline/exports/schema.py`` publishes it as ``SetupItem``)."""

    provider: str
    source: str
    instance_type: str
    region: str | None
    gpu: str
    gpu_name: str
    instances: int
    gpus_per_instance: int
    gpus: int  # rented
    gpus_needed: int
    tensor_parallel: int
    pipeline_parallel: int
    price_per_hour: float  # USD, all instances
    price_per_month: float  # USD, 730 hours
    price_per_gpu_hour: float  # USD per rented GPU
    currency_listed: str
    fx_date: str | None
    allocation: str
    format: str
    engine: str
    verified_at: datetime
    nodes: int = described(1, "machines rented (instances); more than 1 only over a cluster interconnect or, "
                              "flagged, llama.cpp RPC")
    deployment: Deployment = described("single_machine", "single_machine | cluster (rented interconnect) | "
                                                         "llama.cpp-rpc (flagged)")
    interconnect: str | None = described(None, "the cluster fabric the nodes share (multi-node only)")
    native_support: bool = described(True, "the GPU runs this format natively (False: a fallback kernel, named in "
                                           "support_note)")
    support_note: str = described("", "how the engine runs the format on this GPU")
    flags: list[str] = described(default_factory=list, description="what a user should know before renting this")
    fx_stale: bool = described(False, "the price was converted with an ECB rate more than 4 days older than the "
                                      "snapshot's as-of time (fx_date says which)")
    availability: str = described(CAPACITY_UNKNOWN, "available at fetch time (low stock), unavailable at fetch "
                                  "time, or listed, capacity unknown (the source's API states none)")
    # cost of the answer (issue #12): decode rate of the plan, $/1M output tokens single stream and at the
    # concurrency the plan allows at its context; None when the GPU has no bandwidth figure
    decode_tokens_per_s: float | None = described(None, "decode speed of one request on this plan", unit="tokens/s")
    max_concurrent_requests: int | None = described(
        None, "requests of the planned context the plan holds at once", unit="requests")
    aggregate_tokens_per_s: float | None = described(
        None, "decode speed of all max_concurrent_requests together", unit="tokens/s")
    usd_per_million_tokens: float | None = described(
        None, "price_per_hour / (decode_tokens_per_s x 3600) x 1e6: one request at a time",
        unit="USD per 1M output tokens")
    usd_per_million_tokens_batched: float | None = described(
        None, "price_per_hour / (aggregate_tokens_per_s x 3600) x 1e6: the plan kept full",
        unit="USD per 1M output tokens")
    # issue #22: the calibration's range (measured / predicted on published measurements) around the speeds and the
    # cost at the served concurrency
    decode_tokens_per_s_low: float | None = described(None, "low end of decode_tokens_per_s's range", unit="tokens/s")
    decode_tokens_per_s_high: float | None = described(None, "high end of decode_tokens_per_s's range",
                                                       unit="tokens/s")
    aggregate_tokens_per_s_low: float | None = described(None, "low end of aggregate_tokens_per_s's range",
                                                         unit="tokens/s")
    aggregate_tokens_per_s_high: float | None = described(None, "high end of aggregate_tokens_per_s's range",
                                                          unit="tokens/s")
    usd_per_million_tokens_batched_low: float | None = described(
        None, "usd_per_million_tokens_batched at the high end of the speed range", unit="USD per 1M output tokens")
    usd_per_million_tokens_batched_high: float | None = described(
        None, "usd_per_million_tokens_batched at the low end of the speed range", unit="USD per 1M output tokens")

    @property
    def layout(self) -> str:
        """``2 x 8 GPUs (2 nodes), TP 8 x PP 2`` — what is rented and how the model is split."""
        nodes = f"{self.nodes} node{'s' if self.nodes > 1 else ''}"
        return (f"{self.instances} x {self.gpus_per_instance} GPU{'s' if self.gpus_per_instance > 1 else ''} "
                f"({nodes}), TP {self.tensor_parallel} x PP {self.pipeline_parallel}")

    @property
    def rank_key(self) -> tuple:
        """One total order for every reader: multi-machine setups ranked at 1.25x their price, then the price,
        fewer machines, and every field that tells two setups apart (so ties never depend on input order).
        ``rank_key[0]`` is the rounded rank price (the pruning in :func:`cheapest_setups` reads it)."""
        return rank_key_of(vars(self))


def rank_key_of(f: dict[str, Any]) -> tuple:
    """:attr:`Setup.rank_key` from a setup's field values (a Setup's ``vars`` or the keyword arguments it would be
    built from): :func:`cheapest_setups` ranks candidates before building the few Setups that win."""
    factor = MULTI_MACHINE_RANK_FACTOR if f["nodes"] > 1 else 1.0
    return (round(f["price_per_hour"] * factor, 6), f["price_per_hour"], f["nodes"], f["provider"], f["source"],
            f["instance_type"], f["region"] is not None, f["region"] or "", f["gpu"], f["format"], f["allocation"],
            f["instances"], f["gpus_per_instance"], f["tensor_parallel"], f["pipeline_parallel"], f["deployment"],
            f["engine"], f["price_per_gpu_hour"], f["currency_listed"], f["fx_date"] or "", f["verified_at"].isoformat())


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


def instances_needed(gpus_needed: int, gpus_per_instance: int, spans_machines: bool) -> int | None:
    """Whole instances to rent: 6 GPUs from 8-GPU instances is 1 instance; from 1-GPU offers, 6 instances."""
    if gpus_per_instance >= gpus_needed:
        return 1
    if not spans_machines:
        return None
    return math.ceil(gpus_needed / gpus_per_instance)


def usable_offer(offer: dict[str, Any], allocations: tuple[str, ...]) -> bool:
    """Eligible (the ``offers_judged`` view's verdict, which offers from DuckDB and the published table carry;
    never re-derived here) and of one of ``allocations``."""
    return (offer.get("allocation_class") or offer["allocation"]) in allocations and offer.get("eligible") is True


class Planner:
    """Caches the fewest-GPU placement per (GPU, GPUs per instance) for one model, format and scenario; with a
    :class:`PlacementCache` and the model's (id, revision), also across runs (perf #14): the floors, placements
    and decode rates a price-only run needs are read back instead of re-planned."""

    def __init__(self, arch: Architecture, fmt: str, context: int, concurrency: int, kv_cache_dtype: str, *,
                 cache: PlacementCache | None = None, model: tuple[str, str] | None = None):
        self.arch, self.fmt, self.context, self.concurrency, self.kv = arch, fmt, context, concurrency, kv_cache_dtype
        self._cache: dict[tuple[str, int], Placement] = {}
        self._placed: dict[tuple[str, int], Placed] = {}
        self._rates: dict[tuple[str, int], Rates] = {}
        self._floors: dict[str, int] = {}
        self._bands: dict[str, tuple[float, float]] = {}
        self._search_state: PlanSearch | None = None  # sizing_core's fewest-GPU search, shared by every GPU kind
        self.store = cache if model is not None else None
        self.model = model
        self._hashes: dict[str, str] = {}

    def _key(self, gpu: GPU, per_instance: int) -> Key | None:
        if self.store is None or self.model is None:
            return None
        if gpu.id not in self._hashes:
            self._hashes[gpu.id] = gpu_row_hash(gpu)
        return (*self.model, self.fmt, self.context, self.concurrency, self.kv, gpu.id, self._hashes[gpu.id],
                per_instance)

    def gpus_floor(self, gpu: GPU) -> int:
        """Fewer GPUs than this cannot hold the weights (``sizing_core.placement``'s exact lower bound), whatever
        the instance shape: what the pruning in :func:`cheapest_setups` prices a group at before placing it."""
        if gpu.id not in self._floors:
            key = self._key(gpu, 0)
            floor = self.store.floor(key) if self.store is not None and key is not None else None
            if floor is None:
                floor = self._planner().lower_bound(gpu, default_engine(gpu))
                if self.store is not None and key is not None:
                    self.store.put_floor(key, floor)
            self._floors[gpu.id] = floor
        return self._floors[gpu.id]

    def band(self, gpu: GPU) -> tuple[float, float]:
        """The calibration's decode band for this model on ``gpu`` with its default engine."""
        if gpu.id not in self._bands:
            self._bands[gpu.id] = band("decode", default_engine(gpu).id, gpu, self.arch)
        return self._bands[gpu.id]

    def place(self, gpu: GPU, per_instance: int) -> Placement:
        """The full placement (plan and per-stage memory), computed in this process."""
        key = (gpu.id, per_instance)
        if key not in self._cache:
            shaped = gpu.model_copy(update={"max_gpus_per_node": per_instance})
            self._cache[key] = fewest_gpus(self.arch, shaped, default_engine(gpu), self.fmt, self.context,
                                           self.concurrency, self.kv)
        return self._cache[key]

    def _planner(self) -> PlanSearch:
        if self._search_state is None:
            self._search_state = PlanSearch(self.arch, self.fmt, self.context, self.concurrency, self.kv)
        return self._search_state

    def _search(self, gpu: GPU, per_instance: int) -> Placed:
        """:func:`sizing_core.placement.fewest_gpus`'s answer (GPUs, TP, PP, support) for ``gpu`` in instances
        of ``per_instance`` GPUs, by the same search (``PlanSearch.fewest``) without building the plan. One
        ``PlanSearch`` serves every GPU kind and instance shape of this model and load, so whether a (TP, PP) fits
        is computed once per GPU kind (perf #14: about half the placements of a run are the same GPU kind in
        another instance size). ``tests/test_setups_planner.py`` checks this equals ``fewest_gpus`` on every shape."""
        arch, engine = self.arch, default_engine(gpu)
        check_load(arch, self.context, self.concurrency, self.kv)  # the same errors as fewest_gpus, in its order
        support = engine.supports(gpu, self.fmt, arch)
        if not support.runs:
            return Placed(None, None, None, support.native, support.note)
        found = self._planner().fewest(gpu.model_copy(update={"max_gpus_per_node": per_instance}), engine)
        if found is None:
            return Placed(None, None, None, support.native, support.note)
        return Placed(*found, support.native, support.note)

    def placed(self, gpu: GPU, per_instance: int) -> Placed:
        """What a setup needs of the placement: read from the cross-run cache when it has it."""
        if (gpu.id, per_instance) not in self._placed:
            key = self._key(gpu, per_instance)
            hit = self.store.placed(key) if self.store is not None and key is not None else None
            if hit is None:
                hit = self._search(gpu, per_instance)
                if self.store is not None and key is not None:
                    self.store.put_placed(key, hit)
            self._placed[(gpu.id, per_instance)] = hit
        return self._placed[(gpu.id, per_instance)]

    def rates(self, gpu: GPU, per_instance: int) -> Rates:
        """Decode rates of the placement (one request; as many as the plan holds), cached like the placement."""
        if (gpu.id, per_instance) not in self._rates:
            key = self._key(gpu, per_instance)
            hit = self.store.rates(key) if self.store is not None and key is not None else None
            if hit is None:
                hit = placement_rates(self.arch, gpu, self.place(gpu, per_instance))
                if self.store is not None and key is not None:
                    self.store.put_rates(key, hit)
            self._rates[(gpu.id, per_instance)] = hit
        return self._rates[(gpu.id, per_instance)]


class OfferGroups:
    """Usable offers of some allocations grouped by (GPU, GPUs per instance), each group cheapest first (a stable
    sort: equal prices keep their input order), with each group's cheapest price: built once per run and shared by
    every model and format (perf #14). Cheapest first lets :func:`cheapest_setups` stop in a group at the first
    offer priced out of the top, instead of building a Setup for every offer cheaper than the top so far."""

    def __init__(self, offers: Iterable[dict[str, Any]], allocations: tuple[str, ...] = ON_DEMAND):
        gpus = catalog()
        self.allocations = allocations
        self.groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for offer in offers:
            if usable_offer(offer, allocations) and offer["gpu_id"] in gpus:
                self.groups.setdefault((offer["gpu_id"], int(offer["gpu_count"])), []).append(offer)
        for group in self.groups.values():
            group.sort(key=lambda o: o["price_per_hour_usd"])
        self.cheapest = {k: g[0]["price_per_hour_usd"] for k, g in self.groups.items()}
        #: every group at its cheapest offer's price, sorted (a heap): where :func:`cheapest_setups`'s queue starts
        self.queue = sorted((price, False, key) for key, price in self.cheapest.items())


def cheapest_setups(arch: Architecture, fmt: str, offers: Iterable[dict[str, Any]] | OfferGroups, *,
                    context: int = 8192, concurrency: int = 1, kv_cache_dtype: str = "bf16", top: int = 5,
                    allocations: tuple[str, ...] = ON_DEMAND, planner: Planner | None = None,
                    as_of: datetime | None = None) -> list[Setup]:
    """The ``top`` cheapest setups; pass one ``planner`` to share placements between calls (on-demand, spot), and
    ``OfferGroups`` (built for ``allocations``) instead of the offers to share the grouping between models.
    With ``as_of``, a price converted with an ECB rate older than :data:`FX_STALE_AFTER_DAYS` is marked and
    flagged (the rate's own date travels with the price as ``fx_date``)."""
    gpus = catalog()
    planner = planner or Planner(arch, fmt, context, concurrency, kv_cache_dtype)
    grouped = offers if isinstance(offers, OfferGroups) else OfferGroups(offers, allocations)
    assert grouped.allocations == allocations, "OfferGroups built for other allocations"
    groups = grouped.groups
    # Pruning (perf #14), exact: a group's setups cost at least its cheapest offer times the instances that the
    # weights alone need (``Planner.gpus_floor``: no placement uses fewer GPUs), and rank at least at that price
    # (the multi-machine factor is >= 1). Groups are visited by that floor; once it exceeds the current top-th
    # rank price no later group can enter the top, and the placements (the expensive part) of the remaining
    # groups are never computed. A (provider, instance type, region) lives in one group, so the visiting order
    # changes nothing else. The floors themselves are computed lazily (#28): a group enters the queue at its
    # cheapest offer's price, a lower bound of its floor (the floor is at least 1 GPU, so at least 1 instance),
    # and its floor is computed only when that bound is the lowest left; a group whose cheapest offer is already
    # above the limit never needs its floor. The visiting order by floor is the same.
    queue = list(grouped.queue)  # (a copy of a sorted list: already a heap)
    # the best setup per (provider, instance type, region)
    best: dict[tuple[str, str, str | None], dict[str, Any]] = {}  # the fields of a Setup
    keys: dict[tuple[str, str, str | None], tuple] = {}  # each best setup's rank key, computed once
    ranks: list[float] = []  # the best setups' rank prices, sorted (the top-th is the limit)
    limit = math.inf  # the current top-th rank price (+1e-6: rank prices are rounded to 1e-6); it only falls
    while queue:
        bound, exact, (gpu_id, per_instance) = heapq.heappop(queue)
        if bound > limit:
            break
        if not exact:
            need = planner.gpus_floor(gpus[gpu_id])
            if need > per_instance and not default_engine(gpus[gpu_id]).splits_layers:
                continue  # one instance is too small and the engine cannot span machines: no setup
            heapq.heappush(queue, (bound * math.ceil(need / per_instance), True, (gpu_id, per_instance)))
            continue
        group = groups[(gpu_id, per_instance)]
        gpu = gpus[gpu_id]
        placed = planner.placed(gpu, per_instance)
        if placed.gpus is None:
            continue
        engine = default_engine(gpu)
        count = instances_needed(placed.gpus, per_instance, engine.splits_layers)
        if count is None:
            continue
        factor = MULTI_MACHINE_RANK_FACTOR if count > 1 else 1.0  # a setup's nodes are its instances
        for offer in group:
            # the same rule per offer: rank_key[0] (the setup's rounded price x factor, rounded) above the current
            # top-th rank price cannot enter the top (the limit only falls)
            if round(round(count * offer["price_per_hour_usd"], 4) * factor, 6) > limit:
                break  # the group is cheapest first and shares count and factor: every later offer is out too
            how = deployment(engine.id, count, offer)
            if how is None:
                continue
            fields = _setup_fields(count * offer["price_per_hour_usd"], offer, placed, count, gpu, fmt, *how,
                                   as_of=as_of)  # a Setup is built only for the winners (below)
            key = (offer["provider"], offer["instance_type"], offer.get("region"))
            rank_key = rank_key_of(fields)
            if key not in best or rank_key < keys[key]:
                if key in best:
                    del ranks[bisect.bisect_left(ranks, keys[key][0])]
                best[key], keys[key] = fields, rank_key
                bisect.insort(ranks, rank_key[0])
                if len(best) >= top:  # follows the top as it fills, not once per group (a sorted list kept as it
                    limit = ranks[top - 1] + 1e-6  # changes: a heapq.nsmallest per new best was ~7 %, #28)
    ranked = [best[k] for k in sorted(best, key=keys.__getitem__)[:top]]
    return [Setup(**f, **costs_from_rates(planner.rates(gpus[f["gpu"]], f["gpus_per_instance"]), f["price_per_hour"],
                                          planner.band(gpus[f["gpu"]])))
            for f in ranked]


def deployment(engine_id: str, machines: int, offer: dict[str, Any]) -> tuple[Deployment, str | None] | None:
    """How ``machines`` instances of ``offer`` would be deployed, or None when a user would not do it."""
    if machines == 1:
        return "single_machine", None
    if engine_id == "llama.cpp":
        return ("llama.cpp-rpc", None) if machines <= MAX_RPC_MACHINES else None
    fabric = cluster_fabric(offer["provider"], offer["instance_type"])
    return ("cluster", fabric) if fabric else None


#: a Setup field whose ``cheapest_setups`` column has another name
_COLUMN_OF_FIELD = {"gpu": "gpu_id"}
#: Setup fields that are not columns (the catalog gives the GPU's name back from its id)
_NOT_COLUMNS = ("gpu_name",)


_ROW_FIELDS = tuple(f for f in Setup.__dataclass_fields__ if f not in _NOT_COLUMNS)
#: the ``cheapest_setups`` columns a Setup fills, in :func:`setup_values` order
SETUP_COLUMNS = tuple(_COLUMN_OF_FIELD.get(f, f) for f in _ROW_FIELDS)


def setup_values(s: Setup) -> tuple[Any, ...]:
    """A Setup as its ``cheapest_setups`` table row (sql/ DDL; ``exports/tables.py::CheapestSetups`` publishes it):
    every field's value, in :data:`SETUP_COLUMNS` order (the column names). The one place the row shape is
    written; :func:`setup_from_row` reads it."""
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
    if "flags" in values:
        values["flags"] = list(values["flags"])
    return Setup(**values)


def fx_age_days(fx_date: str | None, as_of: datetime | None) -> int | None:
    """Days between the ECB rate a price was converted with and the as-of time (None: USD, or no as-of)."""
    if not fx_date or as_of is None:
        return None
    return (as_of.date() - date.fromisoformat(fx_date)).days


def _setup_fields(price: float, offer: dict[str, Any], placed: Placed, count: int, gpu: GPU, fmt: str,
                  how: Deployment = "single_machine", fabric: str | None = None, *,
                  as_of: datetime | None = None) -> dict[str, Any]:
    """The keyword arguments of the Setup that runs ``placed`` on ``count`` instances of ``offer``."""
    assert placed.gpus is not None and placed.tensor_parallel is not None and placed.pipeline_parallel is not None
    per_instance = int(offer["gpu_count"])
    flags = []
    fx_age = fx_age_days(offer.get("fx_date"), as_of)
    fx_stale = fx_age is not None and fx_age > FX_STALE_AFTER_DAYS
    if fx_stale:
        flags.append(f"{offer['currency']} price converted with the ECB rate of {offer['fx_date']}, {fx_age} days "
                     "before this snapshot: the USD figure is stale")
    if how == "llama.cpp-rpc":
        flags.append(RPC_FLAG)
    if not placed.native_support:
        flags.append(f"not native on {gpu.name}: {placed.support_note}")
    return dict(
        provider=offer["provider"], source=offer["source"], instance_type=offer["instance_type"],
        region=offer.get("region"), gpu=gpu.id, gpu_name=gpu.name, instances=count, gpus_per_instance=per_instance,
        gpus=count * per_instance, gpus_needed=placed.gpus, tensor_parallel=placed.tensor_parallel,
        pipeline_parallel=placed.pipeline_parallel, price_per_hour=round(price, 4),
        price_per_month=round(price * HOURS_PER_MONTH, 2), price_per_gpu_hour=round(price / (count * per_instance), 4),
        currency_listed=offer["currency"], fx_date=offer.get("fx_date"),
        allocation=offer.get("allocation_class") or offer["allocation"], format=fmt,
        engine=default_engine(gpu).id, verified_at=offer["verified_at"], nodes=count, deployment=how,
        interconnect=fabric, native_support=placed.native_support, support_note=placed.support_note, flags=flags,
        fx_stale=fx_stale, availability=AVAILABILITY_NOTES.get(offer.get("availability_status") or "", CAPACITY_UNKNOWN))


#: formats from most to least faithful; the overall list reports, for each rented configuration, the most faithful
#: format it can run, and leaves out the 2- and 3-bit mixes (they stay in the per-format Parquet table)
FIDELITY = ("native", "bf16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "awq_int4", "nvfp4", "q4_k_m", "mxfp4",
            "iq4_xs")


def overall(setups: list[Setup], top: int = 5) -> list[Setup]:
    best: dict[tuple, Setup] = {}
    for s in setups:
        if s.format not in FIDELITY:
            continue
        key = (s.provider, s.instance_type, s.region, s.instances)
        if key not in best or (FIDELITY.index(s.format), s.rank_key) < (FIDELITY.index(best[key].format),
                                                                          best[key].rank_key):
            best[key] = s
    return sorted(best.values(), key=lambda x: (x.rank_key[0], FIDELITY.index(x.format), x.rank_key))[:top]
