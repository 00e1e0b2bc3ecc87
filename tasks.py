#!/usr/bin/env python3
"""Set up the project's virtual environment if needed, then run the pipeline or the tests.

Used by the README's Quick start and by CI, so a fresh machine with only ``python3`` and ``pip`` needs no
other step:

    python3 tasks.py run     # install into .venv (first time, or when pyproject.toml changed), run the pipeline
    python3 tasks.py test    # same set-up, then ruff, import-linter and the whole pytest suite

Anything after the verb is passed on (``python3 tasks.py test -k kv``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-from"


def _venv_bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def _wanted_stamp() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_environment() -> None:
    """Create .venv and install the project (editable, with dev extras) unless already current."""
    if not _venv_bin("python").exists():
        print("vramlab: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _wanted_stamp():
        return
    print("vramlab: installing the project into .venv (first run takes a few minutes)", flush=True)
    pip = [str(_venv_bin("python")), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "install", "-e", f"{ROOT}[dev]"], check=True)
    STAMP.write_text(_wanted_stamp())


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print(__doc__)
        return 2
    verb, rest = argv[0], argv[1:]
    ensure_environment()
    env = dict(os.environ)
    if verb == "setup":
        return 0
    if verb == "run":
        return subprocess.call([str(_venv_bin("vramlab")), "run", *rest], cwd=ROOT, env=env)
    lint = subprocess.call([str(_venv_bin("ruff")), "check", "."], cwd=ROOT, env=env)
    # the layer order README.md states, no import circles, sizing_core pure ([tool.importlinter] in pyproject.toml)
    layers = subprocess.call([str(_venv_bin("lint-imports")), "--no-cache"], cwd=ROOT, env=env)
    tests = subprocess.call([str(_venv_bin("python")), "-m", "pytest", *rest], cwd=ROOT, env=env)
    return tests or lint or layers


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
