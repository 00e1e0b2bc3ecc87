#!/usr/bin/env python3
"""Set up the project's virtual environment if needed, then run the pipeline or the tests.

Used by the README's Quick start and by CI, so a fresh machine with only ``python3`` and ``pip`` needs no
other step:

    python3 tasks.py run     # install what running needs into .venv (first time, or when pyproject.toml
                             # changed), run the pipeline
    python3 tasks.py test    # the same plus the test and lint tools, then ruff, import-linter and the whole
                             # pytest suite
    python3 tasks.py test --fast   # the same without the tests that run the graph, a subprocess or a service
    python3 tasks.py setup   # the development set-up (as test) without running anything

Anything after the verb is passed on (``python3 tasks.py test -k kv``). The installers' output is in
``.venv/install.log``; the terminal shows one progress line.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-from"
LOG = VENV / "install.log"


def _venv_bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def _wanted_stamp() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def _installed() -> tuple[str, bool] | None:
    """(pyproject hash, dev tools installed) of the last install, None before the first. A stamp of the hash
    alone was written when every install carried the dev tools."""
    if not STAMP.exists():
        return None
    digest, _, extras = STAMP.read_text().strip().partition(" ")
    return digest, extras in ("", "dev")


def ensure_environment(dev: bool = True) -> None:
    """Create .venv and install the project (editable) unless already current: what running needs, plus the
    test and lint tools (``[dev]``) when ``dev`` (``tasks.py test`` and ``setup``; ``run`` installs them only when
    they were there already). With uv when the package registry has it (pip fetches uv first; uv
    resolves and installs the rest in parallel, several times faster than pip; uv itself is not kept), else with
    pip. One progress line;
    the installers' own output goes to ``.venv/install.log``."""
    if not _venv_bin("python").exists():
        print("vramlab: creating .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    done = _installed()
    if done is not None and done[0] == _wanted_stamp() and (done[1] or not dev):
        return
    dev = dev or (done is not None and done[1])  # a venv that had the dev tools keeps them
    python = str(_venv_bin("python"))
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    target = f"{ROOT}[dev]" if dev else str(ROOT)
    stamp = f"{_wanted_stamp()} {'dev' if dev else 'run'}"
    what = "the project and its test tools" if dev else "the project (what running needs)"
    LOG.write_text("")
    if os.environ.get("VRAMLAB_NO_UV") != "1":
        with tempfile.TemporaryDirectory(prefix="vramlab-uv-") as tools:
            uv = _uv(pip, Path(tools))
            if uv is not None and _install(
                    f"installing {what} into .venv with uv",
                    [str(uv), "pip", "install", "--python", python, "--index-strategy", "unsafe-best-match",
                     *_pip_settings(python), "-e", target], check=False):
                STAMP.write_text(stamp)
                return
        print("vramlab: uv could not install the project; falling back to pip", flush=True)
    _install(f"installing {what} into .venv with pip", [*pip, "install", "--progress-bar", "off", "-e", target])
    STAMP.write_text(stamp)


def _uv(pip: list[str], tools: Path) -> Path | None:
    """uv for this install: the one an older set-up put into .venv, else fetched by pip into ``tools`` (a
    temporary folder: uv installs, running never needs it, so it stays out of .venv; pip keeps the wheel in its
    cache for the next install)."""
    kept = _venv_bin("uv")
    if kept.exists():
        return kept
    _install("getting uv (pip install uv)", [*pip, "install", "--progress-bar", "off", "--target", str(tools), "uv"],
             check=False)
    found = [p for p in (tools / "bin" / "uv", tools / "bin" / "uv.exe") if p.exists()]
    return found[0] if found else None


def _install(what: str, command: list[str], check: bool = True) -> bool:
    """Run an installer with its output appended to ``.venv/install.log``, showing one line: what it is doing,
    its last step (uv: resolved / prepared / installed N packages; pip: the package it collects) and the seconds
    so far (redrawn in place on a terminal; on a pipe, the line once and the outcome). On failure the log's last
    lines are printed; ``check``: then exit."""
    tty = sys.stdout.isatty()
    started = time.monotonic()
    state = {"step": ""}

    def line() -> str:
        step = f": {state['step']}" if state["step"] else ""
        return f"vramlab: {what}{step} ({time.monotonic() - started:.0f} s)"

    with LOG.open("a") as log:
        log.write(f"$ {' '.join(command)}\n")
        log.flush()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

        def read() -> None:
            assert proc.stdout is not None
            for text in proc.stdout:
                log.write(text)
                step = _step(text.strip())
                if step:
                    state["step"] = step

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if not tty:
            print(f"vramlab: {what} (log: {LOG.relative_to(ROOT)})", flush=True)
        while reader.is_alive():
            if tty:
                print(f"\r\033[K{line()}", end="", flush=True)
            reader.join(0.5)
        code = proc.wait()
    elapsed = time.monotonic() - started
    if tty:
        print("\r\033[K", end="")
    if code == 0:
        step = state["step"] or "done"
        print(f"vramlab: {what}: {step} in {elapsed:.0f} s (log: {LOG.relative_to(ROOT)})", flush=True)
        return True
    tail = LOG.read_text(errors="replace").splitlines()[-20:]
    print(f"vramlab: {what} failed after {elapsed:.0f} s; the end of {LOG}:", *tail, sep="\n", flush=True)
    if check:
        raise SystemExit(code)
    return False


def _step(text: str) -> str:
    """An installer's output line as a short step, or '' (uv: ``Resolved 132 packages in 1.2s``; pip:
    ``Collecting httpx``, ``Installing collected packages: ...``, ``Successfully installed ...``)."""
    if text.startswith(("Resolved ", "Prepared ", "Installed ", "Audited ", "Uninstalled ")):
        return text.split(" in ")[0].lower()
    if text.startswith("Collecting "):
        return "collecting " + text.split()[1]
    if text.startswith("Installing collected packages"):
        return "installing the collected packages"
    if text.startswith("Successfully installed "):
        count = len(text.split()) - 2
        return f"installed {count} package{'s' if count != 1 else ''}"
    return ""


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


def compile_bytecode() -> None:
    """Byte-compile the project's packages into ``__pycache__`` as a regular install would (an editable install
    leaves them as sources): without it, where ``PYTHONDONTWRITEBYTECODE`` is set, every CLI call compiles the
    ~90 modules ``vramlab fit`` imports again, a third of its time. Only sources newer than their bytecode are
    compiled."""
    subprocess.call([str(_venv_bin("python")), "-m", "compileall", "-q", "sizing_core", "pipeline"], cwd=ROOT,
                    stdout=subprocess.DEVNULL)


def _workers(args: list[str]) -> list[str]:
    """pytest-xdist's flags for the suite: one worker per core, at most four (each heavy test runs processes of its
    own), whole test files per worker (their module fixtures, a graph run or a cluster, are built once). None when
    the caller chose (``-n``, ``-p no:xdist``) or asked for one test (``file::name``)."""
    chosen = any((a.startswith("-n") and not a.startswith("--")) or a.startswith(("--numprocesses", "--dist"))
                 or a.endswith("no:xdist") for a in args)
    if chosen or any("::" in a for a in args):
        return []
    return ["--numprocesses", str(max(1, min(4, os.cpu_count() or 1))), "--dist", "loadfile"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print(__doc__)
        return 2
    verb, rest = argv[0], argv[1:]
    ensure_environment(dev=verb != "run")  # running needs no test or lint tools
    compile_bytecode()
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
    tests = subprocess.call([str(_venv_bin("python")), "-m", "pytest", *_workers(rest), *rest], cwd=ROOT, env=env)
    return tests or lint or layers


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
