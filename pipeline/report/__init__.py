"""The static report published with every snapshot (``exports/<snapshot>/report/``): an index of tracked models,
one page per model, and a GPU price board with price-history charts. Rendered from the snapshot's own JSON and
Parquet files only (the report is the first consumer of the public contract), with Jinja2 templates and Chart.js
(vendored under ``static/``, so the pages work opened from disk with no network)."""

from pipeline.report.render import render_report, report_language

__all__ = ["render_report", "report_language"]
