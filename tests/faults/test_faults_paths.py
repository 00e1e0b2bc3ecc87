"""Paths from outside never become SQL text: a data dir whose path holds an apostrophe publishes like
any other, and no module builds SQL by splicing a path into a string (read by grepping the code)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from harness import ROOT

VRAMLAB = Path(sys.executable).parent / "vramlab"
#: SQL text with a path-like value spliced in: read_parquet('{path}'), read_csv("{...}"), COPY ... TO '{...}', or a
#: quoted {placeholder} whose name says path/dir/file/part
SPLICED = re.compile(r"""(read_(parquet|csv|csv_auto|json|json_auto|text|blob)\(\s*\[?\s*['"]\{)"""
                     r"""|((COPY|ATTACH|TO|FROM)\s+['"]\{)"""
                     r"""|(['"]\{[^}]*(path|dir|file|part|folder)[^}]*\}['"])""", re.IGNORECASE)


def test_no_module_splices_a_path_into_sql() -> None:
    hits = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if SPLICED.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_the_check_above_would_catch_the_old_pattern() -> None:
    """The grep above is able to fail: the lines it replaced match it."""
    for old in ("rows = cur.execute(f\"SELECT count(*) FROM read_parquet('{part}')\").fetchall()[0][0]",
                "columns = con.execute(f\"DESCRIBE SELECT * FROM read_parquet('{path}')\").fetchall()"):
        assert SPLICED.search(old), old


def test_a_data_dir_with_an_apostrophe_publishes(tmp_path: Path) -> None:
    data = tmp_path / "bob's data"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMLAB_DATA_DIR": str(data)}
    env.pop("VRAMLAB_DB", None)
    out = subprocess.run([str(VRAMLAB), "run", "--ephemeral", "--quiet"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    latest = (data / "exports" / "latest").resolve()
    manifest = json.loads((latest / "manifest.json").read_text())
    assert manifest["history"], "the price history parts were written and listed"
    check = subprocess.run([str(VRAMLAB), "export", "--check"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
