"""Write the table of ``VRAMLAB_*`` variables (``pipeline.settings.VARIABLES``) into docs/operating.md, between its
``<!-- variables -->`` markers. ``tests/test_settings_variables.py`` fails when the two differ."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.settings import variables_table  # noqa: E402

START, END = "<!-- variables -->\n", "<!-- /variables -->\n"


def main() -> int:
    doc = ROOT / "docs" / "operating.md"
    text = doc.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(head + START + variables_table() + END + tail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
