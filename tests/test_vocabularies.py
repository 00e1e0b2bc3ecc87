"""The outcome and allocation vocabularies and the price ceiling have one definition each: the outcome sets in
``sources/landing.py`` (beside ``Outcome``), the allocation classes in ``sources/base.py`` (beside
``Allocation``), the ceilings in ``storage/loaders.py``. A second spelled-out copy elsewhere in the pipeline would
drift (the report once mapped classes no source emits)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from pipeline.report.data import PRICE_CLASS
from pipeline.sources.base import ALLOCATIONS, Allocation
from pipeline.sources.landing import ANSWERED, HEALTHY, LOADABLE, Outcome

ROOT = Path(__file__).resolve().parent.parent
CODE = [*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "pipeline" / "report" / "templates").glob("*.html")]
OUTCOME_SET = re.compile(r"""\(\s*["'](ok|partial|empty|unchanged)["']\s*,\s*["'](ok|partial|empty|unchanged)["']""")
ALLOCATION_SET = re.compile(r"""["']on_demand["']\s*,\s*["']spot["']""")
CEILING = re.compile(r"""["']datacenter["']\s*:\s*\d""")


def homes(pattern: re.Pattern[str]) -> set[str]:
    return {str(p.relative_to(ROOT)) for p in CODE if pattern.search(p.read_text())}


def test_each_vocabulary_is_spelled_out_once() -> None:
    assert homes(OUTCOME_SET) == {"pipeline/sources/landing.py"}
    assert homes(ALLOCATION_SET) == {"pipeline/sources/base.py"}
    assert homes(CEILING) == {"pipeline/storage/loaders.py"}


def test_the_sets_are_made_of_declared_members() -> None:
    assert set(LOADABLE) | set(HEALTHY) == set(ANSWERED) <= set(get_args(Outcome))
    assert ALLOCATIONS == get_args(Allocation)
    assert set(PRICE_CLASS) <= set(ALLOCATIONS)  # the board maps only classes a source can emit
