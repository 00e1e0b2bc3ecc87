#!/usr/bin/env python3
"""Regenerate the family table of ``docs/sizing.md`` from ``sizing_core``'s FAMILIES and the family defaults data.

    .venv/bin/python scripts/docs_family_table.py

Everything between ``<!-- families:start -->`` and ``<!-- families:end -->`` is replaced: one row per rule (the
model_types sharing it), the config-class defaults ``data/family_defaults.json`` fills in when a key is absent.
``tests/test_family_defaults.py`` checks the block is current.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizing_core.config.defaults import family_data  # noqa: E402
from sizing_core.config.family_table import FAMILIES  # noqa: E402

DOC = ROOT / "docs" / "sizing.md"
BEGIN, END = "<!-- families:start -->", "<!-- families:end -->"


def table() -> str:
    rows: dict[tuple[str, str], list[str]] = {}
    for model_type, family in FAMILIES.items():
        entry = family_data(model_type)
        defaults = sorted({*(entry.get("defaults") or {}), *(entry.get("nested_defaults") or {})})
        key = (family.rule, ", ".join(f"`{d}`" for d in defaults) or "–")
        rows.setdefault(key, []).append(f"`{model_type}`")
    lines = ["| model_type | rule (what differs from the generic decoder) | config-class defaults used when absent |",
             "|---|---|---|"]
    lines += [f"| {', '.join(types)} | {rule} | {defaults} |" for (rule, defaults), types in rows.items()]
    return "\n".join(lines)


def main() -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{table()}\n{END}{tail}")


if __name__ == "__main__":
    main()
