"""Run vramlab's main job (``pipeline.ops.run.run_main_job``: the code behind ``vramlab run``) in this process
with faults injected at the network boundary and, optionally, a SIGKILL at a named point. Used by the fault
tests as a subprocess, so they see exit codes, console output and on-disk state exactly as a user would.

The fault spec (JSON) comes in ``VRAMLAB_FAULT_SPEC``:
  {"overrides": {url: {"status": 200, "body": "...", "body_file": path, "headers": {...}}},
   "kill_in": "load_observations" | "sizing_write" | "export",   # SIGKILL there, mid-transaction/mid-publish
   "assets": "all" | "core+out",    # core+out: every asset but the raw ones (core, quality, out)
   "log_level": "DEBUG"}
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _overrides(spec: dict) -> dict:
    out = {}
    for url, answer in (spec.get("overrides") or {}).items():
        body = Path(answer["body_file"]).read_bytes() if answer.get("body_file") else answer.get("body", "").encode()
        out[url] = httpx.Response(answer.get("status", 200), headers=answer.get("headers") or {}, content=body)
    return out


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install_kill_point(where: str) -> None:
    """SIGKILL this process at ``where``: after the data is written, before it is committed or published."""
    if where == "load_observations":
        import pipeline.assets.core as core
        import pipeline.storage.loaders as loaders

        class DyingTransaction(loaders.transaction):
            def __exit__(self, exc_type, exc, tb):  # type: ignore[no-untyped-def]
                if exc_type is None:
                    _kill()  # the observations are inserted, COMMIT not yet sent
                return super().__exit__(exc_type, exc, tb)

        real = loaders.load_observations_detailed

        def killing(con, offers, now=None):  # type: ignore[no-untyped-def]
            loaders.transaction = DyingTransaction
            return real(con, offers, now)

        core.load_observations_detailed = killing
    elif where == "sizing_write":
        import pipeline.assets.out as out

        real_insert = out.insert_frame

        def insert_then_die(con, table, frame, **kw):  # type: ignore[no-untyped-def]
            real_insert(con, table, frame, **kw)
            if table == "sizing":
                _kill()  # the grid is inserted, the transaction not committed

        out.insert_frame = insert_then_die
    elif where == "export":
        import pipeline.assets.out as out

        real_publish = out.publish
        calls = {"n": 0}

        def die_between_files(_name: str) -> None:
            calls["n"] += 1
            if calls["n"] == 3:
                _kill()  # some files of the new snapshot written, latest not switched

        out.publish = lambda *a, **kw: real_publish(*a, **kw, between_files=die_between_files)
    elif where.startswith("disk_full_at_export:"):
        # from the export on, no file this process writes may grow past N bytes (EFBIG, as a full disk gives
        # ENOSPC): a size-limited file, no privileges needed
        import resource

        import pipeline.assets.out as out

        limit = int(where.split(":", 1)[1])
        real_publish = out.publish

        def publish_on_a_full_disk(*a, **kw):  # type: ignore[no-untyped-def]
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
            return real_publish(*a, **kw)

        out.publish = publish_on_a_full_disk
    else:
        raise SystemExit(f"unknown kill point {where!r}")


def main() -> int:
    spec = json.loads(os.environ.get("VRAMLAB_FAULT_SPEC") or "{}")
    logging.basicConfig(level=getattr(logging, spec.get("log_level", "WARNING")), stream=sys.stderr)
    overrides = _overrides(spec)
    if overrides:
        from harness import replay_client

        import pipeline.assets.raw as raw

        raw.client_for = lambda *_a, **_k: replay_client(dict(overrides))
    if spec.get("kill_in"):
        install_kill_point(spec["kill_in"])
    if spec.get("assets") == "core+out":  # the DuckDB half of the graph only (the landing is already there)
        import dagster as dg

        from pipeline.ops.liveness import owner_tags
        from pipeline.ops.rebuild import derived_assets
        from pipeline.resources import default_resources

        instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
        result = dg.materialize(derived_assets(), resources=default_resources(), raise_on_error=False,
                                instance=instance, tags=owner_tags("run"))
        return 0 if result.success else 1
    from pipeline.ops.run import run_main_job

    return run_main_job()


if __name__ == "__main__":
    sys.exit(main())
