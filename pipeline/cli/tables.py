"""Readable terminal tables (rich) for the CLI's non-JSON output, laid out for a 100-column terminal.

Column names and units are the same in every table: ``$/h`` (all GPUs of the setup), ``$/GPU-h``, ``$/month``
(730 hours), ``$/1M tok`` (output tokens, one request), ``tok/s`` (decode, one request), ``GiB``.
"""

from __future__ import annotations

import os
import sys
from datetime import date
from typing import Any

from rich import box
from rich.console import Console as _RichConsole
from rich.table import Table
from rich.text import Text

from pipeline.cli.text import clean, counted, styled

WIDTH = 100


class QuietPipeConsole(_RichConsole):
    """rich's console, except when the reader goes away (``vramlab models | head -1``): rich's default hook exits
    with status 1, which breaks ``set -o pipefail`` scripts; raising ``BrokenPipeError`` instead lets ``main()`` end
    quietly with 0, as docs/cli.md promises for every command."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: ANN401 - rich's signature
        """rich's print, except that a string is always data: cleaned of control sequences, never read as markup
        (the CLI's own emphasis comes as :func:`styled` text)."""
        super().print(*(Text(clean(o, lines=True)) if isinstance(o, str) else o for o in objects), **kwargs)


def Console() -> _RichConsole:  # noqa: N802 - a drop-in for rich.Console
    """The terminal's width on a terminal; ``$COLUMNS`` or 100 when piped (logs, CI, docs transcripts). Tables and
    sentences fit that width (sentences wrap between words); launch commands are printed unwrapped."""
    if sys.stdout.isatty():
        return QuietPipeConsole()
    return QuietPipeConsole(width=int(os.environ.get("COLUMNS") or WIDTH))


class _Titled(Table):
    """A table whose title and caption are printed as full-width lines (rich would wrap them to the table's
    width)."""

    head: str | None = None
    foot: str | None = None

    def add_row(self, *cells: Any, **kwargs: Any) -> None:  # noqa: ANN401 - rich's signature
        """A row whose string cells are data: shown literally, cleaned of control sequences."""
        super().add_row(*(Text(clean(c)) if isinstance(c, str) else c for c in cells), **kwargs)


def _table(title: str | None = None, caption: str | None = None) -> _Titled:
    table = _Titled(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.head, table.foot = title, caption
    return table


def _show(console: _RichConsole, table: Table) -> None:
    head, foot = getattr(table, "head", None), getattr(table, "foot", None)
    if head:
        console.print(styled((head, "bold")))
    console.print(table)
    if foot:
        console.print(styled((foot, "dim")))


def say(text: str, console: _RichConsole | None = None) -> None:
    """A sentence wrapped between words to the table width (no markup read from it)."""
    (console or Console()).print(text, highlight=False)


def _money(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _num(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _ctx(n: int) -> str:
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)}M"
    return f"{n // 1024}k" if n % 1024 == 0 else f"{n:,}"


def _day(value: Any) -> str:  # noqa: ANN401 - datetime or ISO text
    """``Nov 28`` (the year is in the snapshot id of the footer)."""
    from datetime import datetime

    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when.strftime("%b %d")


# ------------------------------------------------------------------------------------------------ size

def print_size_report(report: Any, totals: list[dict[str, Any]], limit: Any = None,  # noqa: ANN401
                      console: _RichConsole | None = None) -> None:
    console = console or Console()
    counts = report.parameter_counts
    kinds = ", ".join(f"{v} {k}" for k, v in report.layers.items() if k != "total")
    console.print(styled((report.model, "bold"), f" ({report.model_type}): {report.parameters:,.2f}B parameters, "
                  f"{report.active_parameters:,.2f}B active (from {counts.used}); {report.layers['total']} layers: "
                  f"{kinds}; native format {report.native_format} ({report.native_source}); "
                  f"architecture from {report.architecture_source}"))
    contexts = [row["context"] for row in totals]
    table = _table("Memory for one copy of the model and one request (GiB): weights + BF16 KV cache + state")
    table.add_column("format")
    table.add_column("weights", justify="right")
    def over(row: dict[str, Any]) -> bool:
        return not row.get("withinExtendedMaxContext", row["withinMaxContext"])

    for c in contexts:
        table.add_column(f"total @{_ctx(c)}{'*' if over(next(r for r in totals if r['context'] == c)) else ''}",
                         justify="right")
    for fmt, weights in report.weights_gib.items():  # null: a native format we cannot read (warned on stderr)
        table.add_row(fmt, *("-" if v is None else f"{v:,.2f}" for v in (weights, *(r["byFormat"][fmt] for r in totals))))
    _show(console, table)
    kv = _table(f"KV cache per request (GiB, per GPU at TP {report.tensor_parallel})")
    for col in ("context", "bf16", "fp8"):
        kv.add_column(col, justify="right")
    for row in report.kv_cache_gib_per_request:
        note = "" if (limit.allows(row.context) if limit else row.within_max_context) else " (above max context)"
        kv.add_row(f"{row.context:,}{note}", f"{row.bf16:.3f}", f"{row.fp8:.3f}")
    _show(console, kv)
    per_token = ", ".join(f"{k} {v:,}" for k, v in report.kv_cache_bytes_per_token.items())
    console.print(f"KV bytes per token: {per_token}; recurrent state per request: "
                  f"{report.recurrent_state_gib_per_request:.4f} GiB")
    if limit is not None:
        console.print(f"max context: {limit.method}")
    if any(over(r) for r in totals):
        console.print("* above the model's maximum context: the memory it would take, not a context it serves")


# ------------------------------------------------------------------------------------------------ fit

def _plan_text(plan: dict[str, Any] | None) -> str:
    if plan is None:
        return "-"
    return f"TP {plan['tensorParallel']} x PP {plan['pipelineParallel']}"


def print_fit(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    console = console or Console()
    sub = result.get("substitute")
    head = styled((result["model"], "bold"), f" on {result['gpuName']} with {result['engine']}, {result['format']}"
                  + (f" (as {sub['format']})" if sub else ""), ": ")
    if not result["fits"]:
        console.print(head + styled(("no deployment", "red"), f" ({result['reason']})"))
        _print_change(result, console)
        return
    plan, mem, speed = result["plan"], result["memoryPerGpuGiB"], result["throughput"]
    console.print(head + styled((f"{result['gpus']} GPU(s)", "green"), f", TP {plan['tensorParallel']} x PP "
                                f"{plan['pipelineParallel']} on {plan['nodes']} machine(s); "
                                f"{'native' if result['nativeSupport'] else 'not native'} ({result['supportNote']})"))
    if sub:
        console.print(styled(("substitute", "yellow"), f": {sub['note']}"))
    if result.get("gpusAsked"):
        console.print(f"on {result['gpusAsked']} GPUs as asked; the fewest that hold it: {result['fewestGpus']}")
    else:
        console.print(f"why {result['gpus']}: {result['limitedBy']['note']}")
        _print_change(result, console)
    for warning in result.get("warnings") or []:
        console.print(styled(("warning", "yellow"), f": {warning}"))
    table = _table(f"Per GPU, largest stage (GiB) - usable {mem['usable']:.1f} ({result['gpuMemory']})")
    for col in ("weights", "KV cache", "state", "activations", "overhead", "total", "headroom"):
        table.add_column(col, justify="right")
    table.add_row(*(f"{mem[k]:.2f}" for k in ("weights", "kvCache", "recurrentState", "activations",
                                               "engineOverhead", "total", "headroom")))
    _show(console, table)

    def fmt(v: float | None, unit: str, span: list[float] | None = None) -> str:
        if v is None:
            return "n/a"
        around = f" ({span[0]:,.0f}-{span[1]:,.0f})" if span else ""
        return f"~{v:,.0f} {unit}{around}" if span else f"{v:,.1f} {unit}"
    console.print(f"decode {fmt(speed['decodeTokensPerS'], 'tok/s', speed.get('decodeTokensPerSRange'))}, prefill "
                  f"{fmt(speed['prefillTokensPerS'], 'tok/s', speed.get('prefillTokensPerSRange'))}, "
                  f"TTFT ({speed['ttftPromptTokens']} tokens) {fmt(speed['ttftMs'], 'ms', speed.get('ttftMsRange'))}, "
                  f"up to {speed['maxConcurrentRequests']} requests of {result['context']:,} tokens")
    if "serving" in result:
        for line in serving_lines(result["serving"]):
            console.print(line)
    start = result.get("engineStartup")
    if start:
        console.print(f"{result['engine']} start-up per GPU: weights {start['weightsGiBPerGpu']:.2f} GiB, activation "
                      f"peak {start['activationGiB']:.2f} GiB, KV cache {start['kvCacheGiBPerGpu']:.2f} GiB = "
                      f"{start['kvCacheTokens']:,} tokens, {start['maxConcurrency']:g}x requests of "
                      f"{start['maxModelLen']:,} tokens")
    _print_cost(result, console)
    console.print(styled((result["launch"]["note"], "dim")))
    console.print(result["launch"]["command"], soft_wrap=True, highlight=False)


def _print_change(result: dict[str, Any], console: _RichConsole) -> None:
    """The one flag that would change the answer (``limitedBy.change``), when there is one."""
    change = (result.get("limitedBy") or {}).get("change")
    if change:
        console.print(styled(("would change it", "green"), f": {change['note']}"))


def _ms(value: float) -> str:
    return f"{value / 1000:,.1f} s" if value >= 10_000 else f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


def _load_label(serving: dict[str, Any]) -> str:
    """The load a serving answer is for: ``5 req/s`` or ``8 clients in a closed loop``."""
    return f"{serving['rate']:g} req/s" if serving["rate"] is not None else \
        f"{serving['concurrency']} clients in a closed loop"


def serving_lines(serving: dict[str, Any] | None) -> list[str | Text]:
    """``fit`` at a load, one line each: TTFT, ITL, E2E and throughput, saturation (its word in colour)."""
    if serving is None:
        return ["at the load: no answer (no deployment, or no bandwidth figure for this GPU)"]

    def span(key: str) -> str:
        low, high = serving[key]
        if high >= 10_000:
            return f"{low / 1000:,.1f}-{high / 1000:,.1f} s"
        return f"{low:,.0f}-{high:,.0f} ms" if low >= 10 else f"{low:.1f}-{high:.1f} ms"

    lines: list[str | Text] = [f"at {_load_label(serving)}: TTFT ~{_ms(serving['ttftMs'])} ({span('ttftMsRange')}), p90 ~{_ms(serving['ttftMsP90'])}",
             f"ITL ~{_ms(serving['itlMs'])} ({span('itlMsRange')}), "
             f"{1000 / serving['itlMs']:,.0f} tok/s per user",
             f"E2E ~{_ms(serving['e2eMs'])} ({span('e2eMsRange')}), p90 ~{_ms(serving['e2eMsP90'])}; "
             f"{serving['outputTokensPerS']:,.0f} output tok/s, {serving['requestsPerS']:,.2f} req/s, mean batch "
             f"{serving['meanBatch']:,.1f}"]
    if not serving.get("prefillComputeKnown", True):
        lines.insert(1, styled(("TTFT unknown", "yellow"), ": this GPU has no tensor-core rate in the catalog, so "
                               "the figures above count the weights and cache streamed but not the prompt's "
                               "compute (too low); a TTFT level cannot be judged here"))
    outside = [name for name, value, key in (("TTFT", serving["ttftMs"], "ttftMsRange"),
                                               ("ITL", serving["itlMs"], "itlMsRange"),
                                               ("E2E", serving["e2eMs"], "e2eMsRange"))
               if not serving[key][0] <= value <= serving[key][1]]
    if outside:  # the band is measured / predicted on the calibration runs of the model's class
        lines.append(f"ranges: where the calibration runs of this model class measured (5-95% of measured / "
                     f"predicted, applied to the estimate); for {', '.join(outside)} they fell all on one side of "
                     "the estimate (docs/calibration.md)")
    if serving["saturated"]:
        lines.append(styled(("saturated", "red"), f": the setup sustains ~{serving['maxRate']:,.1f} req/s at most; "
                            "queues grow (figures for a run of 1,000 prompts)") if serving["rate"] is not None else
                     styled(("saturated", "yellow"), ": more clients than the engine runs at once; the rest wait "
                            f"(saturates at ~{serving['maxRate']:,.1f} req/s)"))
    else:
        lines.append(f"saturates at ~{serving['maxRate']:,.1f} req/s")
    if serving.get("usdPerMillionOutputTokens") is not None:  # priced (fit): on the offer its cost line names
        span = _span(serving["usdPerMillionOutputTokensRange"])
        spread = "" if span in ("-", "(exact)") else f" ({span})"
        lines.append(f"${_money(serving['usdPerMillionOutputTokens'])}/1M output tokens at this load{spread}, "
                     "on the offer of the cost line")
    return lines


def _print_cost(result: dict[str, Any], console: _RichConsole) -> None:
    c = result.get("cost")
    if not c:
        return
    offer, other = c.get("offer"), c.get("otherLayout")
    if offer is None:
        where = f"snapshot {c['snapshot']}" if c.get("snapshot") else "no snapshot yet (`vramlab run`)"
        console.print(f"cost: no current on-demand offer of this GPU runs the plan shown ({where})")
        if other:
            console.print(styled(("other layout", "yellow"), f": {other['note']}"))
        return
    console.print(f"cost of the plan shown: ${offer['pricePerHour']:,.2f}/h, ${offer['pricePerMonth']:,.0f}/month "
                  f"(730 h), ${offer['pricePerMonthAtUsage']:,.0f}/month at {c['hoursPerDay']:g} h/day, "
                  f"${_money(offer['usdPerMillionTokens'])}/1M tokens (one request)"
                  + (f", ${_money(offer['usdPerMillionTokensBatched'])}/1M at {offer['batch']} requests"
                     if offer.get("usdPerMillionTokensBatched") and offer.get("batch", 1) > 1 else "")
                  + f" - {offer['provider']} {offer['instanceType']} ({offer['layout']}, {offer['region'] or '-'}, "
                  f"verified {offer['verifiedAt'][:10]}, snapshot {c['snapshot']})" + _rented(offer))
    if other:
        console.print(styled(("other layout", "yellow"), f": {other['note']}"))
    rvb = c.get("rentVsBuy")
    if rvb:
        months = rvb["breakEvenMonths"]
        console.print(f"rent vs buy: {rvb['gpus']} GPU(s) at launch price ${rvb['hardwareUsd']:,.0f}, "
                      f"{rvb['watts']:,.0f} W at ${c['usdPerKwh']:g}/kWh = ${rvb['powerPerMonth']:,.2f}/month; "
                      + (f"buying breaks even after ~{months:g} months" if months is not None
                         else "renting stays cheaper (never breaks even)")
                      + f" at {c['hoursPerDay']:g} h/day")


def print_fit_all(model: str, gpu: Any, rows: list[dict[str, Any]], snapshot: str | None,  # noqa: ANN401
                  console: _RichConsole | None = None) -> None:
    console = console or Console()
    first = rows[0]
    asked = first.get("gpusAsked")
    load = any(r.get("serving") for r in rows)
    # the warnings of the question (the context, an encoder-decoder): every format has them; a format's own ones
    # (a plan over machines) are in its answer, `--format F`
    shared = set.intersection(*(set(r.get("warnings") or []) for r in rows))
    for warning in (w for w in first.get("warnings") or [] if w in shared):
        console.print(styled(("warning", "yellow"), f": {warning}"))
    if load:
        what = f"at {_load_label(next(r['serving'] for r in rows if r.get('serving')))}, --context {first['context']:,}"
    else:
        what = f"{first['concurrency']} request(s) of {first['context']:,} tokens"
    table = _table(f"{model} on {gpu.name}: " + (f"{counted(asked, 'GPU')} per format as asked" if asked else
                                                 "fewest GPUs per format") + f", {what}, KV {first['kvCacheDtype']}",
                   caption=(f"$/h: cheapest current on-demand offer running the plan shown (snapshot {snapshot}); "
                            + ("$/1M tok: output tokens at the load; TTFT p90, ITL and the rate it saturates at "
                               "from the serving model; " if load else "") +
                            "limit: what sets the count" if snapshot else "no snapshot yet: no prices"))
    speed = (("TTFT p90", "right"), ("ITL", "right"), ("max r/s", "right")) if load else (("tok/s", "right"),)
    for col, just in (("format", "left"), ("GPUs", "right"), ("plan", "left"), ("engine", "left"),
                      ("GiB/GPU", "right"), *speed, ("$/h", "right"), ("$/1M tok", "right"), ("limit", "left")):
        table.add_column(col, justify=just, no_wrap=col != "limit", overflow="fold")
    for r in rows:
        name = r["format"] + (f"->{r['substitute']['format']}" if r.get("substitute") else "")
        if not r["fits"]:
            table.add_row(name, "-", "-", r["engine"], "-", *["-"] * len(speed), "-", "-", "not served"
                          if r["limitedBy"]["kind"] == "unsupported" else "too large")
            continue
        offer = (r.get("cost") or {}).get("offer") or {}
        limit = r["limitedBy"]["kind"].replace("_", " ")
        served = r.get("serving")
        if not load:
            figures = [_num(r["throughput"]["decodeTokensPerS"])]
            per_million = offer.get("usdPerMillionTokens")
        elif served is None:
            figures, per_million = ["-"] * len(speed), None
        else:
            figures = [_ms(served["ttftMsP90"]), _ms(served["itlMs"]),
                       ("sat. " if served["saturated"] else "") + f"{served['maxRate']:,.1f}"]
            per_million = served.get("usdPerMillionOutputTokens")
        table.add_row(name, str(r["gpus"]), _plan_text(r["plan"]).replace("TP ", "").replace(" x PP ", "x"),
                      r["engine"], _num(r["memoryPerGpuGiB"]["total"]), *figures,
                      _money(offer.get("pricePerHour")), _money(per_million), limit)
    _show(console, table)
    console.print("plan = TP x PP; limit: what one GPU fewer runs out of: weights, activation peak (the engine's "
                  "working memory), kv cache (context and requests), engine reserve; parallelism (heads / whole "
                  "layers per stage), none (one GPU); not served: the engine has no kernels for it (`--format F` "
                  "names the substitute). `--format F` for the full answer and the flag that would change it.")
    offload = next((r["limitedBy"]["change"] for r in rows if (r["limitedBy"].get("change") or {}).get("flag")
                    == "--offload"), None)
    if offload and not any(r["fits"] and r["gpus"] == 1 for r in rows):
        console.print(styled(("no format fits one GPU", "yellow"), f": {offload['note']} (`--offload`)"))


# ------------------------------------------------------------------------------------------------ fine-tuning

def print_finetune(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    """``vramlab finetune``: one row per method, memory per GPU by part, and (with a GPU) how many hold it."""
    console = console or Console()
    on = ""
    if result["gpu"]:
        on = f" on {result['gpuName']}" + (f" x{result['gpusAsked']}" if result["gpusAsked"] else "")
    title = (f"{result['model']}: fine-tuning memory per GPU{on}, sequences of {result['seqLen']:,} tokens x "
             f"{result['batch']}, LoRA rank {result['rank']}")
    caption = ("GiB per GPU: weights (QLoRA: NF4 base), trainable = weights, gradients and AdamW states of what is "
               "trained (LoRA adapters; full: every parameter), activations (gradient checkpointing, per GPU)")
    if result["gpu"]:
        caption += (f"; GPUs = the fewest in one machine (FSDP) whose {result['usableGiBPerGpu']:,.1f} GiB each hold "
                    "it (the GPU's memory less 1 GiB for the CUDA context and allocator)")
    table = _table(title, caption=caption)
    columns = [("method", "left"), ("trainable", "right"), ("weights", "right"), ("trainable GiB", "right"),
               ("activations", "right"), ("total", "right")]
    if result["gpu"]:
        columns.append(("GPUs", "right"))
    for col, just in columns:
        table.add_column(col, justify=just)
    for r in result["methods"]:
        cells = [r["method"], f"{r['trainableParameters'] / 1e9:,.2f} B" if r["trainableParameters"] >= 1e8 else
                 f"{r['trainableParameters'] / 1e6:,.1f} M", _num(r["weightsGib"], 2),
                 _num(r["adaptersAndOptimizerGib"], 2), _num(r["activationsGib"], 2), _num(r["totalGib"], 2)]
        if result["gpu"]:
            cells.append(str(r["gpusNeeded"]) if r["fits"] else f"too large on {r['gpus']}")
        table.add_row(*cells)
    _show(console, table)
    say("gradient checkpointing, AdamW, weights and optimizer sharded over the GPUs (FSDP / ZeRO-3), activations "
        "per GPU; the rules and how they compare with published runs: docs/placement.md", console)


# ------------------------------------------------------------------------------------------------ models, GPUs

def print_models(rows: list[dict[str, Any]], console: _RichConsole | None = None) -> None:
    console = console or Console()
    # ids and repos are copied whole: the repo column is shown where both fit unfolded beside the figures (each
    # column's text, its two padding spaces and a rule), else left to a wider terminal and --json
    widths = [max([len(r[key] or "-") for r in rows] + [len(head)]) for key, head in (("id", "id"), ("repo", "repo"))]
    needed = sum(widths) + len("params B  active B  max ctx  fp8_block") + 3 * 6 + 1
    with_repo = needed <= console.width
    caption = ("the tracked models (the watchlist) first, then the bundled registry, then the Hub configs the "
               "project ships; any other Hub repo id is looked up")
    if not with_repo:
        caption += f"; repos in a terminal of {needed} columns or with --json"
    table = _table(f"{len(rows)} models: use the id or the repo with size, fit and cheapest", caption=caption)
    columns = [("id", "left"), ("repo", "left"), ("params B", "right"), ("active B", "right"), ("max ctx", "right"),
               ("native", "left")]
    for col, just in columns if with_repo else [c for c in columns if c[0] != "repo"]:
        table.add_column(col, justify=just, overflow="fold", no_wrap=col in ("id", "repo"))
    for r in rows:
        repo = [r["repo"] or "-"] if with_repo else []
        if r["error"]:
            table.add_row(r["id"], *repo, "-", "-", "-", styled((r["error"][:40], "red")))
            continue
        table.add_row(r["id"], *repo, _num(r["parameters"]), _num(r["activeParameters"]),
                      _ctx(r["maxContext"]) if r["maxContext"] else "-", r["nativeFormat"] or "-")
    _show(console, table)


def _others(formats: list[dict[str, Any]], width: int = 16) -> str:
    """The other formats that fit, most faithful first: ``fp8 q8_0 +4`` within ``width`` characters."""
    names = [f["format"] for f in formats[1:]]
    for n in range(len(names), 0, -1):
        text = " ".join(names[:n]) + (f" +{len(names) - n}" if n < len(names) else "")
        if len(text) <= width:
            return text
    return f"+{len(names)}" if names else "-"


def _load_words(load: dict[str, Any]) -> str:
    return (f"{load['rate']:g} req/s" if load["rate"] is not None else f"{load['concurrency']} clients") + (
        f" of {load['inputTokens']:,} in / {load['outputTokens']:,} out tokens")


def _ttft_p90(serving: dict[str, Any]) -> str:
    """A serving's TTFT p90 cell: ``n/a`` where the GPU has no tensor-core rate (the prompt's compute unknown)."""
    if not serving:
        return "-"
    if not serving.get("prefillComputeKnown", True):
        return "n/a"
    value = serving["ttftMsP90"]
    return f"{value / 1000:,.0f} s" if value >= 100_000 else _ms(value)  # at most 8 characters: never folded


def _served_cells(r: dict[str, Any]) -> tuple[str, ...]:
    """$/1M out, TTFT p90, tok/s per user and headroom of an answer at a load (``-`` where there is none)."""
    s = r.get("serving") or {}
    room = s.get("headroom")
    return (_money(s.get("usdPerMillionOutputTokens")), _ttft_p90(s),
            _num(s.get("tokensPerSPerUser")),
            ("sat." if s.get("saturated") else f"{room:.1f}x") if room is not None else "-")


def print_models_on(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    """``models --fits``: one row per model that runs on the GPUs, in its most faithful format that fits."""
    console = console or Console()
    load = result.get("load")
    asked = _load_words(load) if load else f"{result['concurrency']} request(s) of {result['context']:,} tokens"
    runs = [m for m in result["models"] if m["fits"]]
    fmt = f" in {result['format']}" if result.get("format") else ""
    floor = (f"; {sum(1 for m in runs if (m.get('serving') or {}).get('meetsDefaultFloor'))} of them at the default "
             "interactive floor (TTFT p90 <= 2 s, >= 10 tok/s per user), listed first" if load else "")
    table = _table(f"{len(runs)} of {len(result['models'])} models run on at most {result['maxGpus']} x "
                   f"{result['gpuName']}{fmt}, {asked}{floor}",
                   caption=f"snapshot {result['snapshot'] or '- (no prices: `vramlab run`)'}; B = billions of "
                           "parameters; format = the most faithful that fits (4-bit and above), most faithful first, "
                           "then the largest; plan = TP x PP and engine; $/h = the cheapest current on-demand offer "
                           "running the plan; "
                           + ("$/1M out = output tokens at the load; TTFT p90; tok/s/user = 1000 / ITL; room = "
                              "headroom, sustainable rate / rate (sat. = saturated)" if load else
                              "GiB = per GPU; tok/s = decode, one request; $/1M tok = output tokens, one request; "
                              "also = the other formats that fit"))
    cols = (("model", "left"), ("B", "right"), ("format", "left"), ("GPUs", "right"), ("plan", "left"))
    cols += ((("$/h", "right"), ("$/1M out", "right"), ("TTFT p90", "right"), ("tok/s/user", "right"),
              ("room", "right")) if load else
             (("GiB", "right"), ("tok/s", "right"), ("$/h", "right"), ("$/1M tok", "right"), ("also", "left")))
    for col, just in cols:
        table.add_column(col, justify=just, overflow="fold", max_width=13 if col == "also" else None,
                         no_wrap=col != "also")  # a model id is copied whole
    for m in runs:
        head = (m["id"], _num(m["parameters"]), m["format"], str(m["gpus"]),
                f"{m['tensorParallel']}x{m['pipelineParallel']} {m['engine']}")
        if load:
            table.add_row(*head, _money(m["pricePerHour"]), *_served_cells(m))
        else:
            table.add_row(*head, _num(m["memoryPerGpuGiB"]), _num(m["decodeTokensPerS"]), _money(m["pricePerHour"]),
                          _money(m["usdPerMillionTokens"]), _others(m["formats"], 13))
    _show(console, table)
    rest = [m for m in result["models"] if not m["fits"]]
    if rest:
        say(f"do not run on {result['maxGpus']} x {result['gpuName']} (in brackets: the fewest that hold it, in "
            "any format of 4 bits and above): " + ", ".join(f"{m['id']} ({m['fewestGpus']})" if m.get("fewestGpus") else
                                                  f"{m['id']} ({m['reason']})" for m in rest), console)


def print_compare(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    """``compare``: one row per GPU asked, the same model and load; a row is two lines (the offer's provider under
    the GPU, the engine under the plan, the verified date under the price) so it fits 100 columns."""
    console = console or Console()
    load = result.get("load")
    asked = _load_words(load) if load else f"{result['concurrency']} request(s) of {result['context']:,} tokens"
    table = _table(f"{result['model']} side by side, {asked}" + (f", {result['format']}" if result["format"] else ""),
                   caption=f"snapshot {result['snapshot'] or '- (no prices: `vramlab run`)'}; GPUs = the fewest "
                           "that hold it (GPU:N: N); plan = TP x PP, the engine under it; GiB = used of usable per "
                           "GPU; $/h = the cheapest current on-demand offer running the plan (its provider under "
                           "the GPU, the day it was last seen at the source under the price); "
                           + ("$/1M out = output tokens at the load; TTFT p90; tok/s/user = 1000 / ITL; headroom "
                              "= sustainable rate / rate (sat. = saturated)" if load else
                              "tok/s = decode, one request; TTFT of the prompt; $/1M tok = output tokens, one "
                              "request"))
    cols = [("GPU", "left"), ("format", "left"), ("GPUs", "right"), ("plan", "left"), ("GiB", "right"),
            ("$/h", "right")]
    cols += ([("$/1M out", "right"), ("TTFT p90", "right"), ("tok/s/user", "right"), ("headroom", "right")] if load
             else [("$/1M tok", "right"), ("tok/s", "right"), ("TTFT", "right")])
    for col, just in cols:
        table.add_column(col, justify=just, overflow="fold", no_wrap=col != "GPU", max_width=18 if col == "GPU"
                         else None)
    for r in result["gpus"]:
        offer = r.get("offer")
        gpu = _two(r["gpu"], offer["provider"] if offer else "no offer")
        if not r["fits"]:
            table.add_row(gpu, r["format"], *(["-"] * (len(cols) - 3)),
                          styled(("not served" if r["limitedBy"] == "unsupported" else "too large", "red")))
            continue
        head = (gpu, r["format"], str(r["gpus"]), _two(f"{r['tensorParallel']}x{r['pipelineParallel']}", r["engine"]),
                f"{_num(r['memoryPerGpuGiB'])}/{_num(r['usableGiBPerGpu'])}",
                _two(_money(r["pricePerHour"]), _day(r["verifiedAt"]) if r["verifiedAt"] else "-"))
        if load:
            table.add_row(*head, *_served_cells(r))
        else:
            table.add_row(*head, _money(r["usdPerMillionTokens"]), _num(r["decodeTokensPerS"]),
                          _ms(r["ttftMs"]) if r["ttftMs"] is not None else "-")
    _show(console, table)
    for r in result["gpus"]:
        if not r["fits"] and r.get("reason"):
            say(f"{r['gpu']}: {r['reason']}", console)
        elif r.get("offer") and _rented(r["offer"]):
            say(f"{r['gpu']}: {r['offer']['provider']} {r['offer']['instanceType']}{_rented(r['offer'])}", console)


def print_offers_table(rows: list[dict[str, Any]], snapshot: str, per_kind: bool, limit: int | None, spot: bool,
                       console: _RichConsole | None = None, per_provider: bool = False) -> None:
    """Offers, cheapest $/GPU-h first; ``per_provider``: a row is the cheapest offer of a provider and GPU, with
    how many offers and regions it stands for."""
    console = console or Console()
    shown = rows[:limit] if limit else rows
    what = "spot/marketplace" if spot else "on-demand"
    title = (f"Cheapest {what} offer per GPU" if per_kind else
             f"Cheapest {what} offer per provider and GPU ({counted(len(rows), 'row')}, "
             f"{counted(sum(r['offer_count'] for r in rows), 'offer')})" if per_provider else
             f"{counted(len(rows), what + ' offer')}") + ", cheapest $/GPU-h first"
    more = f"; {len(rows) - len(shown)} more with --all" if len(rows) > len(shown) else ""
    every = "; every offer with --offers" if per_provider else ""
    unstated = "; form ? = the source does not say (SXM or PCIe)" if any(_form(r).startswith("?") for r in shown) \
        else ""
    table = _table(title, caption=f"snapshot {snapshot}{more}{every}{unstated}")
    where = ("regions", "offers") if per_provider else ("region",)
    for col, just in (("GPU", "left"), ("QTY", "right"), ("GB", "right"), ("form", "left"), ("vCPU/RAM", "right"),
                      ("$/h", "right"), ("$/GPU-h", "right"), ("provider", "left"),
                      *((c, "right" if per_provider else "left") for c in where), ("verified", "left")):
        # a provider's name is not cut into pieces of three letters: it keeps its width, the form folds first
        table.add_column(col, justify=just, no_wrap=col not in ("provider", "region", "form"), overflow="fold",
                         min_width=min(12, width_of(shown, col)) if col in ("provider", "region") else None)
    for r in shown:
        memory = r["gpu_memory_gb"] if r["gpu_memory_gb"] is not None else r.get("catalog_memory_gb")
        place = (str(r["region_count"] or "-"), str(r["offer_count"])) if per_provider else (r["region"] or "-",)
        table.add_row(r["gpu_id"], f"{r['gpu_count']:g}", _num(memory, 0), _form(r),
                      f"{_num(r['vcpus'], 0)}/{_num(r['ram_gb'], 0)}", _money(r["price_per_hour_usd"]),
                      _money(r["price_per_gpu_hour_usd"], 3),
                      r["provider"] + (f" ({r['allocation']})" if spot else ""), *place, _day(r["verified_at"]))
    _show(console, table)


#: gpu_link as the offers table abbreviates it (the JSON keeps the full word)
_LINKS = {"NVSwitch": "NVSw", "NVLink": "NVLk", "NVLink bridge": "brdg", "xGMI": "xGMI", "PCIe": "PCIe"}


def width_of(rows: list[dict[str, Any]], column: str) -> int:
    """The longest text a provider or region cell of the offers table shows (its header's at least)."""
    return max([len(column), *(len(r.get(column) or "-") for r in rows)])


def _form(r: dict[str, Any]) -> str:
    """Form factor (``?``: the source does not say), plus the link between the instance's GPUs when it has several:
    ``SXM+NVSw``, ``PCIe``."""
    form = r.get("form_factor") or "-"
    form = "?" if form == "unknown" else form
    link = _LINKS.get(r.get("gpu_link") or "")
    return f"{form}+{link}" if link and link != form else form


def print_gpu_catalog(rows: list[dict[str, Any]], console: _RichConsole | None = None) -> None:
    console = console or Console()
    table = _table(f"{len(rows)} GPUs in the catalog (ids and aliases work in any case)",
                   caption="GB/s = memory bandwidth; FP16 TF = dense FP16/BF16 tensor TFLOPS (- : not known: the "
                           "prefill then has no compute term and TTFT at a load is unknown); TDP and launch price "
                           "in `--json`")
    for col, just in (("id", "left"), ("aliases", "left"), ("name", "left"), ("kind", "left"), ("GB", "right"),
                      ("usable GiB", "right"), ("GB/s", "right"), ("FP16 TF", "right")):
        table.add_column(col, justify=just, overflow="fold", no_wrap=col == "id")  # an id is copied whole
    for r in rows:
        table.add_row(r["id"], ", ".join(r["aliases"]) or "-", r["name"], r["kind"], f"{r['memory_gb']:g}",
                      _num(r["usable_memory_gib"]), _num(r["bandwidth_gbs"], 0), _num(r["fp16_tflops_dense"], 0))
    _show(console, table)


def print_history(gpu: str, what: str, rows: list[dict[str, Any]], days: list[dict[str, Any]], snapshot: str,
                  compared: dict[str, Any] | None = None, console: _RichConsole | None = None) -> None:
    """One line per day and provider, cheapest first within a day, the day's cheapest starred; then per day its
    providers and what changed; the footer compares the first and last day like for like."""
    console = console or Console()
    table = _table(f"{gpu}: cheapest {what} $/GPU-hour per day and provider ({counted(len(days), 'day')}, "
                   f"{counted(len({r['provider'] for r in rows}), 'provider')})",
                   caption=f"snapshot {snapshot}; * = the day's cheapest; observations = prices seen that day; "
                           "quarantined and merged-duplicate offers left out")
    for col, just in (("day", "left"), ("provider", "left"), ("GPU", "left"), ("$/GPU-h", "right"),
                      ("observations", "right"), ("instance", "left")):
        table.add_column(col, justify=just, no_wrap=col != "instance", overflow="fold")
    cheapest = {d["day"]: d["provider"] for d in days}
    for r in rows:
        star = "*" if cheapest[r["day"]] == r["provider"] else " "
        table.add_row(r["day"], r["provider"], r["gpu_id"], f"{star}{r['price']:,.3f}", str(r["observations"]),
                      r["instance_type"] or "-")
    _show(console, table)
    _providers_by_day(console, f"{gpu}: the providers of each day ({what})", days, compared)


def _providers_by_day(console: _RichConsole, title: str, days: list[dict[str, Any]],
                      compared: dict[str, Any] | None, unit: str = "") -> None:
    """Per day its providers (how many, the cheapest, who came and went), then the like-for-like footer."""
    first, last = days[0], days[-1]
    per_day = _table(title, caption="changes = against the day before in this list; a cheapest price is like for "
                                    "like with the day before only when the providers are the same")
    for col, just in (("day", "left"), ("providers", "right"), ("cheapest", "right"), ("changes", "left")):
        per_day.add_column(col, justify=just, no_wrap=col != "changes", overflow="fold")
    for i, d in enumerate(days):
        change = " ".join([f"+{p}" for p in d["added"]] + [f"-{p}" for p in d["removed"]])
        apart = (date.fromisoformat(d["day"]) - date.fromisoformat(days[i - 1]["day"])).days if i else 1
        gap = f" (after {counted(apart - 1, 'day')} without a price)" if apart > 1 else ""
        per_day.add_row(d["day"], str(d["providers"]), f"${d['cheapest']:,.2f}{unit} ({d['provider']})",
                        ", ".join(d["providerList"]) if i == 0 else (change or "same providers") + gap)
    _show(console, per_day)
    if compared is None:
        return
    if compared["providers"]:
        a, b = compared["first"], compared["last"]
        change = b["price"] - a["price"]
        shared = ", ".join(compared["providers"])
        console.print(f"like for like ({len(compared['providers'])} provider"
                      f"{'s' if len(compared['providers']) != 1 else ''} on both days: {shared}): cheapest "
                      f"{a['day']} ${a['price']:,.2f}{unit} ({a['provider']}), {b['day']} ${b['price']:,.2f}{unit} "
                      f"({b['provider']}), {'+' if change >= 0 else '-'}${abs(change):,.2f}")
    else:
        console.print(f"no like-for-like change: {first['day']} ({first['providers']} provider"
                      f"{'s' if first['providers'] != 1 else ''}) and {last['day']} ({last['providers']}) share no "
                      "provider")


def print_cost_history(model: str, context: int, concurrency: int, rows: list[dict[str, Any]],
                       days: list[dict[str, Any]], snapshot: str, compared: dict[str, Any] | None,
                       console: _RichConsole | None = None, *, published: bool = True) -> None:
    """Per day and provider the cheapest setup running the model at the load, then the days' providers.
    ``published``: the setup shapes are the snapshot's published cheapest setups for the load (else the ones
    `cheapest` planned on its offers)."""
    console = console or Console()
    load = f"{concurrency} x {context:,} tokens"
    table = _table(f"{model} at {load}: cheapest on-demand setup per day and provider ({counted(len(days), 'day')})",
                   caption=f"snapshot {snapshot}; * = the day's cheapest; setup shapes (GPU, GPUs per instance, "
                           "instances, format) are those of the snapshot's "
                           + ("published cheapest setups" if published else "cheapest setups as `cheapest` plans "
                              "them on its offers") + " for this load, priced with each day's eligible "
                           "observations; $/month = 730 h")
    for col, just in (("day", "left"), ("provider", "left"), ("setup", "left"), ("format", "left"),
                      ("$/h", "right"), ("$/month", "right")):
        table.add_column(col, justify=just, overflow="fold")
    cheapest = {d["day"]: d["provider"] for d in days}
    for r in rows:
        star = "*" if cheapest[r["day"]] == r["provider"] else " "
        table.add_row(r["day"], r["provider"], _two(f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']}",
                                                    r["instance_type"]),
                      r["format"], f"{star}{r['price']:,.2f}", f"{r['price'] * 730:,.0f}")
    _show(console, table)
    _providers_by_day(console, f"{model} at {load}: the providers of each day", days, compared, "/h")


# ------------------------------------------------------------------------------------------------ sources

def print_sources(rows: list[dict[str, Any]], live: bool, console: _RichConsole | None = None) -> None:
    console = console or Console()
    table = _table(f"Price sources ({'live' if live else 'offline replay; VRAMLAB_LIVE=1 for live'})")
    table.add_column("source", no_wrap=True)
    for col in ("auth", "configured", "last fetch", "outcome"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["source"], r["auth"], "yes" if r["configured"] else "no",
                      (r["last_fetch"] or "-")[:16].replace("T", " "), r["last_outcome"] or "-")
    _show(console, table)


def print_offers(offers: list[dict[str, Any]], rejected: list[str], console: _RichConsole | None = None) -> None:
    console = console or Console()
    table = _table(counted(len(offers), "offer"))
    for col in ("instance", "region", "GPU", "QTY", "allocation", "$/h", "$/GPU-h"):
        table.add_column(col, justify="right" if col.startswith("$") or col == "QTY" else "left", overflow="fold")
    for o in offers:
        table.add_row(o["instance_type"], o["region"] or "-", o["gpu_id"] or f"? {o['gpu_name']}", f"{o['gpu_count']:g}",
                      o["allocation"], f"{o['price_per_hour_usd']:,.3f}", f"{o['price_per_gpu_hour_usd']:,.3f}")
    _show(console, table)
    for reason in rejected:
        console.print(styled(("rejected", "yellow"), f" {reason}"))


# ------------------------------------------------------------------------------------------------ cheapest

def _regions(r: dict[str, Any], width: int = 13) -> str:
    """``CA, CZ +6`` — the regions offering one setup at its price, short enough for the table."""
    regions = r.get("regions") or ([r["region"]] if r.get("region") else [])
    if not regions:
        return "-"
    for n in range(len(regions), 0, -1):  # as many names as fit `width` characters, the count of the rest
        text = ", ".join(regions[:n]) + (f" +{len(regions) - n}" if n < len(regions) else "")
        if len(text) <= width:
            return text
    return regions[0][:width - 4] + "…" + (f" +{len(regions) - 1}" if len(regions) > 1 else "")


#: the cluster fabric's short name as the setups tables abbreviate it (the JSON keeps the full description)
_FABRICS = {"InfiniBand": "IB", "NVLink domain + RoCE": "NVL+RoCE"}


def _fabric(r: dict[str, Any]) -> str:
    """What joins a setup's machines, short: ``IB``, ``RoCE``, ``EFA``, ``RPC`` (llama.cpp over the public
    network); ``-`` for one machine."""
    if r["instances"] == 1:
        return "-"
    if r["deployment"] == "llama.cpp-rpc":
        return "RPC"
    from pipeline.compute.fabric import fabric_short_names

    name = fabric_short_names().get(r.get("interconnect") or "", r.get("interconnect") or "?")
    return _FABRICS.get(name, name)


def _capacity(r: dict[str, Any]) -> str:
    """The offer's availability at fetch time, short: ``yes``, ``low``, ``no``, ``?`` (not stated)."""
    from pipeline.compute.setups import AVAILABILITY_NOTES

    short = {AVAILABILITY_NOTES["available"]: "yes", AVAILABILITY_NOTES["low"]: "low",
             AVAILABILITY_NOTES["unavailable"]: "no"}
    return short.get(r.get("availability") or "", "?")


def _middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its middle left out (``massedc…ute_L40S``): an instance type's
    provider prefix and GPU suffix both stay readable where folding would cut it into lines (the JSON has it whole)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _two(first: str, second: str) -> Text:
    """A two-line cell: the figure, and under it (dim) what goes with it."""
    cell = Text(clean(first))
    cell.append("\n")
    cell.append(clean(second), style="dim")
    return cell


_SETUP_KEY = ("setup = instances x GPUs and GPU, the instance type under it; plan = TP x PP, under it the fabric "
              "joining the machines (IB InfiniBand, RoCE, EFA, NVL+RoCE an NVLink rack over RoCE, RPC llama.cpp "
              "over the public network); provider, its regions under it; cap = capacity the provider stated at "
              "fetch time (yes, low, no; ? not stated)")


def _rented(offer: dict[str, Any]) -> str:
    """``; uses N of the M GPUs rented: ...`` when a priced plan (``cost.offer``) leaves GPUs of its instances
    idle, else ''."""
    used, rented = offer.get("gpusUsed"), offer.get("gpusRented")
    if not used or not rented or used >= rented:
        return ""
    return f"; uses {used} of the {rented} GPUs rented: priced as the whole instance, the rest idle"


def _idle_note(setups: list[dict[str, Any]]) -> str | None:
    """A note naming the setups whose plan uses fewer GPUs than the instances rent (an instance of 10 for a plan
    of 9): their $/h is the whole instance's, the rest idle; None when every setup uses all it rents."""
    idle = [f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']} (plan {r['tensor_parallel']}x"
            f"{r['pipeline_parallel']} uses {r['gpus_needed']} of {r['gpus']})"
            for r in setups if r.get("gpus_needed") and r["gpus_needed"] < r["gpus"]]
    if not idle:
        return None
    return (f"{', '.join(dict.fromkeys(idle))}: priced as the whole instance, the GPUs the plan does not use stay "
            "idle (providers rent whole instances)")


def _span(span: list[float] | None) -> str:
    """``0.52-0.80`` under a $/1M figure; ``-`` without a range, and nothing to repeat when both ends print
    alike (at a rate the setup sustains, the output rate is the arrival rate's whatever the step)."""
    if not span:
        return "-"
    low, high = _money(span[0]), _money(span[1])
    return "(exact)" if low == high else f"{low}-{high}"


#: the setup column of ``cheapest`` at a load, and what its instance type is shortened to
_SERVED_SETUP_WIDTH = 15
#: the setup column of the plain setups table (instance types shortened in the middle to it)
_SETUP_WIDTH = 20


def print_served_setups(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    """``cheapest`` at a load: one row per setup meeting the service level, with its figures at that load."""
    console = console or Console()
    load, level = result["load"], result.get("serviceLevel")
    what = "spot/marketplace" if result["list"] == "spot" else "on-demand"
    asked = _load_words(load)
    bound = "no service level (--no-slo)" if level is None else " and ".join(
        x for x in (f"TTFT p90 <= {level['ttftMsP90']:,.0f} ms" if level["ttftMsP90"] else "",
                    f">= {level['minTokensPerSPerUser']:g} tok/s per user" if level["minTokensPerSPerUser"] else "")
        if x) + (" (the default interactive floor)" if result["serviceLevelSource"] == "default" else "")
    title = f"{result['model']}: cheapest {what} setups at {asked}, {bound}"
    table = _table(title, caption=f"snapshot {result['snapshot']} ({result['origin']}; {result['judged']} setups "
                                  f"served); {_SETUP_KEY}; $/h, under it the day the offer was last seen at the "
                                  "source; $/1M out = output tokens at this load, under it the range from the "
                                  "at-load bands ((exact): below saturation a rate's output rate is the arrival "
                                  "rate's); TTFT p90; tok/s/user = 1000 / ITL, under it the headroom "
                                  "(sustainable rate / rate)")
    for col, just, width in (("setup", "left", _SERVED_SETUP_WIDTH), ("plan", "left", 8), ("format", "left", 8),
                             ("provider", "left", 13), ("cap", "left", 3), ("$/h", "right", 7),
                             ("$/1M out", "right", 11), ("TTFT p90", "right", 8), ("tok/s/user", "right", 10)):
        table.add_column(col, justify=just, overflow="fold", max_width=width,
                         min_width=width if col == "setup" else None)  # the instance type keeps its width
    for r in result["setups"]:
        s = r["serving"] or {}
        span = s.get("usdPerMillionOutputTokensRange")
        room = s.get("headroom")
        table.add_row(_two(f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']}", _middle(r["instance_type"], _SERVED_SETUP_WIDTH)),
                      _two(f"{r['tensor_parallel']}x{r['pipeline_parallel']}", _fabric(r)), r["format"],
                      _two(r["provider"], _regions(r, 13)), _capacity(r),
                      _two(_money(r["price_per_hour"]), _day(r["verified_at"])),
                      _two(_money(s.get("usdPerMillionOutputTokens")), _span(span)),
                      _ttft_p90(s),
                      _two(_num(s.get("tokensPerSPerUser")), f"{room:.1f}x room" if room is not None else "-"))
    if result.get("note"):
        say(f"note: {result['note']}", console)
    _show(console, table)
    idle = _idle_note(result["setups"])
    if idle:
        say(f"note: {idle}", console)


def print_setups(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    """One row per distinct rentable setup, cheapest first; the deployment shape in plain sight. A row is two
    lines (the instance type, fabric, regions and the $/1M range under the figures) so it fits 100 columns."""
    console = console or Console()
    what = "spot/marketplace" if result["list"] == "spot" else "on-demand"
    f = result["filters"]
    filters = [f"{k} {v}" for k, v in (("provider", f["provider"]), ("region", f["region"]),
                                        ("max $/h", f["maxPrice"]), ("engine", f.get("engine")),
                                        ("fabric", f.get("fabric"))) if v]
    if f.get("maxGpus"):
        filters.append(f"at most {counted(f['maxGpus'], 'GPU')}")
    if f.get("gpu"):
        filters.append("on " + "/".join(f["gpu"]) + (f" x{f['gpuCount']} per instance" if f.get("gpuCount") else ""))
    if f["singleMachine"]:
        filters.append("one machine")
    if f.get("multiMachine"):
        filters.append("several machines")
    if f.get("available"):
        filters.append("stated capacity")
    load = result.get("concurrency", 1)
    by = "cost per output token" if result.get("sort") == "per_token" else "price"
    title = (f"{result['model']}: cheapest {what} setups" + (f" in {result['format']}" if result["format"] else "")
             + f" for {load} request(s) of {result['context']:,} tokens, by {by}"
             + (f" ({', '.join(filters)})" if filters else ""))
    engines = sorted({r["engine"] for r in result["setups"]})
    source = f"; model from {result['modelSource']}" if result.get("modelSource", "").startswith("Hub look-up") else ""
    table = _table(title, caption=f"snapshot {result['snapshot']} ({result['origin']}{source}); {_SETUP_KEY}; "
                                  f"plans with {' or '.join(engines)} (vLLM on data-centre GPUs, llama.cpp "
                                  "elsewhere, unless --engine); $/1M tok = output tokens at this load, under it "
                                  "the range with the plan kept full (req requests); tok/s = "
                                  f"decode per request with {load} running; req = requests of {result['context']:,} "
                                  "tokens the plan holds; seen = the day the offer was last seen at the source")
    wide = console.width >= 140  # a wide terminal: names in full (100 columns: folded onto more lines)
    # the widths add up to 100 columns with the gaps: rich would otherwise narrow the widest column and fold
    # the instance type its middle-shortening had fitted
    for col, just, width in (("setup", "left", _SETUP_WIDTH), ("plan", "left", 8), ("format", "left", 8),
                             ("provider", "left", 12), ("cap", "left", 3), ("$/h", "right", 6),
                             ("$/1M tok", "right", 13), ("tok/s", "right", 5), ("req", "right", 4),
                             ("seen", "left", 6)):
        table.add_column(col, justify=just, overflow="fold", max_width=None if wide else width,
                         min_width=None if wide or col != "setup" else width)
    for r in result["setups"]:
        low, high = r.get("usd_per_million_tokens_batched_low"), r.get("usd_per_million_tokens_batched_high")
        table.add_row(_two(f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']}",
                           r["instance_type"] if wide else _middle(r["instance_type"], _SETUP_WIDTH)),
                      _two(f"{r['tensor_parallel']}x{r['pipeline_parallel']}", _fabric(r)), f"{r['format']}",
                      _two(r["provider"], _regions(r, 40 if wide else 12)), _capacity(r),
                      _money(r["price_per_hour"]),
                      _two(_money(r.get("usd_per_million_tokens_at_load")),
                           f"{_money(low)}-{_money(high)}" if low is not None and high is not None else "-"),
                      _num(r.get("tokens_per_s_per_request")), _num(r.get("max_concurrent_requests"), 0),
                      _day(r["verified_at"]))
    if result.get("gpuNote"):
        say(f"note: {result['gpuNote']}", console)
    _show(console, table)
    idle = _idle_note(result["setups"])
    if idle:
        say(f"note: {idle}", console)
    if any(r["instances"] > 1 for r in result["setups"]):
        from pipeline.compute.setups import MULTI_MACHINE_RANK_FACTOR

        console.print(styled(("note", "yellow"), ": rows with several nodes span machines (pipeline stages over the "
                             f"network) and rank as if they cost {MULTI_MACHINE_RANK_FACTOR:g}x their price (the "
                             "network's toll on a practitioner's choice); --single-machine keeps one-instance "
                             "setups only"))
