"""Every bundled config (copied from shared/reference/sizing/configs) sizes without error, with sane figures."""

from __future__ import annotations

import re

import pytest
from helpers import CONFIGS, all_config_names, arch

from sizing_core import size_model
from sizing_core.formats import WEIGHT_FORMATS

NAMES = all_config_names()


def test_every_config_listed_in_sources_is_bundled() -> None:
    listed = re.findall(r"^\| ([\w.\-]+)\.json", (CONFIGS / "SOURCES.md").read_text(), re.M)
    assert len(listed) >= 40
    assert sorted(listed) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_config_sizes(name: str) -> None:
    report = size_model(arch(name))
    assert report.parameters > 0.5 and 0 < report.active_parameters <= report.parameters
    assert set(report.weights_gib) == {*WEIGHT_FORMATS, "native"}
    w = report.weights_gib
    # Lower precision never costs more than higher precision for the same tensors.
    assert w["q2_k"] < w["q4_k_m"] < w["q8_0"] < w["bf16"]
    assert w["nvfp4"] < w["fp8"] < w["bf16"]
    assert w["native"] <= w["bf16"] + 0.01
    rows = report.kv_cache_gib_per_request
    assert all(a.bf16 <= b.bf16 for a, b in zip(rows, rows[1:], strict=False))  # KV never shrinks with context
    if name != "zai-org__GLM-5":  # DSA: indexer cache and fp8_ds_mla keep their own layouts (test_families)
        assert report.kv_cache_bytes_per_token["fp8"] * 2 == report.kv_cache_bytes_per_token["bf16"]


@pytest.mark.parametrize(("name", "fmt"), [
    ("Qwen__Qwen3-30B-A3B-FP8", "fp8_block"), ("nvidia__Llama-3.1-70B-Instruct-FP8", "fp8"),
    ("nvidia__Qwen3-235B-A22B-NVFP4", "nvfp4"), ("openai__gpt-oss-20b", "mxfp4"), ("moonshotai__Kimi-K2.5", "int4"),
    ("deepseek-ai__DeepSeek-V3", "fp8_block"), ("meta-llama__Llama-3.1-8B", "bf16"),
])
def test_native_format_is_read_from_the_checkpoint(name: str, fmt: str) -> None:
    assert arch(name).native.weight_format == fmt
