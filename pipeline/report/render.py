"""Render ``report/`` for one snapshot: ``index.html``, ``models/<id>.html``, ``gpus/<id>.html``, ``prices.html``
and ``static/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from pipeline.compute.workers import in_workers
from pipeline.report.data import CLASSES, Snapshot, board, load_snapshot, one_gpu_offers, price_history
from pipeline.report.i18n import LOCALES, Texts
from pipeline.settings import variable
from pipeline.text import clean
from sizing_core.cost import per_million_tokens

HERE = Path(__file__).resolve().parent
STATIC = ("chart.umd.min.js", "chart.js.LICENSE.md", "report.css", "report.js", "loads.js")
COLUMNS = ("native", "bf16", "fp8", "q4_k_m")
NOTES = {"Multi-GPU required": "rec.multi_gpu_required", "exceeds the largest Mac's GPU share": "rec.exceeds_mac"}


def report_language() -> str:
    """``VRAMLAB_REPORT_LANG`` (``en`` or ``de``; default ``en``)."""
    lang = variable("VRAMLAB_REPORT_LANG").text().lower()
    if lang not in LOCALES:
        raise ValueError(f"VRAMLAB_REPORT_LANG={lang!r}: use one of {', '.join(sorted(LOCALES))}")
    return lang


def _printed(value: object) -> object:
    """Every value a template prints, cleaned of escape sequences and control characters (newlines kept); markup
    the templates build themselves stays markup, and numbers stay numbers for their filters."""
    if isinstance(value, Markup):
        return Markup(clean(value, lines=True))
    if isinstance(value, str):
        return clean(value, lines=True)
    return value


def _env() -> Environment:
    return Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=_printed)


def format_name(fmt: str | None, native: str | None = None) -> str:
    """Display name of a weight format (``native`` shown as the checkpoint's own format when known)."""
    if fmt == "native" and native:
        fmt = native
    names = {"q4_k_m": "Q4_K_M", "q8_0": "Q8_0", "awq_int4": "AWQ INT4", "q6_k": "Q6_K", "q5_k_m": "Q5_K_M"}
    return names.get(fmt or "", (fmt or "?").upper())


def native_format(model: dict[str, Any], known: dict[str, str] | None = None) -> str | None:
    """The checkpoint's own format: the sizing table's ``stored_format`` of its ``native`` rows, else from the
    fewest-GPU plans, else the format whose weights equal ``native``."""
    if known and model["id"] in known:
        return known[model["id"]]
    for row in model["gpusNeeded"]["gpus"]:
        plan = (row.get("plans") or {}).get("native")
        if plan and plan.get("format") and plan["format"] != "native":
            return plan["format"]
    weights = model["weightsGiB"]
    return next((k for k, v in weights.items() if k != "native" and v == weights.get("native")), None)


def fewest_gpus(model: dict[str, Any]) -> dict[str, Any] | None:
    """Fewest GPUs over the table's GPUs in the native format (any format if none fits natively)."""
    for columns in (("native",), COLUMNS):
        cells = [(n, row["name"], col) for row in model["gpusNeeded"]["gpus"] for col in columns
                 if (n := row["byFormat"].get(col))]
        if cells:
            n, name, col = min(cells, key=lambda c: (c[0], COLUMNS.index(c[2])))
            return {"count": n, "gpu": name, "column": col}
    return None


def gpu_answers(model: dict[str, Any], native: str | None) -> list[dict[str, Any]]:
    """Per GPU of the model's table (``gpusNeeded``): the most faithful of the table's formats that fits one GPU,
    else the one needing the fewest GPUs (the more faithful on a tie), with its plan's format and engine and the
    decode speed of one request (``throughput.cells``); a GPU no format fits is left out."""
    cells = (model.get("throughput") or {}).get("cells") or {}
    out = []
    for row in model["gpusNeeded"]["gpus"]:
        counts = row["byFormat"]
        options = [c for c in COLUMNS if counts.get(c)]
        if not options:
            continue
        column = next((c for c in options if counts[c] == 1), None) or min(
            options, key=lambda c: (counts[c], COLUMNS.index(c)))
        plan = (row.get("plans") or {}).get(column) or {}
        out.append({"gpu": row["gpu"], "name": row["name"], "memoryGB": row.get("memoryGB"), "column": column,
                    "format": format_name(plan.get("format") or column, native), "gpus": counts[column],
                    "engine": plan.get("engine") or row["engine"],
                    "decode": (cells.get(f"{row['gpu']}:{column}") or {}).get("decodeTokensPerS")})
    return out


def _column_label(t: Texts, column: str, native: str | None) -> str:
    return t("format.native", format=format_name(native)) if column == "native" else t(f"format.{column}")


def _weights_rows(t: Texts, model: dict[str, Any], native: str | None) -> list[dict[str, Any]]:
    state = model.get("recurrentStateGiBPerRequest") or 0.0
    rows = []
    for column in COLUMNS:
        if column != "native" and column == native:
            continue  # the native row already shows it
        weights = model["weightsGiB"].get(column)
        if weights is None:
            continue
        rows.append({"label": _column_label(t, column, native), "weights": weights,
                     "totals": [weights + kv["bf16"] + state for kv in model["kvCacheGiBPerRequest"]]})
    return rows


def _gpu_rows(model: dict[str, Any], native: str | None) -> list[dict[str, Any]]:
    rows = []
    for row in model["gpusNeeded"]["gpus"]:
        cells = []
        for column in COLUMNS:
            plan = (row.get("plans") or {}).get(column)
            cells.append({"count": row["byFormat"].get(column), "plan": plan,
                          "format": format_name(plan["format"], native) if plan else None})
        rows.append({"name": row["name"], "engine": row["engine"], "cells": cells})
    return rows


def _recommendations(t: Texts, model: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for key in ("bestSingleGpu", "bestValue", "appleUnifiedMemory", "cloudFrom"):
        value = (model.get("recommendations") or {}).get(key)
        if value is None and key == "bestValue":
            text = t("rec.no_consumer_gpu")  # null: no consumer/workstation GPU holds it alone (schema)
        elif value is None:
            text = t("rec.none")
        elif "note" in value:
            text = t(NOTES[value["note"]]) if value["note"] in NOTES else value["note"]
        elif key == "cloudFrom":
            text = t("setup.short", count=value["gpus"], gpu=value["gpuName"]) + " · " + t(
                "setup.on", price=t.usd(value["pricePerHour"]), provider=value["provider"])
        else:
            text = t("rec.gpu_format", gpu=value["name"], format=format_name(value["format"]))
        out.append((t(f"rec.{key}"), text))
    return out


def _left_out(snap: Snapshot) -> dict[str, int]:
    """Rows of the offers and the history the board and charts leave out, summed by reason."""
    out: dict[str, int] = {}
    for counts in snap.left_out.values():
        for reason, n in counts.items():
            out[reason] = out.get(reason, 0) + n
    return out


def _index_row(model: dict[str, Any], native: str | None) -> dict[str, Any]:
    return {"id": model["id"], "name": model["name"], "lab": model["lab"]["name"], "failed": None,
            "params": model["parameters"], "active": model["activeParameters"], "native": format_name(native),
            "native_gib": model["weightsGiB"].get("native"), "fewest": _named(fewest_gpus(model), native),
            "cheapest": (model.get("cheapestSetups") or [None])[0], "byGpu": gpu_answers(model, native),
            "native_code": native,
            "scenario": model["gpusNeeded"].get("scenario")}


def _named(fewest: dict[str, Any] | None, native: str | None) -> dict[str, Any] | None:
    """:func:`fewest_gpus`'s answer with the display name of its format column (``native``: the checkpoint's)."""
    if fewest is None:
        return None
    return fewest | {"format": format_name(fewest["column"], native)}


def _index_rows(snap: Any, rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:  # noqa: ANN401 - Snapshot
    """The index page's rows: every index entry, a published model's from its summary ``rows`` (by id)."""
    out = [rows.get(e["id"]) or {"id": e["id"], "name": e.get("name") or e["id"], "failed": e.get("reason")}
           for e in snap.index["models"]]
    return sorted(out, key=lambda r: (r["failed"] is not None, str(r["name"]).lower()))


def _model_pages(shared: tuple[Any, ...], paths: tuple[Path, ...]) -> list[dict[str, Any]]:
    """Render the pages of these model files (read one at a time) and return their index rows; ``shared``: what a
    worker forked with (:func:`render_report`)."""
    out, env, t, common, known = shared
    page = env.get_template("model.html")
    rows = []
    for path in paths:
        model = json.loads(path.read_text())
        native = native_format(model, known)
        (out / "models" / f"{model['id']}.html").write_text(page.render(
            **common, root="../", page="model", m=model, native=native,
            columns=[_column_label(t, c, native) for c in COLUMNS],
            weights=_weights_rows(t, model, native), gpu_rows=_gpu_rows(model, native),
            recommendations=_recommendations(t, model), cheapest=(model.get("cheapestSetups") or [None])[0]))
        rows.append(_index_row(model, native))
    return rows


def _gpu_pages(out: Path, env: Environment, common: dict[str, Any], summaries: dict[str, dict[str, Any]],
               snap: Snapshot) -> list[str]:
    """``gpus/<id>.html`` for every GPU of the models' tables: the models that run on one (most faithful format
    first, then the largest) with their speed and $/1M output tokens on the GPU's cheapest on-demand one-GPU
    instance (:func:`~pipeline.report.data.one_gpu_offers`), then the models that need more; the GPU ids with a
    page."""
    price = {g: {"price": o["price_per_hour_usd"], "provider": o["provider"], "instance_type": o["instance_type"],
                 "verified_at": o["verified_at"]} for g, o in one_gpu_offers(snap).items()}
    gpus: dict[str, dict[str, Any]] = {}
    scenario = None
    for summary in summaries.values():
        scenario = scenario or summary.get("scenario")
        for a in summary.get("byGpu") or []:
            g = gpus.setdefault(a["gpu"], {"gpu": a["gpu"], "name": a["name"], "memoryGB": a["memoryGB"], "one": [],
                                           "more": []})
            best = price.get(a["gpu"])
            entry = {**a, "id": summary["id"], "name": summary["name"], "params": summary["params"],
                     "perMillion": per_million_tokens(best["price"], a["decode"])
                     if a["gpus"] == 1 and best and a["decode"] else None}
            g["one" if a["gpus"] == 1 else "more"].append(entry)
    (out / "gpus").mkdir(exist_ok=True)
    page = env.get_template("gpu.html")
    for g in gpus.values():
        g["one"].sort(key=lambda e: (COLUMNS.index(e["column"]), -(e["params"] or 0), e["id"]))
        g["more"].sort(key=lambda e: (e["gpus"], COLUMNS.index(e["column"]), e["id"]))
        (out / "gpus" / f"{g['gpu']}.html").write_text(page.render(
            **common, root="../", page="gpu", g=g, price=price.get(g["gpu"]), scenario=scenario or ""))
    return sorted(gpus)


#: model pages per job when they are rendered by worker processes
PAGES_PER_JOB = 100


def _chart_data(t: Texts, history: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per GPU the chart's series with their labels: the cheapest on-demand price (a line), the spread up to the
    dearest provider's cheapest (a band), the cheapest spot/marketplace price (dashed), each provider (hidden);
    days whose provider set differs from the day before are marked (``changed``), ``None`` points break lines."""
    return {gpu: {"cheapest": h["cheapest"], "high": h["high"], "spot": h["spot"], "providers": h["providers"],
                  "labels": {"cheapest": t("prices.history.cheapest"), "high": t("prices.history.spread"),
                             "spot": t("prices.history.spot"), "providers": t("prices.history.day_providers"),
                             "changed": t("prices.history.changed")}}
            for gpu, h in history.items()}


def render_report(snapshot: Path, *, out: Path | None = None, lang: str | None = None,
                  manifest: dict[str, Any] | None = None, workers: int = 1) -> Path:
    """Render the report of the snapshot folder ``snapshot`` into ``out`` (default ``<snapshot>/report``); the
    model pages by ``workers`` processes (:func:`~pipeline.compute.workers.in_workers`)."""
    lang = lang or report_language()
    t = Texts(lang)
    snap = load_snapshot(snapshot, manifest)
    out = out or snapshot / "report"
    if out.exists():
        shutil.rmtree(out)
    (out / "models").mkdir(parents=True)
    (out / "static").mkdir()
    for name in STATIC:
        shutil.copyfile(HERE / "static" / name, out / "static" / name)
    env = _env()
    m = snap.manifest
    common = {"t": t, "lang": lang, "snapshot": m["snapshot_id"], "generated": t.moment(m["generated_at"]),
              "as_of": t.moment(m.get("as_of")), "replay": m.get("mode") == "replay", "format_name": format_name}
    paths = snap.model_paths
    jobs = [(paths[i:i + PAGES_PER_JOB],) for i in range(0, len(paths), PAGES_PER_JOB)]
    shared = (out, env, t, common, snap.native_formats)
    summaries = {r["id"]: r for rows in in_workers(_model_pages, jobs, shared, min(workers, len(jobs))) for r in rows}
    rows = board(snap)
    gpu_pages = _gpu_pages(out, env, common, summaries, snap)
    names = {a["gpu"]: a["name"] for r in summaries.values() for a in r.get("byGpu") or []}
    (out / "index.html").write_text(env.get_template("index.html").render(
        **common, root="", page="index", rows=_index_rows(snap, summaries),
        gpu_links=[(g, names[g]) for g in gpu_pages]))
    history = price_history(snap)
    (out / "prices.html").write_text(env.get_template("prices.html").render(
        **common, root="", page="prices", rows=rows, history=history, charts=_chart_data(t, history),
        gpu_pages=set(gpu_pages), classes=CLASSES,
        offers=snap.offers.height, left_out=_left_out(snap), providers=snap.offers["provider"].n_unique() if snap.offers.height else 0))
    return out
