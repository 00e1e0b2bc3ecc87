"""The ``vramlab`` command line. Sub-commands keep their flags and JSON keys stable: other tools call them.

``size``  memory report for a config.json, a spec file or a bundled registry id (``--json`` for machines);
``run``   the main job (see ``pipeline/cli/run.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline.cli.models import load_model, model_repo
from pipeline.cli.tables import print_fit, print_size_report
from sizing_core import SizingError, size_model
from sizing_core.engines import default_engine, get_engine
from sizing_core.errors import UnknownFormatError
from sizing_core.formats import WEIGHT_FORMATS
from sizing_core.gpus import get_gpu
from sizing_core.launch import launch_command
from sizing_core.parameters import checkpoint_facts
from sizing_core.placement import fewest_gpus
from sizing_core.report import DEFAULT_CONTEXTS
from sizing_core.throughput import estimate


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def _contexts(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--contexts takes comma-separated token counts, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"--contexts needs positive token counts, got {text!r}")
    return values


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _read_json(path: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CliError(f"{what} not found: {path}") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{what} {path} is not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CliError(f"{what} {path} must hold a JSON object")
    return data


def cmd_size(args: argparse.Namespace) -> int:
    quant = _read_json(args.quant_config, "quant config") if args.quant_config else None
    arch = load_model(args.model, quant_config=quant)
    checkpoint = None
    if args.safetensors:
        try:
            checkpoint = checkpoint_facts(_read_json(args.safetensors, "safetensors metadata"), args.safetensors)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    report = size_model(arch, args.tensor_parallel, args.contexts, checkpoint)
    for note in report.notes:  # generic rule / family defaults / unknown quantization: warnings, not errors
        print(f"warning: {report.model}: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.model_dump(mode="json"), indent=1))
    else:
        print_size_report(report)
    return 0


def fit_result(model: str, gpu_id: str, fmt: str, context: int = 8192, concurrency: int = 1,
               engine_id: str | None = None, kv_cache_dtype: str = "bf16") -> dict[str, Any]:
    """The ``vramlab fit --json`` object (keys are a contract: see docs/cli.md)."""
    if fmt not in (*WEIGHT_FORMATS, "native"):
        raise UnknownFormatError(f"unknown format {fmt!r} (known: {', '.join(WEIGHT_FORMATS)}, native)")
    arch = load_model(model)
    gpu = get_gpu(gpu_id)
    engine = get_engine(engine_id) if engine_id else default_engine(gpu)
    placement = fewest_gpus(arch, gpu, engine, fmt, context, concurrency, kv_cache_dtype)
    plan = placement.plan
    throughput = estimate(arch, gpu, engine, placement) if plan else None
    launch = launch_command(placement, model_repo(model, arch)) if plan else None
    memory = None
    if plan is not None:
        largest = plan.largest_stage
        memory = largest.model_dump(mode="json", exclude={"stage", "layers"}) | {
            "usable": plan.usable_gib, "headroom": plan.headroom_gib, "stage": largest.stage}
    return {
        "model": arch.model, "gpu": gpu.id, "gpuName": gpu.name, "engine": engine.id, "format": fmt,
        "weightFormat": placement.weight_format, "context": context, "concurrency": concurrency,
        "kvCacheDtype": kv_cache_dtype, "gpus": placement.gpus, "fits": placement.fits,
        "nativeSupport": placement.native_support, "supportNote": placement.support_note,
        "reason": placement.reason, "usableMemoryRule": engine.usable_rule, "gpuMemory": gpu.memory_source,
        "plan": plan.model_dump(mode="json") if plan else None, "memoryPerGpuGiB": memory,
        "throughput": throughput.model_dump(mode="json") if throughput else None,
        "launch": launch.model_dump(mode="json") if launch else None,
    }


def cmd_fit(args: argparse.Namespace) -> int:
    result = fit_result(args.model, args.gpu, args.format, args.context, args.concurrency, args.engine,
                        args.kv_cache_dtype)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_fit(result)
    return 0


def cmd_sources_list(args: argparse.Namespace) -> int:
    from pipeline.cli.run import resolve_data_dir
    from pipeline.cli.tables import print_sources
    from pipeline.ingest.prices import live_mode
    from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
    from pipeline.sources.landing import read_log

    last = {}
    for entry in read_log(resolve_data_dir(args.data_dir)):
        last[entry.source] = entry
    rows = []
    for source in [*PRICE_SOURCES.values(), CURRENCY_SOURCE]:
        entry = last.get(source.name)
        rows.append({"source": source.name, "provider": source.provider, "auth": source.auth,
                     "configured": source.configured(), "unit": source.unit, "endpoint": source.endpoint,
                     "last_fetch": entry.started_at.isoformat() if entry else None,
                     "last_outcome": entry.outcome if entry else None})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print_sources(rows, live=live_mode())
    return 0


def cmd_sources_parse(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from pipeline.cli.run import resolve_data_dir
    from pipeline.ingest.prices import latest_rates
    from pipeline.sources import get_source
    from pipeline.sources.base import RawPart, RawPayload
    from pipeline.sources.fx import parse_ecb
    from pipeline.sources.landing import load_landed

    source = get_source(args.source)
    paths = [Path(f) for f in args.files]
    for path in paths:
        if not path.is_file():
            raise CliError(f"payload file not found: {path}")
    if len(paths) == 1 and paths[0].name.endswith(".json") and _is_landing_meta(paths[0]):
        raw = load_landed(paths[0])
    else:
        observed = datetime.fromisoformat(args.observed_at) if args.observed_at else \
            datetime.fromtimestamp(paths[0].stat().st_mtime, UTC)
        parts = tuple(RawPart(url=f"file://{p.resolve()}", status=200, body=p.read_bytes()) for p in paths)
        raw = RawPayload(source=source.name, fetched_at=observed, parts=parts)
    rates = parse_ecb(Path(args.rates).read_bytes()) if args.rates else latest_rates(resolve_data_dir(args.data_dir))
    try:
        result = source.parse(raw, rates)
    except Exception as exc:  # noqa: BLE001 - any parser failure is one clear line
        raise CliError(f"{source.name}: cannot parse {', '.join(map(str, paths))}: {exc}") from None
    offers = [o.model_dump(mode="json") for o in result.offers]
    if args.json:
        print(json.dumps(offers, indent=1))
    else:
        from pipeline.cli.tables import print_offers

        print_offers(offers, result.rejected)
    return 0


def _is_landing_meta(path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and "parts" in data and "fetched_at" in data


def cmd_cheapest(args: argparse.Namespace) -> int:
    import polars as pl

    from pipeline.cli.run import resolve_data_dir
    from pipeline.cli.tables import print_setups
    from pipeline.compute.setups import FIDELITY, ON_DEMAND, cheapest_setups, overall, setup_from_row
    from pipeline.exports.publish import latest

    snapshot = latest(resolve_data_dir(args.data_dir) / "exports")
    if snapshot is None:
        raise CliError("no published snapshot yet: run `vramlab run` first")
    index = json.loads((snapshot / "index.json").read_text())
    entry = next((m for m in index["models"] if args.model in (m["id"], m.get("repo"))), None)
    if entry is None:
        raise CliError(f"model {args.model!r} is not in snapshot {snapshot.name} "
                       f"(known: {', '.join(m['id'] for m in index['models'][:12])}, ...)")
    if args.context == 8192:  # the snapshot's scenario: read what was published
        frame = pl.read_parquet(snapshot / "cheapest_setups.parquet").filter(
            (pl.col("model_id") == entry["id"]) & (pl.col("list") == "on_demand"))
        setups = [setup_from_row(r) for r in frame.to_dicts()]
    else:  # another context: plan it now against the snapshot's offers
        from pipeline.compute.tracked import tracked_models

        tracked = next(t for t in tracked_models(resolve_data_dir(args.data_dir)) if t.entry.id == entry["id"])
        if tracked.arch is None:
            raise CliError(f"{entry['id']}: {tracked.error}")
        offers = pl.read_parquet(snapshot / "offers_current.parquet").to_dicts()
        setups = [s for fmt in ([args.format] if args.format else FIDELITY)
                  for s in cheapest_setups(tracked.arch, fmt, offers, context=args.context, top=args.top,
                                           allocations=ON_DEMAND)]
    if args.format:
        chosen = sorted((s for s in setups if s.format == args.format), key=lambda s: s.rank_key)[: args.top]
    else:  # the most faithful format per rented configuration, 4-bit and above
        chosen = overall(setups, top=args.top)
    rows = [s.model_dump(mode="json", by_alias=False) | {"gpu_id": s.gpu} for s in chosen]
    result = {"model": entry["id"], "snapshot": snapshot.name, "context": args.context, "setups": rows}
    if args.json:
        print(json.dumps(result, indent=1, default=str))
    else:
        print_setups(result)
    return 0


def cmd_export_check(args: argparse.Namespace) -> int:
    from pipeline.cli.run import resolve_data_dir
    from pipeline.exports.publish import check_snapshot, latest

    snapshot = Path(args.snapshot) if args.snapshot else latest(resolve_data_dir(args.data_dir) / "exports")
    if snapshot is None or not snapshot.is_dir():
        raise CliError("no snapshot to check")
    problems = check_snapshot(snapshot)
    for problem in problems:
        print(f"{snapshot.name}: {problem}")
    print(f"{snapshot.name}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline.cli.run import run_main_job

    return run_main_job(data_dir=args.data_dir)


def cmd_rebuild(args: argparse.Namespace) -> int:
    from pipeline.storage.rebuild import rebuild_main  # logic lives with the storage layer (issue #16)

    return rebuild_main(Path(args.data_dir) if args.data_dir else None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vramlab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    size = sub.add_parser("size", help="memory needed by a model: weights per format, KV cache, recurrent state")
    size.add_argument("model", metavar="CONFIG_OR_SPEC", help="config.json path, spec file path or registry id")
    size.add_argument("--quant-config", metavar="FILE", help="ModelOpt hf_quant_config.json for the checkpoint")
    size.add_argument("--safetensors", metavar="FILE",
                      help="model.safetensors.index.json or Hub model-info JSON with a 'safetensors' block")
    size.add_argument("--tensor-parallel", type=_positive, default=1, metavar="N")
    size.add_argument("--contexts", type=_contexts, default=DEFAULT_CONTEXTS, metavar="N,N,...")
    size.add_argument("--json", action="store_true", help="print one JSON object")
    size.set_defaults(func=cmd_size)

    fit = sub.add_parser("fit", help="fewest GPUs for a model: plan, per-GPU memory, speed, launch command")
    fit.add_argument("model", metavar="MODEL", help="registry id or config.json path")
    fit.add_argument("--gpu", required=True, help="GPU id from the catalog (e.g. h100, rtx-4090, mac-m5-max-128)")
    fit.add_argument("--format", required=True, metavar="FMT", help="weight format (bf16, fp8, q4_k_m, ..., native)")
    fit.add_argument("--context", type=_positive, default=8192, metavar="N", help="tokens per request (8192)")
    fit.add_argument("--concurrency", type=_positive, default=1, metavar="K", help="requests at once (1)")
    fit.add_argument("--engine", default=None, metavar="E",
                     help="vllm, sglang, llama.cpp, mlx (default: vLLM on data-centre GPUs, llama.cpp elsewhere)")
    fit.add_argument("--kv-cache-dtype", default="bf16", metavar="T", help="bf16, fp16, fp8, q8_0, q4_0 (bf16)")
    fit.add_argument("--json", action="store_true", help="print one JSON object")
    fit.set_defaults(func=cmd_fit)

    sources = sub.add_parser("sources", help="price sources: list them, parse a recorded payload")
    src_sub = sources.add_subparsers(dest="sources_command", required=True)
    src_list = src_sub.add_parser("list", help="table of sources: auth, configured, last fetch")
    src_list.add_argument("--json", action="store_true")
    src_list.add_argument("--data-dir", default=None)
    src_list.set_defaults(func=cmd_sources_list)
    src_parse = src_sub.add_parser("parse", help="parse raw payload file(s) of a source into offers")
    src_parse.add_argument("source", metavar="SOURCE", help="source name (skypilot-<cloud> takes the catalog CSV)")
    src_parse.add_argument("files", metavar="FILE", nargs="+",
                           help="response body file(s) in request order, or one landed metadata .json")
    src_parse.add_argument("--rates", metavar="FILE", help="ECB eurofxref-daily.xml for non-USD prices")
    src_parse.add_argument("--observed-at", metavar="ISO", help="when the payload was fetched (default: file mtime)")
    src_parse.add_argument("--data-dir", default=None)
    src_parse.add_argument("--json", action="store_true")
    src_parse.set_defaults(func=cmd_sources_parse)

    cheapest = sub.add_parser("cheapest", help="cheapest on-demand setups for a model, from the latest snapshot")
    cheapest.add_argument("model", metavar="MODEL", help="model id or repo")
    cheapest.add_argument("--format", default=None, metavar="F", help="only this weight format")
    cheapest.add_argument("--context", type=_positive, default=8192, metavar="N", help="tokens per request (8192)")
    cheapest.add_argument("--top", type=_positive, default=10, metavar="K")
    cheapest.add_argument("--data-dir", default=None)
    cheapest.add_argument("--json", action="store_true")
    cheapest.set_defaults(func=cmd_cheapest)

    export = sub.add_parser("export", help="published snapshots")
    export.add_argument("--check", action="store_true", required=True,
                        help="verify a snapshot (default: latest) against its manifest")
    export.add_argument("--snapshot", default=None, metavar="DIR")
    export.add_argument("--data-dir", default=None)
    export.set_defaults(func=cmd_export_check)

    run = sub.add_parser("run", help="run the main job once")
    run.add_argument("--data-dir", default=None, help="data directory (default $VRAMLAB_DATA_DIR or ./data)")
    run.set_defaults(func=cmd_run)

    rebuild = sub.add_parser("rebuild", help="re-create the DuckDB file from the raw landing (after damage or loss)")
    rebuild.add_argument("--data-dir", default=None, help="data directory (default $VRAMLAB_DATA_DIR or ./data)")
    rebuild.set_defaults(func=cmd_rebuild)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (CliError, SizingError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"vramlab: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
