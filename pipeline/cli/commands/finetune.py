"""vramlab finetune: memory per GPU to fine-tune a model (QLoRA, LoRA, full), and how many of a GPU hold it."""

from __future__ import annotations

import argparse

from pipeline.cli.args import CONTEXT, POSITIVE, data_dir_flag, data_dir_of, examples, json_flag, print_json
from pipeline.cli.errors import CliError

METHODS = ("qlora", "lora", "full")


def register(sub: argparse._SubParsersAction) -> None:
    tune = sub.add_parser("finetune", help="memory to fine-tune a model (QLoRA, LoRA, full) and the GPUs that hold it",
                          description="Memory per GPU to fine-tune a model with QLoRA (4-bit base), LoRA (16-bit "
                                      "base) or full fine-tuning (BF16 + AdamW), gradient checkpointing on; with "
                                      "--gpu, the fewest of that GPU in one machine (FSDP) that hold it. The "
                                      "assumptions are printed with the figures (docs/placement.md).",
                          epilog=examples("vramlab finetune qwen3-8b", "vramlab finetune qwen3-8b --gpu rtx-4090",
                                          "vramlab finetune llama-3.1-70b --method qlora --gpu h100 --seq-len 4k",
                                          "vramlab finetune qwen3-8b --gpu a100-80gb-sxm:2 --json"))
    tune.add_argument("model", metavar="MODEL", help="model id, Hub repo id, registry id or config path")
    tune.add_argument("--method", choices=METHODS, default=None, type=str.lower,
                      help="qlora, lora or full (default: all three)")
    tune.add_argument("--gpu", metavar="GPU[:N]",
                      help="a GPU (id or alias, any case): the fewest of it in one machine that hold each method; "
                           ":N exactly N, sharded")
    tune.add_argument("--seq-len", type=CONTEXT, default=2048, metavar="N",
                      help="tokens per training sequence: 2048, 4k (default 2048, as published)")
    tune.add_argument("--batch", type=POSITIVE, default=1, metavar="B", help="sequences per step per GPU (default 1)")
    tune.add_argument("--rank", type=POSITIVE, default=16, metavar="R", help="LoRA rank (default 16)")
    data_dir_flag(tune)
    json_flag(tune)
    tune.set_defaults(func=cmd_finetune)


def cmd_finetune(args: argparse.Namespace) -> int:
    from pipeline.cli.models import load_ref
    from pipeline.cli.resolve import resolve_gpu, resolve_model, split_count
    from sizing_core.finetune import fewest_gpus_to_finetune, finetune_memory, holds, usable_for_training_gib
    from sizing_core.gpus import get_gpu

    arch = load_ref(resolve_model(args.model, data_dir_of(args)))
    gpu, count = None, None
    if args.gpu:
        name, count = split_count(args.gpu)
        gpu = get_gpu(resolve_gpu(name))
        if count is not None and count > gpu.node_size:
            raise CliError(f"--gpu {args.gpu}: one machine holds at most {gpu.node_size} {gpu.id} (FSDP here shards "
                           "within one machine)")
    rows = []
    for method in (args.method,) if args.method else METHODS:
        if gpu is None:
            gpus, memory = None, finetune_memory(arch, method, args.seq_len, args.batch, args.rank)
        elif count is not None:
            memory = finetune_memory(arch, method, args.seq_len, args.batch, args.rank, gpus=count)
            gpus = count if holds(memory, gpu) else None
        else:
            gpus, memory = fewest_gpus_to_finetune(arch, method, gpu, args.seq_len, args.batch, args.rank)
        rows.append(memory.model_dump(mode="json") | {"fits": gpus is not None if gpu else None, "gpusNeeded": gpus})
    result = {"model": arch.model, "seqLen": args.seq_len, "batch": args.batch, "rank": args.rank,
              "gpu": gpu.id if gpu else None, "gpuName": gpu.name if gpu else None, "gpusAsked": count,
              "usableGiBPerGpu": usable_for_training_gib(gpu) if gpu else None, "methods": rows}
    if args.json:
        print_json(result)
    else:
        from pipeline.cli.tables import print_finetune

        print_finetune(result)
    return 0
