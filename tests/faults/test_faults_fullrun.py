"""Faults around one whole ``vramlab run``, run as users run it: a subprocess with its own
``DAGSTER_HOME``, secrets in the environment, GCP answering with a response too large (the path that leaked the
key). Then: grep everything for the secrets; ``vramlab rebuild`` compared with the original; a damaged DuckDB
file; SIGKILL in the middle of the observation load, the sizing write and the export."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from harness import (
    FILLED_BY_ONE_RUN,
    ROOT,
    count,
    db_rows,
    duckdb_containing,
    files_containing,
    materialize,
    price_assets,
    recorded,
    replay_client,
    snapshot_content,
    table_rows,
    url_of,
)

RUNNER = Path(__file__).resolve().parent / "run_with_faults.py"
VRAMLAB = Path(sys.executable).parent / "vramlab"
SECRETS = {"GCP_API_KEY": "AIzaSyTESTgcpKEYmustNEVERleak0001", "HF_TOKEN": "hf_TESTtokenMUSTneverLEAK0002",
           "RUNPOD_API_KEY": "rpTESTkeyMUSTneverLEAK0003", "LAMBDA_API_KEY": "lmbTESTkeyMUSTneverLEAK0004",
           "VAST_API_KEY": "vastTESTkeyMUSTneverLEAK0005", "DIGITALOCEAN_TOKEN": "dop_v1_TESTmustNEVERleak0006"}
GCP_TOO_LARGE = {url_of("gcp"): {"status": 200, "body": "{}", "headers": {"content-length": "999999999"}}}


def env_for(data: Path, home: Path, spec: dict | None = None, secrets: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    env.update({"VRAMLAB_DATA_DIR": str(data), "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT),
                "VRAMLAB_FAULT_SPEC": json.dumps(spec or {})})
    env.pop("VRAMLAB_DB", None)
    if secrets:
        env.update(SECRETS)
    return env


def run_runner(data: Path, home: Path, spec: dict | None = None, secrets: bool = False,
               timeout: int = 900) -> subprocess.CompletedProcess:
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, str(RUNNER)], cwd=ROOT, env=env_for(data, home, spec, secrets),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One whole run with secrets set and GCP refusing a too-large response; DEBUG logging so httpx logs every
    request URL (those must be redacted too)."""
    tmp = tmp_path_factory.mktemp("fullrun")
    data, home = tmp / "data", tmp / "dagster_home"
    proc = run_runner(data, home, {"overrides": GCP_TOO_LARGE, "log_level": "DEBUG"}, secrets=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"tmp": tmp, "data": data, "home": home, "proc": proc, "db": data / "vramlab.duckdb"}


def test_secrets_never_leave_the_environment(full_run: dict) -> None:
    """S01 provider keys and the Hub token set, GCP's key in its URL, the too-large error path taken: no secret
    value in the landing (metadata, bodies), fetch_log.jsonl, any DuckDB table, the exports, the Dagster instance
    (event log, run storage, compute logs) or the console output. Before the fix the GCP key leaked into
    fetch_log.jsonl, fetch_log.message, the console and the Dagster event log."""
    db = full_run["db"]
    assert db_rows(db, "SELECT outcome FROM fetch_log WHERE source = 'gcp'") == [("too_large",)]
    message = db_rows(db, "SELECT message FROM fetch_log WHERE source = 'gcp'")[0][0]
    assert "key=REDACTED" in message
    proc = full_run["proc"]
    assert "key=REDACTED" in proc.stderr  # httpx's own request log line, redacted
    for name, value in SECRETS.items():
        assert files_containing(full_run["data"], value) == [], name
        assert files_containing(full_run["home"], value) == [], name
        assert duckdb_containing(db, value) == [], name
        assert value not in proc.stdout and value not in proc.stderr, name


def test_healthy_sources_complete_and_snapshot_consistent(full_run: dict) -> None:
    """S02 with one source failing, every other source is loaded and ``latest`` is a complete snapshot whose
    manifest hashes match (``vramlab export --check``); the failing source is marked stale in the manifest."""
    db = full_run["db"]
    outcomes = dict(db_rows(db, "SELECT source, arg_max(outcome, started_at) FROM fetch_log GROUP BY source"))
    assert outcomes.pop("gcp") == "too_large" and set(outcomes.values()) <= {"ok", "partial"}
    check = subprocess.run([str(VRAMLAB), "export", "--check", "--data-dir", str(full_run["data"])],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "OK" in check.stdout, check.stdout + check.stderr
    manifest = json.loads((full_run["data"] / "exports" / "latest" / "manifest.json").read_text())
    # the direct ``lambda`` recording carries its real capture date (2026-07-30), so it is stale in replay too;
    # the SkyPilot catalog recordings are dated at the replay freeze (nominal), so they are the fresh control
    assert manifest["sources"]["gcp"]["stale"] is True and manifest["sources"]["skypilot-lambda"]["stale"] is False


#: when a file or row was built, or which run built it: legitimately different between a run and its rebuild.
#: Everything else must be identical (cheapest setups included: ``Setup.rank_key`` orders equal prices by
#: provider, instance type, region, GPU and format, so ties cannot swap).
#: tables a whole replay run fills (the others, e.g. price_changes, stay empty after one run)
FILLED = FILLED_BY_ONE_RUN


def test_rebuild_reproduces_tables_and_exports(full_run: dict, tmp_path: Path) -> None:
    """R01 ``vramlab rebuild`` (the real CLI) re-creates the DuckDB tables from the raw landing: the same
    fetch log, observations, offers and their quality, changes, models, revisions, GPUs, sizing and cheapest
    setups, row for row; and the
    snapshot it publishes has the same content as the original, file for file (build times and run ids aside).
    The old file is moved aside, not deleted. Before the fix the rebuild skipped the offer-quality stage: no
    offer was eligible, ``cheapest_setups`` came back empty and every model file lost its setups."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    original_tables = table_rows(data / "vramlab.duckdb")
    assert all(original_tables[t] for t in FILLED), {t: len(rows) for t, rows in original_tables.items()}
    original_snapshot = snapshot_content((data / "exports" / "latest").resolve())
    proc = subprocess.run([str(VRAMLAB), "rebuild", "--data-dir", str(data)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env=env_for(data, tmp_path / "home"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert list(data.glob("vramlab.duckdb.aside-*")), "the previous database is kept aside"
    rebuilt_tables = table_rows(data / "vramlab.duckdb")
    assert sorted(rebuilt_tables) == sorted(original_tables)
    for table, rows in original_tables.items():
        assert rebuilt_tables[table] == rows, table
    rebuilt = (data / "exports" / "latest").resolve()
    assert rebuilt.name != (full_run["data"] / "exports" / "latest").resolve().name  # a new snapshot
    rebuilt_snapshot = snapshot_content(rebuilt)
    assert sorted(rebuilt_snapshot) == sorted(original_snapshot)
    for rel, content in original_snapshot.items():
        assert rebuilt_snapshot[rel] == content, rel


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_damaged_database_one_clear_error(full_run: dict, tmp_path: Path, damage: str) -> None:
    """D01 a corrupted / truncated ``vramlab.duckdb``: ``vramlab run`` stops at once (no ~100 s connect retries
    per step) with one clear error naming the file and the recovery (exit 3); the damaged file is left as it is,
    never replaced by a silent new empty database."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    db = data / "vramlab.duckdb"
    if damage == "garbage":
        db.write_bytes(os.urandom(1 << 16))
    else:
        db.write_bytes(db.read_bytes()[:12288])  # the headers survive, the blocks are gone
    before = db.read_bytes()
    started = time.monotonic()
    proc = subprocess.run([str(VRAMLAB), "run", "--data-dir", str(data)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env_for(data, tmp_path / "home"))
    elapsed = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-3000:]
    assert out.count("is damaged") == 1 and "vramlab rebuild" in out and str(db) in out.replace("\n", "")
    assert db.read_bytes() == before  # untouched
    assert elapsed < 60  # one error, not DuckDBResource's ~100 s of retries per step


def test_damage_past_the_header_met_by_a_step_gives_the_same_code(full_run: dict, tmp_path: Path) -> None:
    """D02 64 KiB of a block in the middle of ``vramlab.duckdb`` overwritten: the start-up check reads the header
    and the schema table, fine; a later step meets the bad block (a checksum error). The run ends with the
    documented exit code 3 and the one-line hint to ``vramlab rebuild``, as damage found at start-up does
    (before: exit 1, the message only inside the step's failure)."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    db = data / "vramlab.duckdb"
    with db.open("r+b") as f:
        f.seek(db.stat().st_size // 2)
        f.write(os.urandom(1 << 16))
    proc = subprocess.run([str(VRAMLAB), "run", "--data-dir", str(data)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env_for(data, tmp_path / "home"))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-3000:]
    said = " ".join(proc.stdout.split())  # the console wraps long lines
    assert "vramlab: error: DuckDB file " in said and "is damaged (" in said, out[-3000:]
    assert "Recover with `vramlab rebuild`" in said.split("vramlab: error: DuckDB file ")[-1], out[-3000:]


def _counts(db: Path) -> dict[str, int]:
    return {t: count(db, t) for t in ("price_observations", "price_quarantine", "sizing", "offers_current")}


def test_sigkill_during_observation_load(full_run: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """K01 SIGKILL inside the observation load transaction (rows inserted, COMMIT not sent): DuckDB is as before
    the transaction; the fetch stays pending and the next run loads it (nothing lost)."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    # a new lambda fetch (real time stamp, not the replay snapshot's) lands first
    fresh = {url_of("lambda"): httpx.Response(200, content=recorded("lambda"))}
    assert materialize(price_assets(["lambda"], core=False), data, monkeypatch,
                       client=lambda: replay_client(fresh)).success
    db = data / "vramlab.duckdb"
    before = _counts(db)
    proc = run_runner(data, tmp_path / "home", {"assets": "core+out", "kill_in": "load_observations"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert _counts(db) == before  # rolled back: nothing half-written
    pending = db_rows(db, "SELECT count(*) FROM fetch_log WHERE source = 'lambda' AND loaded_at IS NULL "
                          "AND outcome = 'ok'")[0][0]
    assert pending == 1
    result = materialize(price_assets([], core=True), data, monkeypatch)
    assert result.success and count(db, "price_observations") > before["price_observations"]


def test_sigkill_during_sizing_write(full_run: dict, tmp_path: Path) -> None:
    """K02 SIGKILL inside the sizing transaction (grid rows inserted, not committed): the sizing table is as
    before; the next run recomputes what was missing."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    db = data / "vramlab.duckdb"
    con = duckdb.connect(str(db))
    model = con.execute("SELECT model_id FROM sizing LIMIT 1").fetchall()[0][0]
    con.execute("DELETE FROM sizing WHERE model_id = ?", [model])  # forces out__sizing to recompute this model
    con.close()
    before = count(db, "sizing")
    proc = run_runner(data, tmp_path / "home", {"assets": "core+out", "kill_in": "sizing_write"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert count(db, "sizing") == before


def test_sigkill_during_export(full_run: dict, tmp_path: Path) -> None:
    """K03 SIGKILL between two files of a new snapshot: ``latest`` still points to the previous complete
    snapshot and its manifest hashes match; the partial folder is not published."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    latest_before = os.readlink(data / "exports" / "latest")
    proc = run_runner(data, tmp_path / "home", {"assets": "core+out", "kill_in": "export"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert os.readlink(data / "exports" / "latest") == latest_before
    check = subprocess.run([str(VRAMLAB), "export", "--check", "--data-dir", str(data)], capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr


#: run in a private mount namespace (``unshare --user --map-root-user --mount``: no privileges needed, nothing
#: visible outside, gone with the process): the exports directory becomes a small tmpfs holding a copy of what
#: was there, with ``HEADROOM`` bytes free, far less than one snapshot; the run then writes its export there.
#: What the full disk leaves behind is copied out to ``$OUT`` for the test to inspect.
FULL_DISK = """
set -eu
mount -t tmpfs -o size=256m vramlab-full "$MNT"
cp -a "$DATA/exports/." "$MNT/"
used=$(df -B1 --output=used "$MNT" | tail -1 | tr -d ' ')
mount -o remount,size=$((used + HEADROOM)) "$MNT"
mount --bind "$MNT" "$DATA/exports"
set +e
"$PYTHON" "$RUNNER"
rc=$?
df -B1 --output=used,size "$DATA/exports" > "$OUT/df.txt"
cp -a "$DATA/exports/." "$OUT/exports/"
exit $rc
"""


def private_mount_namespace() -> list[str]:
    """The ``unshare`` command that gives a private mount namespace here: an unprivileged user namespace where
    the kernel allows one, else (root with CAP_SYS_ADMIN, as in containers that forbid nested user namespaces) a
    plain mount namespace. Neither available is an error naming both attempts, never a skip."""
    tries = (["unshare", "--user", "--map-root-user", "--mount"], ["unshare", "--mount"])
    errors = []
    for cmd in tries:
        probe = subprocess.run([*cmd, "true"], capture_output=True, text=True)
        if probe.returncode == 0:
            return cmd
        errors.append(f"{' '.join(cmd)}: {probe.stderr.strip()}")
    raise AssertionError("T01 needs a private mount namespace for its small tmpfs; " + "; ".join(errors))


def test_disk_full_during_export(full_run: dict, tmp_path: Path) -> None:
    """T01 the disk holding the exports fills up during the export (a real ``ENOSPC`` from a size-limited
    tmpfs; DuckDB and the Dagster instance are on another disk, as a separate data volume would be): the run
    fails with the OS error naming the file, ``latest`` stays on the previous complete snapshot whose manifest
    hashes match (``vramlab export --check``), the partial snapshot folder is removed (the space is given back),
    no earlier snapshot or history part is touched, and DuckDB keeps every row."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    exports = data / "exports"
    latest_before = os.readlink(exports / "latest")
    files_before = {str(p.relative_to(exports)): p.read_bytes() for p in exports.rglob("*")
                    if p.is_file() and not p.is_symlink()}
    db = data / "vramlab.duckdb"
    before = _counts(db)
    out, mnt, home = tmp_path / "after", tmp_path / "fullfs", tmp_path / "home"
    (out / "exports").mkdir(parents=True)
    mnt.mkdir()
    home.mkdir()
    env = env_for(data, home, {"assets": "core+out"}) | {
        "MNT": str(mnt), "DATA": str(data), "OUT": str(out), "HEADROOM": str(256 * 1024),
        "PYTHON": sys.executable, "RUNNER": str(RUNNER)}
    proc = subprocess.run([*private_mount_namespace(), "sh", "-c", FULL_DISK], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "No space left on device" in proc.stderr and "Errno 28" in proc.stderr, proc.stderr[-3000:]
    assert "out__exports" in proc.stderr  # the failing step is named
    used, size = map(int, (out / "df.txt").read_text().split()[-2:])
    assert size - used >= 200 * 1024, "the partial snapshot's space was not given back"
    # what the full disk holds afterwards becomes the exports directory again, for the checks users would run
    shutil.rmtree(exports)
    shutil.copytree(out / "exports", exports, symlinks=True)
    assert os.readlink(exports / "latest") == latest_before
    assert sorted(p.name for p in exports.iterdir()) == sorted({rel.split("/")[0] for rel in files_before} | {"latest"})
    files_after = {str(p.relative_to(exports)): p.read_bytes() for p in exports.rglob("*")
                   if p.is_file() and not p.is_symlink()}
    assert files_after == files_before  # no earlier snapshot or history part touched, no partial file left
    assert _counts(db) == before
    check = subprocess.run([str(VRAMLAB), "export", "--check", "--data-dir", str(data)], capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 0 and "OK" in check.stdout, check.stdout + check.stderr


def _make_read_only(path: Path) -> None:
    if os.geteuid() == 0:  # root ignores mode bits: make the folder immutable instead
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        path.chmod(0o555)


def _make_writable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o755)


def test_read_only_exports_directory(full_run: dict, tmp_path: Path) -> None:
    """T02 the exports directory is read-only: the export step fails with a permission error naming the path,
    ``latest`` is unchanged and still consistent, DuckDB keeps every row."""
    data = tmp_path / "data"
    shutil.copytree(full_run["data"], data, symlinks=True)
    exports = data / "exports"
    latest_before = os.readlink(exports / "latest")
    _make_read_only(exports)
    try:
        proc = run_runner(data, tmp_path / "home", {"assets": "core+out"})
    finally:
        _make_writable(exports)
    assert proc.returncode == 1
    assert "PermissionError" in proc.stderr or "Operation not permitted" in proc.stderr, proc.stderr[-3000:]
    assert os.readlink(exports / "latest") == latest_before
    check = subprocess.run([str(VRAMLAB), "export", "--check", "--data-dir", str(data)], capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended while we looked
            continue
        if text in args:
            found.append(args.strip())
    return found


def test_a_run_started_with_sigterm_ignored_ends_and_leaves_no_log_tails(tmp_path: Path) -> None:
    """C07 ``vramlab run`` started the way a backgrounded shell job starts it (SIGINT and SIGTERM ignored, inherited):
    the run ends, its caller gets EOF on the output it reads, and no ``tail -F`` that mirrored a step's compute log
    is left behind. Before the fix Dagster's tails inherited "ignore SIGTERM", survived its ``terminate()`` and kept
    the run's stdout open: the caller waited forever (seen as a hung test suite) and two tails per run piled up."""
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()

    def as_a_background_job() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    proc = subprocess.run([str(VRAMLAB), "run"], cwd=ROOT, env=env_for(data, home), capture_output=True, text=True,
                          timeout=900, preexec_fn=as_a_background_job)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "models sized" in proc.stdout
    assert _processes_mentioning(f"tail -F -c +0 {home}") == []
