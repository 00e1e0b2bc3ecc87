"""Active parameters in both conventions: ``activeParameters`` counts the embedding lookup as active
(total minus the routed experts a token skips); ``activeParametersModelCard`` leaves the lookup out, as model cards
do. Figures: OpenAI's gpt-oss model card (arXiv 2508.10925, table 1): gpt-oss-120b 116.83B total, 5.13B active;
gpt-oss-20b 20.91B total, 3.61B active."""

from __future__ import annotations

import json

from helpers import CONFIGS

from sizing_core import size_model
from sizing_core.config.reader import parse_config

GPT_OSS_20B = json.loads((CONFIGS / "openai__gpt-oss-20b.json").read_text())


def test_gpt_oss_20b_in_both_conventions() -> None:
    report = size_model(parse_config("gpt-oss-20b", GPT_OSS_20B))
    assert round(report.parameters, 2) == 20.91
    assert round(report.active_parameters_model_card, 2) == 3.61
    # the lookup: 201,088 x 2,880 embedding rows, counted active by activeParameters only
    assert report.parameter_counts.active - report.parameter_counts.active_model_card == 201_088 * 2_880


def test_gpt_oss_120b_model_card_figure() -> None:
    """Constructed from gpt-oss-20b's config with the model card's 120b shape (36 layers, 128 experts; same width,
    heads and vocabulary): 5.71B active with the embedding lookup (what we published), 5.13B as the card says."""
    config = {**GPT_OSS_20B, "num_hidden_layers": 36, "num_local_experts": 128,
              "layer_types": (GPT_OSS_20B["layer_types"] * 2)[:36]}
    report = size_model(parse_config("gpt-oss-120b", config))
    assert round(report.parameters, 2) == 116.83
    assert round(report.active_parameters, 2) == 5.71 and round(report.active_parameters_model_card, 2) == 5.13


def test_tied_embeddings_count_once_as_the_lm_head() -> None:
    """Tied (Llama-3.2-3B): the shared matrix is the LM head's compute, so only a position table would be left out;
    dense models are all active."""
    report = size_model(parse_config("llama3b", json.loads((CONFIGS / "meta-llama__Llama-3.2-3B-Instruct.json")
                                                            .read_text())))
    assert report.parameter_counts.active_model_card == report.parameter_counts.active == 3_212_749_824
