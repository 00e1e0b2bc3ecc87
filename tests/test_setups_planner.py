"""The planner's placement search answers what ``sizing_core.placement.deployment.fewest`` answers for a GPU
shaped to each instance size (the planner's fewest GPUs, moved up while the engine's pool cannot serve the load:
the engine model's rule, applied by setups), while sharing between instance sizes whether a (TP, PP) plan fits."""

from __future__ import annotations

import pytest
from helpers import arch

from pipeline.compute.placement_cache import Placed
from pipeline.compute.setups import Planner
from sizing_core.engines import default_engine
from sizing_core.formats import WEIGHT_FORMATS
from sizing_core.gpus import catalog
from sizing_core.placement.deployment import fewest
from sizing_core.registry import load_registered

MODELS = {"llama8": arch("meta-llama__Llama-3.1-8B"), "llama70": arch("meta-llama__Llama-3.1-70B"),
          "dsv3": arch("deepseek-ai__DeepSeek-V3"), "qwen3-next": arch("Qwen__Qwen3-Next-80B-A3B-Thinking"),
          "gpt-oss": arch("openai__gpt-oss-20b"), "kimi": load_registered("kimi-k3.1-pro")[1],
          # tied embeddings: the last pipeline stage holds a copy of the embedding
          "gemma4-26b": arch("google__gemma-4-26B-A4B"), "llama3b": arch("meta-llama__Llama-3.2-3B-Instruct")}
#: data-centre cards of several sizes (vLLM: TP x PP), consumer and workstation cards (llama.cpp: layers only),
#: unified memory
GPUS = ("h100", "a100-40gb", "l4", "mi300x", "b200", "v100", "rtx-4090", "rtx-3060-12gb", "rtx-pro-6000",
        "mac-m3-ultra-512", "dgx-spark", "rtx-a2000-6gb", "rtx-4060", "a10g", "rtx-3080")
#: instance sizes asked in an order that makes later sizes re-use what earlier ones learnt, both ways
SHAPES = (8, 1, 4, 2, 3, 16, 6)


def _reference(a, gpu, fmt: str, per_instance: int) -> Placed:  # noqa: ANN001 - test helper
    p, _ = fewest(a, gpu.model_copy(update={"max_gpus_per_node": per_instance}), default_engine(gpu), fmt, 8192, 1,
                  "bf16")
    ok = p.gpus is not None and p.plan is not None
    return Placed(p.gpus if ok else None, p.plan.tensor_parallel if ok else None,
                  p.plan.pipeline_parallel if ok else None, p.native_support, p.support_note)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_shared_search_equals_fewest_gpus_on_every_instance_size(model: str) -> None:
    a = MODELS[model]
    gpus = catalog()
    seen = {"fits": 0, "spans_machines": 0, "none": 0}
    for fmt in ("native", *WEIGHT_FORMATS):
        planner = Planner(a, fmt, 8192, 1, "bf16")  # one planner per model and format, as the setups step uses it
        for gpu_id in GPUS:
            for shape in SHAPES:
                got, want = planner.placed(gpus[gpu_id], shape), _reference(a, gpus[gpu_id], fmt, shape)
                assert got == want, (model, fmt, gpu_id, shape)
                full = planner.place(gpus[gpu_id], shape)  # the placement a setup's rates are computed on
                assert (full.plan.gpus, full.plan.tensor_parallel) == (got.gpus, got.tensor_parallel) if full.plan \
                    else got.gpus is None
                if want.gpus is None:
                    seen["none"] += 1
                else:
                    seen["fits"] += 1
                    seen["spans_machines"] += want.gpus > shape
    assert seen["fits"] > 0
    if model in ("dsv3", "kimi"):  # too big for one 8-GPU machine of most cards: plans across machines occur
        assert seen["spans_machines"] > 0 and seen["none"] > 0


@pytest.mark.parametrize("model", ["llama70", "dsv3", "qwen3-next", "gpt-oss", "gemma4-26b"])
def test_rates_from_the_layout_equal_the_rates_of_the_full_placement(model: str) -> None:
    """The setups' decode rates are computed from the layout (TP, PP, nodes) without building the plan again;
    they must be the rates ``placement_rates`` gives for the full placement (``sizing_core.throughput.estimate``),
    float for float, at the published load and at a batched long one (the aggregate at the load differs there)."""
    from pipeline.compute.setup_costs import placement_rates

    a = MODELS[model]
    gpus = catalog()
    compared = batched = 0
    for context, concurrency in ((8192, 1), (32768, 8)):
        for fmt in ("native", "fp8", "q4_k_m"):
            planner = Planner(a, fmt, context, concurrency, "bf16")
            for gpu_id in GPUS:
                for shape in (8, 1, 2, 4):
                    if planner.placed(gpus[gpu_id], shape).gpus is None:
                        continue
                    got = planner.rates(gpus[gpu_id], shape)  # the layout path
                    want = placement_rates(a, gpus[gpu_id], planner.place(gpus[gpu_id], shape),
                                           default_engine(gpus[gpu_id]))
                    assert got == want, (model, context, fmt, gpu_id, shape)
                    compared += 1
                    batched += concurrency > 1 and got.load_tokens_per_s is not None and got.batch != concurrency
    assert compared > 20 and batched > 0
