"""``vramlab fit``: the JSON contract, the no-deployment case, clear errors."""

from __future__ import annotations

import json

import pytest
from helpers import config_path
from test_cli_size import vramlab


def test_fit_json_contract() -> None:
    out = vramlab("fit", "kimi-k3.1-pro", "--gpu", "b200", "--format", "bf16", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"gpus", "fits", "nativeSupport", "plan", "memoryPerGpuGiB", "throughput", "launch"} <= set(data)
    assert data["gpus"] == 40 and data["fits"] is True and data["nativeSupport"] is True
    plan = data["plan"]
    assert (plan["tensorParallel"], plan["pipelineParallel"], plan["nodes"]) == (8, 5, 5)
    assert len(plan["stages"]) == 5 and sum(plan["layersPerStage"]) == 93
    mem = data["memoryPerGpuGiB"]
    assert mem["total"] == pytest.approx(mem["weights"] + mem["kvCache"] + mem["recurrentState"] + mem["activations"]
                                         + mem["engineOverhead"])
    assert mem["headroom"] == pytest.approx(mem["usable"] - mem["total"])
    assert data["throughput"]["decodeTokensPerS"] > 0 and data["launch"]["command"].startswith("vllm serve")


def test_fit_no_deployment_has_null_gpus() -> None:
    out = vramlab("fit", "kimi-k3.1-pro", "--gpu", "rtx-4090", "--format", "native", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["gpus"] is None and data["fits"] is False and data["plan"] is None and data["reason"]


def test_fit_config_path_with_engine_and_kv_type() -> None:
    out = vramlab("fit", str(config_path("Qwen__Qwen3-30B-A3B")), "--gpu", "rtx-4090", "--format", "q4_k_m",
                  "--context", "32768", "--concurrency", "2", "--engine", "llama.cpp", "--kv-cache-dtype", "q8_0",
                  "--json")
    data = json.loads(out.stdout)
    assert data["gpus"] == 1 and data["engine"] == "llama.cpp" and data["kvCacheDtype"] == "q8_0"
    assert "-ctk q8_0" in data["launch"]["command"]


def test_fit_table_output() -> None:
    out = vramlab("fit", "kimi-k3.1-pro", "--gpu", "h100", "--format", "native")
    text = " ".join(out.stdout.split())  # lines wrap between words at 100 columns
    assert out.returncode == 0 and "24 GPU(s)" in text and "not native" in text


@pytest.mark.parametrize(("args", "message"), [
    (("--gpu", "h900", "--format", "bf16"), "unknown GPU 'h900'"),
    (("--gpu", "h100", "--format", "q9_k"), "unknown format 'q9_k'"),
    (("--gpu", "h100", "--format", "bf16", "--engine", "tgi"), "unknown engine 'tgi'"),
    (("--gpu", "h100", "--format", "bf16", "--kv-cache-dtype", "int3"), "unknown KV cache type 'int3'"),
])
def test_fit_bad_input_is_one_line(args: tuple[str, ...], message: str) -> None:
    out = vramlab("fit", "kimi-k3.1-pro", *args)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr


def test_size_and_fit_agree_above_the_maximum_context() -> None:
    """Above max_position_embeddings both answer the memory such a context takes and both say it is above the
    maximum (fit used to refuse what size answered with an asterisk)."""
    size = json.loads(vramlab("size", "qwen3-8b", "--contexts", "128k", "--json").stdout)
    fit = vramlab("fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--context", "128k", "--json")
    assert fit.returncode == 0, fit.stderr
    data = json.loads(fit.stdout)
    # Qwen3-8B: 147,456 bytes of BF16 KV cache per token (36 layers x 2 x 8 KV heads x 128 x 2 bytes); 131,072
    # tokens = 147,456 x 131,072 / 2^30 = 18.0 GiB, on one H100 (TP 1)
    [kv] = size["kvCacheGiBPerRequest"]
    assert kv["bf16"] == 18.0 and not kv["withinMaxContext"] and not kv["withinExtendedMaxContext"]
    assert data["fits"] and data["plan"]["tensorParallel"] == 1
    assert data["memoryPerGpuGiB"]["kvCache"] == pytest.approx(18.0, abs=0.01)
    assert data["aboveMaxContext"] and "40,960" in data["contextLimit"]["method"]
    assert any("above Qwen/Qwen3-8B's maximum context" in w for w in data["warnings"])
    # every format's table says it too, once, above the table (it printed no warning without --format)
    table = vramlab("fit", "qwen3-8b", "--gpu", "h100", "--context", "128k").stdout
    assert " ".join(table.split()).count("above Qwen/Qwen3-8B's maximum context") == 1
    assert table.index("warning") < table.index("fewest GPUs per format")
    # YaRN x4 over 32,768 (Qwen3's model card) reaches 131,072: within it, and the launch command turns it on
    yarn = json.loads(vramlab("fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--context", "128k",
                              "--rope-scaling", "yarn:4:32k", "--json").stdout)
    assert not yarn["aboveMaxContext"] and yarn["contextLimit"]["extendedMaxContext"] == 4 * 32768
    assert '"rope_type": "yarn"' in yarn["launch"]["command"] and '"factor": 4.0' in yarn["launch"]["command"]


def test_rope_scaling_in_the_config_is_read_and_stated() -> None:
    # gpt-oss-120b's config: rope_scaling yarn, factor 32 over 4,096 positions = 131,072 = max_position_embeddings
    out = json.loads(vramlab("size", "openai/gpt-oss-120b", "--contexts", "8k", "--json").stdout)
    limit = out["contextLimit"]
    assert (limit["ropeType"], limit["factor"], limit["originalMaxContext"]) == ("yarn", 32.0, 4096)
    assert limit["extendedMaxContext"] == 32 * 4096 == limit["maxContext"] and "YaRN x32" in limit["method"]


def test_a_tensor_parallel_size_that_does_not_divide_the_heads_is_one_line() -> None:
    # Qwen3-8B: 32 query heads, 8 KV heads: 3 divides neither
    out = vramlab("size", "qwen3-8b", "--tensor-parallel", "3")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "--tensor-parallel 3" in out.stderr and "try 2, 4, 8" in out.stderr
