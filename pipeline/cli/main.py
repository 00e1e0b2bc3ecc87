"""The vramlab command line. Sub-commands keep their flags and JSON keys stable (other tools call them): keys are
added, never renamed. Every user error is one line on stderr, exit status 2.

Start-up matters for size, fit, gpus and models: this module imports only argparse at top level; each command
imports what it needs (Dagster only for run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pipeline.cli.errors import CliError, discard_stdout

PROG = "vramlab"


# ------------------------------------------------------------------------------------------------ parser

class _Formatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=min(100, _columns()))


def _columns() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 100


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``vramlab: error: ...``, exit 2) instead of a usage block."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix(PROG).strip()
        hint = f"`{self.prog} --help`"
        sys.stderr.write(f"{PROG}: error: {f'{where}: ' if where else ''}{message} (see {hint})\n")
        sys.exit(2)


class _Version(argparse.Action):
    """--version, resolved only when asked (importlib.metadata is not free)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("vramlab")
        except PackageNotFoundError:
            text = "unknown (not installed)"
        print(f"{PROG} {text}")
        sys.exit(0)


def _type(func: Callable[[str], Any], what: str) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return func(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc) or f"bad {what}: {text!r}") from None
    convert.__name__ = what
    return convert


def _context(text: str) -> int:
    from pipeline.cli.resolve import parse_context

    return parse_context(text)


def _contexts(text: str) -> tuple[int, ...]:
    values = tuple(_context(x) for x in text.split(",") if x.strip())
    if not values:
        raise ValueError(f"expected comma-separated token counts like 8192,32k,1M, got {text!r}")
    return values


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise ValueError(f"must be >= 1, got {value}")
    return value


def _price(text: str) -> float:
    try:
        value = float(text.lstrip("$"))
    except ValueError:
        raise ValueError(f"expected a price in USD like 2.5, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"must be > 0, got {text}")
    return value


def _hours(text: str) -> float:
    value = float(text)
    if not 0 < value <= 24:
        raise ValueError(f"must be between 0 and 24 hours, got {text}")
    return value


CONTEXT = _type(_context, "context")
CONTEXTS = _type(_contexts, "contexts")
POSITIVE = _type(_positive, "count")
PRICE = _type(_price, "price")
HOURS = _type(_hours, "hours")
NONNEG = _type(lambda t: float(t) if float(t) >= 0 else (_ for _ in ()).throw(ValueError(f"must be >= 0, got {t}")),
               "number")


def _data_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="data directory (default: $VRAMLAB_DATA_DIR, else data/ in the project)")


def _json_flag(p: argparse.ArgumentParser, what: str = "one JSON object") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} (keys are stable, see docs/cli.md)")


def _examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def cmd_rebuild(args: argparse.Namespace) -> int:
    from pipeline.storage.rebuild import rebuild_main  # logic lives with the storage layer (issue #16)

    return rebuild_main(Path(args.data_dir) if args.data_dir else None)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="How much GPU memory an open-weight LLM needs, on which GPUs, how fast, "
                                           "and where it is cheapest to rent today.",
                    epilog=_examples("vramlab models", "vramlab size qwen3-8b --contexts 8k,32k",
                                     "vramlab fit gpt-oss-20b --gpu rtx-4090", "vramlab gpus H100:8 --max-price 3",
                                     "vramlab cheapest llama-3.1-70b --format fp8", "vramlab run"))
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)

    size = sub.add_parser("size", help="memory a model needs: weights per format, KV cache, totals per context",
                          description="Memory a model needs: weights per format, KV cache per request and context, "
                                      "recurrent state, and totals (weights + BF16 KV cache + state) per context.",
                          epilog=_examples("vramlab size qwen3-8b", "vramlab size Qwen/Qwen3-8B --contexts 32k,128k",
                                           "vramlab size path/to/config.json --json"))
    size.add_argument("model", metavar="MODEL", help="tracked model id or Hub repo id (see `vramlab models`), "
                                                      "bundled registry id, config.json path or spec file")
    size.add_argument("--quant-config", metavar="FILE", help="ModelOpt hf_quant_config.json for the checkpoint")
    size.add_argument("--safetensors", metavar="FILE",
                      help="model.safetensors.index.json or Hub model-info JSON with a 'safetensors' block")
    size.add_argument("--tensor-parallel", type=POSITIVE, default=1, metavar="N",
                      help="GPUs splitting the heads; KV cache figures are per GPU (default 1)")
    size.add_argument("--contexts", type=CONTEXTS, default=None, metavar="N,N,...",
                      help="contexts in tokens: 8192, 32k, 128k, 1M (default 8k,32k,128k,1M)")
    _data_dir_flag(size)
    _json_flag(size)
    size.set_defaults(func=cmd_size)

    fit = sub.add_parser("fit", help="fewest GPUs for a model, why that many, speed, cost, launch command",
                         description="Fewest GPUs of one kind for a model: the parallelism plan, what limits the "
                                     "count, memory per GPU, speed, the cheapest current offer ($/h, $/month, "
                                     "$/1M tokens) and rent-versus-buy. Without --format: every format in one table.",
                         epilog=_examples("vramlab fit gpt-oss-20b --gpu rtx-4090",
                                          "vramlab fit llama-3.1-70b --gpu H100 --format FP8 --context 32k",
                                          "vramlab fit qwen3-8b --gpu h200 --format q4km --hours-per-day 8 --json"))
    fit.add_argument("model", metavar="MODEL", help="model id, Hub repo id, registry id or config path")
    fit.add_argument("--gpu", required=True, metavar="GPU",
                     help="GPU id or alias, any case (H100, h100-sxm, rtx-4090, mac-m5-max-128)")
    fit.add_argument("--format", default=None, metavar="FMT",
                     help="weight format, any case (bf16, FP8, q4km, awq, native; default: every format)")
    fit.add_argument("--context", type=CONTEXT, default=8192, metavar="N", help="tokens per request: 8192, 32k, 1M "
                                                                                  "(default 8192)")
    fit.add_argument("--concurrency", type=POSITIVE, default=1, metavar="K", help="requests at once (default 1)")
    fit.add_argument("--engine", default=None, metavar="E",
                     help="vllm, sglang, llama.cpp, ollama, mlx (default: vLLM on data-centre GPUs, llama.cpp "
                          "elsewhere)")
    fit.add_argument("--kv-cache-dtype", default="bf16", metavar="T", help="bf16, fp16, fp8, q8_0, q4_0 (default bf16)")
    fit.add_argument("--hours-per-day", type=HOURS, default=4.0, metavar="H",
                     help="usage for monthly cost and rent-vs-buy (default 4, as seed 000)")
    fit.add_argument("--usd-per-kwh", type=NONNEG, default=0.15, metavar="X",
                     help="electricity price for rent-vs-buy (default 0.15)")
    _data_dir_flag(fit)
    _json_flag(fit, "one JSON object (a list of them without --format)")
    fit.set_defaults(func=cmd_fit)

    models = sub.add_parser("models", help="tracked models: id, repo, parameters, max context, native format",
                            description="The models vramlab tracks (pipeline/data/watchlist.json) and the bundled "
                                        "registry, with what each can be called on the command line.",
                            epilog=_examples("vramlab models", "vramlab models --json"))
    _data_dir_flag(models)
    _json_flag(models, "a JSON array")
    models.set_defaults(func=cmd_models)

    gpus = sub.add_parser("gpus", help="current GPU offers, cheapest first (like sky show-gpus)",
                          description="Current GPU offers from the latest snapshot, cheapest $/GPU-hour first. "
                                      "Without GPU: the cheapest offer per GPU kind.",
                          epilog=_examples("vramlab gpus", "vramlab gpus H100", "vramlab gpus h200:8 --provider lambda",
                                           "vramlab gpus A100 --region us --max-price 2 --spot",
                                           "vramlab gpus --catalog"))
    gpus.add_argument("gpu", nargs="?", default=None, metavar="GPU[:N]",
                      help="GPU id or alias, optionally with GPUs per instance (H100:8)")
    gpus.add_argument("--provider", default=None, metavar="P", help="only this provider (any case)")
    gpus.add_argument("--region", default=None, metavar="R", help="only regions starting with R (us, europe-west4)")
    gpus.add_argument("--max-price", type=PRICE, default=None, metavar="USD", help="at most this $/GPU-hour")
    gpus.add_argument("--spot", action="store_true", help="spot and marketplace offers instead of on-demand")
    gpus.add_argument("--all", action="store_true", help="every matching offer (default: 25 rows)")
    gpus.add_argument("--catalog", action="store_true", help="the GPU catalog (ids, aliases, memory) instead of offers")
    _data_dir_flag(gpus)
    _json_flag(gpus, "a JSON array")
    gpus.set_defaults(func=cmd_gpus)

    cheapest = sub.add_parser("cheapest", help="cheapest rentable setups for a model, from the latest snapshot",
                              description="Cheapest rentable deployments of a model from the latest snapshot: whole "
                                          "instances, parallelism plan, engine, format, $/h, $/month, $/1M tokens.",
                              epilog=_examples("vramlab cheapest qwen3-8b", "vramlab cheapest llama-3.1-70b --format fp8",
                                               "vramlab cheapest deepseek-v3 --single-machine --provider lambda",
                                               "vramlab cheapest gpt-oss-20b --context 32k --spot --json"))
    cheapest.add_argument("model", metavar="MODEL", help="tracked model id or Hub repo id (see `vramlab models`)")
    cheapest.add_argument("--format", default=None, metavar="FMT",
                          help="only this weight format, any case (default: the most faithful per setup)")
    cheapest.add_argument("--context", type=CONTEXT, default=8192, metavar="N",
                          help="tokens per request: 8192, 32k, 1M (default 8192, as published)")
    cheapest.add_argument("--top", type=POSITIVE, default=10, metavar="K", help="rows to show (default 10)")
    cheapest.add_argument("--provider", default=None, metavar="P", help="only this provider (any case)")
    cheapest.add_argument("--region", default=None, metavar="R", help="only regions starting with R")
    cheapest.add_argument("--max-price", type=PRICE, default=None, metavar="USD", help="at most this $/hour in all")
    cheapest.add_argument("--spot", action="store_true", help="spot and marketplace offers instead of on-demand")
    cheapest.add_argument("--single-machine", action="store_true", help="only setups on one instance")
    _data_dir_flag(cheapest)
    _json_flag(cheapest)
    cheapest.set_defaults(func=cmd_cheapest)

    sources = sub.add_parser("sources", help="price sources: list them, parse a recorded payload",
                             description="Price sources: list them with their last outcome, or parse a payload.",
                             epilog=_examples("vramlab sources list",
                                              "vramlab sources parse lambda response.json --json"))
    src_sub = sources.add_subparsers(dest="sources_command", required=True, metavar="ACTION", parser_class=Parser)
    src_list = src_sub.add_parser("list", help="table of sources: auth, configured, last fetch",
                                  description="One row per source, sorted by name, with the last fetch outcome.")
    _json_flag(src_list, "a JSON array")
    _data_dir_flag(src_list)
    src_list.set_defaults(func=cmd_sources_list)
    src_parse = src_sub.add_parser("parse", help="parse raw payload file(s) of a source into offers",
                                   description="Parse recorded response bodies of a source into offers.",
                                   epilog=_examples("vramlab sources parse skypilot-verda vms.csv --json"))
    src_parse.add_argument("source", metavar="SOURCE", help="source name (skypilot-<cloud> takes the catalog CSV)")
    src_parse.add_argument("files", metavar="FILE", nargs="+",
                           help="response body file(s) in request order, or one landed metadata .json")
    src_parse.add_argument("--rates", metavar="FILE", help="ECB eurofxref-daily.xml for non-USD prices")
    src_parse.add_argument("--observed-at", metavar="ISO", help="when the payload was fetched (default: file mtime)")
    _data_dir_flag(src_parse)
    _json_flag(src_parse, "a JSON array of offers")
    src_parse.set_defaults(func=cmd_sources_parse)

    export = sub.add_parser("export", help="verify a published snapshot against its manifest",
                            description="Verify a snapshot (default: latest) against its manifest.",
                            epilog=_examples("vramlab export --check"))
    export.add_argument("--check", action="store_true", required=True,
                        help="verify a snapshot (default: latest) against its manifest")
    export.add_argument("--snapshot", default=None, metavar="DIR", help="snapshot folder (default: exports/latest)")
    _data_dir_flag(export)
    export.set_defaults(func=cmd_export_check)

    run = sub.add_parser("run", help="run the whole pipeline once, recorded in the Dagster instance",
                         description="Materialize the whole asset graph once as job vramlab_refresh, recorded in "
                                     "the persistent Dagster instance ($DAGSTER_HOME, else .dagster_home/ in the "
                                     "project) so `dagster-webserver -w workspace.yaml` shows it.",
                         epilog=_examples("vramlab run", "VRAMLAB_LIVE=1 vramlab run",
                                          "vramlab run --data-dir /tmp/vramlab --ephemeral"))
    _data_dir_flag(run)
    run.add_argument("--ephemeral", action="store_true",
                     help="record nothing: use a throw-away Dagster instance")
    run.add_argument("--quiet", action="store_true", help="no progress display, only the summary")
    run.add_argument("--force", action="store_true",
                     help="start even if the instance lists another refresh as running (its process is gone)")
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="offline replay series (pipeline/replay/prices/series.json)",
                            epilog=_examples("vramlab replay backfill", "vramlab replay backfill --no-run"))
    replay_sub = replay.add_subparsers(dest="replay_command", required=True)
    backfill = replay_sub.add_parser("backfill", help="build the price history from the series (idempotent), then "
                                                      "run the main job on the current recordings",
                                      epilog=_examples("vramlab replay backfill",
                                                       "vramlab replay backfill --no-run --data-dir /tmp/vl"))
    _data_dir_flag(backfill)
    backfill.add_argument("--no-run", action="store_true", help="only the history steps, no main job")
    backfill.set_defaults(func=cmd_replay_backfill)
    rebuild = sub.add_parser("rebuild", help="re-create the DuckDB file from the raw landing (after damage or loss)",
                             epilog=_examples("vramlab rebuild", "vramlab rebuild --data-dir /srv/vramlab/data"))
    rebuild.add_argument("--data-dir", default=None, help="data directory (default $VRAMLAB_DATA_DIR or ./data)")
    rebuild.set_defaults(func=cmd_rebuild)
    return parser


# ------------------------------------------------------------------------------------------------ commands

def _data_dir(args: argparse.Namespace) -> Path:
    """``--data-dir``, else ``$VRAMLAB_DATA_DIR``, else ``data/`` (as ``pipeline.cli.run.resolve_data_dir``, without
    importing the run module and its progress display)."""
    from pipeline.settings import settings

    override = getattr(args, "data_dir", None)
    return Path(override) if override else settings().data_dir


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


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=1, default=str))


def cmd_size(args: argparse.Namespace) -> int:
    from pipeline.cli.models import load_ref
    from pipeline.cli.resolve import resolve_model
    from sizing_core import size_model
    from sizing_core.parameters import checkpoint_facts
    from sizing_core.report import DEFAULT_CONTEXTS

    quant = _read_json(args.quant_config, "quant config") if args.quant_config else None
    arch = load_ref(resolve_model(args.model, _data_dir(args)), quant_config=quant)
    checkpoint = None
    if args.safetensors:
        try:
            checkpoint = checkpoint_facts(_read_json(args.safetensors, "safetensors metadata"), args.safetensors)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    contexts = args.contexts or DEFAULT_CONTEXTS
    report = size_model(arch, args.tensor_parallel, contexts, checkpoint)
    one_copy = report if args.tensor_parallel == 1 else size_model(arch, 1, contexts, checkpoint)
    totals = size_totals(one_copy)
    for note in report.notes:  # generic rule / family defaults / unknown quantization: warnings, not errors
        print(f"warning: {report.model}: {note}", file=sys.stderr)
    if args.json:
        _print_json(report.model_dump(mode="json") | {"totalsGiB": totals})
    else:
        from pipeline.cli.tables import print_size_report  # rich only for tables

        print_size_report(report, totals)
    return 0


def size_totals(report: Any) -> list[dict[str, Any]]:  # noqa: ANN401 - a SizingReport
    """One copy of the model and one request at each context: weights + BF16 KV cache + recurrent state (GiB)."""
    rows = []
    for kv in report.kv_cache_gib_per_request:
        rows.append({"context": kv.context, "kvCacheDtype": "bf16", "withinMaxContext": kv.within_max_context,
                     "byFormat": {fmt: round(w + kv.bf16 + report.recurrent_state_gib_per_request, 2)
                                  for fmt, w in report.weights_gib.items()}})
    return rows


def cmd_fit(args: argparse.Namespace) -> int:
    from pipeline.cli.costs import fit_cost
    from pipeline.cli.fit import ALL_FORMATS, fit_result
    from pipeline.cli.models import load_ref, model_repo
    from pipeline.cli.offers import current_offers, latest_snapshot
    from pipeline.cli.resolve import resolve_format, resolve_gpu, resolve_model
    from sizing_core.gpus import get_gpu

    gpu = get_gpu(resolve_gpu(args.gpu))
    fmt = resolve_format(args.format) if args.format else None
    data_dir = _data_dir(args)
    ref = resolve_model(args.model, data_dir)
    arch = load_ref(ref)
    repo = model_repo(ref, arch)
    snapshot = latest_snapshot(data_dir)
    offers: dict[str, list[dict[str, Any]]] = {}  # the snapshot's offers of this GPU, read once for every format

    def answer(f: str, substitute: bool = True) -> dict[str, Any]:
        result = fit_result(args.model, gpu.id, f, args.context, args.concurrency, args.engine, args.kv_cache_dtype,
                            arch=arch, repo=repo, substitute=substitute)
        if result["fits"] and snapshot is not None and gpu.id not in offers:
            offers[gpu.id] = current_offers(snapshot, gpu=gpu.id)
        return result | {"cost": fit_cost(arch, result, gpu, snapshot, args.hours_per_day, args.usd_per_kwh,
                                          offers=offers.get(gpu.id))}

    if fmt is None:
        rows = [answer(f, substitute=False) for f in ALL_FORMATS]  # every format has its own row
        if args.json:
            _print_json(rows)
        else:
            from pipeline.cli.tables import print_fit_all

            print_fit_all(arch.model, gpu, rows, snapshot.id if snapshot else None)
        return 0
    result = answer(fmt)
    if args.json:
        _print_json(result)
    else:
        from pipeline.cli.tables import print_fit

        print_fit(result)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from pipeline.cli.catalog import model_rows
    from pipeline.cli.tables import print_models

    rows = model_rows(_data_dir(args))
    if args.json:
        _print_json(rows)
    else:
        print_models(rows)
    return 0


def cmd_gpus(args: argparse.Namespace) -> int:
    from pipeline.cli.offers import current_offers, latest_snapshot, providers
    from pipeline.cli.resolve import did_you_mean, resolve_gpu_count

    if args.catalog:
        from pipeline.cli.catalog import gpu_rows

        rows = gpu_rows()
        if args.json:
            _print_json(rows)
        else:
            from pipeline.cli.tables import print_gpu_catalog

            print_gpu_catalog(rows)
        return 0
    gpu, count = resolve_gpu_count(args.gpu) if args.gpu else (None, None)
    snapshot = latest_snapshot(_data_dir(args))
    if snapshot is None:
        raise CliError("no published snapshot yet: run `vramlab run` first")
    if args.provider:
        known = providers(snapshot)
        if args.provider.lower() not in (p.lower() for p in known):
            raise CliError(f"no provider {args.provider!r} in snapshot {snapshot.id}{did_you_mean(args.provider, known)}")
    offers = current_offers(snapshot, gpu=gpu, count=count, provider=args.provider, region=args.region,
                            max_price=args.max_price, spot=args.spot)
    if gpu is None and not args.all:  # the cheapest offer per GPU kind
        seen: dict[str, dict[str, Any]] = {}
        for offer in offers:
            seen.setdefault(offer["gpu_id"], offer)
        offers = list(seen.values())
    rows = [_offer_row(o) for o in offers]
    if args.json:
        _print_json(rows)
    else:
        from pipeline.cli.tables import print_offers_table

        print_offers_table(rows, snapshot.id, per_kind=gpu is None and not args.all,
                           limit=None if args.all else 25, spot=args.spot)
    return 0


def _offer_row(o: dict[str, Any]) -> dict[str, Any]:
    from pipeline.cli.resolve import catalog_memory_gb

    return {"gpu_id": o["gpu_id"], "gpu_name": o["gpu_name"], "gpu_count": o["gpu_count"],
            "gpu_memory_gb": o["gpu_memory_gb"], "catalog_memory_gb": catalog_memory_gb().get(o["gpu_id"]),
            "vcpus": o["vcpus"], "ram_gb": o["ram_gb"],
            "price_per_hour_usd": o["price_per_hour_usd"], "price_per_gpu_hour_usd": o["price_per_gpu_hour_usd"],
            "provider": o["provider"], "source": o["source"], "instance_type": o["instance_type"],
            "region": o["region"], "allocation": o["allocation"], "currency": o["currency"],
            "verified_at": o["verified_at"].isoformat() if hasattr(o["verified_at"], "isoformat") else o["verified_at"]}


def cmd_cheapest(args: argparse.Namespace) -> int:
    from pipeline.cli.cheapest import cheapest_result
    from pipeline.cli.tables import print_setups

    result = cheapest_result(args, _data_dir(args))
    if args.json:
        _print_json(result)
    else:
        print_setups(result)
    return 0


def cmd_sources_list(args: argparse.Namespace) -> int:
    from pipeline.cli.tables import print_sources
    from pipeline.ingest.prices import live_mode
    from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
    from pipeline.sources.landing import read_log

    last = {}
    for entry in read_log(_data_dir(args)):
        last[entry.source] = entry
    rows = []
    for source in sorted([*PRICE_SOURCES.values(), CURRENCY_SOURCE], key=lambda s: s.name):
        entry = last.get(source.name)
        rows.append({"source": source.name, "provider": source.provider, "auth": source.auth,
                     "configured": source.configured(), "unit": source.unit, "endpoint": source.endpoint,
                     "last_fetch": entry.started_at.isoformat() if entry else None,
                     "last_outcome": entry.outcome if entry else None})
    if args.json:
        _print_json(rows)
    else:
        print_sources(rows, live=live_mode())
    return 0


def cmd_sources_parse(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

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
        try:
            observed = datetime.fromisoformat(args.observed_at) if args.observed_at else \
                datetime.fromtimestamp(paths[0].stat().st_mtime, UTC)
        except ValueError:
            raise CliError(f"--observed-at takes an ISO time like 2026-11-05T00:00:00+00:00, "
                           f"got {args.observed_at!r}") from None
        parts = tuple(RawPart(url=f"file://{p.resolve()}", status=200, body=p.read_bytes()) for p in paths)
        raw = RawPayload(source=source.name, fetched_at=observed, parts=parts)
    rates = parse_ecb(Path(args.rates).read_bytes()) if args.rates else latest_rates(_data_dir(args))
    try:
        result = source.parse(raw, rates)
    except Exception as exc:  # noqa: BLE001 - any parser failure is one clear line
        raise CliError(f"{source.name}: cannot parse {', '.join(map(str, paths))}: {exc}") from None
    offers = [o.model_dump(mode="json") for o in result.offers]
    if args.json:
        _print_json(offers)
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


def cmd_export_check(args: argparse.Namespace) -> int:
    from pipeline.exports.publish import check_snapshot, latest

    snapshot = Path(args.snapshot) if args.snapshot else latest(_data_dir(args) / "exports")
    if snapshot is None or not snapshot.is_dir():
        raise CliError("no snapshot to check")
    problems = check_snapshot(snapshot)
    for problem in problems:
        print(f"{snapshot.name}: {problem}")
    print(f"{snapshot.name}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline.cli.run import run_main_job

    return run_main_job(data_dir=args.data_dir, ephemeral=args.ephemeral, quiet=args.quiet, force=args.force)


def cmd_replay_backfill(args: argparse.Namespace) -> int:
    """Replay the series' earlier steps through the price assets, then (unless --no-run) the main job."""
    from pipeline.cli.run import run_main_job
    from pipeline.ingest.replay_series import backfill_history

    data_dir = _data_dir(args)
    db = Path(os.environ.get("VRAMLAB_DB") or data_dir / "vramlab.duckdb")
    for step in backfill_history(data_dir, db):
        print(f"{step.step} (as of {step.as_of:%Y-%m-%d %H:%M}, {', '.join(step.sources)}): {step.status}")
    return 0 if args.no_run else run_main_job(data_dir=str(data_dir))


# ------------------------------------------------------------------------------------------------ entry point

def _user_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [CliError, KeyError]
    if "sizing_core" in sys.modules:  # only when a command loaded it: keeps start-up light
        from sizing_core import SizingError

        errors.append(SizingError)
    return tuple(errors)


#: commands that answer from the sizing library and the latest snapshot: kept fast (docs/cli.md, start-up)
QUICK_COMMANDS = ("size", "fit", "gpus", "models", "cheapest")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        func: Callable[[argparse.Namespace], int] = args.func
        if args.command in QUICK_COMMANDS:
            # vramlab uses no pydantic plugin; skipping their discovery (pydantic reads the entry points of every
            # installed distribution on the first model it builds) saves ~15 ms per answer. A value the user set
            # is kept; `run` (Dagster) is left alone.
            os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        try:
            code = func(args)
        except Exception as exc:
            if not isinstance(exc, _user_errors()):
                raise
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            print(f"{PROG}: error: {message}", file=sys.stderr)
            return 2
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # the reader went away (`vramlab gpus --json | head`): no traceback, and no second error at exit
        discard_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
