"""vramlab fit: fewest GPUs of one kind for a model, with speed, cost and launch command."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.args import (
    CONTEXT,
    FRACTION,
    HOURS,
    NONNEG,
    POSITIVE,
    data_dir_flag,
    data_dir_of,
    examples,
    json_flag,
    print_json,
)


def register(sub: argparse._SubParsersAction) -> None:
    fit = sub.add_parser("fit", help="fewest GPUs for a model, why that many, speed, cost, launch command",
                         description="Fewest GPUs of one kind for a model: the parallelism plan, what limits the "
                                     "count, memory per GPU, speed, the cheapest current offer ($/h, $/month, "
                                     "$/1M tokens) and rent-versus-buy. Without --format: every format in one table.",
                         epilog=examples("vramlab fit gpt-oss-20b --gpu rtx-4090",
                                          "vramlab fit llama-3.1-70b --gpu H100 --format FP8 --context 32k",
                                          "vramlab fit qwen3-8b --gpu h200 --format q4km --hours-per-day 8 --json",
                                          "vramlab fit openai/gpt-oss-120b --gpu h100 --gpus 1 --engine vllm "
                                          "--format native --context 32k --gpu-memory-utilization 0.95 --json"))
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
    fit.add_argument("--gpus", type=POSITIVE, default=None, metavar="N",
                     help="answer for exactly N GPUs in the engine's default layout (default: the fewest that fit)")
    fit.add_argument("--gpu-memory-utilization", type=FRACTION, default=None, metavar="U",
                     help="vLLM's --gpu-memory-utilization (default 0.9); SGLang's --mem-fraction-static with "
                          "--engine sglang (default: its formula by GPU memory)")
    fit.add_argument("--max-num-batched-tokens", type=POSITIVE, default=None, metavar="T",
                     help="vLLM's --max-num-batched-tokens (default by GPU: 8192 on >= 70 GiB non-A100 GPUs, else "
                          "2048); llama.cpp's --ubatch-size (default 512)")
    fit.add_argument("--max-num-seqs", type=POSITIVE, default=None, metavar="S",
                     help="vLLM's --max-num-seqs (default by GPU: 1024 on >= 70 GiB non-A100 GPUs, else 256)")
    fit.add_argument("--engine-version", default=None, metavar="V",
                     help="the engine release to model where behaviour changed (e.g. vLLM 0.11; default: newest)")
    fit.add_argument("--hours-per-day", type=HOURS, default=4.0, metavar="H",
                     help="usage for monthly cost and rent-vs-buy (default 4, as seed 000)")
    fit.add_argument("--usd-per-kwh", type=NONNEG, default=0.15, metavar="X",
                     help="electricity price for rent-vs-buy (default 0.15)")
    data_dir_flag(fit)
    json_flag(fit, "one JSON object (a list of them without --format)")
    fit.set_defaults(func=cmd_fit)


def cmd_fit(args: argparse.Namespace) -> int:
    from pipeline.cli.costs import fit_cost
    from pipeline.cli.fit import ALL_FORMATS, fit_result
    from pipeline.cli.models import load_ref, model_repo
    from pipeline.cli.resolve import resolve_format, resolve_gpu, resolve_model
    from pipeline.exports.snapshot_offers import current_offers, latest_snapshot
    from sizing_core.gpus import get_gpu

    gpu = get_gpu(resolve_gpu(args.gpu))
    fmt = resolve_format(args.format) if args.format else None
    data_dir = data_dir_of(args)
    ref = resolve_model(args.model, data_dir)
    arch = load_ref(ref)
    repo = model_repo(ref, arch)
    snapshot = latest_snapshot(data_dir)
    settings = {"memory_fraction": args.gpu_memory_utilization, "max_num_batched_tokens": args.max_num_batched_tokens,
                "max_num_seqs": args.max_num_seqs, "version": args.engine_version}
    offers: dict[str, list[dict[str, Any]]] = {}  # the snapshot's offers of this GPU, read once for every format

    def answer(f: str, substitute: bool = True) -> dict[str, Any]:
        result = fit_result(args.model, gpu.id, f, args.context, args.concurrency, args.engine, args.kv_cache_dtype,
                            arch=arch, repo=repo, substitute=substitute, gpus=args.gpus, settings=settings)
        if result["fits"] and snapshot is not None and gpu.id not in offers:
            offers[gpu.id] = current_offers(snapshot, gpu=gpu.id)
        return result | {"cost": fit_cost(arch, result, gpu, snapshot, args.hours_per_day, args.usd_per_kwh,
                                          offers=offers.get(gpu.id))}

    if fmt is None:
        rows = [answer(f, substitute=False) for f in ALL_FORMATS]  # every format has its own row
        if args.json:
            print_json(rows)
        else:
            from pipeline.cli.tables import print_fit_all

            print_fit_all(arch.model, gpu, rows, snapshot.id if snapshot else None)
        return 0
    result = answer(fmt)
    if args.json:
        print_json(result)
    else:
        from pipeline.cli.tables import print_fit

        print_fit(result)
    return 0
