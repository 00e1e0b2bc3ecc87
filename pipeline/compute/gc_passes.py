"""Fewer garbage-collector passes while a step builds millions of small objects.

CPython starts a young-generation pass every 700 net container allocations, and every so often a full pass over
every tracked object. The setups, exports and Hub steps of a 2,000-model run allocate tens of millions of dicts,
tuples and records (offers, placements, setup rows, model files), most of them short-lived: with the default
threshold the collector took ~14 % of an incremental run (py-spy) and ~20 % of the exports step. Reference
counting frees these objects either way; the collector is only needed for reference cycles, which these steps
hardly make, so a step runs with a higher young-generation threshold and restores the old one when it ends (a
run's other steps and a long-lived ``vramlab serve`` process keep the defaults).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: net container allocations between young-generation passes inside a bulk step (CPython's default: 700)
BULK_THRESHOLD = 100_000


@contextmanager
def fewer_gc_passes(threshold: int = BULK_THRESHOLD) -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(max(threshold, old[0]), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
