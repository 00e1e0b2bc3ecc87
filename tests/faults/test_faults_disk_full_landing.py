"""A full disk fails only the write that met it: the one source whose payload could not be landed is logged
``write_error`` and fetched again by the next run; every other source of the same concurrent fetch is landed,
logged and parsed as usual.

The fault as found: disk full failed the whole price step for every source at once. The write error here is real
(the kernel refuses to grow a file past ``RLIMIT_FSIZE``: ``EFBIG``, the same ``OSError`` path as ``ENOSPC``), set
in a child process after its imports, with a limit between the small payloads and the one large one; the sources
are the bundled recordings through the real fetch code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import ROOT

SMALL = ["lambda", "skypilot-hyperbolic", "vultr"]
LARGE = "skypilot-runpod"  # 9.4 kB gzip: the only one past the limit
LIMIT = 5_000

CHILD = """
import json, resource, signal, sys
from pathlib import Path
from pipeline.ingest.prices import fetch_concurrently, latest_rates
from pipeline.sources import PRICE_SOURCES

data, names, limit = Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
rates = latest_rates(data)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
results = fetch_concurrently([PRICE_SOURCES[n] for n in names], data, rates, replay=True)
print(json.dumps([[e.source, e.outcome, e.message, bool(r and r.offers)] for e, r in results]))
"""


def fetch_with_limit(data: Path, names: list[str], limit: int) -> list[list]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(data), ",".join(names), str(limit)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_full_disk_fails_only_the_source_it_met(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    results = {r[0]: r for r in fetch_with_limit(data, [*SMALL, LARGE], LIMIT)}
    assert results[LARGE][1] == "write_error" and "File too large" in results[LARGE][2], results[LARGE]
    for name in SMALL:
        assert results[name][1] in ("ok", "partial") and results[name][3], results[name]
    assert not list((data / "raw" / LARGE).rglob("*.tmp"))  # the partial file's space given back
    log = [json.loads(line) for line in (data / "raw" / "fetch_log.jsonl").read_text().splitlines()]
    assert {e["source"]: e["outcome"] for e in log}[LARGE] == "write_error"

    # room again: the next fetch lands it, nothing of the earlier ones lost
    again = {r[0]: r for r in fetch_with_limit(data, [LARGE], 1 << 30)}
    assert again[LARGE][1] in ("ok", "partial") and again[LARGE][3]
    for name in SMALL:
        assert list((data / "raw" / name).rglob("*.json")), name
