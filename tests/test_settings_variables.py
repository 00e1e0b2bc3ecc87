"""Every ``VRAMLAB_*`` variable is declared once (``pipeline.settings.VARIABLES``), read only through it, and listed
in docs/operating.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.settings import VARIABLES, variable, variables_table

ROOT = Path(__file__).resolve().parent.parent
CODE = [p for d in ("pipeline", "sizing_core", "scripts") for p in (ROOT / d).rglob("*.py")] + [ROOT / "tasks.py"]
NAME = re.compile(r"\bVRAMLAB_[A-Z0-9_]+\b")
#: a read of the environment that names a VRAMLAB_ variable (an assignment for a child process is not a read)
READ = re.compile(r"(os\.environ\.get|os\.getenv|environ\.get)\(\s*['\"]VRAMLAB_|environ\[\s*['\"]VRAMLAB_\w+['\"]\s*\]"
                  r"(?!\s*=[^=])")


def test_every_name_in_the_code_is_declared() -> None:
    undeclared = {f"{p.relative_to(ROOT)}: {name}" for p in CODE for name in NAME.findall(p.read_text())
                  if name not in VARIABLES}
    assert not undeclared, sorted(undeclared)


def test_the_environment_is_read_only_through_the_declarations() -> None:
    allowed = {ROOT / "pipeline" / "settings.py", ROOT / "tasks.py"}  # tasks.py runs before the venv exists
    readers = [f"{p.relative_to(ROOT)}:{n}" for p in CODE if p not in allowed
               for n, line in enumerate(p.read_text().splitlines(), 1) if READ.search(line)]
    assert not readers, readers


def test_an_undeclared_name_fails_at_once() -> None:
    with pytest.raises(KeyError, match="VRAMLAB_NOT_A_SETTING is not declared"):
        variable("VRAMLAB_NOT_A_SETTING")


def test_typed_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VRAMLAB_HTTP_TIMEOUT", " 2.5 ")
    assert variable("VRAMLAB_HTTP_TIMEOUT").number() == 2.5
    monkeypatch.setenv("VRAMLAB_HTTP_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="VRAMLAB_HTTP_TIMEOUT must be a number, not 'soon'"):
        variable("VRAMLAB_HTTP_TIMEOUT").number()
    monkeypatch.delenv("VRAMLAB_KEEP_SNAPSHOTS", raising=False)
    assert variable("VRAMLAB_KEEP_SNAPSHOTS").whole() == 5  # the declared default
    monkeypatch.setenv("VRAMLAB_DISCOVERY", "Yes")
    assert variable("VRAMLAB_DISCOVERY").on()
    monkeypatch.setenv("VRAMLAB_DISCOVERY", "0")
    assert not variable("VRAMLAB_DISCOVERY").on()


def test_operating_md_lists_them_all() -> None:
    doc = (ROOT / "docs" / "operating.md").read_text()
    block = doc.split("<!-- variables -->\n", 1)[1].split("<!-- /variables -->", 1)[0]
    assert block == variables_table(), "run scripts/docs_variables.py"
    assert all(f"`{name}`" in block for name in VARIABLES)
