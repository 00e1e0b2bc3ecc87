"""vramlab size: memory a model needs (weights per format, KV cache per context, totals)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pipeline.cli.args import (
    CONTEXTS,
    POSITIVE,
    context_json,
    data_dir_flag,
    data_dir_of,
    examples,
    json_flag,
    print_json,
    read_json,
    rope_flag,
)
from pipeline.cli.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    size = sub.add_parser("size", help="memory a model needs: weights per format, KV cache, totals per context",
                          description="Memory a model needs: weights per format, KV cache per request and context, "
                                      "recurrent state, and totals (weights + BF16 KV cache + state) per context.",
                          epilog=examples("vramlab size qwen3-8b", "vramlab size Qwen/Qwen3-8B --contexts 32k,128k",
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
    rope_flag(size)
    data_dir_flag(size)
    json_flag(size)
    size.set_defaults(func=cmd_size)


def cmd_size(args: argparse.Namespace) -> int:
    from pipeline.cli.models import context_of, load_ref
    from pipeline.cli.resolve import resolve_model
    from sizing_core import size_model
    from sizing_core.memory_report import DEFAULT_CONTEXTS
    from sizing_core.parameters import checkpoint_facts

    quant = read_json(args.quant_config, "quant config") if args.quant_config else None
    ref = resolve_model(args.model, data_dir_of(args))
    arch = load_ref(ref, quant_config=quant)
    if args.tensor_parallel > 1:
        from sizing_core.placement.search import valid_tensor_parallel

        if not valid_tensor_parallel(arch, args.tensor_parallel):
            raise CliError(f"--tensor-parallel {args.tensor_parallel}: {arch.model} cannot be split that way (its "
                           "attention heads, KV heads or experts do not divide by it); try "
                           + ", ".join(str(t) for t in (2, 4, 8) if valid_tensor_parallel(arch, t)))
    limit = context_of(ref, arch, args.rope_scaling)
    checkpoint = None
    if args.safetensors:
        try:
            checkpoint = checkpoint_facts(read_json(args.safetensors, "safetensors metadata"), args.safetensors)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    contexts = args.contexts or DEFAULT_CONTEXTS
    report = size_model(arch, args.tensor_parallel, contexts, checkpoint)
    one_copy = report if args.tensor_parallel == 1 else size_model(arch, 1, contexts, checkpoint)
    totals = size_totals(one_copy)
    for note in report.notes:  # generic rule / family defaults / unknown quantization: warnings, not errors
        print(f"warning: {report.model}: {note}", file=sys.stderr)
    data = report.model_dump(mode="json")
    for row in [*data["kvCacheGiBPerRequest"], *totals]:  # added keys: within the rope-scaled maximum too
        row["withinExtendedMaxContext"] = limit.allows(row["context"])
    if args.json:
        print_json(data | {"totalsGiB": totals, "contextLimit": context_json(limit)})
    else:
        from pipeline.cli.tables import print_size_report  # rich only for tables

        print_size_report(report, totals, limit)
    return 0


def size_totals(report: Any) -> list[dict[str, Any]]:  # noqa: ANN401 - a SizingReport
    """One copy of the model and one request at each context: weights + BF16 KV cache + recurrent state (GiB);
    null for a format whose weights are unknown (a native format we cannot read never blocks the others)."""
    rows = []
    for kv in report.kv_cache_gib_per_request:
        rows.append({"context": kv.context, "kvCacheDtype": "bf16", "withinMaxContext": kv.within_max_context,
                     "byFormat": {fmt: None if w is None else round(w + kv.bf16 + report.recurrent_state_gib_per_request, 2)
                                  for fmt, w in report.weights_gib.items()}})
    return rows
