"""``vramlab fit ... --gpus N --engine E [--gpu-memory-utilization U] [--max-num-batched-tokens T] --json``: the
contract an independent measurement set is checked through (engineStartup and the throughput ranges).

Each case is a logged start-up of the calibration set (citation in the test); the expected figure is the log's,
with the calibration's tolerance, or arithmetic shown in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_size import vramlab

CONFIGS = Path(__file__).resolve().parents[1] / "sizing_core" / "data" / "calibration" / "configs"
STARTUP_KEYS = {"weightsGiBPerGpu", "kvCacheGiBPerGpu", "kvCacheTokens", "maxConcurrency"}


def fit(config: str, *args: str) -> dict:
    out = vramlab("fit", str(CONFIGS / f"{config}.json"), *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_vllm_gpt_oss_120b_one_h100_does_not_start() -> None:
    """vllm#27508: ``--gpu-memory-utilization 0.95 --max-num-batched-tokens 1024`` on one H100 logged 1.71 GiB
    for the KV cache and failed (a 131,072-token request needs more: 18 full layers x 131,072 x 2,048 B alone
    = 4.5 GiB). Exactly 1 GPU is answered, not the fewest."""
    data = fit("openai__gpt-oss-120b", "--gpu", "h100", "--gpus", "1", "--engine", "vllm", "--format", "native",
               "--context", "131072", "--gpu-memory-utilization", "0.95", "--max-num-batched-tokens", "1024",
               "--engine-version", "0.11")
    start = data["engineStartup"]
    assert STARTUP_KEYS <= set(start)
    assert data["gpus"] == 1 and data["gpusAsked"] == 1 and data["fits"] is False and "KV cache" in data["reason"]
    assert start["kvCacheGiBPerGpu"] == pytest.approx(1.71, rel=0.15)
    assert start["weightsGiBPerGpu"] == pytest.approx(65.97, rel=0.05)  # vllm#23278: "took 65.9651 GiB"
    assert start["maxConcurrency"] < 1 and start["starts"] is False
    speed = data["throughput"]
    low, high = speed["decodeTokensPerSRange"]
    assert low < speed["decodeTokensPerS"] < high and len(speed["prefillTokensPerSRange"]) == 2


def test_sglang_mem_fraction_static_through_gpu_memory_utilization() -> None:
    """sglang#21348: Qwen3-235B-A22B-FP8 on 4 x H100, ``--mem-fraction-static 0.93``: "#tokens: 367404", K and V
    8.23 GiB each. With --engine sglang the utilisation flag is mem_fraction_static: the answer's tokens within
    10% and its range around the log's figure."""
    data = fit("Qwen__Qwen3-235B-A22B-FP8", "--gpu", "h100", "--gpus", "4", "--engine", "sglang",
               "--format", "native", "--context", "32768", "--gpu-memory-utilization", "0.93")
    start = data["engineStartup"]
    assert start["gpuMemoryUtilization"] == 0.93 and data["plan"]["tensorParallel"] == 4
    assert start["kvCacheTokens"] == pytest.approx(367_404, rel=0.10)
    assert start["kvCacheGiBPerGpu"] == pytest.approx(16.46, rel=0.10)
    low, high = start["kvCacheTokensRange"]
    assert low <= 367_404 <= high


def test_vllm_default_defaults_differ_between_h100_and_a100() -> None:
    """vLLM's defaults follow the GPU: 8,192 batched tokens and 1,024 sequences on an H100, 2,048 and 256 on an
    A100 (its name contains 'a100'); --max-num-batched-tokens overrides the first."""
    h100 = fit("Qwen__Qwen3-8B", "--gpu", "h100", "--gpus", "1", "--engine", "vllm", "--format", "bf16")
    a100 = fit("Qwen__Qwen3-8B", "--gpu", "a100-80gb-sxm", "--gpus", "1", "--engine", "vllm", "--format", "bf16")
    assert (h100["engineStartup"]["maxNumBatchedTokens"], h100["engineStartup"]["maxNumSeqs"]) == (8192, 1024)
    assert (a100["engineStartup"]["maxNumBatchedTokens"], a100["engineStartup"]["maxNumSeqs"]) == (2048, 256)
    assert h100["engineStartup"]["activationGiB"] > a100["engineStartup"]["activationGiB"]
    mine = fit("Qwen__Qwen3-8B", "--gpu", "h100", "--gpus", "1", "--engine", "vllm", "--format", "bf16",
               "--max-num-batched-tokens", "2048", "--max-num-seqs", "256")
    assert mine["engineStartup"]["activationGiB"] == pytest.approx(a100["engineStartup"]["activationGiB"])


def test_llamacpp_kv_buffers_through_the_cli() -> None:
    """ollama#16480: gpt-oss-120b, 2 slots of 131,072 tokens, n_ubatch 1024, f16 cache: 9,216 + 90 MiB."""
    data = fit("openai__gpt-oss-120b", "--gpu", "strix-halo", "--engine", "llama.cpp", "--format", "native",
               "--context", "131072", "--concurrency", "2", "--max-num-batched-tokens", "1024",
               "--kv-cache-dtype", "fp16")
    assert data["engineStartup"]["kvCacheGiBPerGpu"] * 1024 == pytest.approx(9216 + 90)
    assert data["engineStartup"]["kvCacheTokens"] == 262_144 and data["gpus"] == 1


def test_exact_gpus_larger_than_needed_and_across_nodes() -> None:
    """16 H100 for Qwen3-8B: TP 8 x PP 2 over two machines (vLLM's TP-inside-a-node layout), fitting."""
    data = fit("Qwen__Qwen3-8B", "--gpu", "h100", "--gpus", "16", "--engine", "vllm", "--format", "bf16")
    plan = data["plan"]
    assert data["fits"] and (plan["tensorParallel"], plan["pipelineParallel"], plan["nodes"]) == (8, 2, 2)


@pytest.mark.parametrize(("args", "message"), [
    (("--gpu-memory-utilization", "1.5"), "must be above 0 and at most 1"),
    (("--gpus", "0"), "must be >= 1"),
    (("--max-num-batched-tokens", "many"), "expected a whole number"),
])
def test_bad_engine_flags_are_one_line(args: tuple[str, ...], message: str) -> None:
    out = vramlab("fit", str(CONFIGS / "Qwen__Qwen3-8B.json"), "--gpu", "h100", "--format", "bf16", *args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
