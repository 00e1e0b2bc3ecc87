"""What every command's parser shares: one-line errors, value types, common flags, and small output helpers.

Start-up matters for size, fit, gpus and models: this module imports only the standard library.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pipeline.cli.errors import CliError

PROG = "vramlab"


class Formatter(argparse.RawDescriptionHelpFormatter):
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
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix(PROG).strip()
        hint = f"`{self.prog} --help`"
        sys.stderr.write(f"{PROG}: error: {f'{where}: ' if where else ''}{message} (see {hint})\n")
        sys.exit(2)


class Version(argparse.Action):
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


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a fraction like 0.9, got {text!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"must be above 0 and at most 1, got {text}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected requests per second like 4 or 0.5, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a positive number, got {text}")
    return value


def _amount(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a number like 1500 or 12.5, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"must be a positive number, got {text}")
    return value


CONTEXT = _type(_context, "context")
AMOUNT = _type(_amount, "number")
RATE = _type(_rate, "rate")
FRACTION = _type(_fraction, "fraction")
CONTEXTS = _type(_contexts, "contexts")
POSITIVE = _type(_positive, "count")
PRICE = _type(_price, "price")
HOURS = _type(_hours, "hours")
NONNEG = _type(lambda t: float(t) if float(t) >= 0 else (_ for _ in ()).throw(ValueError(f"must be >= 0, got {t}")),
               "number")


def data_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="data directory (default: $VRAMLAB_DATA_DIR, else data/ in the project; installed: "
                        "~/.local/share/vramlab)")


def rope_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rope-scaling", default=None, metavar="TYPE:F[:ORIG]",
                   help="rope scaling turned on at load time, as vLLM's --rope-scaling and llama.cpp's --rope-scale "
                        "do: yarn, dynamic or linear by factor F over ORIG positions (default: max_position_"
                        "embeddings), e.g. yarn:4:32k, Qwen3's documented way to 131,072 tokens")


def load_flags(p: argparse.ArgumentParser, rate_help: str) -> None:
    """The load as its own input, the same on every command that answers at one: ``--rate R`` (with
    ``--concurrency K``, which each command declares with its own default, the exclusive alternative) and the
    request's mean lengths."""
    p.add_argument("--rate", type=RATE, default=None, metavar="R",
                   help="with --input-tokens/--output-tokens: requests per second (Poisson arrivals); " + rate_help)
    p.add_argument("--input-tokens", type=POSITIVE, default=None, metavar="I",
                   help="mean prompt tokens of a request at the load (--rate or --concurrency)")
    p.add_argument("--output-tokens", type=POSITIVE, default=None, metavar="O",
                   help="mean output tokens of a request at the load (--rate or --concurrency)")


def answer_flags(p: argparse.ArgumentParser) -> None:
    """The question a model-on-a-GPU answer takes, the same on ``models --fits`` and ``compare`` as on ``fit``:
    the format, the request shape or a load, the engine and the KV cache type."""
    p.add_argument("--format", default=None, metavar="FMT",
                   help="only this weight format, any case (default: the most faithful that fits, 4-bit and above)")
    p.add_argument("--context", type=CONTEXT, default=8192, metavar="N",
                   help="tokens per request: 8192, 32k, 1M (default 8192)")
    p.add_argument("--concurrency", type=POSITIVE, default=None, metavar="K",
                   help="requests of --context tokens at once (default 1); with --input-tokens/--output-tokens: K "
                        "clients in a closed loop")
    load_flags(p, "adds the serving figures at that load (TTFT, ITL, saturation, $/1M output tokens)")
    p.add_argument("--engine", default=None, metavar="E",
                   help="vllm, sglang, llama.cpp, ollama, mlx (default: vLLM on data-centre GPUs, llama.cpp "
                        "elsewhere)")
    p.add_argument("--kv-cache-dtype", default="bf16", metavar="T", help="bf16, fp16, fp8, q8_0, q4_0 (default bf16)")


def context_json(limit: Any) -> dict[str, Any]:  # noqa: ANN401 - a sizing_core.context.ContextLimit
    """``contextLimit`` of size and fit --json."""
    return {"maxContext": limit.max_context, "ropeType": limit.rope_type, "factor": limit.factor,
            "originalMaxContext": limit.original, "extendedMaxContext": limit.extended, "source": limit.source,
            "method": limit.method}


def json_flag(p: argparse.ArgumentParser, what: str = "one JSON object") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} (keys are stable, see docs/cli.md)")


def examples(*lines: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def data_dir_of(args: argparse.Namespace) -> Path:
    """``--data-dir``, else ``$VRAMLAB_DATA_DIR``, else ``data/`` (as ``pipeline.ops.run.resolve_data_dir``, without
    importing the run module and its progress display)."""
    from pipeline.settings import settings

    override = getattr(args, "data_dir", None)
    return Path(override) if override else settings().data_dir


def read_json(path: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CliError(f"{what} not found: {path}") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"{what} {path} is not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CliError(f"{what} {path} must hold a JSON object")
    return data


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=1, default=str))
