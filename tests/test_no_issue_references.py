"""Code comments, tests and docs describe the design as it is: no references to this project's issues in them (the path
there belongs in git and CHANGELOG.md). Citations of other projects' threads (``vllm-project/vllm#10517``) are
sources and stay."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHERE = ("pipeline", "sizing_core", "docs", "scripts", "benchmarks", "tests", "sql")
#: "issue #16", "issue 37", "(#23)", "perf #14", " #28:" ... but not "owner/repo#123"
REFERENCE = re.compile(r"\bissues? #?\d+|\bperf #\d+|(?<![\w/.-])#\d{2,3}\b", re.IGNORECASE)
CITATION = re.compile(r"[\w.-]+/[\w.-]+#\d+")


def references(text: str) -> list[str]:
    return [m.group(0) for line in text.splitlines() for m in REFERENCE.finditer(CITATION.sub("", line))]


def test_the_pattern_finds_references_and_spares_citations() -> None:
    assert references("# grouped in DuckDB (#28: 2,000 models)") == ["#28"]
    assert references("see issue #16 and Issue 37") == ["issue #16", "Issue 37"]
    assert references("vllm-project/vllm#10517 and ggml-org/llama.cpp#19053") == []
    assert references("color: #ff0000; 12 GPUs") == []


def test_no_issue_references_in_code_comments_and_docs() -> None:
    files = [ROOT / "README.md", ROOT / "dagster.yaml", ROOT / "workspace.yaml"] + [p for top in WHERE for p in (ROOT / top).rglob("*")
                                    if p.suffix in (".py", ".md", ".sql") and "__pycache__" not in p.parts
                                    and p.name != Path(__file__).name]  # this file's own examples
    found = {str(p.relative_to(ROOT)): refs for p in files if (refs := references(p.read_text(errors="replace")))}
    assert found == {}
