"""Cheapest setups: the fewest-GPU deployment of a model priced on what providers really rent.

For each GPU kind with current offers, the planner (``sizing_core.placement.search``) gives the fewest GPUs under the
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
import heapq
import math
from collections.abc import Callable, Iterable
from datetime import date, datetime
from typing import Any, Literal

from pipeline.compute.fabric import (  # noqa: F401
    MAX_RPC_MACHINES,
    ONE_MACHINE,
    Deployment,
    cluster_fabric,
    deployment,
    interconnects,
)
from pipeline.compute.offer_groups import ON_DEMAND, SPOT_LIKE, OfferGroups, eligible_offers, usable_offer  # noqa: F401
from pipeline.compute.placement_cache import Key, Placed, PlacementCache, Rates, gpu_row_hash
from pipeline.compute.rates import load_rate, token_cost_floor, weight_bytes
from pipeline.compute.serving import Serving
from pipeline.compute.setup_costs import costs_from_rates, layout_rates, placement_rates
from sizing_core import Architecture
from sizing_core.calibration import band
from sizing_core.cost import HOURS_PER_MONTH
from sizing_core.engines import Engine, default_engine, get_engine
from sizing_core.gpus import GPU, catalog
from sizing_core.placement.deployment import fewest_serving
from sizing_core.placement.search import Placement, PlanSearch, fewest_gpus
from sizing_core.record import CamelRecord, described, record

#: the ECB publishes a reference rate every TARGET working day: a weekend plus a holiday leaves at most 4 days
#: between two rate dates, so an older rate is stale, like a source not fetched for that long
FX_STALE_AFTER_DAYS = 4
#: a setup of several machines ranks as if it cost this much more (never above a one-machine setup within 25 %)
MULTI_MACHINE_RANK_FACTOR = 1.25
#: llama.cpp RPC over separately rented machines: at most this many machines (every token crosses every hop)
RPC_FLAG = ("llama.cpp RPC across separately rented machines over their public network: the RPC backend is a "
            "proof of concept, fragile and insecure on an open network (ggml-org/llama.cpp tools/rpc/README.md)")

#: what a setup says about capacity, from its offer's ``availability_status`` (stated by the source's API at fetch)
AVAILABILITY_NOTES = {"available": "available at fetch time", "low": "available at fetch time (low stock)",
                      "unavailable": "unavailable at fetch time"}
CAPACITY_UNKNOWN = "listed, capacity unknown"


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
    # cost of the answer: decode rate of the plan, $/1M output tokens single stream and at the
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
    # the calibration's range (measured / predicted on published measurements) around the speeds and the
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
    # the load answered (`concurrency` requests of `context` tokens), every region of this setup
    regions: list[str] = described(default_factory=list, description="every region offering this very setup at "
                                   "this price (region is the first); empty when the offer names none")
    context: int | None = described(None, "tokens per request of the load the setup serves", unit="tokens")
    concurrency: int | None = described(None, "requests of `context` tokens served at once", unit="requests")
    tokens_per_s_per_request: float | None = described(
        None, "decode speed of each request while `concurrency` requests run together", unit="tokens/s")
    usd_per_million_tokens_at_load: float | None = described(None, "price_per_hour / (concurrency x "
                                                             "tokens_per_s_per_request x 3600) x 1e6", unit="USD per 1M output tokens")

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


def instances_needed(gpus_needed: int, gpus_per_instance: int, spans_machines: bool) -> int | None:
    """Whole instances to rent: 6 GPUs from 8-GPU instances is 1 instance; from 1-GPU offers, 6 instances."""
    if gpus_per_instance >= gpus_needed:
        return 1
    if not spans_machines:
        return None
    return math.ceil(gpus_needed / gpus_per_instance)


def shaped_gpu(gpu: GPU, per_instance: int) -> GPU:
    """``gpu`` in machines of ``per_instance`` GPUs (memoised per catalog row: one copy per shape per run)."""
    hit = _SHAPED.get((id(gpu), per_instance))
    if hit is None or hit[0] is not gpu:
        hit = _SHAPED[(id(gpu), per_instance)] = (gpu, gpu.model_copy(update={"max_gpus_per_node": per_instance}))
    return hit[1]


_SHAPED: dict[tuple[int, int], tuple[GPU, GPU]] = {}


class Planner:
    """Caches the fewest-GPU placement per (GPU, GPUs per instance) for one model, format and scenario; with a
    :class:`PlacementCache` and the model's (id, revision), also across runs: the floors, placements
    and decode rates a price-only run needs are read back instead of re-planned."""

    def __init__(self, arch: Architecture, fmt: str, context: int, concurrency: int, kv_cache_dtype: str, *,
                 cache: PlacementCache | None = None, model: tuple[str, str] | None = None,
                 engine: str | None = None):
        self.arch, self.fmt, self.context, self.concurrency, self.kv = arch, fmt, context, concurrency, kv_cache_dtype
        assert engine is None or cache is None, "the cache keys default-engine placements only"  # --engine: all GPUs
        self.engine_id = engine
        self._cache: dict[tuple[str, int], Placement] = {}
        self._placed: dict[tuple[str, int], Placed] = {}
        self._rates: dict[tuple[str, int], Rates] = {}
        self._floors: dict[str, int] = {}
        self._token_floors: dict[str, tuple[float, float] | None] = {}
        self._keys: dict[tuple[str, int], Key | None] = {}
        self._bands: dict[str, tuple[float, float]] = {}
        self._search_state: PlanSearch | None = None  # sizing_core's fewest-GPU search, shared by every GPU kind
        self.store = cache if model is not None else None
        self.model = model
        self._hashes: dict[str, str] = {}

    def engine(self, gpu: GPU) -> Engine:
        return get_engine(self.engine_id) if self.engine_id else default_engine(gpu)

    def _key(self, gpu: GPU, per_instance: int) -> Key | None:
        if self.store is None or self.model is None:
            return None
        key = self._keys.get((gpu.id, per_instance))
        if key is None:
            if gpu.id not in self._hashes:
                self._hashes[gpu.id] = gpu_row_hash(gpu)
            key = self._keys[(gpu.id, per_instance)] = (*self.model, self.fmt, self.context, self.concurrency,
                                                         self.kv, gpu.id, self._hashes[gpu.id], per_instance)
        return key

    def band(self, gpu: GPU) -> tuple[float, float]:
        """The calibration's decode band for this model on ``gpu`` with the planner's engine."""
        if gpu.id not in self._bands:
            self._bands[gpu.id] = band("decode", self.engine(gpu).id, gpu, self.arch)
        return self._bands[gpu.id]

    def known_floor(self, gpu: GPU) -> int | None:  # :meth:`gpus_floor` if known (here or cached), never computed
        if gpu.id in self._floors:
            return self._floors[gpu.id]
        key = self._key(gpu, 0)
        return self.store.known_floor(key) if self.store is not None and key is not None else None

    def token_floor(self, gpu: GPU) -> tuple[float, float] | None:
        """:func:`~pipeline.compute.rates.token_cost_floor` of this model, format and load on ``gpu``."""
        if gpu.id not in self._token_floors:
            self._token_floors[gpu.id] = token_cost_floor(self.arch, self.fmt, gpu, self.engine(gpu),
                                                          self.concurrency, self.context, self.kv)
        return self._token_floors[gpu.id]

    def gpus_floor(self, gpu: GPU) -> int:
        """Fewer GPUs than this cannot hold the weights (``sizing_core.placement.search``'s exact lower bound), whatever
        the instance shape: what the pruning in :func:`cheapest_setups` prices a group at before placing it."""
        if gpu.id not in self._floors:
            key = self._key(gpu, 0)
            floor = self.store.floor(key) if self.store is not None and key is not None else None
            if floor is None:
                floor = self._planner().lower_bound(gpu, self.engine(gpu))
                if self.store is not None and key is not None:
                    self.store.put_floor(key, floor)
            self._floors[gpu.id] = floor
        return self._floors[gpu.id]

    def place(self, gpu: GPU, per_instance: int) -> Placement:
        """The full placement (plan and per-stage memory), computed in this process."""
        key = (gpu.id, per_instance)
        if key not in self._cache:
            shaped, engine = shaped_gpu(gpu, per_instance), self.engine(gpu)
            placed = fewest_gpus(self.arch, shaped, engine, self.fmt, self.context, self.concurrency, self.kv)
            if (plan := placed.plan) is not None:  # moved up while the engine's pool cannot serve the load
                n, tp, pp = self._serving().layout(self._planner(), shaped, engine, (
                    plan.gpus, plan.tensor_parallel, plan.pipeline_parallel))
                if n != plan.gpus or (tp, pp) != (plan.tensor_parallel, plan.pipeline_parallel):
                    placed = placed.model_copy(update={"gpus": n, "plan": self._planner().plan(shaped, engine, tp, pp)})
            self._cache[key] = placed
        return self._cache[key]

    def _planner(self) -> PlanSearch:
        if self._search_state is None:
            self._search_state = PlanSearch(self.arch, self.fmt, self.context, self.concurrency, self.kv)
            self._serving_state = Serving(self.arch, self.fmt, self.context, self.concurrency, self.kv)
        return self._search_state

    def _serving(self) -> Serving:
        self._planner()
        return self._serving_state

    def _search(self, gpu: GPU, per_instance: int) -> Placed:
        """:func:`sizing_core.placement.deployment.fewest`'s answer (GPUs, TP, PP, support) for ``gpu`` in instances of
        ``per_instance`` GPUs, by the same rule (``deployment.fewest_serving``) without building the plan. One
        ``PlanSearch`` serves every GPU kind and instance shape of this model and load, so whether a (TP, PP) fits
        is computed once per GPU kind (about half the placements of a run are the same GPU kind in
        another instance size). ``tests/test_setups_planner.py`` checks this equals ``fewest_gpus`` on every shape."""
        engine, shaped, search = self.engine(gpu), shaped_gpu(gpu, per_instance), self._planner()
        support, layout = fewest_serving(search, shaped, engine,
                                         serve=lambda found: self._serving().layout(search, shaped, engine, found))
        if layout is None:
            return Placed(None, None, None, support.native, support.note)
        return Placed(*layout, support.native, support.note)

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
                placed = self.placed(gpu, per_instance)
                if placed.gpus is None or placed.tensor_parallel is None or placed.pipeline_parallel is None:
                    hit = placement_rates(self.arch, gpu, self.place(gpu, per_instance), self.engine(gpu))
                else:  # the plan's nodes on this instance shape (``sizing_core.placement.search.PlanSearch.plan``)
                    tp, pp = placed.tensor_parallel, placed.pipeline_parallel
                    nodes = math.ceil(tp * pp / (max(1, per_instance // tp) * tp))
                    hit = layout_rates(self.arch, gpu, self.engine(gpu), self.fmt, (tp, pp, nodes),
                                       (self.context, self.concurrency, self.kv), placed.native_support)
                if self.store is not None and key is not None:
                    self.store.put_rates(key, hit)
            self._rates[(gpu.id, per_instance)] = hit
        return self._rates[(gpu.id, per_instance)]


Sort = Literal["price", "per_token"]


def cheapest_setups(arch: Architecture, fmt: str | tuple[str, ...], offers: Iterable[dict[str, Any]] | OfferGroups,
                    *, context: int = 8192, concurrency: int = 1, kv_cache_dtype: str = "bf16", top: int = 5,
                    allocations: tuple[str, ...] = ON_DEMAND, planner: Planner | dict[str, Planner] | None = None,
                    as_of: datetime | None = None, sort: Sort = "price", by_region: bool = False,
                    rpc: bool = True, screen: Callable[[GPU, int], bool] | None = None) -> list[Setup]:
    """The ``top`` cheapest distinct setups (one per provider x instance type x price, the regions in ``regions``;
    ``by_region``: one per region) serving ``concurrency`` requests of ``context`` tokens, by price or by cost per
    output token at that load. ``fmt``: one format, or several from most to least faithful: each rented
    configuration (offer and instance count) is then answered in the most faithful it runs, in one search.
    ``planner`` (a dict: one per format) shares placements between calls, ``OfferGroups`` (built for
    ``allocations``) the grouping between models. With ``as_of``, a price converted with an ECB rate older than
    :data:`FX_STALE_AFTER_DAYS` is marked and flagged (the rate's date travels with the price as ``fx_date``).
    ``rpc=False``: no llama.cpp RPC chain (``pipeline/compute/service_setups.practical_setups`` ranks them last).
    ``screen(gpu, gpus_per_instance)`` False: no setup of that group is wanted (it surely misses a service level),
    so the group is neither placed nor counted: the answer is the ``top`` cheapest of the groups it keeps."""
    gpus = catalog()
    formats = (fmt,) if isinstance(fmt, str) else tuple(fmt)
    given = planner if isinstance(planner, dict) else {formats[0]: planner} if planner is not None else {}
    planners = {f: given.get(f) or Planner(arch, f, context, concurrency, kv_cache_dtype) for f in formats}
    grouped = offers if isinstance(offers, OfferGroups) else OfferGroups(offers, allocations)
    assert grouped.allocations == allocations, "OfferGroups built for other allocations"
    groups = grouped.groups
    # Pruning, exact: every setup of a group ranks at least at its group's bound, so groups are visited
    # by bound and the search stops at the first bound above the current top-th rank value; the placements (the
    # expensive part) of the remaining groups are never computed. By price the bound is the cheapest offer times
    # the instances the weights alone need (``Planner.gpus_floor``; the multi-machine factor is >= 1). By cost per
    # token (:func:`token_bound`) the cheapest offer times the engine's slowest possible decode step on as many
    # instances: a step takes at least a / TP + b (``Planner.token_floor``) and TP <= the GPUs rented, so n
    # instances of g GPUs cost at least price x (a / g + n x b) (the fixed per-layer costs make large
    # instances of a small model dear per token; the bandwidth-only bound placed ~5x the groups). With several
    # formats, the least of theirs. Floors lazily: a group is queued at a lower bound of its bound (one
    # instance) and its weight floor computed only when that entry is the lowest left, so a group above the limit
    # needs none. Exact entries leave the queue in (bound, group) order.
    # the formats with the fewest weight bytes in all and per decode step: their floors bound every format's
    # (a step's floor grows with the active weights alone, the engine being the GPU's)
    held = min(planners.values(), key=lambda p: (weight_bytes(arch, p.fmt)[0], p.fmt))
    read = min(planners.values(), key=lambda p: (weight_bytes(arch, p.fmt)[1], p.fmt))
    token_floors: dict[str, tuple[float, float]] = {}  # per GPU kind: the least (a, b) of the formats
    if sort == "price":
        queue = list(grouped.queue)  # (a copy of a sorted list: already a heap)
    else:  # no bandwidth figure: no cost per token
        token_floors = {g: f for g in {k[0] for k in groups} if (f := read.token_floor(gpus[g])) is not None}
        queue = sorted((token_bound(grouped.cheapest[k], k[1], 1, token_floors[k[0]]), False, k) for k in groups
                       if k[0] in token_floors)
    best: dict[tuple, dict[str, Any]] = {}  # the fields of the best Setup per distinct setup
    keys: dict[tuple, tuple] = {}  # each best setup's rank key, computed once
    ranks: list[float] = []  # the best setups' rank values, sorted (the top-th is the limit)
    regions: dict[tuple, set[str]] = {}  # every region offering it at that price
    leads: dict[tuple, tuple] = {}  # (source, region) of each best setup: what decides between equal prices
    limit = math.inf  # the current top-th rank value (+1e-6: rank values are rounded to 1e-6); it only falls
    while queue:
        bound, exact, (gpu_id, per_instance) = heapq.heappop(queue)
        if bound > limit:
            break
        gpu = gpus[gpu_id]
        if not exact:
            if screen is not None and not screen(gpu, per_instance):
                continue
            need = held.gpus_floor(gpu)
            if need > per_instance and not held.engine(gpu).splits_layers:
                continue  # one instance is too small and the engine cannot span machines: no setup
            count = math.ceil(need / per_instance)
            exact_bound = bound * count if sort == "price" else token_bound(
                grouped.cheapest[(gpu_id, per_instance)], per_instance, count, token_floors[gpu_id])
            heapq.heappush(queue, (exact_bound, True, (gpu_id, per_instance)))
            continue
        entries = (grouped.by_region if by_region else grouped.distinct)[(gpu_id, per_instance)]
        for count, variant in _variants(planners, gpu, per_instance, concurrency, sort,
                                        grouped.cheapest[(gpu_id, per_instance)], limit).items():
            if variant is None:
                continue
            f, placed, engine, factor = variant
            faithful = formats.index(f)  # between equal rank values the more faithful format first (overall)
            for offer, offer_regions in entries:
                # the same rule per offer: the setup's rounded price x factor (its rank value) above the current
                # top-th rank value cannot enter the top (the limit only falls). An entry is one provider x
                # instance type x price (by region: one offer), its lead offer the one a setup of it shows
                price = round(count * offer["price_per_hour_usd"], 4)
                value = round(price * factor, 6)
                if value > limit:
                    break  # the group is cheapest first and shares count and factor: every later offer is out too
                how = ONE_MACHINE if count == 1 else deployment(engine.id, count, offer)
                if how is None or (not rpc and how[0] == "llama.cpp-rpc"):
                    continue
                region = offer.get("region")
                key = (offer["provider"], offer["instance_type"], count, price) + ((region,) if by_region else ())
                regions.setdefault(key, set()).update(offer_regions)
                # within one distinct setup the rank key can only differ from the source on (rank_key_of's
                # order), so an offer that does not come first there cannot represent it: no fields built
                first = (offer["source"], region is not None, region or "")
                if key in best and first > leads[key]:
                    continue
                fields = setup_fields(count * offer["price_per_hour_usd"], offer, placed, count, gpu, f, *how,
                                      as_of=as_of, engine_id=engine.id)  # a Setup is built only for the winners
                rank_key = (value, faithful, *rank_key_of(fields))
                if key not in best or rank_key < keys[key]:
                    if key in best:
                        del ranks[bisect.bisect_left(ranks, keys[key][0])]
                    best[key], keys[key], leads[key] = fields, rank_key, first
                    bisect.insort(ranks, value)
                    if len(best) >= top:  # follows the top as it fills, not once per group (a sorted list kept
                        limit = ranks[top - 1] + 1e-6  # as it changes: a heapq.nsmallest per new best was ~7 %)
    out = []
    for key in sorted(best, key=keys.__getitem__)[:top]:
        f = best[key]
        plan, gpu = planners[f["format"]], gpus[f["gpu"]]
        out.append(Setup(**f, **costs_from_rates(plan.rates(gpu, f["gpus_per_instance"]), f["price_per_hour"],
                                                 plan.band(gpu), concurrency),
                         regions=sorted(r for r in regions[key] if r), context=context, concurrency=concurrency))
    return out


def token_bound(cheapest: float, per_instance: int, instances: int, floor: tuple[float, float]) -> float:
    """The least rank value by cost per token of a group (cheapest offer ``cheapest`` for ``per_instance`` GPUs)
    rented as ``instances`` or more instances, ``floor`` = (a, b) of :meth:`Planner.token_floor`: n instances cost
    n x cheapest x (a / TP + b) >= cheapest x (a / per_instance + n x b) per 1M tokens (TP <= n x per_instance),
    x1.25 over several machines; both grow with n. (1 - 1e-3): the rank value rounds the price to 4 places."""
    factor = MULTI_MACHINE_RANK_FACTOR if instances > 1 else 1.0
    return cheapest * factor * (floor[0] / per_instance + instances * floor[1]) * (1 - 1e-3)


def _variants(planners: dict[str, Planner], gpu: GPU, per_instance: int, concurrency: int, sort: Sort,
              cheapest: float, limit: float) -> dict[int, tuple[str, Placed, Engine, float] | None]:
    """Per instance count a group's offers would be rented in: the most faithful format that runs so, its
    placement, engine and rank factor (multi-machine x, by cost per token, $/1M tokens per $/h), or None when
    that configuration cannot enter the top or has no decode rate (a less faithful format never stands in)."""
    out: dict[int, tuple[str, Placed, Engine, float] | None] = {}
    for f, plan in planners.items():
        if sort == "price" and len(planners) > 1 and (floor := plan.known_floor(gpu)) is not None:
            # by price a value depends on the instance count alone: too dear a format neither answers nor masks
            low = math.ceil(floor / per_instance)
            if cheapest * low * (MULTI_MACHINE_RANK_FACTOR if low > 1 else 1.0) * (1 - 1e-3) > limit:
                continue
        placed = plan.placed(gpu, per_instance)
        if placed.gpus is None:
            continue
        engine = plan.engine(gpu)
        count = instances_needed(placed.gpus, per_instance, engine.splits_layers)
        if count is None or count in out:
            continue
        factor = MULTI_MACHINE_RANK_FACTOR if count > 1 else 1.0  # a setup's nodes are its instances
        if sort == "per_token":  # $/1M output tokens per $/h of this placement at the load
            # the plan known, the bound tightens before rates are computed: its TP group's slowest possible step
            floor = plan.token_floor(gpu)
            tight = math.inf if floor is None else cheapest * count * factor * (
                floor[0] / (placed.tensor_parallel or 1) + floor[1])
            at_load = None if tight * (1 - 1e-3) > limit else load_rate(plan.rates(gpu, per_instance), concurrency)
            if not at_load:  # above the top already (margin: rank values round the price), or no decode rate
                out[count] = None
                if count == 1:
                    break
                continue
            factor *= 1e6 / (3600 * at_load)
        out[count] = (f, placed, engine, factor)
        if count == 1:
            break  # one instance taken: a less faithful format never needs fewer
    return out


def fx_age_days(fx_date: str | None, as_of: datetime | None) -> int | None:
    """Days between the ECB rate a price was converted with and the as-of time (None: USD, or no as-of)."""
    if not fx_date or as_of is None:
        return None
    return (as_of.date() - date.fromisoformat(fx_date)).days


def setup_fields(price: float, offer: dict[str, Any], placed: Placed, count: int, gpu: GPU, fmt: str,
                  how: Deployment = "single_machine", fabric: str | None = None, *,
                  as_of: datetime | None = None, engine_id: str | None = None) -> dict[str, Any]:
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
    engine_id = engine_id or default_engine(gpu).id
    return dict(
        provider=offer["provider"], source=offer["source"], instance_type=offer["instance_type"],
        region=offer.get("region"), gpu=gpu.id, gpu_name=gpu.name, instances=count, gpus_per_instance=per_instance,
        gpus=count * per_instance, gpus_needed=placed.gpus, tensor_parallel=placed.tensor_parallel,
        pipeline_parallel=placed.pipeline_parallel, price_per_hour=round(price, 4),
        price_per_month=round(price * HOURS_PER_MONTH, 2), price_per_gpu_hour=round(price / (count * per_instance), 4),
        currency_listed=offer["currency"], fx_date=offer.get("fx_date"),
        allocation=offer.get("allocation_class") or offer["allocation"], format=fmt,
        engine=engine_id, verified_at=offer["verified_at"], nodes=count, deployment=how,
        interconnect=fabric, native_support=placed.native_support, support_note=placed.support_note, flags=flags,
        fx_stale=fx_stale, availability=AVAILABILITY_NOTES.get(offer.get("availability_status") or "", CAPACITY_UNKNOWN))
