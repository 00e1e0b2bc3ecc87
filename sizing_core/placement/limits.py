"""What stops a deployment from fitting: the term of its memory breakdown that binds.

A plan's tightest stage is, per GPU (``placement.StageMemory``, the breakdown ``fit`` prints): the weights, the
engine's own reserve (non-torch memory, llama.cpp's context: ``engineOverhead``), the activation peak (vLLM's
profile run, llama.cpp's compute buffer) and the KV cache and state of the requests asked, against the engine's
usable memory. It does not fit when their sum exceeds it, or when the engine's paged pool (``EngineStartup``) holds
fewer requests than asked. The term that binds:

- ``weights``: the weights alone exceed what the engine leaves for them (usable less its reserve);
- otherwise the largest of the terms sharing what the weights leave: ``activation_peak``, ``kv_cache`` (the asked
  requests' cache and state) or ``engine_reserve``; ``kv_cache`` too when the sums fit but the engine's paged pool
  holds fewer requests than asked (block rounding, windows kept whole).
"""

from __future__ import annotations

from ..engines.memory import EngineStartup
from ..record import CamelRecord, record
from .search import Plan

#: the kinds of :class:`Binding`, in the order the module doc explains them
KINDS = ("weights", "activation_peak", "kv_cache", "engine_reserve")


@record
class Binding(CamelRecord):
    """Why ``gpus`` GPUs do not hold the load: the binding term and the breakdown it was read from (GiB per GPU,
    the tightest stage)."""

    kind: str  # one of KINDS
    gpus: int
    weights: float
    activation_peak: float
    kv_cache: float  # KV cache and recurrent state of the requests asked
    engine_reserve: float
    usable: float  # the engine's usable memory per GPU, its reserve included
    left_for_kv: float  # usable less weights, reserve and activation peak (negative: nothing)
    served: float | None  # requests of the context the engine's pool holds (None: no start-up figures)
    note: str


def binding(plan: Plan, start: EngineStartup | None, engine_name: str, concurrency: int, context: int
            ) -> Binding | None:
    """The binding term of ``plan`` (built fitting or not, as :func:`deployment.exact` builds it) with the
    engine's start-up figures, or None when it holds ``concurrency`` requests of ``context`` tokens."""
    stage = plan.largest_stage
    w, a, o = stage.weights, stage.activations, stage.engine_overhead
    kv = stage.kv_cache + stage.recurrent_state
    usable = plan.usable_gib
    left = usable - o - w - a
    served = None if start is None else float(start.max_concurrency)
    over = w + a + o + kv > usable + 1e-9
    short_pool = start is not None and (not start.starts or start.max_concurrency < concurrency)
    if not over and not short_pool:
        return None
    n = plan.gpus
    load = f"one request of {context:,} tokens" if concurrency == 1 else f"{concurrency} requests of {context:,} tokens"
    on = "on one GPU" if n == 1 else f"on {n} GPUs"
    if w > usable - o:
        kind = "weights"
        note = (f"{on} the weights alone are {w:,.1f} GiB per GPU, over the {usable - o:,.1f} GiB {engine_name} "
                f"has for them ({usable:,.1f} GiB usable less its {o:.2f} GiB reserve)")
    elif not over:  # the sums fit; the engine's paged pool does not hold the requests
        kind = "kv_cache"
        note = (f"{on} the {engine_name} KV pool ({start.kv_cache_gib_per_gpu:,.2f} GiB per GPU, "  # type: ignore[union-attr]
                f"{start.kv_cache_tokens:,} tokens) holds {served:.2f} requests where {load} are asked")  # type: ignore[union-attr]
    else:
        kind = max((("activation_peak", a), ("kv_cache", kv), ("engine_reserve", o)), key=lambda t: t[1])[0]
        after = f"{on} the weights ({w:,.1f} GiB per GPU) leave {usable - w:,.2f} of the {usable:,.1f} GiB usable per GPU"
        need = f"the KV cache and state of {load} need {kv:,.2f} GiB"
        if kind == "activation_peak":
            note = (f"{after}; {engine_name}'s activation peak ({a:,.2f} GiB) and its reserve ({o:.2f}) take "
                    f"{a + o:,.2f} of them, leaving {max(left, 0.0):,.2f} GiB where {need}")
        elif kind == "kv_cache":
            note = (f"{after}; after {engine_name}'s activation peak ({a:,.2f} GiB) and reserve ({o:.2f}) "
                    f"{max(left, 0.0):,.2f} GiB are left, where {need}")
        else:
            note = (f"{after}; {engine_name}'s own reserve ({o:.2f} GiB) is the largest share of what they must "
                    f"hold besides: activation peak {a:,.2f} GiB, and {need}")
    return Binding(kind=kind, gpus=n, weights=w, activation_peak=a, kv_cache=kv, engine_reserve=o, usable=usable,
                   left_for_kv=left, served=served, note=note)
