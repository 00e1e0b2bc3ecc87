"""Readable terminal tables (rich) for the CLI's non-JSON output."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console as _RichConsole
from rich.table import Table

from sizing_core import SizingReport


def Console() -> _RichConsole:  # noqa: N802 - a drop-in for rich.Console
    """Wide output when piped (tables are read by people in logs and CI, not squeezed to 80 columns)."""
    return _RichConsole() if sys.stdout.isatty() else _RichConsole(width=200)


def print_size_report(report: SizingReport, console: _RichConsole | None = None) -> None:
    console = console or Console()
    counts = report.parameter_counts
    kinds = ", ".join(f"{v} {k}" for k, v in report.layers.items() if k != "total")
    console.print(f"[bold]{report.model}[/bold] ({report.model_type}): {report.parameters:,.2f}B parameters, "
                  f"{report.active_parameters:,.2f}B active (from {counts.used}); {report.layers['total']} layers: "
                  f"{kinds}; native format {report.native_format} ({report.native_source}); "
                  f"architecture from {report.architecture_source}")
    weights = Table(title="Weights (GiB)")
    weights.add_column("format")
    weights.add_column("GiB", justify="right")
    for fmt, value in report.weights_gib.items():
        weights.add_row(fmt, "unknown" if value is None else f"{value:,.2f}")
    console.print(weights)
    kv = Table(title=f"KV cache per request (GiB, per GPU at TP {report.tensor_parallel})")
    for col in ("context", "bf16", "fp8"):
        kv.add_column(col, justify="right")
    for row in report.kv_cache_gib_per_request:
        note = "" if row.within_max_context else " (above max context)"
        kv.add_row(f"{row.context:,}{note}", f"{row.bf16:.3f}", f"{row.fp8:.3f}")
    console.print(kv)
    per_token = ", ".join(f"{k} {v:,}" for k, v in report.kv_cache_bytes_per_token.items())
    console.print(f"KV bytes per token: {per_token}; recurrent state per request: "
                  f"{report.recurrent_state_gib_per_request:.4f} GiB")


def print_fit(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    console = console or Console()
    head = f"[bold]{result['model']}[/bold] on {result['gpuName']} with {result['engine']}, {result['format']}"
    if not result["fits"]:
        console.print(f"{head}: [red]no deployment[/red] ({result['reason']})")
        return
    plan, mem, speed = result["plan"], result["memoryPerGpuGiB"], result["throughput"]
    console.print(f"{head}: [green]{result['gpus']} GPU(s)[/green], TP {plan['tensorParallel']} x PP "
                  f"{plan['pipelineParallel']} on {plan['nodes']} machine(s); "
                  f"{'native' if result['nativeSupport'] else 'not native'} ({result['supportNote']})")
    table = Table(title=f"Per GPU, largest stage (GiB) - usable {mem['usable']:.1f} ({result['gpuMemory']})")
    for col in ("weights", "KV cache", "state", "activations", "overhead", "total", "headroom"):
        table.add_column(col, justify="right")
    table.add_row(*(f"{mem[k]:.2f}" for k in ("weights", "kvCache", "recurrentState", "activations",
                                               "engineOverhead", "total", "headroom")))
    console.print(table)
    def fmt(v: float | None, unit: str) -> str:
        return "n/a" if v is None else f"{v:,.1f} {unit}"
    console.print(f"decode {fmt(speed['decodeTokensPerS'], 'tok/s')}, prefill {fmt(speed['prefillTokensPerS'], 'tok/s')}, "
                  f"TTFT ({speed['ttftPromptTokens']} tokens) {fmt(speed['ttftMs'], 'ms')}, "
                  f"up to {speed['maxConcurrentRequests']} requests of {result['context']:,} tokens")
    console.print(f"[dim]{result['launch']['note']}[/dim]\n{result['launch']['command']}")


def print_sources(rows: list[dict[str, Any]], live: bool, console: _RichConsole | None = None) -> None:
    console = console or Console()
    table = Table(title=f"Price sources ({'live' if live else 'offline replay; VRAMLAB_LIVE=1 for live'})")
    table.add_column("source", no_wrap=True)
    for col in ("auth", "configured", "last fetch", "outcome"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["source"], r["auth"], "yes" if r["configured"] else "no", r["last_fetch"] or "-",
                      r["last_outcome"] or "-")
    console.print(table)


def print_offers(offers: list[dict[str, Any]], rejected: list[str], console: _RichConsole | None = None) -> None:
    console = console or Console()
    table = Table(title=f"{len(offers)} offers")
    for col in ("instance", "region", "GPU", "count", "allocation", "$/h", "$/GPU-h"):
        table.add_column(col, justify="right" if col.startswith("$") or col == "count" else "left")
    for o in offers:
        table.add_row(o["instance_type"], o["region"] or "-", o["gpu_id"] or f"? {o['gpu_name']}", f"{o['gpu_count']:g}",
                      o["allocation"], f"{o['price_per_hour_usd']:,.3f}", f"{o['price_per_gpu_hour_usd']:,.3f}")
    console.print(table)
    for reason in rejected:
        console.print(f"[yellow]rejected[/yellow] {reason}")


def print_setups(result: dict[str, Any], console: _RichConsole | None = None) -> None:
    """A table in the spirit of ``sky show-gpus``: one line per rentable setup, cheapest first."""
    console = console or Console()
    table = Table(title=f"{result['model']}: cheapest on-demand setups, one request of {result['context']:,} tokens "
                        f"(snapshot {result['snapshot']})")
    for col in ("GPU", "QTY", "PROVIDER", "INSTANCE", "REGION", "$/HR", "$/MONTH", "$/GPU-HR", "FORMAT", "ENGINE",
                "VERIFIED"):
        table.add_column(col, justify="right" if col.startswith("$") or col == "QTY" else "left")
    for r in result["setups"]:
        table.add_row(r["gpu_id"], f"{r['gpus']}", r["provider"], r["instance_type"], r["region"] or "-",
                      f"{r['price_per_hour']:,.2f}", f"{r['price_per_month']:,.0f}", f"{r['price_per_gpu_hour']:,.3f}",
                      r["format"], r["engine"], str(r["verified_at"])[:16])
    console.print(table)
