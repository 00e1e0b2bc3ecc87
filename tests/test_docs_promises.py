"""What README.md and docs/ promise, read from the docs and checked against the code, so a claim cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_operating_md_counts_the_graphs_steps_and_assets() -> None:
    from pipeline.definitions import defs

    text = (ROOT / "docs" / "operating.md").read_text()
    steps, assets = map(int, re.search(r"The graph has (\d+) steps over (\d+) assets", text).groups())
    job = defs.resolve_job_def("vramlab_refresh")
    assert len(job.graph.node_defs) == steps  # one node per step (raw_prices is one multi-asset step)
    assert len(job.asset_layer.selected_asset_keys) == assets  # the partitioned graph (group parts) apart


def test_readme_lists_every_command_and_its_flags() -> None:
    """Every sub-command and every long flag of the parser appears in README.md's command block or docs/cli.md."""
    import argparse

    from pipeline.cli.main import build_parser

    text = (ROOT / "README.md").read_text() + (ROOT / "docs" / "cli.md").read_text()
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if f"{path} {name}".removeprefix("vramlab ") and f"{path} {name}" not in text:
                        missing.append(f"{path} {name}")
                    walk(sub, f"{path} {name}")
            else:
                missing.extend(f"{path} {flag}" for flag in action.option_strings
                               if flag.startswith("--") and flag not in ("--help",) and flag not in text)

    walk(build_parser(), "vramlab")
    assert not missing, missing


def test_readme_layer_order_is_the_import_linter_contract() -> None:
    """README's layer sentence and pyproject's layers contract name the same packages in the same order."""
    import tomllib

    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = [p.strip().removeprefix("pipeline.") for layer in contract["layers"] for p in layer.split("|")]
    readme = (ROOT / "README.md").read_text()
    order = readme[readme.index("Imports point down this order"):readme.index("`sizing_core/` imports nothing")]
    positions = []
    for name in layers:
        hit = re.search(rf"`(pipeline/)?{name}/?`", order)
        assert hit, f"README's layer order does not name {name}"
        positions.append(hit.start())
    assert positions == sorted(positions), list(zip(layers, positions, strict=True))
