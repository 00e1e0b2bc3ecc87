"""The vectorised sizing grid against the exact planner, and its incremental recomputation."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest
from grid_reference import compute_grid as reference_grid
from helpers import all_config_names, arch
from polars.testing import assert_frame_equal

from pipeline.assets.out import out__sizing
from pipeline.compute.grid import compute_grid
from pipeline.compute.grid_bytes import GRID_FORMATS, tensor_bits_frame
from sizing_core.engines import ENGINES
from sizing_core.formats import tensor_bits
from sizing_core.gpus import catalog
from sizing_core.placement.search import fewest_gpus
from sizing_core.registry import load_registered

MODELS = {"kimi-k3.1-pro": load_registered("kimi-k3.1-pro")[1], "llama70": arch("meta-llama__Llama-3.1-70B"),
          "qwen3-8b": arch("Qwen__Qwen3-8B"), "qwen3-next": arch("Qwen__Qwen3-Next-80B-A3B-Thinking"),
          "dsv3": arch("deepseek-ai__DeepSeek-V3")}


@pytest.fixture(scope="module")
def watchlist() -> dict:
    """Every bundled Hub config of the watchlist plus the manual Kimi spec."""
    models = {name: arch(name) for name in all_config_names()}
    models["kimi-k3.1-pro"] = load_registered("kimi-k3.1-pro")[1]
    return models


def test_columnar_bits_equal_sizing_core_for_every_tensor_and_format(watchlist: dict) -> None:
    """The grid's bits-per-element expressions mirror sizing_core.formats; any rule changed there and not in the
    grid (or the reverse) shows up here, tensor by tensor."""
    frame = tensor_bits_frame(watchlist)
    for fmt in GRID_FORMATS:
        known = [m for m, a in watchlist.items() if not (fmt == "native" and a.native.unsupported)]
        expected = [b for m in known for b in tensor_bits(watchlist[m], fmt)]
        got = frame.filter(pl.col("model_id").is_in(known))[f"bits_{fmt}"].to_list()
        wrong = [(i, e, g) for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g]
        assert not wrong, (fmt, len(wrong), wrong[:5])


def test_columnar_grid_equals_the_reference_grid_on_the_watchlist(watchlist: dict) -> None:
    """Same rows, same order, same columns and types; verdicts and flags exact, byte figures equal up to the order
    floating-point sums are taken in (1e-12 relative). The GPU count (and so fits_single) and the decode speed are
    left out: the reference keeps the closed form and bare roofline the grid had before it took the planner's rule
    and the engine model's speed (test_grid_gpu_counts_equal_the_planners_on_every_cell and
    tests/test_grid_decode.py check them)."""
    models = {k: ("rev-" + k[:3], v) for k, v in watchlist.items()}
    gpus = list(catalog().values())
    new, old = compute_grid(models, gpus), reference_grid(models, gpus)
    assert new.height == old.height > 500_000
    assert new.schema == old.schema
    for col in ("model_id", "revision", "format", "stored_format", "context", "gpu_id", "gpu_kind", "engine", "runs",
                "native_support", "above_max_context"):
        assert new[col].eq_missing(old[col]).all(), col
    planned = ("est_gpus", "fits_single", "decode_tokens_per_s")
    assert_frame_equal(new.drop(planned), old.drop(planned), check_exact=False, rel_tol=1e-12, abs_tol=0.0)


def test_grid_is_the_same_bit_for_bit_on_every_run(watchlist: dict) -> None:
    """No float in the grid depends on thread scheduling (polars' parallel group-by sums add partial sums in
    whatever order threads finish); an incremental run compares its rows with earlier runs' rows."""
    models = {k: ("r", v) for k, v in watchlist.items()}
    gpus = list(catalog().values())
    first = compute_grid(models, gpus)
    for _ in range(4):
        again = compute_grid(models, gpus)
        assert again.equals(first), [c for c in first.columns if not again[c].equals(first[c])]


def test_a_models_rows_do_not_depend_on_the_other_models_computed_with_it(watchlist: dict) -> None:
    """out__sizing computes the grid in chunks of models and re-sizes changed models alone: a model's rows must be
    the same bits whichever models share its call."""
    models = {k: ("r", v) for k, v in watchlist.items()}
    gpus = list(catalog().values())[:20]
    whole = compute_grid(models, gpus)
    for model_id in ("kimi-k3.1-pro", "Qwen__Qwen3-8B", "deepseek-ai__DeepSeek-V3"):
        alone = compute_grid({model_id: models[model_id]}, gpus)
        assert alone.height > 0
        assert alone.equals(whole.filter(pl.col("model_id") == model_id)), model_id


def test_grid_gpu_counts_equal_the_planners_on_every_cell() -> None:
    """Every format at 8K and 128K on ten GPU kinds and every engine: the grid's count is ``fewest_gpus``'s, with no
    tolerance (the closed form it replaced was off by up to half on MoE models whose layers differ in size, and by
    one where the embedding and LM head tip a stage over)."""
    gpus = [catalog()[g] for g in ("rtx-4090", "rtx-5090", "rtx-pro-6000", "mac-m4-max-128", "dgx-spark", "h100",
                                   "h200", "b200", "mi300x", "l40s")]
    grid = compute_grid({k: ("r", v) for k, v in MODELS.items()}, gpus).filter(
        pl.col("context").is_in([8192, 131072]) & pl.col("runs") & ~pl.col("above_max_context"))
    wrong = []
    for row in grid.iter_rows(named=True):
        placed = fewest_gpus(MODELS[row["model_id"]], catalog()[row["gpu_id"]], ENGINES[row["engine"]], row["format"],
                             context=row["context"])
        if placed.gpus != row["est_gpus"] or row["fits_single"] != (placed.gpus == 1):
            wrong.append((row["model_id"], row["gpu_id"], row["engine"], row["format"], row["context"],
                          row["est_gpus"], placed.gpus))
    assert grid.height > 1800 and grid["est_gpus"].n_unique() > 20
    assert not wrong, (len(wrong), wrong[:5])


def test_grid_gpu_counts_equal_the_model_files_on_every_replay_cell(watchlist: dict) -> None:
    """The cells the replay run's model files show (every bundled watchlist model x the nine gpusNeeded GPUs x the
    four columns, 8K, the GPU's default engine): the grid's count is the planner's on each. The closed form the grid
    had differed on 146 of these 1,548."""
    from pipeline.exports.model_json import COLUMNS, SEED_GPUS, column_format
    from sizing_core.engines.registry import default_engine

    models = watchlist
    gpus = [catalog()[g] for g in SEED_GPUS]
    grid = compute_grid({k: ("r", v) for k, v in models.items()}, gpus).filter(pl.col("context") == 8192)
    counts = {(r[0], r[1], r[2], r[3]): r[4] for r in grid.select("model_id", "gpu_id", "engine", "format",
                                                                  "est_gpus").iter_rows()}
    cells, wrong = 0, []
    for model_id, model in models.items():
        for gpu in gpus:
            engine = default_engine(gpu)
            for column in COLUMNS:
                fmt = column_format(engine.id, column, gpu)
                cells += 1
                exact = fewest_gpus(model, gpu, engine, fmt, 8192).gpus
                if counts.get((model_id, gpu.id, engine.id, fmt), "no row") != exact:
                    wrong.append((model_id, gpu.id, fmt, counts.get((model_id, gpu.id, engine.id, fmt)), exact))
    assert cells == 43 * 9 * 4
    assert not wrong, (len(wrong), wrong[:5])


def test_sizing_is_recomputed_only_for_changes(published: dict) -> None:
    again = dg.materialize([out__sizing], resources=published["resources"])
    md = again.asset_materializations_for_node("out__sizing")[0].metadata
    assert md["rows_computed"].value == 0 and md["models_recomputed"].value == 0
    assert md["dagster/row_count"].value > 100_000
