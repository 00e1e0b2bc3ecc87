"""Text from outside is data on the terminal: markup and escape sequences in provider strings reach every table
command and are shown literally, never interpreted.

The fault as found: a region string holding rich markup (``[/bold]``) made ``vramlab gpus`` exit with a MarkupError
traceback; one holding escape sequences (``ESC]0;...BEL`` sets the terminal title, ``ESC[2J`` clears the screen)
was printed raw by ``vramlab cheapest``. Output is piped here, so rich itself writes no escape sequence: any ESC
byte in the output came from the data.
"""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path

import pytest
from test_cli_newcomer import write_snapshot
from test_cli_size import vramlab

from pipeline.sources.replay import REPLAY_ROOT

TITLE, CLEAR, BELL = "\x1b]0;pwned\x07", "\x1b[2J", "\x07"
MARKUP = "[/bold][red]"


def hostile(name: str) -> str:
    return f"{name}{MARKUP}{TITLE}{CLEAR}\x9b31m"


OFFERS = [
    {"provider": hostile("alpha"), "instance_type": hostile("a-h100"), "region": hostile("us-east-1"),
     "gpu_id": "h100", "gpu_count": 1, "price_per_hour_usd": 2.00, "allocation": "on_demand"},
    {"provider": hostile("beta"), "instance_type": hostile("b-a10"), "region": hostile("eu-west-1"),
     "gpu_id": "a10", "gpu_count": 1, "price_per_hour_usd": 0.75, "allocation": "on_demand"},
    {"provider": hostile("gamma"), "instance_type": hostile("g-h100"), "region": hostile("us-west-2"),
     "gpu_id": "h100", "gpu_count": 1, "price_per_hour_usd": 1.10, "allocation": "spot"},
]


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    write_snapshot(root, OFFERS)
    return root


def assert_inert(out: subprocess.CompletedProcess[str], *shown: str) -> None:
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and BELL not in stream and "\x9b" not in stream, repr(stream[:400])
    for text in shown:  # the data itself is there, markup shown as the characters it is
        assert text in out.stdout, out.stdout[-1500:]


@pytest.mark.parametrize("args, shown", [
    (("gpus", "A10"), ("beta[/bold][red]",)),
    (("gpus", "H100"), ("alpha[/bold][red]",)),
    (("gpus",), ("beta[/bold][red]",)),
    (("gpus", "H100", "--spot"), ("gamma[/bold][red]",)),
    (("fit", "qwen3-8b", "--gpu", "a10", "--format", "q4_k_m"), ("beta[/bold][red]",)),
    (("fit", "qwen3-8b", "--gpu", "h100"), ()),
    (("cheapest", "qwen3-8b", "--gpu", "a10"), ("beta[/bol",)),  # the provider column is shortened on 100 columns
])
def test_table_commands_show_provider_text_literally(hostile_dir: Path, args: tuple[str, ...],
                                                      shown: tuple[str, ...]) -> None:
    assert_inert(vramlab(*args, "--data-dir", str(hostile_dir)), *shown)


def test_sources_parse_shows_a_hostile_payload_literally(tmp_path: Path) -> None:
    """The payload path: a recorded SkyPilot catalog whose region column holds markup and escapes."""
    rows = list(csv.DictReader(io.StringIO((REPLAY_ROOT / "prices" / "skypilot-runpod" / "vms.csv").read_text())))
    region = next(k for k in rows[0] if k.lower() == "region")
    for row in rows:
        row[region] = hostile(row[region] or "r")
    payload = tmp_path / "vms.csv"
    with payload.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert_inert(vramlab("sources", "parse", "skypilot-runpod", str(payload), "--data-dir", str(tmp_path)),
                 "[/bold][red]")


def test_an_error_quoting_outside_text_is_cleaned(tmp_path: Path) -> None:
    """A one-line error that quotes what the user (or a watchlist) gave keeps its meaning and loses the escapes."""
    out = vramlab("fit", f"no-such-model{TITLE}{CLEAR}", "--gpu", "h100", "--data-dir", str(tmp_path))
    assert out.returncode == 2 and "no-such-model" in out.stderr, out.stderr
    assert "\x1b" not in out.stderr and BELL not in out.stderr, repr(out.stderr)
