"""The column face of ``sizing_core.batch``: the library's rules evaluated on polars expressions.

A rule of ``sizing_core`` written for :class:`sizing_core.batch.Ops` is called here with column expressions and
:data:`COLUMNS`; the result is an expression the grid evaluates for every cell at once. The rule itself is never
restated in the pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from sizing_core.batch import Ops


def _expr(value: Any) -> pl.Expr:
    return value if isinstance(value, pl.Expr) else pl.lit(value)


def _dtype(values: Any) -> pl.DataType:
    values = [v for v in values if v is not None]
    if all(isinstance(v, str) for v in values):
        return pl.String()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pl.Int64()
    return pl.Float64()


class Columns(Ops):
    """:class:`sizing_core.batch.Ops` for polars expressions."""

    @staticmethod
    def const(value: Any) -> Any:
        return pl.lit(value)

    @staticmethod
    def where(cond: Any, then: Any, otherwise: Any) -> Any:
        return pl.when(_expr(cond)).then(_expr(then)).otherwise(_expr(otherwise))

    @staticmethod
    def div(a: Any, b: Any) -> Any:
        """The correctly rounded ``a / b``: polars divides by a scalar as a product with its reciprocal (off by an
        ulp in about one case of eight), so the divisor is made a column of the constant (``a * 0 + b``; ``a`` is
        finite in every rule that divides by a constant)."""
        a = _expr(a)
        return a / (a * 0.0 + b) if not isinstance(b, pl.Expr) else a / b

    @staticmethod
    def first(cases: list[tuple[Any, Any]], otherwise: Any) -> Any:
        if not cases:
            return _expr(otherwise)
        (cond, value), *rest = cases
        chain = pl.when(_expr(cond)).then(_expr(value))
        for cond, value in rest:
            chain = chain.when(_expr(cond)).then(_expr(value))
        return chain.otherwise(_expr(otherwise))

    @staticmethod
    def lookup(key: Any, table: Mapping[Any, Any], default: Any = None) -> Any:
        dtype = _dtype([*table.values(), default])
        return _expr(key).replace_strict(dict(table), default=pl.lit(default, dtype=dtype), return_dtype=dtype)

    @staticmethod
    def is_in(value: Any, values: Any) -> Any:
        return _expr(value).is_in([str(v) if isinstance(v, str) else v for v in values])

    @staticmethod
    def not_null(value: Any) -> Any:
        return _expr(value).is_not_null()

    @staticmethod
    def minimum(a: Any, b: Any) -> Any:
        return pl.min_horizontal(_expr(a), _expr(b))

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return pl.max_horizontal(_expr(a), _expr(b))

    @staticmethod
    def ceil(x: Any) -> Any:
        return _expr(x).ceil()

    @staticmethod
    def floor(x: Any) -> Any:
        return _expr(x).floor()


#: what the grid passes to a batch rule of sizing_core
COLUMNS = Columns()
