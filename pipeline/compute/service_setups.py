"""Cheapest setups at a service level: each candidate setup served at the load (``sizing_core.serving``, the call
``fit --rate`` makes) and kept when it meets the level, in price order; and the rule that keeps llama.cpp RPC
chains over a public network below every setup a practitioner would deploy.

- **RPC chains last.** Several separately rented machines joined by llama.cpp's RPC backend over their public
  network rank after every other setup unless asked for (``allow_rpc``): the backend is a proof of concept, and a
  multi-node plan is otherwise only offered over a rented cluster fabric (``pipeline/compute/fabric.py``).
  :func:`practical_setups` searches without them first and fills a short list with them after.
- **A level, lazily.** Serving a setup costs milliseconds: :func:`at_service_level` serves candidates in price
  order and stops once ``top`` meet the level (a memo per layout: offers of one GPU layout share the answer).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pipeline.compute.serving_cache import Key, ServingCache
from pipeline.compute.setups import Setup, cheapest_setups
from sizing_core import Architecture
from sizing_core.engines import get_engine
from sizing_core.gpus import GPU, catalog
from sizing_core.serving import Serving, Workload
from sizing_core.serving.service_level import (
    DEFAULT_FLOOR,
    ServiceLevel,
    headroom,
    serve_layout,
    standard_workload,
    tokens_per_s_per_user,
    usd_per_million_output,
)

RPC = "llama.cpp-rpc"
#: a lower bound screens a setup out only when it misses the level by more than this factor
SCREEN_MARGIN = 1.1


def surely_slower(step_ms: float, level: ServiceLevel) -> bool:
    """A lower bound ``step_ms`` of a setup's ITL misses ``level``'s per-user decode rate by more than
    :data:`SCREEN_MARGIN`."""
    return level.min_tokens_per_s is not None and 1000.0 / step_ms * SCREEN_MARGIN < level.min_tokens_per_s


def is_rpc(s: Setup) -> bool:
    return s.deployment == RPC


def practical_setups(*args: Any, top: int = 5, allow_rpc: bool = False, **kw: Any) -> list[Setup]:  # noqa: ANN401
    """:func:`~pipeline.compute.setups.cheapest_setups` with RPC chains after every other setup: the ``top``
    cheapest without them, then (when fewer) the cheapest chains. ``allow_rpc``: the plain ranking."""
    if allow_rpc:
        return cheapest_setups(*args, top=top, **kw)
    found = cheapest_setups(*args, top=top, rpc=False, **kw)
    if len(found) < top:
        chains = [s for s in cheapest_setups(*args, top=top, **kw) if is_rpc(s)]
        found += chains[: top - len(found)]
    return found


@dataclass(frozen=True)
class Served:
    """A setup at the load: its serving figures (None: it serves no request at this load) and what it misses."""

    setup: Setup
    serving: Serving | None
    shortfall: tuple[str, ...]

    @property
    def meets(self) -> bool:
        return self.serving is not None and not self.shortfall

    def to_json(self, level: ServiceLevel | None) -> dict[str, Any] | None:
        """The ``serving`` object of a setup row (keys are a contract: docs/cli.md)."""
        if self.serving is None:
            return None
        return serving_json(self.serving, self.setup.price_per_hour, level, self.shortfall)


def serving_json(s: Serving, price_per_hour: float | None, level: ServiceLevel | None = None,
                 shortfall: tuple[str, ...] = ()) -> dict[str, Any]:
    """A deployment's figures at the load as the CLI prints them: the steady state's keys and the user's view of
    them (tokens/s per user, headroom, $/1M output tokens at ``price_per_hour`` and its range; None without a
    price), whether it meets ``level`` (``shortfall``: what it misses) and the default floor."""
    cost, span = usd_per_million_output(price_per_hour, s) if price_per_hour else (None, None)
    room = headroom(s)
    return s.to_json() | {
        "tokensPerSPerUser": tokens_per_s_per_user(s), "headroom": None if math.isinf(room) else room,
        "usdPerMillionOutputTokens": cost, "usdPerMillionOutputTokensRange": list(span) if span else None,
        "meetsLevel": None if level is None else not shortfall,
        "meetsDefaultFloor": not DEFAULT_FLOOR.shortfall(s), "shortfall": list(shortfall)}


class SetupServer:
    """Serves setups of one model at one load and ``max_model_len``, memoised per (GPU, engine, format, layout,
    machines): the instance size does not enter (TP stays inside an instance, so the all-reduce runs over the
    GPU's own link either way), and the GPU is the catalog's, as ``fit --gpus N`` serves it."""

    def __init__(self, arch: Architecture, load: Workload, context: int, kv_cache_dtype: str = "bf16", *,
                 cache: ServingCache | None = None, model: tuple[str, str] | None = None):
        if cache is not None and (model is None or load.concurrency is None
                                  or load != standard_workload(context, load.concurrency)):
            raise ValueError("the serving cache holds a model's (id, revision) layouts at its standard loads only")
        self.arch, self.load, self.context, self.kv = arch, load, context, kv_cache_dtype
        self.cache, self.model = cache, model
        self._memo: dict[tuple, Serving | None] = {}
        self._bounds: dict[tuple, tuple[str, ...]] = {}
        self.served = 0  # serve() calls made (the memo's misses)

    @staticmethod
    def _layout(s: Setup) -> tuple:
        return (s.gpu, s.engine, s.format, s.tensor_parallel, s.pipeline_parallel, s.nodes, s.native_support)

    def _cache_key(self, s: Setup, gpu: GPU) -> Key | None:
        if self.cache is None or self.model is None:
            return None
        return ServingCache.key(self.model, self.context, self.load.concurrency or 0, self.kv, gpu, s.engine,
                                s.format, s.tensor_parallel, s.pipeline_parallel, s.nodes, s.native_support)

    def serving(self, s: Setup) -> Serving | None:
        key = self._layout(s)
        if key not in self._memo:
            gpu = catalog().get(s.gpu)
            stored = None if gpu is None else self._cache_key(s, gpu)
            known, serving = (False, None) if stored is None or self.cache is None else self.cache.serving(stored)
            if not known and gpu is not None:
                self.served += 1
                serving = serve_layout(self.arch, gpu, get_engine(s.engine), s.format, s.tensor_parallel,
                                       s.pipeline_parallel, s.nodes, self.load, self.context, self.kv,
                                       s.native_support)
                if stored is not None and self.cache is not None:
                    self.cache.put_serving(stored, serving)
            self._memo[key] = serving
        return self._memo[key]

    def bound_shortfall(self, s: Setup, level: ServiceLevel) -> tuple[str, ...]:
        """What ``s`` surely misses of ``level``, from two lower bounds that cost two steps instead of a steady
        state: ITL is at least one request's decode step holding its prompt (a step only grows with the batch
        and the tokens held), TTFT at least the prompt's prefill as one step (chunks each read the weights again
        and add their fixed cost). Only a miss by more than :data:`SCREEN_MARGIN` counts, so a bound that is a
        little optimistic never drops a setup that meets the level."""
        from sizing_core.serving.step import StepModel

        gpu = catalog().get(s.gpu)
        if gpu is None or gpu.bandwidth_gbs is None:
            return ()
        model = StepModel(self.arch, gpu, get_engine(s.engine), s.format, s.tensor_parallel, s.pipeline_parallel,
                          self.kv, s.native_support, s.nodes)
        prompt = self.load.input_tokens
        out = []
        if level.min_tokens_per_s is not None:
            itl = model.step(1.0, prompt).total_ms
            if surely_slower(itl, level):
                out.append(f"under {1000.0 / itl:.1f} tokens/s per user < {level.min_tokens_per_s:g} (one "
                           "request's decode step)")
        if level.ttft_ms_p90 is not None:
            prefill = model.prefill_ms(prompt, prompt)
            if prefill > level.ttft_ms_p90 * SCREEN_MARGIN:
                out.append(f"TTFT over {prefill:,.0f} ms > {level.ttft_ms_p90:,.0f} ms (the prompt's prefill alone)")
        return tuple(out)

    def _bound(self, s: Setup, level: ServiceLevel) -> tuple[str, ...]:
        """:meth:`bound_shortfall`, answered from the cache when it holds it (the default floor's only: the
        cache's rows are kept for the level the pipeline publishes)."""
        gpu = catalog().get(s.gpu)
        stored = None if gpu is None or level != DEFAULT_FLOOR else self._cache_key(s, gpu)
        if stored is None or self.cache is None:
            return self.bound_shortfall(s, level)
        known = self.cache.bound(stored)
        if known is None:
            known = self.bound_shortfall(s, level)
            self.cache.put_bound(stored, known)
        return known

    def judge(self, s: Setup, level: ServiceLevel | None, screen: bool = False) -> Served:
        """``s`` at the load against ``level``; ``screen``: a setup surely missing it (:meth:`bound_shortfall`)
        is not served (its ``serving`` is None, its shortfall the bound's)."""
        if screen and level is not None:
            key = self._layout(s)
            if key not in self._memo:
                if key not in self._bounds:
                    self._bounds[key] = self._bound(s, level)
                if self._bounds[key]:
                    return Served(s, None, self._bounds[key])
        serving = self.serving(s)
        if serving is None:
            return Served(s, None, ("serves no request of this load",))
        return Served(s, serving, tuple(level.shortfall(serving)) if level is not None else ())


def at_service_level(server: SetupServer, candidates: Callable[[int], list[Setup]], level: ServiceLevel | None,
                     top: int, allow_rpc: bool = False, *, limit: int, screen: bool = True,
                     once: Callable[[Setup], Any] | None = None) -> tuple[list[Served], int]:
    """The ``top`` cheapest setups meeting ``level`` (None: every setup, the pure ranking), in the candidates'
    order with RPC chains after every other setup unless ``allow_rpc``. ``candidates(k)``: the ``k`` cheapest
    setups; asked for more (4x each time, up to ``limit``) while fewer than ``top`` meet the level. Also returns
    how many candidates were judged. ``screen``: skip serving setups a lower bound already fails
    (:meth:`SetupServer.bound_shortfall`; the same list either way). ``once``: a key kept at most once, the
    first candidate of it that meets (the candidates list a configuration in each format it runs, most faithful
    first: the most faithful format meeting the level answers for it)."""
    judged: dict[int, Served] = {}
    k = max(4 * top, 20) if level is not None else top
    while True:
        found = candidates(k)
        ordered = sorted(range(len(found)), key=lambda i: (not allow_rpc and is_rpc(found[i]), i))
        kept = []
        taken: set[Any] = set()
        for i in ordered:
            key = once(found[i]) if once is not None else i
            if key in taken:
                continue
            if i not in judged:
                judged[i] = server.judge(found[i], level, screen)
            if judged[i].meets or level is None:
                kept.append(judged[i])
                taken.add(key)
                if len(kept) >= top:
                    break
        if len(kept) >= top or len(found) < k or k >= limit:
            return kept, len(judged)
        k = min(limit, 4 * k)


def group_screen(arch: Architecture, level: ServiceLevel, load: Workload, formats: Iterable[str],
                 engine_of: Callable[[GPU], Any]) -> Callable[[GPU, int], bool]:  # noqa: ANN401 - an Engine
    """For :func:`~pipeline.compute.setups.cheapest_setups`' ``screen``: False for a group (GPU kind, GPUs per
    instance) none of whose setups can meet ``level`` at ``load`` in any of ``formats``, decided before anything
    is placed. Such a group serves no request (no bandwidth figure), cannot have its TTFT judged (no tensor-core
    rate: the level's TTFT bound is never met), or decodes slower per user than the level on its fastest layout
    (:func:`~sizing_core.serving.step.least_step_ms` with TP at most one instance, the format with the fewest
    active bytes; missed by more than :data:`SCREEN_MARGIN`). ``engine_of``: the search's engine per GPU kind."""
    from pipeline.compute.rates import weight_bytes
    from sizing_core.serving.step import least_step_ms, tensor_rate

    formats = tuple(formats)
    weights = min(weight_bytes(arch, f)[1] for f in formats)
    kept: dict[tuple[str, int], bool] = {}

    def may_meet(gpu: GPU, per_instance: int) -> bool:
        key = (gpu.id, per_instance)
        if key not in kept:
            engine = engine_of(gpu)
            ok = gpu.bandwidth_gbs is not None
            if ok and level.ttft_ms_p90 is not None:
                ok = any(tensor_rate(arch, gpu, engine, f, native) for f in formats for native in (True, False))
            if ok and level.min_tokens_per_s is not None:
                least = least_step_ms(arch, gpu, engine, weights, load.input_tokens, per_instance)
                ok = least is None or not surely_slower(least, level)
            kept[key] = ok
        return kept[key]

    return may_meet


def why_none(judged: Iterable[Served], level: ServiceLevel, searched: int | None = None) -> str:
    """One line saying why no setup meets ``level``: the nearest miss's shortfall among ``judged``
    (``searched``: how many of the cheapest setups were served looking for one)."""
    served = [j for j in judged if j.serving is not None]
    among = f"none of the {searched} cheapest setups meets the level" if searched else None
    if not served:
        return among or "no listed setup serves a request of this load"
    near = min(served, key=lambda j: (j.serving.saturated, j.serving.ttft_ms_p90 / (level.ttft_ms_p90 or math.inf)
                                      + (level.min_tokens_per_s or 0) * j.serving.itl_ms / 1000))
    return (f"{among or f'none of the {len(served)} listed setups meets the level'}; the nearest listed "
            f"({near.setup.gpus} x "
            f"{near.setup.gpu_name}, {near.setup.format}): {'; '.join(near.shortfall)}")


#: candidates served at most, per published load, looking for setups that meet the default floor
FLOOR_SEARCH_LIMIT = 320


def floor_setups(arch: Architecture, grouped: Any, context: int, concurrency: int,  # noqa: ANN401 - OfferGroups
                 planners: dict[str, Any], *, as_of: Any = None, top: int = 5,  # noqa: ANN401
                 limit: int = FLOOR_SEARCH_LIMIT, cache: ServingCache | None = None,
                 model: tuple[str, str] | None = None) -> list[Setup]:
    """The ``top`` cheapest setups (most faithful format per rented configuration, by price, RPC chains last)
    meeting :data:`DEFAULT_FLOOR` at the standard workload of ``concurrency`` requests of ``context`` tokens,
    among the ``limit`` cheapest of the groups that may meet it (:func:`group_screen`: the groups that surely miss
    it are neither placed nor counted); ``planners``: one per format of :data:`~pipeline.compute.answers.FIDELITY`
    at least (shared with the load's other lists); ``cache`` and ``model`` (id, revision): what earlier runs served
    of this model's layouts at this load (:mod:`pipeline.compute.serving_cache`)."""
    from pipeline.compute.answers import FIDELITY, overall

    load = standard_workload(context, concurrency)
    server = SetupServer(arch, load, context, cache=cache, model=model if cache is not None else None)
    screen = group_screen(arch, DEFAULT_FLOOR, load, FIDELITY, planners[FIDELITY[0]].engine)

    def candidates(k: int) -> list[Setup]:
        found = practical_setups(arch, FIDELITY, grouped, context=context, concurrency=concurrency, top=k,
                                 allocations=grouped.allocations, planner={f: planners[f] for f in FIDELITY},
                                 as_of=as_of, sort="price", allow_rpc=True, screen=screen)
        return overall(found, top=k, allow_rpc=True)

    kept, _ = at_service_level(server, candidates, DEFAULT_FLOOR, top, limit=limit)
    return [j.setup for j in kept]


def load_answer_serving(arch: Architecture, answer: dict[str, Any], *, cache: ServingCache | None = None,
                        model: tuple[str, str] | None = None) -> dict[str, Any]:
    """A published load answer (``byPrice``, ``byCostPerToken`` Setups) with its serving at the load's standard
    workload: each setup's ``serving``, the listed setups that meet the default floor cheapest first
    (``atDefaultFloor``), and ``floorNote`` when none does. Setups become dicts (their published shape).
    ``cache`` and ``model`` (id, revision): what earlier runs served of this model's layouts."""
    load = standard_workload(answer["context"], answer["concurrency"])
    server = SetupServer(arch, load, answer["context"], cache=cache, model=model if cache is not None else None)
    rows: dict[str, list[dict[str, Any]]] = {}
    meeting: dict[tuple, tuple[tuple, dict[str, Any]]] = {}
    judged = []
    for name in ("byPrice", "byCostPerToken"):
        rows[name] = []
        for s in answer[name]:
            j = server.judge(s, DEFAULT_FLOOR)
            judged.append(j)
            row = s.model_dump(mode="json") | {"serving": j.to_json(DEFAULT_FLOOR)}
            rows[name].append(row)
            key = (s.provider, s.instance_type, s.instances, s.price_per_hour, s.format)
            if j.meets and key not in meeting:
                meeting[key] = ((is_rpc(s), s.rank_key), row)
    if "atDefaultFloor" in answer:  # the pipeline's own search, deeper than the listed setups
        chosen = [s.model_dump(mode="json") | {"serving": server.judge(s, DEFAULT_FLOOR).to_json(DEFAULT_FLOOR)}
                  for s in answer["atDefaultFloor"]]
    else:
        chosen = [row for _, row in sorted(meeting.values(), key=lambda x: x[0])]
    note = None if chosen else why_none(judged, DEFAULT_FLOOR, FLOOR_SEARCH_LIMIT)
    return {**{k: v for k, v in answer.items() if k not in ("byPrice", "byCostPerToken", "atDefaultFloor")}, **rows,
            "workload": {"inputTokens": load.input_tokens, "outputTokens": load.output_tokens,
                         "concurrency": load.concurrency},
            "defaultFloor": DEFAULT_FLOOR.to_json(), "atDefaultFloor": chosen, "floorNote": note}
