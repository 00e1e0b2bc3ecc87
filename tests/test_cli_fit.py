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
    (("--gpu", "h100", "--format", "bf16", "--context", "2000000"), "above the model's maximum"),
    (("--gpu", "h100", "--format", "bf16", "--engine", "tgi"), "unknown engine 'tgi'"),
    (("--gpu", "h100", "--format", "bf16", "--kv-cache-dtype", "int3"), "unknown KV cache type 'int3'"),
])
def test_fit_bad_input_is_one_line(args: tuple[str, ...], message: str) -> None:
    out = vramlab("fit", "kimi-k3.1-pro", *args)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
