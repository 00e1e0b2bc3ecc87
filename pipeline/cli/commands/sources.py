"""vramlab sources list / parse: the price sources, and parsing a recorded payload."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pipeline.cli.args import Parser, data_dir_flag, data_dir_of, examples, json_flag, print_json
from pipeline.cli.errors import CliError
from pipeline.text import iso_utc


def register(sub: argparse._SubParsersAction) -> None:
    sources = sub.add_parser("sources", help="price sources: list them, parse a recorded payload",
                             description="Price sources: list them with their last outcome, or parse a payload.",
                             epilog=examples("vramlab sources list",
                                              "vramlab sources parse lambda response.json --json"))
    src_sub = sources.add_subparsers(dest="sources_command", required=True, metavar="ACTION", parser_class=Parser)
    src_list = src_sub.add_parser("list", help="table of sources: auth, configured, last fetch",
                                  description="One row per source, sorted by name, with the last fetch outcome.",
                                  epilog=examples("vramlab sources list", "vramlab sources list --json"))
    json_flag(src_list, "a JSON array")
    data_dir_flag(src_list)
    src_list.set_defaults(func=cmd_sources_list)
    src_parse = src_sub.add_parser("parse", help="parse raw payload file(s) of a source into offers",
                                   description="Parse recorded response bodies of a source into offers.",
                                   epilog=examples("vramlab sources parse skypilot-verda vms.csv --json"))
    src_parse.add_argument("source", metavar="SOURCE", help="source name (skypilot-<cloud> takes the catalog CSV)")
    src_parse.add_argument("files", metavar="FILE", nargs="+",
                           help="response body file(s) in request order, or one landed metadata .json")
    src_parse.add_argument("--rates", metavar="FILE", help="ECB eurofxref-daily.xml for non-USD prices")
    src_parse.add_argument("--observed-at", metavar="ISO", help="when the payload was fetched (default: file mtime)")
    data_dir_flag(src_parse)
    json_flag(src_parse, "a JSON array of offers")
    src_parse.set_defaults(func=cmd_sources_parse)


def cmd_sources_list(args: argparse.Namespace) -> int:
    from pipeline.cli.tables import print_sources
    from pipeline.ingest.prices import live_mode
    from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
    from pipeline.sources.landing import read_log

    last = {}
    for entry in read_log(data_dir_of(args)):
        last[entry.source] = entry
    rows = []
    for source in sorted([*PRICE_SOURCES.values(), CURRENCY_SOURCE], key=lambda s: s.name):
        entry = last.get(source.name)
        rows.append({"source": source.name, "provider": source.provider, "auth": source.auth,
                     "configured": source.configured(), "unit": source.unit, "endpoint": source.endpoint,
                     "last_fetch": iso_utc(entry.started_at) if entry else None,
                     "last_outcome": entry.outcome if entry else None})
    if args.json:
        print_json(rows)
    else:
        print_sources(rows, live=live_mode())
    return 0


def cmd_sources_parse(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from pipeline.ingest.prices import latest_rates
    from pipeline.sources import get_source
    from pipeline.sources.base import RawPart, RawPayload
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
    rates = _rates_file(args.rates) if args.rates else latest_rates(data_dir_of(args))
    try:
        result = source.parse(raw, rates)
    except Exception as exc:  # noqa: BLE001 - any parser failure is one clear line
        raise CliError(f"{source.name}: cannot parse {', '.join(map(str, paths))}: {exc}") from None
    offers = [o.model_dump(mode="json") for o in result.offers]
    if args.json:
        print_json(offers)
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


def _rates_file(path: str):  # type: ignore[no-untyped-def] - an FxRates, imported on use
    """``--rates FILE`` read and parsed, or one line saying why not (missing, unreadable, not the ECB's XML)."""
    from pipeline.sources.fx import FxError, parse_ecb

    try:
        return parse_ecb(Path(path).read_bytes())
    except FileNotFoundError:
        raise CliError(f"--rates file not found: {path}") from None
    except OSError as exc:
        raise CliError(f"--rates file {path} is not readable ({exc.strerror or exc})") from None
    except FxError as exc:
        raise CliError(f"--rates file {path}: {exc}") from None
