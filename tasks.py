#!/usr/bin/env python3
"""Set up the project's virtual environment if needed, then run the pipeline or the tests.

Used by the README's Quick start and by CI, so a fresh machine with only ``python3`` and ``pip`` needs no
other step:

    python3 tasks.py run     # install into .venv (first time, or when pyproject.toml changed), run the pipeline
    python3 tasks.py test    # same set-up, then ruff, import-linter and the whole pytest suite
    python3 tasks.py test --fast   # the same without the tests that run the graph, a subprocess or a service

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
    """Create .venv and install the project (editable, with dev extras) unless already current: with uv when the
    package registry has it (pip installs uv into .venv first; uv resolves and installs the rest in parallel, several
    times faster than pip), else with pip. Both show their progress."""
    if not _venv_bin("python").exists():
        print("vramlab: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _wanted_stamp():
        return
    python = str(_venv_bin("python"))
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    target = f"{ROOT}[dev]"
    print("vramlab: installing the project into .venv (first run only)", flush=True)
    uv = _venv_bin("uv")
    if not uv.exists() and os.environ.get("VRAMLAB_NO_UV") != "1":
        print("vramlab: getting uv from the package registry (pip install uv)", flush=True)
        subprocess.run([*pip, "install", "--progress-bar", "on", "uv"], check=False)
    if uv.exists() and os.environ.get("VRAMLAB_NO_UV") != "1":
        done = subprocess.run([str(uv), "pip", "install", "--python", python, "--index-strategy", "unsafe-best-match",
                               *_pip_settings(python), "-e", target], check=False)
        if done.returncode == 0:
            STAMP.write_text(_wanted_stamp())
            return
        print("vramlab: uv could not install the project; falling back to pip", flush=True)
    subprocess.run([*pip, "install", "--progress-bar", "on", "-e", target], check=True)
    STAMP.write_text(_wanted_stamp())


def _pip_settings(python: str) -> list[str]:
    """The package indexes, find-links and constraints pip is configured with (pip.conf, PIP_* variables), as uv
    flags: uv reads neither, and a machine with a mirror or a pinned constraint file should get the same packages."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False)
    flags: list[str] = []
    for line in listed.stdout.splitlines():
        key, _, value = line.partition("=")
        name, value = key.rsplit(".", 1)[-1].strip(), value.strip().strip("'\"")
        option = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
                  "constraint": "--constraint"}.get(name)
        for item in value.split() if option else []:
            if [option, item] not in [flags[i:i + 2] for i in range(0, len(flags), 2)]:
                flags += [option, item]
    return flags


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
    if "--fast" in rest:  # the tier that runs no graph, subprocess or service (tests/conftest.py: HEAVY)
        rest = [a for a in rest if a != "--fast"] + ["-m", "not heavy"]
    tests = subprocess.call([str(_venv_bin("python")), "-m", "pytest", *rest], cwd=ROOT, env=env)
    return tests or lint or layers


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
