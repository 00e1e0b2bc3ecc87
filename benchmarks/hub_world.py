"""A replayed Hugging Face Hub listing of N text-generation models, for the whole-Hub scale run.

The bundled Hub replay (``pipeline/replay/hub/``) holds 42 real ``config.json`` files (``configs/SOURCES.md``):
not enough for a scale run of thousands of models. :func:`build` writes a replay folder that extends it:

- the two discovery listings (``/api/models?pipeline_tag=text-generation&sort=...&limit=N``) list the 42 real repos
  first (the watchlist tracks them already, as a real listing's top would be), then generated repos up to N;
- every **generated** repo is a real family's config with its sizes changed: the MLP widths (``intermediate_size``,
  ``moe_intermediate_size``, ``shared_expert_intermediate_size``) scaled by one of :data:`WIDTHS` (rounded to a
  multiple of 128), and for families whose layers are all alike (no per-layer list in the config) the depth moved by
  one of :data:`DEPTHS`. Each is a distinct architecture, sized from scratch like a new Hub model (no two share
  parsed objects or cached work). Where a change would not parse, the family's config is kept as is (counted in
  :attr:`World.unchanged_configs`). Their model info is constructed in the documented shape (as the bundled ones
  are): sha, dates, tags, the config and any ModelOpt ``hf_quant_config.json`` as siblings, no safetensors counts,
  shard index or headers (so their sizes come from the config alone; the report says so per model);
- every generated repo lives under a ``synthetic-<org>`` namespace, never a real repo id.

Every manifest entry says what it is (``recording``): real bundled files are referenced where they are, generated
ones are written under the folder. Nothing here is a test; ``tests/test_hub_world.py`` checks the listing is
discovered and sized.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "pipeline" / "replay" / "hub"
HUB = "https://huggingface.co"
#: MLP width factors of generated variants, in the order they are used
WIDTHS = (0.75, 1.25, 0.875, 1.125, 1.5, 0.625, 1.375, 0.5, 1.75, 1.0)
#: depth changes of generated variants of families whose layers are all alike
DEPTHS = (0, -4, 4, -8, 8, 2, -2, 12, -12, 6)
#: config keys that describe layers one by one: a family that has one keeps its depth
PER_LAYER_KEYS = ("layer_types", "hybrid_override_pattern", "linear_attn_config", "full_attention_interval",
                  "sliding_window_pattern", "mlp_only_layers", "first_k_dense_replace", "moe_layer_freq",
                  "block_configs", "num_nextn_predict_layers", "no_rope_layers", "attention_chunk_size")
WIDTH_KEYS = ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size")


@dataclass
class World:
    manifest: Path
    real: list[str]  # real bundled repos in the listing
    generated: list[str]  # generated repos, in listing order
    limit: int = 0  # items per listing (VRAMLAB_DISCOVERY_LIMIT)
    unchanged_configs: int = 0  # generated repos whose family config could not be varied and was kept as is
    families: dict[str, int] = field(default_factory=dict)  # base repo -> generated variants


def _families() -> list[tuple[str, dict, dict | None]]:
    """(repo, config, hf_quant_config or None) of every bundled real config of a watchlist model."""
    from pipeline.sources.huggingface import load_watchlist

    tracked = {m.repo for m in load_watchlist().models}
    out = []
    for e in json.loads((BUNDLED / "manifest.json").read_text())["responses"]:
        url = e["url"]
        if not url.endswith("/config.json") or "/resolve/" not in url:
            continue
        repo = url.removeprefix(f"{HUB}/").split("/resolve/")[0]
        if not (BUNDLED / e["file"]).name.endswith(".json"):
            continue
        if repo not in tracked:
            continue  # the replay's other recordings (all-MiniLM's header, for the header tests) are no LLM family
        config = json.loads((BUNDLED / e["file"]).read_text())
        quant_path = BUNDLED / e["file"].replace(".json", ".hf_quant_config.json")
        quant = json.loads(quant_path.read_text()) if quant_path.exists() else None
        out.append((repo, config, quant))
    return sorted(out, key=lambda f: f[0])


def _vary(config: dict, round_: int) -> tuple[dict, str]:
    """The family config with its MLP widths and (where layers are all alike) depth changed for variant round
    ``round_``; and a note saying how."""
    out = json.loads(json.dumps(config))
    text = out["text_config"] if isinstance(out.get("text_config"), dict) else out
    width = WIDTHS[round_ % len(WIDTHS)]
    depth = DEPTHS[(round_ // len(WIDTHS)) % len(DEPTHS)]
    notes = []
    for key in WIDTH_KEYS:
        if isinstance(text.get(key), int) and text[key] > 0:
            new = max(128, round(text[key] * width / 128) * 128)
            notes.append(f"{key} {text[key]} -> {new}")
            text[key] = new
    per_layer = any(k in text or k in out for k in PER_LAYER_KEYS)
    if depth and not per_layer and isinstance(text.get("num_hidden_layers"), int):
        new = max(4, text["num_hidden_layers"] + depth)
        notes.append(f"num_hidden_layers {text['num_hidden_layers']} -> {new}")
        text["num_hidden_layers"] = new
    return out, ", ".join(notes) or "unchanged"


def build(folder: Path, models: int) -> World:
    """Write a Hub replay into ``folder`` whose listings, discovered with ``VRAMLAB_DISCOVERY_LIMIT`` =
    :attr:`World.limit`, bring the tracked models (watchlist + discovered) to ``models``: the real bundled repos
    first (all on the watchlist), then generated ones."""
    from pipeline.sources.huggingface import DISCOVERY_SORTS, discovery_url, load_watchlist
    from sizing_core import SizingError, parse_config

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "api").mkdir(exist_ok=True)
    (folder / "configs").mkdir(exist_ok=True)
    bundled = json.loads((BUNDLED / "manifest.json").read_text())["responses"]
    entries = [dict(e, file=str(BUNDLED / e["file"])) for e in bundled  # the real replay, where it is
               if "/api/models?" not in e["url"]]
    families = _families()
    watchlist = load_watchlist().models
    world = World(folder / "manifest.json", [repo for repo, _, _ in families], [])
    listing = [{"id": repo, "downloads": 10_000_000 - i} for i, repo in enumerate(world.real)]
    i = 0
    while len(watchlist) + len(world.generated) < models:
        repo, config, quant = families[i % len(families)]
        round_ = i // len(families)
        org, name = repo.split("/")
        new_repo = f"synthetic-{org}/{name}-g{i:05d}"[:190]
        varied, note = _vary(config, round_)
        try:
            parse_config(new_repo, varied, quant)
        except (SizingError, ValueError):
            varied, note = config, "unchanged (the varied config did not parse)"
            world.unchanged_configs += 1
        text = json.dumps(varied, indent=1)
        sha = hashlib.sha1(f"{new_repo}\n{text}".encode()).hexdigest()
        stem = new_repo.replace("/", "__")
        siblings = [{"rfilename": "config.json", "size": len(text)}]
        (folder / "configs" / f"{stem}.json").write_text(text)
        entries.append({"method": "GET", "url": f"{HUB}/{new_repo}/resolve/{sha}/config.json",
                        "file": f"configs/{stem}.json",
                        "recording": f"generated config: {repo}'s real config with {note} (benchmarks/hub_world.py)"})
        if quant is not None:
            qtext = json.dumps(quant, indent=1)
            (folder / "configs" / f"{stem}.hf_quant_config.json").write_text(qtext)
            siblings.append({"rfilename": "hf_quant_config.json", "size": len(qtext)})
            entries.append({"method": "GET", "url": f"{HUB}/{new_repo}/resolve/{sha}/hf_quant_config.json",
                            "file": f"configs/{stem}.hf_quant_config.json",
                            "recording": f"{repo}'s real hf_quant_config.json, copied (benchmarks/hub_world.py)"})
        info = {"_id": sha[:24], "id": new_repo, "modelId": new_repo, "author": f"synthetic-{org}", "sha": sha,
                "lastModified": "2026-10-01T00:00:00.000Z", "createdAt": "2026-09-01T00:00:00.000Z",
                "private": False, "gated": False, "disabled": False, "pipeline_tag": "text-generation",
                "library_name": "transformers", "tags": ["transformers", "safetensors", str(config.get("model_type"))],
                "siblings": siblings}
        (folder / "api" / f"{stem}.json").write_text(json.dumps(info, indent=1))
        entries.append({"method": "GET", "url": f"{HUB}/api/models/{new_repo}?blobs=true", "file": f"api/{stem}.json",
                        "recording": "constructed model info of a generated repo (documented shape; "
                                     "benchmarks/hub_world.py)"})
        listing.append({"id": new_repo, "downloads": 1_000_000 - i})
        world.generated.append(new_repo)
        world.families[repo] = world.families.get(repo, 0) + 1
        i += 1
    (folder / "api" / "models.listing.json").write_text(json.dumps(listing, indent=1))
    world.limit = len(listing)
    for sort in DISCOVERY_SORTS:
        entries.append({"method": "GET", "url": discovery_url(sort, world.limit), "file": "api/models.listing.json",
                        "recording": f"constructed listing of {len(world.real)} real and {len(world.generated)} "
                                     "generated repos (benchmarks/hub_world.py)"})
    world.manifest.write_text(json.dumps({"responses": entries}, indent=1))
    return world
