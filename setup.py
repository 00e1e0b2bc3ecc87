"""The wheel carries the repository's top-level project files a run needs (``settings.TOP_LEVEL_FILES``: the
migrations in ``sql/``, ``dagster.yaml``, ``workspace.yaml``) as ``pipeline/bundled/``, copied at build time so
their one home stays the top level. Everything else is declared in pyproject.toml."""

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from pipeline.settings import TOP_LEVEL_FILES  # noqa: E402 - the list's one home (stdlib imports only)


class BuildWithProjectFiles(build_py):
    def run(self) -> None:
        super().run()
        bundled = Path(self.build_lib) / "pipeline" / "bundled"
        for name in TOP_LEVEL_FILES:
            source, target = ROOT / name, bundled / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target)


setup(cmdclass={"build_py": BuildWithProjectFiles})
