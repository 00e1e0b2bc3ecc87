"""The library's rules as arithmetic on one value or on a whole column.

A rule written with ``+ - * / // % < <= == & |`` and the few operations of :class:`Ops` runs on Python numbers
(``fit``, the planner, one model at a time) and, unchanged, on polars column expressions (the sizing grid, every
cell at once): the grid passes its own :class:`Ops` (``pipeline/compute/columns.py``) and gets an expression where
``fit`` gets a number. ``sizing_core`` never imports polars; a rule has one implementation and the two faces
agree by construction. Booleans combine with ``&`` and ``|`` (never ``and``/``or``/``if``, which a column cannot
answer), and :meth:`Ops.where` evaluates both branches, so a branch must be defined (finite or null) for every
input, not only where it is chosen. A division by a constant is :meth:`Ops.div` (polars divides a column by a
scalar as a product with its reciprocal, which can differ from the quotient in the last bit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Ops:
    """What a rule needs beyond arithmetic; this class answers for Python numbers, strings and booleans."""

    @staticmethod
    def const(value: Any) -> Any:
        """A constant (a column face makes it a literal, so a string is not read as a column name)."""
        return value

    @staticmethod
    def where(cond: Any, then: Any, otherwise: Any) -> Any:
        return then if cond else otherwise

    @staticmethod
    def div(a: Any, b: Any) -> Any:
        """``a / b`` for a constant ``b``: write a division by a constant so (a column face must compute the
        correctly rounded quotient, and a plain ``/`` by a constant may not)."""
        return a / b

    @staticmethod
    def first(cases: list[tuple[Any, Any]], otherwise: Any) -> Any:
        """The value of the first ``(condition, value)`` case whose condition holds, else ``otherwise``."""
        for cond, value in cases:
            if cond:
                return value
        return otherwise

    @staticmethod
    def lookup(key: Any, table: Mapping[Any, Any], default: Any = None) -> Any:
        """``table[key]``, ``default`` for a key it lacks (a null key included)."""
        return table.get(key, default)

    @staticmethod
    def is_in(value: Any, values: frozenset[Any] | tuple[Any, ...]) -> Any:
        return value in values

    @staticmethod
    def not_null(value: Any) -> Any:
        return value is not None

    @staticmethod
    def minimum(a: Any, b: Any) -> Any:
        return min(a, b)

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return max(a, b)

    @staticmethod
    def ceil(x: Any) -> Any:
        import math

        return math.ceil(x)

    @staticmethod
    def floor(x: Any) -> Any:
        import math

        return math.floor(x)


#: the scalar face: what ``fit`` and the planner pass (the default of every batch rule)
SCALAR = Ops()
