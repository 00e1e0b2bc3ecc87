"""The package runs installed: a wheel built from the project's files, installed into a fresh virtual environment
and run from a folder outside any checkout, answers the three everyday commands offline.

The fresh environment gets the wheel's own files (unpacked, as pip installs a pure-Python wheel) and this test
environment's third-party packages (a path entry), so nothing is fetched; the project's editable install is not
visible there. What the wheel lacks (package data, the migrations, the instance and workspace configuration)
would fail the run or the look-ups."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: what a checkout holds besides its source, at its top level (a package's own data/ folder is source)
NOT_SOURCE = {".git", ".venv", "data", "build", "dist", ".dagster_home", ".pytest_cache", ".ruff_cache", ".hypothesis"}


def not_source(folder: str, names: list[str]) -> set[str]:
    top = {n for n in names if n in NOT_SOURCE} if Path(folder) == ROOT else set()
    return top | {n for n in names if n == "__pycache__" or n.endswith(".egg-info")}


def build_wheel(tmp: Path) -> Path:
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=not_source)
    out = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(source)], check=True, capture_output=True, text=True, timeout=600)
    return next(out.glob("vramlab-*.whl"))


def fresh_environment(tmp: Path, wheel: Path) -> Path:
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(purelib)
    return python


def test_an_installed_wheel_runs_offline_outside_any_checkout(tmp_path: Path) -> None:
    python = fresh_environment(tmp_path, build_wheel(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMLAB_", "DAGSTER_", "PYTHON"))}
    env |= {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}

    def vramlab(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), "-m", "pipeline.cli.main", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=900)

    where = subprocess.run([str(python), "-c", "import pipeline; print(pipeline.__file__)"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert str(ROOT) not in where and "venv" in where  # the installed package, not the checkout

    ran = vramlab("run", "--quiet")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    data = tmp_path / "xdg" / "vramlab"  # the installed default data directory
    manifest = json.loads((data / "exports" / "latest" / "manifest.json").read_text())
    assert manifest["files"], manifest
    assert (data / ".dagster_home" / "dagster.yaml").is_file()  # the instance under the data directory
    assert not any(Path(where).parent.rglob(".dagster_home"))  # never inside the package

    fit = vramlab("fit", "qwen3-8b", "--gpu", "h100", "--json")
    assert fit.returncode == 0, fit.stderr[-2000:]
    answer = json.loads(fit.stdout)[0]
    assert answer["fits"] and answer["gpus"] == 1  # 8.2 B parameters in BF16, 16.4 GB, on one 80 GB card

    cheapest = vramlab("cheapest", "qwen3-8b", "--json")
    assert cheapest.returncode == 0, cheapest.stderr[-2000:]
    assert json.loads(cheapest.stdout)["setups"], cheapest.stdout[:500]
