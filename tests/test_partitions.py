"""The partitioned graph: price sources as static partitions, models as dynamic partitions registered by
discovery, each partition step writing an atomic Parquet part, one step consolidating into DuckDB.

Real Dagster runs on the replayed recordings, real DuckDB files, real processes: the only thing in the way of a
step is the file system itself (a file where a part's folder belongs, a file-size limit set on a writer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
from faults.harness import ROOT, assert_same_results, resources_for, track_few_models, vramlab_run

from pipeline.assets.core import core__models
from pipeline.assets.partitioned import parts__models, parts__prices
from pipeline.assets.partitions import MODELS, SOURCES
from pipeline.assets.raw import raw_hub__models
from pipeline.ops.run import failure_descriptions
from pipeline.storage.parts import latest_part, parts_of, parts_root, write_part

VRAMLAB = Path(sys.executable).parent / "vramlab"
WATCHLIST = ROOT / "pipeline" / "data" / "watchlist.json"


def _env(data: Path, home: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMLAB_DATA_DIR": str(data), "DAGSTER_HOME": str(home)}
    for name in ("VRAMLAB_DB", "VRAMLAB_PARTS_DIR", "VRAMLAB_LIVE", "VRAMLAB_DISCOVERY"):
        env.pop(name, None)
    return env


def test_partitioned_refresh_in_parallel_processes_equals_the_in_process_run(tmp_path: Path) -> None:
    local, parts = tmp_path / "local", tmp_path / "parts"
    watchlist = track_few_models(local / "data", parts / "data")
    vramlab_run(local / "data", local / "home")
    out = subprocess.run([str(VRAMLAB), "parts", "run", "--json", "--concurrency", "2"], cwd=ROOT,
                         env=_env(parts / "data", parts / "home"), capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    outcome = json.loads(out.stdout.strip().splitlines()[-1])
    assert outcome["sources"] == dict.fromkeys(SOURCES, True)  # every source partition ran, ecb among them
    assert sorted(outcome["models"]) == sorted(watchlist) and all(outcome["models"].values())
    assert outcome["prepare"] and outcome["offers"] and outcome["publish"]

    # each partition was its own run, its step in a process of its own (the parallel writers)
    with dg.DagsterInstance.from_config(str(parts / "home")) as instance:
        runs = instance.get_runs(dg.RunsFilter(job_name="parts_models_job"))
        assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(watchlist)
        pids = set()
        for run in runs:
            for record in instance.all_logs(run.run_id):
                event = record.dagster_event
                if event and event.event_type_value == "STEP_START":
                    pids.add(event.pid)
        assert len(pids) == 2 * len(watchlist)  # sizing and setups of every model: each step its own process
        assert len(instance.get_runs(dg.RunsFilter(job_name="parts_prices_job"))) == len(SOURCES)

    # every table but the placement, weight-bytes and serving caches and the setups inputs record (the one-process
    # run's memos, which the model steps
    # do not keep: docs/decisions.md), and the published snapshot too (the exports read the consolidated tables)
    assert_same_results(local / "data", parts / "data",
                      skip=("placement_cache", "weight_bytes_cache", "serving_cache", "step_inputs"))
    # consolidation kept the newest part of each partition only
    root = parts_root(parts / "data")
    assert {p.parent.name for p in (root / "sizing").glob("*/*.parquet")} == set(watchlist)
    assert all(len(parts_of(root, "sizing", m)) == 1 for m in watchlist)


def _materialize_source(data: Path, instance: dg.DagsterInstance, source: str) -> dg.ExecuteInProcessResult:
    return dg.materialize([parts__prices], partition_key=source, resources=resources_for(data), instance=instance,
                          raise_on_error=False)


def test_an_unknown_partition_is_one_line_before_any_fetch(tmp_path: Path) -> None:
    """A model id that is no partition is said, in one line with exit 2, once the model partitions are registered and
    before any price source is fetched (it used to be said after every source's run and the offers consolidation)."""
    env = _env(tmp_path / "data", tmp_path / "home")
    for args, said in ((["--models", "nobody/nothing"], "unknown model partition(s): nobody/nothing"),
                       (["--sources", "nowhere"], "unknown price source partition(s): nowhere")):
        out = subprocess.run([str(VRAMLAB), "parts", "run", "--no-publish", *args], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=600)
        errors = [line for line in out.stderr.splitlines() if line.startswith("vramlab: error:")]
        assert out.returncode == 2 and len(errors) == 1 and said in errors[0], out.stderr[-2000:]
    assert not list(parts_root(tmp_path / "data").glob("prices/*/*.parquet"))  # no source was fetched


def test_a_failing_source_partition_leaves_no_part_stops_no_other_and_a_retry_writes_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    obstacle = parts_root(data) / "prices" / "runpod"
    obstacle.parent.mkdir(parents=True)
    obstacle.write_text("a file where the partition's folder belongs")  # the runpod step cannot write its part
    with dg.instance_for_test() as instance:
        failed = _materialize_source(data, instance, "runpod")
        other = _materialize_source(data, instance, "vastai")
        assert not failed.success and other.success
        retries = [e for e in failed.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
        assert len(retries) == 2  # PARTITION_RETRY: tried three times, each attempt failing before a part exists
        # the reason `vramlab parts run` reports for the failed run: the step's own error, naming the blocked path
        assert any(str(obstacle) in why for why in failure_descriptions(failed)), failure_descriptions(failed)
        assert obstacle.read_text().startswith("a file")  # nothing half-written in its place
        assert latest_part(parts_root(data), "prices", "vastai") is not None
        obstacle.unlink()
        again = _materialize_source(data, instance, "runpod")
        assert again.success
    written = parts_of(parts_root(data), "prices", "runpod")
    assert len(written) == 1 and not [p for p in obstacle.iterdir() if p.name.startswith(".tmp-")]
    meta, frame = written[0].meta(), written[0].frame()
    # the part holds what the recording holds: every row of the runpod fetch that parsed as an offer
    assert meta["entry"]["source"] == "runpod" and meta["entry"]["outcome"] in ("ok", "partial")
    assert frame.height == meta["entry"]["offers"] > 0
    status = again.asset_materializations_for_node("parts__prices")[0].metadata
    assert status["dagster/row_count"].value == frame.height


WRITER = """
import resource, signal, sys
from pathlib import Path
import polars as pl
from pipeline.storage.parts import write_part
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails with EFBIG instead of a signal
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
frame = pl.DataFrame({"offer": [f"row {i} " * 40 for i in range(20000)]})
try:
    write_part(Path(sys.argv[1]), "prices", "runpod", "run-killed", frame, {"n": frame.height})
except OSError as exc:
    print(type(exc).__name__, exc.errno)
"""


def test_a_write_that_fails_midway_leaves_no_part_and_no_temporary_file(tmp_path: Path) -> None:
    root = tmp_path / "parts"
    earlier = write_part(root, "prices", "runpod", "run-ok", __import__("polars").DataFrame({"offer": ["a", "b"]}),
                         {"n": 2})
    out = subprocess.run([sys.executable, "-c", WRITER, str(root)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["OSError", "27"], out.stdout + out.stderr  # EFBIG
    # the ~5 MB part stopped at 64 KiB: readers see the earlier complete part only, and no temporary file is left
    assert [p.run_id for p in parts_of(root, "prices", "runpod")] == ["run-ok"]
    assert sorted(p.name for p in (root / "prices" / "runpod").iterdir()) == [earlier.path.name]
    assert latest_part(root, "prices", "runpod").frame()["offer"].to_list() == ["a", "b"]


def test_discovery_registers_every_tracked_model_as_a_partition_and_adds_new_ones(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    watchlist = json.loads(WATCHLIST.read_text())
    everyone = [m["id"] for m in watchlist["models"]]
    held_back = watchlist["models"][-1]["id"]
    (data / "watchlist.json").write_text(json.dumps({**watchlist, "models": watchlist["models"][:-1]}))
    assets = [raw_hub__models, core__models, parts__models]
    with dg.instance_for_test() as instance:
        first = dg.materialize(assets, resources=resources_for(data), instance=instance)
        assert sorted(instance.get_dynamic_partitions(MODELS)) == sorted(everyone[:-1])
        (data / "watchlist.json").write_text(json.dumps(watchlist))  # the watchlist gains a model
        second = dg.materialize(assets, resources=resources_for(data), instance=instance)
        assert sorted(instance.get_dynamic_partitions(MODELS)) == sorted(everyone)
    added = [r.asset_materializations_for_node("parts__models")[0].metadata["partitions_added"].value
             for r in (first, second)]
    assert sorted(added[0]) == sorted(everyone[:-1]) and added[1] == [held_back]



def test_publishing_names_each_model_whose_parts_are_missing_or_stale(tmp_path: Path) -> None:
    import polars as pl

    from pipeline.assets.partitioned import stale_parts
    from pipeline.compute.tracked import Tracked
    from pipeline.sources.huggingface import load_watchlist
    from pipeline.storage.parts import latest_parts

    root = tmp_path / "parts"
    entries = {e.id: e for e in load_watchlist(data_dir=tmp_path).models}
    a, b, c, d, e = (entries[m] for m in ("qwen3-8b", "qwen3-14b", "qwq-32b", "qwen3-1.7b", "qwen2.5-7b-instruct"))
    tracked = [Tracked(x, None, None, "rev-1", None) for x in (a, b, c, d, e)]
    current = {"catalog": "cat-1", "sizing_version": "code-1"}
    sized = {"revision": "rev-1", "catalog": "cat-1", "sizing_version": "code-1"}
    rows = pl.DataFrame({"x": [1]})
    for model, sizing, setups in (
            (a.id, sized, {"revision": "rev-1", "offers_part": "offers-2"}),  # current
            (b.id, sized, None),  # its setups step never ran
            (c.id, {**sized, "revision": "rev-0"}, {"revision": "rev-0", "offers_part": "offers-2"}),  # old revision
            (d.id, sized, {"revision": "rev-1", "offers_part": "offers-1"}),  # priced before the last consolidation
            (e.id, {**sized, "catalog": "cat-0"}, {"revision": "rev-1", "offers_part": "offers-2"})):  # old catalog
        write_part(root, "sizing", model, "r1", rows, sizing)
        if setups is not None:
            write_part(root, "setups", model, "r1", rows, setups)
    stale = stale_parts(tracked, latest_parts(root, "sizing"), latest_parts(root, "setups"), "offers-2", current)
    assert stale == {b.id: "no setups part", c.id: "parts of revision rev-0/rev-0, tracked rev-1",
                     d.id: "setups priced on offers offers-1, current offers-2",
                     e.id: "sized with another GPU catalog or sizing code"}
    # a newer part of the same partition (a retry, a back-fill) supersedes the stale one
    write_part(root, "setups", d.id, "r2", rows, {"revision": "rev-1", "offers_part": "offers-2"})
    assert d.id not in stale_parts(tracked, latest_parts(root, "sizing"), latest_parts(root, "setups"), "offers-2",
                                   current)
