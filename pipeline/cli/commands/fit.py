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
    load_flags,
    print_json,
    rope_flag,
)
from pipeline.cli.load import load_of


def register(sub: argparse._SubParsersAction) -> None:
    fit = sub.add_parser("fit", help="fewest GPUs for a model, why that many, speed, cost, launch command",
                         description="Fewest GPUs of one kind for a model: the parallelism plan, what limits the "
                                     "count, memory per GPU, speed, the cheapest current offer ($/h, $/month, "
                                     "$/1M tokens) and rent-versus-buy. Without --format: every format in one table.",
                         epilog=examples("vramlab fit gpt-oss-20b --gpu rtx-4090",
                                          "vramlab fit llama-3.1-70b --gpu H100 --format FP8 --context 32k",
                                          "vramlab fit qwen3-8b --gpu h200 --format q4km --hours-per-day 8 --json",
                                          "vramlab fit openai/gpt-oss-120b --gpu h100 --gpus 1 --engine vllm "
                                          "--format native --context 32k --gpu-memory-utilization 0.95 --json",
                                          "vramlab fit llama-3.1-8b --gpu h100 --gpus 1 --engine vllm --format bf16 "
                                          "--context 8k --rate 10 --input-tokens 1000 --output-tokens 200"))
    fit.add_argument("model", metavar="MODEL", help="model id, Hub repo id, registry id or config path")
    fit.add_argument("--gpu", required=True, metavar="GPU[:N]",
                     help="GPU id or alias, any case (H100, h100-sxm, rtx-4090, mac-m5-max-128); with :N, the answer "
                          "on exactly N of them, as --gpus N (H100:2)")
    fit.add_argument("--format", default=None, metavar="FMT",
                     help="weight format, any case (bf16, FP8, q4km, awq, native; default: every format)")
    fit.add_argument("--context", type=CONTEXT, default=8192, metavar="N", help="tokens per request: 8192, 32k, 1M "
                                                                                  "(default 8192)")
    fit.add_argument("--concurrency", type=POSITIVE, default=None, metavar="K",
                     help="requests of --context tokens at once (default 1); with --input-tokens/--output-tokens: K "
                          "clients in a closed loop, each sending its next request when the last one ends")
    load_flags(fit, "adds the serving figures at that load (TTFT, ITL, E2E, saturation)")
    fit.add_argument("--cpu-offload-gb", type=NONNEG, default=None, metavar="G",
                     help="vLLM's --cpu-offload-gb: GiB of weights per GPU streamed over PCIe every step (counted "
                          "in the serving figures at a load, not in the memory plan)")
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
    fit.add_argument("--num-scheduler-steps", type=POSITIVE, default=None, metavar="N",
                     help="vLLM V0's --num-scheduler-steps (multi-step scheduling, vLLM 0.6-0.9): a prompt that "
                          "arrives waits for the N-step window under way (default 1)")
    fit.add_argument("--engine-version", default=None, metavar="V",
                     help="the engine release to model where behaviour changed (e.g. vLLM 0.11; default: newest)")
    fit.add_argument("--offload", nargs="?", const="auto", default=None, choices=("auto", "experts", "layers"),
                     metavar="WHAT",
                     help="with llama.cpp, keep what does not fit in system RAM: experts (--n-cpu-moe, MoE models), "
                          "layers (-ngl) or auto (experts for MoE): GPU memory, system RAM needed, speed")
    fit.add_argument("--hours-per-day", type=HOURS, default=4.0, metavar="H",
                     help="usage for monthly cost and rent-vs-buy (default 4, as seed 000)")
    fit.add_argument("--usd-per-kwh", type=NONNEG, default=0.15, metavar="X",
                     help="electricity price for rent-vs-buy (default 0.15)")
    rope_flag(fit)
    data_dir_flag(fit)
    json_flag(fit, "one JSON object (a list of them without --format)")
    fit.set_defaults(func=cmd_fit)


def cmd_fit(args: argparse.Namespace) -> int:
    from pipeline.cli.costs import fit_cost
    from pipeline.cli.errors import CliError
    from pipeline.cli.fit import ALL_FORMATS, fit_and_serving, planned_arch, with_context
    from pipeline.cli.models import context_of, load_ref, model_repo
    from pipeline.cli.resolve import gpu_family, resolve_format, resolve_gpu, resolve_model, split_count
    from pipeline.compute.service_setups import serving_json
    from pipeline.exports.snapshot_offers import current_offers, latest_snapshot
    from sizing_core.gpus import get_gpu

    name, count = split_count(args.gpu)  # `--gpu H100:2` = `--gpu H100 --gpus 2`
    if count is not None and args.gpus is not None and count != args.gpus:
        raise CliError(f"--gpu {args.gpu} and --gpus {args.gpus} ask for different GPU counts")
    gpus = args.gpus if args.gpus is not None else count
    gpu = get_gpu(resolve_gpu(name))
    fmt = resolve_format(args.format) if args.format else None
    data_dir = data_dir_of(args)
    ref = resolve_model(args.model, data_dir)
    arch = load_ref(ref)
    repo = model_repo(ref, arch)
    snapshot = latest_snapshot(data_dir)
    settings = {"memory_fraction": args.gpu_memory_utilization, "max_num_batched_tokens": args.max_num_batched_tokens,
                "max_num_seqs": args.max_num_seqs, "version": args.engine_version,
                "num_scheduler_steps": args.num_scheduler_steps}
    offers: dict[str, list[dict[str, Any]]] = {}  # the snapshot's offers of this GPU, read once for every format
    limit = context_of(ref, arch, args.rope_scaling)
    planned = planned_arch(arch, args.context)

    load = load_of(args)
    concurrency = 1 if load is not None or args.concurrency is None else args.concurrency

    def answer(f: str, substitute: bool = True) -> dict[str, Any]:
        result, serving = fit_and_serving(args.model, gpu.id, f, args.context, concurrency, args.engine,
                                          args.kv_cache_dtype, arch=planned, repo=repo, substitute=substitute,
                                          gpus=gpus, settings=settings, gguf_files=(ref.hub or {}).get("gguf_files"),
                                          load=load, cpu_offload_gb=args.cpu_offload_gb)
        if result["fits"] and snapshot is not None and gpu.id not in offers:
            offers[gpu.id] = current_offers(snapshot, gpu=gpu.id)
        result = with_context(result, arch, limit, args.context)
        cost = fit_cost(planned, result, gpu, snapshot, args.hours_per_day, args.usd_per_kwh, offers=offers.get(gpu.id))
        if serving is not None:  # the user's view at the load, priced on the offer shown ($/1M as compare gives it)
            price = ((cost or {}).get("offer") or {}).get("pricePerHour")
            result["serving"] = serving_json(serving, price)
        return result | {"cost": cost}

    if args.offload:
        return _offload(args, arch, gpu, gpus or 1, fmt)
    family = gpu_family(name)
    if len(family) > 1 and not args.json:  # `fit` answers for one GPU: say which one a family name meant
        from pipeline.cli.tables import say

        say(f"note: {name} is answered for {gpu.id} ({gpu.name}); the other {name} variants: "
            f"{', '.join(g for g in family if g != gpu.id)} (`--gpu` one of them for its answer)")

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


def question_of(args: argparse.Namespace) -> Any:  # noqa: ANN401 - a pipeline.cli.on_gpu.Question
    """The question ``answer_flags`` asked (``models --fits``, ``compare``), as ``fit`` reads the same flags: the
    load (:func:`load_of`), and without one ``--concurrency`` requests of ``--context`` tokens."""
    from pipeline.cli.on_gpu import Question

    load = load_of(args)
    if args.engine:
        from sizing_core.engines import get_engine

        get_engine(args.engine)  # unknown: one line naming the engines
    return Question(context=args.context, concurrency=1 if load is not None or args.concurrency is None
                    else args.concurrency, load=load, engine=args.engine, kv_cache_dtype=args.kv_cache_dtype)


def _offload(args: argparse.Namespace, arch: Any, gpu: Any, count: int, fmt: str | None) -> int:  # noqa: ANN401
    """``fit --offload``: the least llama.cpp offload to system RAM that fits ``count`` GPUs."""
    from pipeline.cli.errors import CliError
    from pipeline.cli.offload import offload_answer, offload_format

    if fmt is None:  # the checkpoint's own format when llama.cpp runs it, else the usual 4-bit GGUF
        fmt = offload_format(arch, gpu, None)
    try:
        answer = offload_answer(arch, gpu, count, fmt, args.context, args.kv_cache_dtype, args.offload)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    result = {"model": arch.model, "gpu": gpu.id, "gpuName": gpu.name, "context": args.context,
              "kvCacheDtype": args.kv_cache_dtype, "offload": answer}
    if args.json:
        print_json(result)
        return 0
    from pipeline.cli.tables import say

    head = f"{arch.model} on {count} x {gpu.name} with llama.cpp, {fmt}, one request of {args.context:,} tokens"
    if not answer["fits"]:
        say(f"{head}: no offload fits ({answer['reason']})")
        return 0
    say(f"{head}, offloading {answer['mode']} to system RAM:")
    say(f"GPU memory {answer['vramGiB']:,.1f} GiB of {answer['budgetGiB']:,.1f} usable; system RAM for the "
        f"offloaded weights {answer['ramGiB']:,.1f} GiB (have at least {answer['systemRamNeededGiB']} GiB); decode "
        f"~{answer['decodeTokensPerS'] or 0:,.1f} tok/s")
    say(answer["note"])
    print(answer["command"])
    return 0
