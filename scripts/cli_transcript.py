#!/usr/bin/env python3
"""Regenerate the newcomer transcript at the end of ``docs/cli.md`` by running the commands (100 columns).

    .venv/bin/vramlab run > /tmp/run.txt      # first: a run into the default data directory
    .venv/bin/python scripts/cli_transcript.py /tmp/run.txt

Everything between the two ``<!-- transcript -->`` markers is replaced by the commands and their real output.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
BEGIN, END = "<!-- transcript: begin -->", "<!-- transcript: end -->"
COMMANDS = (
    "vramlab --version",
    "vramlab models | head -12",
    "vramlab size qwen3-8b --contexts 8k,32k,128k",
    "vramlab size kimi-k3.1-pr",
    "vramlab fit gpt-oss-20b --gpu rtx-4090",
    "vramlab fit llama-3.1-70b --gpu H100 --format FP8",
    "vramlab fit qwen3-8b --gpu h200 --format q4km",
    "vramlab fit qwen3-8b --gpu h100 --format q4kz",
    "vramlab gpus | head -16",
    "vramlab gpus H100:8 --max-price 3",
    "vramlab cheapest llama-3.1-70b",
    "vramlab cheapest deepseek-v3 --single-machine --top 5",
    "vramlab cheapest qwen3-8b --json | head -12",
    # a new user's seven questions
    "vramlab size Qwen/Qwen3-235B-A22B --contexts 8k,32k",
    "vramlab cheapest meta-llama/Llama-3.3-70B-Instruct --context 32k --concurrency 8 --single-machine --top 5",
    "vramlab cheapest deepseek-v3 --top 3 --sort per-token",
    "vramlab history H100 | head -14",
    "vramlab gpus H100 | head -10",
    "vramlab fit qwen3-8b --gpu H100:2 --format bf16 | head -3",
    "vramlab fit openai/gpt-oss-120b --gpu rtx-4090 --offload",
    "vramlab fit qwen3-8b --gpu h100 --format bf16 --context 128k --rope-scaling yarn:4:32k | tail -9",
    "vramlab size Qwen/Qwen9-1T",
    # questions answered GPU first, side by side, with the filters people ask for
    "vramlab models --fits rtx-4090 | head -14",
    "vramlab compare llama-3.1-70b --gpu h100 --gpu a100-80gb-sxm --gpu l40s --gpu rtx-4090",
    "vramlab compare qwen3-8b --gpu h100 --gpu l40s --gpu rtx-4090 --rate 2 --input-tokens 1000 --output-tokens 200",
    "vramlab cheapest qwen3-8b --max-gpus 1 --available --top 3",
    "vramlab gpus H100 --max-price 2.5",
)


def run(command: str) -> str:
    script = Path(sys.executable).parent / "vramlab"
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    shell = command.replace("vramlab", shlex.quote(str(script)), 1)
    proc = subprocess.run(shell, shell=True, cwd=ROOT, env=env, capture_output=True, text=True)
    return (proc.stdout + proc.stderr).rstrip()


def main(argv: list[str]) -> None:
    blocks = []
    if argv:
        blocks.append(f"$ vramlab run\n{Path(argv[0]).read_text().rstrip()}")
    blocks += [f"$ {command}\n{run(command)}" for command in COMMANDS]
    body = "\n\n".join(blocks)
    body = "\n".join(line.rstrip() for line in body.splitlines())
    body = body.replace(str(Path(sys.executable).parent.parent), "~/vramlab/.venv")  # a venv elsewhere (worktrees)
    body = body.replace(str(ROOT), "~/vramlab")  # no machine paths in the docs
    text = DOC.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n```text\n{body}\n```\n{END}{tail}")


if __name__ == "__main__":
    main(sys.argv[1:])
