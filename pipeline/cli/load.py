"""The serving load a command's flags ask for: ``--rate R`` (Poisson arrivals) or ``--concurrency K`` (K clients in
a closed loop) with ``--input-tokens I --output-tokens O``, read and checked once for ``fit``, ``compare``,
``models --fits`` and ``cheapest`` (``pipeline/cli/args.py::load_flags`` declares the flags)."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.errors import CliError


def load_of(args: argparse.Namespace, clients_default: int | None = None) -> Any:  # noqa: ANN401 - a Workload or None
    """The load the flags ask for, or None: no lengths, so ``--concurrency`` keeps its meaning of requests of
    ``--context`` tokens for memory. ``clients_default``: the clients the lengths alone stand for (``cheapest``:
    1, its default request count); without one the lengths need ``--rate`` or ``--concurrency``. Every mistake is
    one line (:class:`CliError`): both load kinds at once, lengths without each other or without a load, a service
    level or ``--cpu-offload-gb`` without a load, a request longer than ``--context``."""
    rate, clients = args.rate, getattr(args, "concurrency", None)
    if rate is not None and clients is not None:
        raise CliError("--rate and --concurrency are exclusive: a load is a request rate (open loop) or a number of "
                       "clients (closed loop)")
    lengths = (args.input_tokens, args.output_tokens)
    if rate is not None and None in lengths:
        raise CliError("--rate needs --input-tokens and --output-tokens (the mean prompt and output of a request)")
    if lengths != (None, None) and None in lengths:
        raise CliError("--input-tokens and --output-tokens go together")
    if None in lengths:
        if getattr(args, "cpu_offload_gb", None) is not None:
            raise CliError("--cpu-offload-gb counts at a load: give --rate or --concurrency with --input-tokens and "
                           "--output-tokens")
        if getattr(args, "ttft_p90", None) or getattr(args, "min_tokens_per_s", None) or getattr(args, "no_slo",
                                                                                                   False):
            raise CliError("a service level is asked at a load: give --rate R or --concurrency K with "
                           "--input-tokens and --output-tokens")
        return None
    if rate is None:
        clients = clients if clients is not None else clients_default
        if clients is None:
            raise CliError("--input-tokens/--output-tokens describe a load: give --rate R or --concurrency K too")
    from sizing_core.serving import Workload

    load = Workload(input_tokens=args.input_tokens, output_tokens=args.output_tokens, rate=rate,
                    concurrency=clients if rate is None else None)
    why = load.too_long_for(args.context) if getattr(args, "context", None) else None
    if why:
        raise CliError(why)
    return load
