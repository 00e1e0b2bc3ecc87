"""The serving model at a load: the fixed point, Little's law, saturation, the batch-1 limits, the MoE
expert count, the scheduler registry, and ``vramlab fit ... --rate/--concurrency`` (the ``serving`` contract)."""

from __future__ import annotations

import json

import pytest
from helpers import config_path
from test_cli_size import vramlab

from sizing_core.calibration import case_arch
from sizing_core.engines import get_engine
from sizing_core.engines.speed import TTFT_FLOOR_MS, _peak, bandwidth_efficiency, decode_step, fixed_ms
from sizing_core.gpus import get_gpu
from sizing_core.placement.deployment import startup_for_layout
from sizing_core.roofline import _active_params, _attention_flops_per_token
from sizing_core.serving import SCHEDULERS, StepModel, Workload, distinct_experts, serve, steady_state, step
from sizing_core.serving.scheduler import LlamaCppServer, Scheduler, scheduler_for

KEYS = {"rate", "concurrency", "ttftMs", "ttftMsP90", "itlMs", "e2eMs", "e2eMsP90", "outputTokensPerS",
        "requestsPerS", "meanBatch", "saturated", "maxRate", "ttftMsRange", "itlMsRange", "e2eMsRange"}


def _setup(config: str = "meta-llama__Llama-3.1-8B", gpu_id: str = "h100", fmt: str = "bf16", tp: int = 1):
    arch, gpu, engine = case_arch(config), get_gpu(gpu_id), get_engine("vllm")
    start = startup_for_layout(arch, gpu, engine, fmt, tp, 1, 8192, "bf16", 1)
    return arch, gpu, engine, start


def _serve(load: Workload, config: str = "meta-llama__Llama-3.1-8B", gpu_id: str = "h100", tp: int = 1):
    arch, gpu, engine, start = _setup(config, gpu_id, tp=tp)
    return serve(arch, gpu, engine, "bf16", tp, 1, load, start)


def test_distinct_experts_is_top_k_at_one_token_and_every_expert_for_many() -> None:
    assert distinct_experts(128, 8, 1) == pytest.approx(8)
    assert distinct_experts(8, 2, 1) == pytest.approx(2)
    assert distinct_experts(128, 8, 0) == 0
    # two tokens: 1 - (1 - 1/16)^2 of 16 = 16 * (31/256) = 1.9375 experts
    assert distinct_experts(16, 1, 2) == pytest.approx(1.9375)
    assert distinct_experts(128, 8, 10_000) == pytest.approx(128)
    many = [distinct_experts(128, 8, b) for b in (1, 2, 4, 16, 64, 256)]
    assert many == sorted(many) and many[-1] < 128


def test_moe_step_reads_more_experts_with_the_batch() -> None:
    arch, gpu, engine, _ = _setup("Qwen__Qwen3-30B-A3B")
    model = StepModel(arch, gpu, engine, "bf16", 1, 1)
    one, big = model.weight_bytes(1), model.weight_bytes(100_000)
    experts_all = sum(b for _, _, b in model.experts) / step.EXPERT_EFFICIENCY
    assert big == pytest.approx(model.dense + 1e5 * model.row + experts_all, rel=1e-6)
    # at one token, top-k of E experts: 8 of 128
    assert one == pytest.approx(model.dense + model.row + experts_all * 8 / 128, rel=1e-6)


def test_low_rate_itl_is_the_batch_one_decode_step() -> None:
    """At a vanishing rate the step decodes one request holding I + O/2 tokens: engines.speed's batch-1 step with the
    at-load efficiency of the memory kind, plus the at-load per-sequence and overlap terms."""
    arch, gpu, engine, start = _setup()
    load = Workload(input_tokens=1000, output_tokens=200, rate=1e-3)
    got = serve(arch, gpu, engine, "bf16", 1, 1, load, start)
    one = decode_step(arch, gpu, engine, "bf16", 1, 1, 1100, 1)
    at_load = StepModel(arch, gpu, engine, "bf16", 1, 1).efficiency
    bandwidth = one.bandwidth_ms * bandwidth_efficiency(engine, gpu) / at_load
    compute = one.compute_ms / StepModel(arch, gpu, engine, "bf16", 1, 1).mfu_factor
    expected = max(bandwidth, compute) + step.OVERLAP * min(bandwidth, compute) + one.fixed_ms + step.SEQ_US / 1000
    assert got.itl_ms == pytest.approx(expected, rel=0.01)
    assert got.mean_batch < 0.01 and not got.saturated


def test_low_rate_ttft_is_the_batch_one_prefill() -> None:
    """TTFT at a vanishing rate: request handling + one step prefilling the prompt, compute-bound at the MFU."""
    arch, gpu, engine, start = _setup()
    prompt = 2000
    got = serve(arch, gpu, engine, "bf16", 1, 1, Workload(input_tokens=prompt, output_tokens=100, rate=1e-3), start)
    model = StepModel(arch, gpu, engine, "bf16", 1, 1)
    flops = _peak(gpu, "bf16", True, engine) * step.PREFILL_MFU["server"] * model.mfu_factor
    compute = prompt * (2 * _active_params(arch) + _attention_flops_per_token(arch, prompt)) / flops * 1000
    weights = model.weight_bytes(prompt) / model.bandwidth * 1000  # the step reads the weights once
    assert compute > weights  # a 2,000-token prompt of an 8B model is compute-bound on an H100
    expected = (TTFT_FLOOR_MS["server"] * steady_state.FLOOR_FACTOR[engine.id] + compute + step.OVERLAP * weights
                + fixed_ms(arch, gpu, engine, 1, 1))
    assert got.ttft_ms == pytest.approx(expected, rel=0.02)


def test_littles_law_at_a_rate() -> None:
    rate = 5.0
    got = _serve(Workload(input_tokens=1000, output_tokens=200, rate=rate))
    assert not got.saturated and got.requests_per_s == rate and got.output_tokens_per_s == pytest.approx(rate * 200)
    decoding = rate * 199 * got.itl_ms / 1000  # requests decoding at once: rate x decode time
    in_system = rate * got.e2e_ms / 1000  # everything from arrival to last token
    assert decoding < got.mean_batch < in_system
    assert got.e2e_ms == pytest.approx(got.ttft_ms + 199 * got.itl_ms)
    assert got.ttft_ms_p90 >= got.ttft_ms and got.e2e_ms_p90 >= got.e2e_ms


def test_closed_loop_throughput_is_clients_over_e2e() -> None:
    for clients in (1, 8, 64):
        got = _serve(Workload(input_tokens=500, output_tokens=300, concurrency=clients))
        assert got.requests_per_s * got.e2e_ms / 1000 == pytest.approx(clients, rel=1e-6)
        assert got.mean_batch <= clients + 1e-6 and not got.saturated


def test_itl_and_ttft_grow_with_the_rate_and_saturate() -> None:
    load = Workload(input_tokens=1000, output_tokens=200, rate=1.0)
    top = _serve(load).max_rate
    assert top > 1
    itls, ttfts = [], []
    for share in (0.05, 0.2, 0.4, 0.6, 0.8, 0.95):
        got = _serve(Workload(input_tokens=1000, output_tokens=200, rate=share * top))
        assert not got.saturated
        itls.append(got.itl_ms)
        ttfts.append(got.ttft_ms)
    assert itls == sorted(itls) and ttfts == sorted(ttfts) and itls[-1] > 1.5 * itls[0]
    over = _serve(Workload(input_tokens=1000, output_tokens=200, rate=1.5 * top))
    assert over.saturated and over.requests_per_s == pytest.approx(top, rel=0.01)
    assert over.ttft_ms > ttfts[-1]  # the backlog of a run above what the setup sustains


def test_the_kv_pool_bounds_the_running_batch() -> None:
    """Long requests on a small pool: the max rate is where rate x decode time reaches pool / (I + O/2)."""
    arch, gpu, engine, start = _setup("meta-llama__Llama-3.1-8B", "l40s")
    load = Workload(input_tokens=6000, output_tokens=2000, rate=0.1)
    solver = steady_state.Solver(StepModel(arch, gpu, engine, "bf16", 1, 1), scheduler_for(engine, gpu, start), load)
    held = 6000 + 1000
    assert solver.running_cap() == pytest.approx(start.kv_cache_tokens / held)
    top = solver.max_rate()
    at_top = solver.open_state(top * 0.999)
    assert at_top.batch == pytest.approx(solver.running_cap(), rel=0.02)


def test_one_scheduler_class_per_engine() -> None:
    assert {t.__name__ for t in SCHEDULERS} == {"VLLM", "SGLang", "LlamaCpp"}
    assert len(set(SCHEDULERS.values())) == len(SCHEDULERS)
    assert all(issubclass(cls, Scheduler) and cls.engine_type is key for key, cls in SCHEDULERS.items())
    gpu = get_gpu("rtx-4090")
    assert isinstance(scheduler_for(get_engine("mlx"), gpu, None), LlamaCppServer)  # llama-server: the nearest
    assert isinstance(scheduler_for(get_engine("ollama"), gpu, None), LlamaCppServer)
    assert not scheduler_for(get_engine("sglang"), gpu, None).mixed and scheduler_for(get_engine("vllm"), gpu, None).mixed


def test_sglang_prefill_batches_pause_decodes() -> None:
    """SGLang's prefill batches run apart: at the same rate its ITL carries the prefill time, vLLM's hides part of
    it under the decode's bandwidth."""
    arch, gpu, _, _ = _setup()
    load = Workload(input_tokens=2000, output_tokens=200, rate=4.0)
    itl = {}
    for engine_id in ("vllm", "sglang"):
        engine = get_engine(engine_id)
        start = startup_for_layout(arch, gpu, engine, "bf16", 1, 1, 8192, "bf16", 1)
        itl[engine_id] = serve(arch, gpu, engine, "bf16", 1, 1, load, start).itl_ms
    assert itl["sglang"] > itl["vllm"]


def test_multi_step_scheduling_makes_an_arriving_prompt_wait_for_the_window() -> None:
    """vLLM V0's ``--num-scheduler-steps N`` decides once per N steps: at a rate, the only change is the rest of
    the window a prompt arrives in, N steps instead of one, while the engine is busy: TTFT grows by
    ``busy x (N - 1) x T / 2`` with T the step (ITL) and busy = min(1, the mean batch); the steps do not change.
    One client never finds the engine busy, so its TTFT does not move."""
    arch, gpu, engine, start = _setup()
    multi = engine.with_settings(num_scheduler_steps=10)
    assert scheduler_for(multi, gpu, start).window_steps() == 10
    assert scheduler_for(engine, gpu, start).window_steps() == 1
    load = Workload(input_tokens=224, output_tokens=189, rate=4.0)
    one, ten = (serve(arch, gpu, e, "bf16", 1, 1, load, start) for e in (engine, multi))
    assert ten.itl_ms == pytest.approx(one.itl_ms) and ten.mean_batch == pytest.approx(one.mean_batch)
    busy = min(1.0, one.mean_batch)
    assert busy > 0.5  # 4 req/s of ~190 output tokens keeps an 8B model on an H100 busy
    assert ten.ttft_ms - one.ttft_ms == pytest.approx(busy * 9 * one.itl_ms / 2, rel=1e-6)
    assert ten.e2e_ms - one.e2e_ms == pytest.approx(ten.ttft_ms - one.ttft_ms, rel=1e-6)
    alone = Workload(input_tokens=224, output_tokens=189, concurrency=1)
    a, b = (serve(arch, gpu, e, "bf16", 1, 1, alone, start) for e in (engine, multi))
    assert b.ttft_ms == pytest.approx(a.ttft_ms)


@pytest.mark.parametrize("kwargs", [dict(rate=1.0, concurrency=2), dict(), dict(rate=-1.0), dict(concurrency=0)])
def test_a_load_is_a_rate_or_a_concurrency(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Workload(input_tokens=10, output_tokens=10, **kwargs)


def test_fit_json_serving_contract() -> None:
    out = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "h100", "--gpus", "1", "--engine",
                  "vllm", "--format", "bf16", "--context", "8192", "--rate", "4", "--input-tokens", "1000",
                  "--output-tokens", "200", "--json")
    assert out.returncode == 0, out.stderr
    serving = json.loads(out.stdout)["serving"]
    # the contract's keys, and the user's view `compare` and `cheapest` give (keys are added, never renamed)
    assert set(serving) == KEYS | {"tokensPerSPerUser", "headroom", "usdPerMillionOutputTokens",
                                   "usdPerMillionOutputTokensRange", "meetsLevel", "meetsDefaultFloor", "shortfall",
                                   "prefillComputeKnown"}
    assert serving["prefillComputeKnown"] is True  # the H100 has its tensor-core rate
    assert serving["tokensPerSPerUser"] == pytest.approx(1000 / serving["itlMs"])
    assert serving["rate"] == 4 and serving["concurrency"] is None and serving["saturated"] is False
    for key in ("ttft", "itl", "e2e"):
        low, high = serving[f"{key}MsRange"]
        assert low <= serving[f"{key}Ms"] <= high
    assert serving["maxRate"] > 4 and serving["requestsPerS"] == 4
    text = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "h100", "--gpus", "1", "--format",
                   "bf16", "--concurrency", "8", "--input-tokens", "1000", "--output-tokens", "200").stdout
    assert "8 clients in a closed loop: TTFT ~" in text and "saturates at ~" in text and "ITL ~" in text


def test_fit_num_scheduler_steps_is_vllms_multi_step_window() -> None:
    """``--num-scheduler-steps 10`` (vLLM 0.6's multi-step scheduling) adds the rest of a 10-step window to the
    first token: TTFT grows by min(1, meanBatch) x 9 x ITL / 2 and ITL stays; an engine without the setting says so."""
    def serving(*extra: str) -> dict:
        out = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "a100-80gb-sxm", "--gpus", "1",
                      "--engine", "vllm", "--engine-version", "0.6.0", "--format", "bf16", "--context", "4096",
                      "--rate", "4", "--input-tokens", "224", "--output-tokens", "189", *extra, "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["serving"]

    one, ten = serving(), serving("--num-scheduler-steps", "10")
    assert ten["itlMs"] == pytest.approx(one["itlMs"])
    assert ten["ttftMs"] - one["ttftMs"] == pytest.approx(min(1.0, one["meanBatch"]) * 9 * one["itlMs"] / 2, rel=1e-6)
    out = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "h100", "--engine", "sglang",
                  "--rate", "2", "--input-tokens", "100", "--output-tokens", "100", "--num-scheduler-steps", "4")
    assert out.returncode != 0 and "SGLang has no setting num_scheduler_steps" in out.stderr


def test_fit_concurrency_without_lengths_keeps_its_meaning() -> None:
    out = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "h100", "--format", "bf16",
                  "--concurrency", "4", "--json")
    data = json.loads(out.stdout)
    assert "serving" not in data and data["concurrency"] == 4


@pytest.mark.parametrize(("args", "message"), [
    (("--rate", "2", "--concurrency", "4", "--input-tokens", "10", "--output-tokens", "10"), "exclusive"),
    (("--rate", "2"), "--rate needs --input-tokens and --output-tokens"),
    (("--input-tokens", "10", "--output-tokens", "10"), "give --rate R or --concurrency K"),
    (("--rate", "2", "--input-tokens", "10"), "--rate needs"),
    (("--rate", "0", "--input-tokens", "10", "--output-tokens", "10"), "must be a positive number"),
])
def test_fit_load_flags_errors(args: tuple[str, ...], message: str) -> None:
    out = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "h100", "--format", "bf16", *args)
    assert out.returncode != 0 and message in out.stderr, out.stderr


def test_a_short_overload_grows_the_batch_not_the_queue() -> None:
    """Above the sustained rate, a run whose excess fits in what the engine runs at once (prefill-first admission)
    queues no prompt for a slot: TTFT stays near the steady state's while ITL rises; a long run queues."""
    arch, gpu, engine, start = _setup()
    solver = steady_state.Solver(StepModel(arch, gpu, engine, "bf16", 1, 1), scheduler_for(engine, gpu, start),
                                 Workload(input_tokens=100, output_tokens=100, rate=1.0))
    top = solver.max_rate()
    cap = solver.running_cap()
    short = 40  # 40 x (1 - 1/1.2) = 6.7 requests of excess, far below the cap
    assert short * (1 - 1 / 1.2) < cap
    wait, itl, batch = solver.overloaded_run(1.2 * top, short)
    assert wait == pytest.approx(0.0, abs=1e-6) and batch <= cap
    long_wait, long_itl, _ = solver.overloaded_run(1.2 * top, 50 * int(cap))
    assert long_wait > 1000 and long_itl >= itl


def test_moe_step_pays_per_routed_pick_a_rank_share_under_expert_parallelism() -> None:
    """The MoE step grows by tokens x (top-k x MoE layers) x ROUTE_US; expert parallelism over ``ep`` ranks leaves
    each rank ``1/ep`` of the picks."""
    arch, gpu, engine, _ = _setup("Qwen__Qwen3-30B-A3B")
    tp = StepModel(arch, gpu, engine, "bf16", 2, 1)
    ep = StepModel(arch, gpu, engine, "bf16", 2, 1, expert_parallel=2)
    assert tp.routed == 48 * 8  # 48 MoE layers, top-8
    gap = tp.step(100, 1000).total_ms - ep.step(100, 1000).total_ms
    assert gap == pytest.approx(100 * tp.routed * tp.route_us / 1000 / 2, rel=1e-6)


def test_dp_attention_ranks_read_their_own_share_of_the_kv() -> None:
    """SGLang DP attention: each of the group's ranks holds its share of the batch (its own KV) and a pool of its own."""
    arch, gpu, engine, start = _setup("deepseek-ai__DeepSeek-R1", "h200", "fp8", tp=8)
    plain = StepModel(arch, gpu, get_engine("sglang"), "fp8", 8, 1)
    dpa = StepModel(arch, gpu, get_engine("sglang"), "fp8", 8, 1, dp_attention=8)
    one, many = plain.step(256, 4000), dpa.step(256, 4000)
    kv = 256 * plain.kv_bytes(4000) / plain.bandwidth * 1000
    assert one.bandwidth_ms - many.bandwidth_ms == pytest.approx(kv * 7 / 8, rel=1e-6)
    load = Workload(input_tokens=1000, output_tokens=200, concurrency=64)
    solo = steady_state.Solver(plain, scheduler_for(get_engine("sglang"), gpu, start), load)
    ranks = steady_state.Solver(dpa, scheduler_for(get_engine("sglang"), gpu, start), load)
    assert ranks.limits.kv_tokens == pytest.approx(8 * solo.limits.kv_tokens)


def test_a_burst_beyond_the_running_cap_decodes_between_the_full_and_the_draining_batch() -> None:
    """A burst of more prompts than the engine runs at once keeps the batch full while prompts wait, then drains:
    its ITL lies between the step at the full batch and the step of one wave draining."""
    arch, gpu, engine, start = _setup()
    burst = Workload(input_tokens=200, output_tokens=200, concurrency=4000, kind="burst", output_cv2=1.0)
    got = serve(arch, gpu, engine, "bf16", 1, 1, burst, start)
    assert got.saturated and got.max_running > 0
    full = _serve(Workload(input_tokens=200, output_tokens=200, concurrency=got.max_running))
    assert got.itl_ms < full.itl_ms * 1.001
    wave = serve(arch, gpu, engine, "bf16", 1, 1, Workload(input_tokens=200, output_tokens=200,
                                                          concurrency=got.max_running, kind="burst",
                                                          output_cv2=1.0), start)
    assert got.itl_ms > wave.itl_ms


@pytest.mark.parametrize(("gpu_id", "kind"), [
    ("a100-40gb", "HBM2"), ("v100", "HBM2"), ("a100-80gb-sxm", "HBM2e"), ("h100", "HBM3"), ("h200", "HBM3e"),
    ("rtx-3090", "GDDR6X"), ("rtx-4090", "GDDR6X"), ("l40s", "GDDR6"), ("l4", "GDDR6")])
def test_memory_kinds_group_the_catalog(gpu_id: str, kind: str) -> None:
    """HBM2 (A100 40GB, V100) and GDDR6X (GeForce 30/40 series) are groups of their own, not HBM2e and GDDR6."""
    assert step.memory_kind(get_gpu(gpu_id)) == kind


def test_pipeline_stages_on_two_machines_pay_a_hop_per_step() -> None:
    """TP4 x PP2 on two machines pays one network hop per step over the same layout on one machine."""
    arch, gpu, engine, _ = _setup("meta-llama__Meta-Llama-3.1-70B", "a100-40gb")
    one = StepModel(arch, gpu, engine, "bf16", 4, 2, nodes=1)
    two = StepModel(arch, gpu, engine, "bf16", 4, 2, nodes=2)
    assert two.step(32, 400).total_ms - one.step(32, 400).total_ms == pytest.approx(step.NODE_HOP_MS, rel=1e-9)


def test_at_load_mfu_and_routing_cost_are_per_gpu_generation() -> None:
    """The matrix work's at-load MFU factor and the MoE cost per routed pick are the generation's (Ampere) or the
    common ones (Hopper)."""
    arch, _, engine, _ = _setup("Qwen__Qwen3-30B-A3B")
    a100 = StepModel(arch, get_gpu("a100-80gb-sxm"), engine, "bf16", 1, 1)
    h100 = StepModel(arch, get_gpu("h100"), engine, "bf16", 1, 1)
    assert a100.mfu_factor == pytest.approx(step.MFU_FACTOR * step.MFU_GENERATION["Ampere"])
    assert h100.mfu_factor == pytest.approx(step.MFU_FACTOR)
    assert a100.route_us == pytest.approx(step.ROUTE_US * step.ROUTE_GENERATION["Ampere"])
    assert h100.route_us == pytest.approx(step.ROUTE_US)


def test_compressed_sparse_attention_has_flops_bounded_by_the_indexer_top_k() -> None:
    """DeepSeek-V4 attention costs FLOPs (the window, the compressed entries, the indexer's scoring); past the
    indexer's top-k a ratio-4 layer reads no more entries, so only the scoring keeps growing with the prompt."""
    arch = case_arch("deepseek-ai__DeepSeek-V4-Flash")
    short, long = _attention_flops_per_token(arch, 1024), _attention_flops_per_token(arch, 32768)
    assert 0 < short < long
    csa = next(layer.mixer for layer in arch.layers if layer.mixer.compress_ratio == 4)
    far, farther = csa.attention_flops(2 * 4 * csa.indexer_topk * 4), csa.attention_flops(2 * 4 * csa.indexer_topk * 8)
    scoring = 2 * (4 * csa.indexer_topk * 4 / 4) * csa.indexer_heads * csa.indexer_head_dim
    assert farther - far == pytest.approx(scoring, rel=1e-9)


def test_at_load_acceptance_on_the_calibration_set() -> None:
    """The at-load goals the calibration set meets (docs/calibration.md "At a load"): E2E and ITL within 12% median
    APE, the batched step alone at the measured batch within 15% for at least 70% of the cases. (TTFT's goal, 25%,
    is not met yet.)"""
    import statistics

    from sizing_core.serving import calibration

    cases = [c for c in calibration.cases() if not c.out]

    def median_ape(quantity: str) -> float:
        return statistics.median(abs(1 / r - 1) for c in cases if (r := c.ratio(quantity)) == r)

    assert median_ape("e2e") <= 0.12
    assert median_ape("itl") <= 0.12
    steps = [abs(c.step_predicted_ms / c.step_measured_ms - 1) <= 0.15 for c in cases if c.step_predicted_ms]
    assert len(steps) >= 100 and sum(steps) >= 0.7 * len(steps)


def test_a_gpu_without_a_tensor_rate_meets_no_ttft_level() -> None:
    """Without the GPU's tensor-core rate the prompt's compute has no term, so the TTFT counts only the bytes
    streamed (an A30 once served 1,000-token prompts of an 8B model in a predicted 68 ms, 16.4 TFLOP at least
    ~99 ms at its peak): the serving says so and no TTFT level is met; with a rate it is counted."""
    from sizing_core.serving.service_level import DEFAULT_FLOOR, ServiceLevel, serve_layout

    arch = case_arch("meta-llama__Llama-3.1-8B")
    load = Workload(input_tokens=1000, output_tokens=200, rate=1.0)
    engine = get_engine("llama.cpp")
    unknown, known = get_gpu("rtx-4000-ada"), get_gpu("rtx-4090")
    assert unknown.fp16_tflops_dense is None and unknown.fp8_tflops_dense is None and known.fp16_tflops_dense
    blind = serve_layout(arch, unknown, engine, "q4_k_m", 1, 1, 1, load, 8192)
    seen = serve_layout(arch, known, engine, "q4_k_m", 1, 1, 1, load, 8192)
    assert blind is not None and seen is not None
    assert blind.prefill_compute is False and seen.prefill_compute is True
    assert blind.to_json()["prefillComputeKnown"] is False
    assert any(m.startswith("TTFT unknown") for m in DEFAULT_FLOOR.shortfall(blind))
    assert not any(m.startswith("TTFT unknown") for m in DEFAULT_FLOOR.shortfall(seen))
    # a level without a TTFT bound still judges it: the decode rate is known from the bandwidth
    assert not any(m.startswith("TTFT") for m in ServiceLevel(min_tokens_per_s=1.0).shortfall(blind))


def test_clients_of_exactly_equal_lengths_come_back_as_one_wave() -> None:
    """A closed loop whose wave of prompts takes several steps' budget: with exactly equal lengths (a benchmark's
    fixed random lengths) every wave is a burst, so the mean first token waits for about half the wave's prefill
    steps; with the same lengths given as means the clients drift apart and each finds a step's room."""
    from sizing_core.serving.scheduler import scheduler_for
    from sizing_core.serving.steady_state import Solver

    arch, gpu, engine, start = _setup()
    clients, prompt = 32, 1024  # 32,768 prompt tokens a wave: 4 steps of vLLM's 8,192-token H100 budget
    means = Workload(input_tokens=prompt, output_tokens=128, concurrency=clients)
    fixed = Workload(input_tokens=prompt, output_tokens=128, concurrency=clients, fixed_lengths=True)
    solver = Solver(StepModel(arch, gpu, engine, "bf16", 1, 1), scheduler_for(engine, gpu, start), fixed)
    budget = solver.limits.token_budget
    assert clients * prompt >= 4 * budget
    steps = clients * prompt / budget
    full_step = StepModel(arch, gpu, engine, "bf16", 1, 1).step(0.0, prompt, budget, prompt).total_ms
    # a burst's prompts queue for the wave's steps one behind the other: half of them on average (the queue taken
    # as fluid; each step at least a full prefill step, the decodes beside it only add)
    lower = steps / 2 * full_step
    a, b = serve(arch, gpu, engine, "bf16", 1, 1, fixed, start), serve(arch, gpu, engine, "bf16", 1, 1, means, start)
    assert a.ttft_ms >= lower
    assert b.ttft_ms < lower


def test_inferencex_rows_state_the_harness_lengths() -> None:
    """The InferenceX rows of the at-load set state the lengths the harness drew (SemiAnalysisAI/InferenceX@962bd4c:
    --random-range-ratio 0.8 on 1,024 nominal tokens, np.random.randint(int(0.8 * 1024), 1024 + 1), 10 x K
    prompts): the mean (819 + 1024) / 2 = 921.5 and the uniform spread's squared CV
    (1 - 0.8)^2 / (3 (1 + 0.8)^2) = 0.04 / 9.72."""
    from sizing_core.serving import calibration

    rows = [r for r in calibration.read_csv("serving.csv") if "InferenceX harness" in r["note"]]
    assert len(rows) >= 10
    for row in rows:
        assert float(row["input_tokens"]) == float(row["output_tokens"]) == (819 + 1024) / 2
        assert int(row["num_prompts"]) == 10 * int(row["concurrency"])
        assert calibration.output_cv2(row) == pytest.approx(0.04 / 9.72)
        assert calibration.workload(row).fixed_lengths is False


def test_a_burst_queues_at_the_api_server_per_engine() -> None:
    """Each prompt of a burst takes its turn at the API server (per engine, plus tokenising per prompt token): a
    burst of N has N x that / 2 of it on average, so doubling N beyond what the prefill queue adds costs it again."""
    from sizing_core.serving.scheduler import scheduler_for
    from sizing_core.serving.steady_state import FRONT_MS, FRONT_TOKEN_US, Solver

    arch, gpu, _, _ = _setup()
    for engine_id in ("vllm", "sglang"):
        engine = get_engine(engine_id)
        start = startup_for_layout(arch, gpu, engine, "bf16", 1, 1, 8192, "bf16", 1)
        load = Workload(input_tokens=2000, output_tokens=100, concurrency=1, kind="burst")
        solver = Solver(StepModel(arch, gpu, engine, "bf16", 1, 1), scheduler_for(engine, gpu, start), load)
        assert solver.front_ms == pytest.approx(FRONT_MS[engine_id] + 2000 * FRONT_TOKEN_US / 1000)
        state = solver.closed_state(1)
        # one prompt: its own prefill is the state's, so the extra is the API server's half turn alone
        assert solver.burst_extra_ms(1, state) == pytest.approx(solver.front_ms / 2, rel=1e-6)


@pytest.mark.parametrize("engine_id", ["vllm", "sglang", "llama.cpp"])
def test_the_prefill_wait_is_pollaczek_khinchine_times_the_schedulers_factor(engine_id: str) -> None:
    """The open-loop wait for prefill capacity: ``Q rho / (1 - rho) x S x (c_a^2 + c_s^2) / 2`` (Poisson arrivals
    c_a^2 = 1, fixed lengths c_s^2 = 0), with ``Q`` the scheduler class's own factor (SGLang's prefill batches pause
    the decodes: a larger one than the mixed steps of vLLM and llama.cpp's server)."""
    from sizing_core.serving.scheduler import SGLang as SGLangScheduler
    from sizing_core.serving.scheduler import VllmV1, scheduler_for
    from sizing_core.serving.steady_state import Solver

    arch, gpu = case_arch("meta-llama__Llama-3.1-8B"), get_gpu("h100")
    engine = get_engine(engine_id)
    fmt = "bf16" if engine_id != "llama.cpp" else "q8_0"
    start = startup_for_layout(arch, gpu, engine, fmt, 1, 1, 8192, "bf16", 1)
    load = Workload(input_tokens=1000, output_tokens=200, rate=2.0)
    sched = scheduler_for(engine, gpu, start)
    solver = Solver(StepModel(arch, gpu, engine, fmt, 1, 1), sched, load)
    state = solver.open_state(2.0)
    assert state is not None and 0.05 < state.rho < 0.9
    work = solver.work_ms(state.batch)
    assert state.rho == pytest.approx(2.0 * work / 1000)
    expected = type(sched).queue_factor * state.rho / (1 - state.rho) * work * (1 + 0) / 2
    assert state.wait_ms == pytest.approx(expected)
    assert SGLangScheduler.queue_factor > VllmV1.queue_factor
