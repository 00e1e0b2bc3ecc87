"""vramlab compare: one model on several GPUs side by side, at one request shape or load."""

from __future__ import annotations

import argparse

from pipeline.cli.args import answer_flags, data_dir_flag, data_dir_of, examples, json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser("compare", help="one model on several GPUs side by side: memory, plan, speed, price",
                             description="One model on each --gpu, side by side at one request shape or load: "
                                         "format, GPUs and plan, memory per GPU, speed (at a load: TTFT, tokens/s "
                                         "per user, headroom), the cheapest current on-demand offer running the "
                                         "plan ($/h, $/1M output tokens, verified date). Each GPU is answered as "
                                         "`fit` answers it: the fewest GPUs (GPU:N: exactly N), in --format or "
                                         "else the most faithful format that fits.",
                             epilog=examples("vramlab compare llama-3.1-70b --gpu h100 --gpu a100-80gb-sxm --gpu l40s",
                                             "vramlab compare qwen3-8b --gpu h100 --gpu rtx-4090 --gpu l4 --rate 2 "
                                             "--input-tokens 1000 --output-tokens 200",
                                             "vramlab compare openai/gpt-oss-120b --gpu h100:2 --gpu rtx-4090:4 "
                                             "--format native --json"))
    compare.add_argument("model", metavar="MODEL", help="model id, Hub repo id, registry id or config path")
    compare.add_argument("--gpu", action="append", required=True, metavar="GPU[:N]",
                         help="a GPU to compare on (id or alias, any case; :N exactly N of them); repeat for each")
    answer_flags(compare)
    data_dir_flag(compare)
    json_flag(compare)
    compare.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from pipeline.cli.commands.fit import question_of
    from pipeline.cli.fit import above_context, planned_arch
    from pipeline.cli.models import context_of, load_ref, model_repo
    from pipeline.cli.on_gpu import compare_on, load_json
    from pipeline.cli.resolve import resolve_format, resolve_gpu, resolve_model, split_count
    from pipeline.exports.snapshot_offers import latest_snapshot
    from sizing_core.gpus import get_gpu

    asked = []
    for value in args.gpu:
        name, count = split_count(value)
        asked.append((get_gpu(resolve_gpu(name)), count))
    fmt = resolve_format(args.format) if args.format else None
    question = question_of(args)
    data_dir = data_dir_of(args)
    ref = resolve_model(args.model, data_dir)
    arch = load_ref(ref)
    repo = model_repo(ref, arch)
    snapshot = latest_snapshot(data_dir)
    limit = context_of(ref, arch, None)
    above = not limit.allows(question.context)  # answered as `fit` answers it: the memory it would take, and said
    warnings = [above_context(arch, limit, question.context)] if above else []
    result = {"model": arch.model, "id": ref.id, "repo": repo, "aboveMaxContext": above, "warnings": warnings, "modelSource": ref.origin, "context": question.context,
              "concurrency": question.asked_concurrency, "load": load_json(question), "engine": question.engine,
              "format": fmt, "kvCacheDtype": question.kv_cache_dtype, "snapshot": snapshot.id if snapshot else None,
              "gpus": compare_on(planned_arch(arch, question.context), repo, asked, question, fmt,
                                 snapshot)}
    if args.json:
        print_json(result)
    else:
        from pipeline.cli.tables import print_compare, say

        for warning in warnings:
            say(f"warning: {warning}")
        print_compare(result)
    return 0
