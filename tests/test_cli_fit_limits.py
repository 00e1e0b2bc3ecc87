"""``vramlab fit``'s explanation: the term of the memory breakdown that binds, and the one flag that would change
the answer; one hand-derived case per kind (figures from the config and the engines' documented defaults,
docs/calibration.md, never from the command's output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import config_path
from test_cli_size import vramlab

GIB = 2**30
LOOKUPS = Path(__file__).resolve().parent.parent / "pipeline" / "replay" / "hub" / "lookups"
#: what CUDA reports on an H100 80GB SXM5: nvidia-smi's 81,559 MiB less the 0.46 GiB driver reservation
H100_CUDA_GIB = 81559 / 1024 - 0.46
RTX4090_GIB = 24564 / 1024  # driver-reported 24,564 MiB


def fit(tmp_path: Path, *args: str) -> dict:
    out = vramlab("fit", *args, "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_weights_bind_gpt_oss_120b_on_one_rtx_4090_and_offload_is_the_way(tmp_path: Path) -> None:
    """The weights "left 0.31 GiB for the KV cache" (that was the KV buffer's size); they are 60.8 GiB."""
    got = fit(tmp_path, "openai/gpt-oss-120b", "--gpu", "rtx-4090:1", "--format", "native")
    c = json.loads((LOOKUPS / "openai__gpt-oss-120b.json").read_text())
    # the routed experts alone: 36 layers x 128 experts x 3 matrices of 2,880 x 2,880 in MXFP4 (4.25 bits)
    experts = c["num_hidden_layers"] * c["num_local_experts"] * 3 * c["hidden_size"] * c["intermediate_size"] \
        * 4.25 / 8 / GIB
    assert experts == pytest.approx(56.73, abs=0.01)
    limit = got["limitedBy"]
    assert not got["fits"] and limit["kind"] == "weights" and limit["onGpus"] == 1
    assert limit["termsGiB"]["weights"] > experts > RTX4090_GIB  # the experts alone are over twice the card
    assert limit["termsGiB"]["usable"] == pytest.approx(RTX4090_GIB, abs=0.01)  # llama.cpp: the whole device
    assert limit["termsGiB"]["engineReserve"] == pytest.approx(0.3)  # llama.cpp's context (docs/calibration.md)
    assert "weights alone" in got["reason"] and "KV cache" not in got["reason"]
    # no smaller format fits one card (even Q2_K keeps the MXFP4 experts' size): --offload keeps experts in RAM
    assert limit["change"]["flag"] == "--offload" and limit["change"]["gpus"] == 1
    table = vramlab("fit", "openai/gpt-oss-120b", "--gpu", "rtx-4090", "--data-dir", str(tmp_path)).stdout
    assert "no format fits one GPU" in table and "--offload" in table


def test_activation_peak_binds_gpt_oss_120b_on_one_h100_and_utilisation_095_fits(tmp_path: Path) -> None:
    """"why 2" blamed a 0.1 GiB KV cache; the 5.2 GiB activation peak of vLLM's profile run is the cause."""
    got = fit(tmp_path, "openai/gpt-oss-120b", "--gpu", "h100", "--format", "native")
    c = json.loads((LOOKUPS / "openai__gpt-oss-120b.json").read_text())
    # vLLM's sampler warm-up on a >= 70 GiB GPU: min(8,192 batched tokens, 1,024 sequences) rows of the vocabulary
    # at 27 bytes per element, plus 8,192 tokens of bf16 hidden states
    peak = (8192 * 2 * c["hidden_size"] + 27 * 1024 * c["vocab_size"]) / GIB
    assert peak == pytest.approx(5.22, abs=0.005)
    # the KV cache of one request of 8,192 tokens: 18 full-attention layers hold 8,192 tokens, 18 sliding ones 128,
    # each token 2 (K, V) x 8 KV heads x 64 dims x 2 bytes
    full = sum(t == "full_attention" for t in c["layer_types"])
    per_token = 2 * c["num_key_value_heads"] * c["head_dim"] * 2
    kv = (full * 8192 + (c["num_hidden_layers"] - full) * c["sliding_window"]) * per_token / GIB
    assert kv == pytest.approx(0.286, abs=0.001)
    limit = got["limitedBy"]
    assert got["gpus"] == 2 and limit["kind"] == "activation_peak" and limit["onGpus"] == 1
    terms = limit["termsGiB"]
    assert terms["activationPeak"] == pytest.approx(peak, abs=0.001)
    assert terms["kvCache"] == pytest.approx(kv, abs=0.001)
    assert terms["usable"] == pytest.approx(0.9 * H100_CUDA_GIB, abs=0.01)  # vLLM's default utilisation
    assert terms["weights"] + terms["engineReserve"] < terms["usable"]  # the weights themselves fit
    assert "activation peak" in limit["note"]
    assert limit["change"]["flag"] == "--gpu-memory-utilization 0.95" and limit["change"]["gpus"] == 1
    # and it does: 0.95 x 79.19 GiB leaves room for the peak and the cache
    one = fit(tmp_path, "openai/gpt-oss-120b", "--gpu", "h100:1", "--format", "native",
              "--gpu-memory-utilization", "0.95")
    assert one["fits"] and "--gpu-memory-utilization 0.95" in one["launch"]["command"]
    table = vramlab("fit", "openai/gpt-oss-120b", "--gpu", "h100", "--format", "native", "--data-dir",
                    str(tmp_path)).stdout
    assert "would change it: --gpu-memory-utilization 0.95" in " ".join(table.split())


def test_kv_cache_binds_four_128k_requests_of_llama_8b_on_one_h100_and_fp8_kv_fits(tmp_path: Path) -> None:
    got = fit(tmp_path, str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "h100", "--format", "bf16",
              "--context", "128k", "--concurrency", "4")
    c = json.loads(config_path("meta-llama__Llama-3.1-8B").read_text())
    # 32 layers x 2 (K, V) x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes a token; 4 x 131,072 tokens = 64 GiB
    per_token = c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * (c["hidden_size"] // c["num_attention_heads"]) * 2
    assert per_token == 131_072
    kv = 4 * 131_072 * per_token / GIB
    # 8,030,261,248 parameters in BF16
    weights = 8_030_261_248 * 2 / GIB
    limit = got["limitedBy"]
    assert got["gpus"] == 2 and limit["kind"] == "kv_cache" and limit["onGpus"] == 1
    assert limit["termsGiB"]["kvCache"] == pytest.approx(kv, abs=0.001) == 64.0
    assert limit["termsGiB"]["weights"] == pytest.approx(weights, abs=0.01)
    # what is left of 0.9 x 79.19 GiB after the weights and the peak is under 64 GiB and over half of it: FP8 fits
    left = limit["termsGiB"]["leftForKv"]
    assert kv / 2 < left < kv
    assert limit["change"]["flag"] == "--kv-cache-dtype fp8" and limit["change"]["gpus"] == 1


def test_engine_reserve_binds_kimi_k2_5_on_eight_a100s(tmp_path: Path) -> None:
    """TP 8 makes vLLM's non-torch memory (NCCL and all-reduce buffers) the largest term besides the weights."""
    got = fit(tmp_path, "kimi-k2.5", "--gpu", "a100-80gb-sxm:8", "--format", "native")
    c = json.loads((LOOKUPS.parent / "configs" / "moonshotai__Kimi-K2.5.json").read_text())["text_config"]
    # non-torch memory per rank: 0.15 GiB, and 0.15 GiB more per further TP rank (docs/calibration.md)
    reserve = 0.15 + 0.15 * 7
    # vLLM's defaults on an A100 (its name has "a100"): 2,048 batched tokens, 256 sequences; the sampler warm-up
    # (256 rows of the 163,840-token vocabulary at 27 bytes, plus 2,048 bf16 hidden states) is the peak
    peak = (2048 * 2 * c["hidden_size"] + 27 * 256 * c["vocab_size"]) / GIB
    # MLA caches one latent of 512 + 64 (RoPE) values a token and layer, in every rank: 61 x 576 x 2 bytes x 8,192
    kv = c["num_hidden_layers"] * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2 * 8192 / GIB
    limit = got["limitedBy"]
    assert not got["fits"] and limit["kind"] == "engine_reserve" and limit["onGpus"] == 8
    terms = limit["termsGiB"]
    assert terms["engineReserve"] == pytest.approx(reserve, abs=0.001) and reserve > peak > kv
    assert terms["activationPeak"] == pytest.approx(peak, abs=0.001)
    assert terms["kvCache"] == pytest.approx(kv, abs=0.001)
    assert terms["usable"] == pytest.approx(0.9 * (80 - 0.46), abs=0.01)  # 80 GiB less the driver's 0.46
    assert terms["weights"] + reserve < terms["usable"] < terms["weights"] + reserve + peak + kv
    assert "reserve" in got["reason"] and limit["change"]["flag"] == "--gpu-memory-utilization 0.95"


def test_engine_reserve_binds_when_it_is_the_largest_term_besides_the_weights() -> None:
    """The rule on a hand-built breakdown: 8 GiB usable, 7.5 GiB of weights, a 0.3 GiB reserve, a 0.1 GiB peak and
    0.15 GiB of KV cache: 8.05 GiB asked of 8, and of what shares the 0.5 GiB the weights leave, the reserve is
    the most."""
    from sizing_core.placement.limits import binding
    from sizing_core.placement.search import Plan, StageMemory

    stage = StageMemory(stage=0, layers=(0, 1), weights=7.5, kv_cache=0.15, recurrent_state=0.0, activations=0.1,
                        engine_overhead=0.3, total=8.05)
    plan = Plan(gpus=1, tensor_parallel=1, pipeline_parallel=1, nodes=1, gpus_per_node=1, layers_per_stage=(2,),
                stages=(stage,), usable_gib=8.0, headroom_gib=-0.05)
    got = binding(plan, None, "llama.cpp", 1, 8192)
    assert got is not None and got.kind == "engine_reserve" and got.left_for_kv == pytest.approx(0.1)
    assert "reserve (0.30 GiB)" in got.note
    # the same breakdown with the weights 0.1 GiB lighter holds it: no binding term
    lighter = plan.model_copy(update={"stages": (stage.model_copy(update={"weights": 7.4, "total": 7.95}),)})
    assert binding(lighter, None, "llama.cpp", 1, 8192) is None
