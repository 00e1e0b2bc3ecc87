"""sizing_core's rules have one implementation with two faces: numbers (``sizing_core.batch.SCALAR``) and polars
columns (``pipeline.compute.columns.COLUMNS``). The column face must answer what the number face answers, value
for value, on inputs that cover every branch."""

from __future__ import annotations

import itertools

import polars as pl

from pipeline.compute.columns import COLUMNS
from sizing_core.formats import (
    GGML_FALLBACK,
    GGML_TYPES,
    GGUF_MIXES,
    gguf_row_type,
    gguf_rule_type,
    gguf_rules,
    mix_features,
)
from sizing_core.tensors import Role


def test_mix_features_on_columns_equal_numbers() -> None:
    grid = list(itertools.product(range(0, 81, 7), (1, 24, 61, 80), range(0, 40, 3), (1, 12, 40), (0, 8, 64),
                                  (1, 4, 8)))
    frame = pl.DataFrame(grid, schema=["i", "n", "k", "nv", "e", "g"], orient="row")
    cols = frame.select(**mix_features(*(pl.col(c) for c in frame.columns)))
    for row, got in zip(grid, cols.iter_rows(named=True), strict=True):
        assert got == mix_features(*row), row


def test_gguf_types_on_columns_equal_numbers() -> None:
    flags = ("tied", "mxfp4_experts", "seventy_b", *mix_features(0, 1, 0, 1, 0, 1))
    rows = [(role.value, *bits) for role in Role for bits in itertools.product((False, True), repeat=len(flags))]
    frame = pl.DataFrame(rows, schema=["role", *flags], orient="row")
    for mix in GGUF_MIXES:
        got = frame.select(gguf_rule_type(mix, pl.col("role"), pl.col, COLUMNS).alias("t"))["t"].to_list()
        want = [gguf_rule_type(mix, r[0], dict(zip(flags, r[1:], strict=True)).__getitem__) for r in rows]
        assert got == want, mix
        assert gguf_rules(mix)  # every mix has rules


def test_row_fallback_on_columns_equals_numbers() -> None:
    rows = [(kind, cols) for kind in GGML_TYPES for cols in (32, 64, 96, 128, 256, 2880, 4096, 100, 17)]
    frame = pl.DataFrame(rows, schema=["kind", "cols"], orient="row")
    got = frame.select(gguf_row_type(pl.col("kind"), pl.col("cols"), COLUMNS).alias("t"))["t"].to_list()
    assert got == [gguf_row_type(k, c) for k, c in rows]
    assert gguf_row_type("Q4_K", 2880) == GGML_FALLBACK["Q4_K"]  # 2880 is not a whole number of 256-blocks
    assert gguf_row_type("Q6_K", 100) == "F16"  # nor of Q8_0's 32-blocks


def test_default_tp_on_columns_equals_the_engines_layout() -> None:
    """The grid's TP for a count is ``deployment.default_tp`` on columns; on numbers it is ``default_layout``."""
    from helpers import arch

    from sizing_core.engines import ENGINES
    from sizing_core.gpus import catalog
    from sizing_core.placement.deployment import default_layout, default_tp
    from sizing_core.placement.search import valid_tensor_parallel

    model = arch("Qwen__Qwen3-8B")
    rows = [(n, node, tp) for n in range(1, 40) for node in (1, 4, 8, 12) for tp in (True, False)]
    frame = pl.DataFrame(rows, schema=["n", "node", "tp"], orient="row")
    valid = {t: valid_tensor_parallel(model, t) for t in (2, 4, 8, 16, 32, 64)}
    got = frame.select(default_tp(pl.col("n"), pl.col("node"), lambda t: pl.lit(valid[t]), pl.col("tp"),
                                  COLUMNS).alias("t"))["t"].to_list()
    assert got == [default_tp(n, node, valid.__getitem__, tp) for n, node, tp in rows]
    h100, vllm = catalog()["h100"], ENGINES["vllm"]
    assert [default_layout(model, h100, vllm, n) for n in (1, 2, 3, 6, 8, 16)] == \
        [(1, 1), (2, 1), (1, 3), (2, 3), (8, 1), (8, 2)]
