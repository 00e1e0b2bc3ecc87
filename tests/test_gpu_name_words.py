"""GPU names read as words (pipeline/sources/gpu_words.py, one table of variant words): tier words kept (RTX 5070 Ti
is not RTX 5070), NVLink an interconnect and never the NVL card, the form factor unknown where the listing does not
say it of a card sold in several, host RAM written into SkyPilot's GPU-memory field detected and the card still
named. Genuine rows: tests/fixtures/prices/skypilot-vast.v8.excerpt.csv (skypilot-catalog, cited in the fixtures
README) and the replayed SkyPilot catalogs (pipeline/replay/prices/skypilot-*)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.sources import PRICE_SOURCES
from pipeline.sources.base import RawPart, RawPayload
from pipeline.sources.gpu_names import resolve
from pipeline.sources.gpu_words import (
    KINDS,
    stated_form_factor,
    variant_words,
    with_instance_tiers,
    without_interconnects,
    words,
)
from pipeline.sources.replay import REPLAY_ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "prices"
AT = datetime(2026, 12, 4, tzinfo=UTC)


def _parse(source: str, body: bytes):  # type: ignore[no-untyped-def]
    raw = RawPayload(source=source, fetched_at=AT, parts=(RawPart(url="https://example.test/vms.csv", status=200,
                                                                   body=body),))
    return PRICE_SOURCES[source].parse(raw, None)


def _offers(source: str, body: bytes) -> dict[str, object]:
    return {o.instance_type: o for o in _parse(source, body).offers if o.allocation != "spot"}


def _replayed_rows(source: str) -> tuple[list[dict[str, str]], list[str]]:
    reader = csv.DictReader(io.StringIO((REPLAY_ROOT / "prices" / source / "vms.csv").read_text("utf-8-sig")))
    return list(reader), list(reader.fieldnames or [])


def _csv(rows: list[dict[str, str]], header: list[str]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


# ------------------------------------------------------------------------------------------ the table
def test_the_variant_word_table() -> None:
    table = variant_words()
    assert {w.kind for w in table.values()} == set(KINDS)
    assert {(w, table[w].kind) for w in ("ti", "super", "sxm", "pcie", "nvl", "nvlink", "nvswitch")} == {
        ("ti", "tier"), ("super", "tier"), ("sxm", "form_factor"), ("pcie", "form_factor"), ("nvl", "form_factor"),
        ("nvlink", "interconnect"), ("nvswitch", "interconnect")}
    assert words("2x-RTX_4070S_Ti-32-65536") == ["2", "x", "rtx", "4070", "s", "ti", "32", "65536"]
    assert words("n3-H100x8-NVLink") == ["n", "3", "h", "100", "x", "8", "nvlink"]


@pytest.mark.parametrize(("name", "instance", "named"), [
    ("RTX4060", "1x-RTX_4060_Ti-32-65536", "RTX4060 Ti"),
    ("RTX4070", "2x-RTX_4070S_Ti-32-65536", "RTX4070 S Ti"),
    ("RTX 4070 Ti", "2x-RTX_4070_Ti-32-65536", "RTX 4070 Ti"),  # the name has the word already
    ("H100", "1x-H100_SXM-32-65536", "H100"),  # a form factor word is no tier
    ("L40", "1x-L40S-32-65536", "L40 S"),
    ("RTX5090", "", "RTX5090"),
])
def test_tier_words_of_the_instance_join_the_name(name: str, instance: str, named: str) -> None:
    assert with_instance_tiers(name, instance) == named


def test_interconnect_words_state_no_form_factor() -> None:
    assert without_interconnects("n3-H100x8-NVLink") == "n3-H100x8-"
    assert without_interconnects("1x-H100_NVL-32-65536") == "1x-H100_NVL-32-65536"
    assert stated_form_factor("H100", "n3-H100x8-NVLink") is None
    assert stated_form_factor("H100", "1x-H100_NVL-32-65536") == "NVL"
    assert stated_form_factor("A100", "1x-A100_SXM4-32-65536") == "SXM"
    assert stated_form_factor("A100", "1x-A100_PCIE-SXM") is None  # words that disagree state nothing


# ------------------------------------------------------------------------------------------ genuine rows
def test_vast_rows_name_the_tier_and_the_form_factor_in_the_instance_only() -> None:
    """Genuine skypilot-catalog Vast rows. The 3060 Ti and 4070 Ti Super rows needed a map row each before (one per
    card); the instance's tier words now name every such card, and form factors come from the instance's words."""
    offers = _offers("skypilot-vast", (FIXTURES / "skypilot-vast.v8.excerpt.csv").read_bytes())
    got = {k: (o.gpu_id, o.form_factor) for k, o in offers.items()}  # type: ignore[attr-defined]
    assert got == {
        "1x-H100_NVL-32-65536": ("h100-nvl", "NVL"),
        "1x-H100_SXM-32-65536": ("h100", "SXM"),  # before: SXM by guess, now by the instance's word
        "2x-RTX_4070S_Ti-32-65536": ("rtx-4070-ti-super", "PCIe"),
        "1x-A100_PCIE-32-65536": ("a100-80gb-pcie", "PCIe"),
        "1x-RTX_4060_Ti-32-65536": ("rtx-4060-ti-16gb", "PCIe"),
        "2x-RTX_3060_Ti-32-65536": ("rtx-3060-ti", "PCIe"),
        "1x-A100_SXM4-32-65536": ("a100-40gb", "SXM"),
    }


def test_a_tier_the_accelerator_name_drops_is_kept() -> None:
    """The genuine Vast 4060 Ti row as a 5070 Ti (constructed: the same catalog's naming, RTX5070 on
    ``1x-RTX_5070_Ti-...``, 16 GB): before, the RTX 5070 12 GB; the 5070 Ti is another card."""
    rows = list(csv.DictReader(io.StringIO((FIXTURES / "skypilot-vast.v8.excerpt.csv").read_text())))
    [row] = [r for r in rows if r["InstanceType"] == "1x-RTX_4060_Ti-32-65536"]
    row = dict(row, InstanceType="1x-RTX_5070_Ti-32-65536", AcceleratorName="RTX5070",
               GpuInfo="{'Gpus': [{'Name': 'RTX5070', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 16303}}], "
                       "'TotalGpuMemoryInMiB': 16303}")
    [offer] = _offers("skypilot-vast", _csv([row], list(rows[0]))).values()
    assert offer.gpu_id == "rtx-5070-ti"  # type: ignore[attr-defined]
    assert resolve("vast", "RTX5070", "1x-RTX_5070_Ti-32-65536")[0] == "rtx-5070-ti"
    assert resolve("vast", "RTX5070", "1x-RTX_5070-32-65536")[0] == "rtx-5070"


def test_nvlink_in_an_instance_name_is_not_the_nvl_card() -> None:
    """Hyperstack's genuine ``n3-H100x8-NVLink`` row names the card ``H100-80G-PCIe-NVLink`` (the PCIe card, bridged);
    listed as plain ``H100`` (as other catalog versions and sources name it: constructed), the NVLink of the instance
    name was matched as NVL: an H100 NVL 94 GB. Now it is the H100 of unknown form factor."""
    rows, header = _replayed_rows("skypilot-hyperstack")
    [row] = [r for r in rows if r["InstanceType"] == "n3-H100x8-NVLink"][:1]
    assert _offers("skypilot-hyperstack", _csv([row], header))["n3-H100x8-NVLink"].gpu_id == "h100-pcie"  # type: ignore[attr-defined]
    plain = dict(row, AcceleratorName="H100")
    offer = _offers("skypilot-hyperstack", _csv([plain], header))["n3-H100x8-NVLink"]
    assert (offer.gpu_id, offer.form_factor, offer.gpu_link) == ("h100", "unknown", "unknown")  # type: ignore[attr-defined]


def test_an_interconnect_word_in_the_accelerator_name_names_no_card() -> None:
    """SkyPilot's genuine list of accelerator names (``catalogs/v8/common/accelerators.csv``) has Fluidstack's
    ``H100-NVLINK``: NVLink joins the cards, so the name is an H100 (80 GB, form factor not stated), not the NVL
    card; before, no map row named it and the offer was left unmapped. A row that names the interconnect keeps
    its own answer (Hyperstack's ``H100-80G-PCIe-NVLink`` is the PCIe card)."""
    listed = {r["AcceleratorName"]: r["Clouds"]
              for r in csv.DictReader(io.StringIO((FIXTURES / "skypilot-common.v8.accelerators.csv").read_text()))}
    assert listed["H100-NVLINK"] == "['Fluidstack']"
    assert resolve("fluidstack", "H100-NVLINK")[0] == "h100"
    assert resolve("fluidstack", "H100-NVLINK", "", 80.0)[0] == "h100"
    assert stated_form_factor("H100-NVLINK") is None
    assert resolve("hyperstack", "H100-80G-PCIe-NVLink")[0] == "h100-pcie"
    # every name of the list with an interconnect word maps as the same name without it
    for name in listed:
        if without_interconnects(name) != name:
            assert resolve("any", name)[0] == resolve("any", without_interconnects(name))[0] is not None


def test_a_form_factor_nobody_states_is_unknown() -> None:
    """Lium's genuine ``H100_1x`` row says only H100: before it was published as SXM (a guess: H100 is sold as SXM
    and PCIe); Nebius's ``gpu-h100-sxm_...`` says SXM in the instance."""
    lium_rows, lium_header = _replayed_rows("skypilot-lium")
    [lium] = [r for r in lium_rows if r["InstanceType"] == "H100_1x"][:1]
    offer = _offers("skypilot-lium", _csv([lium], lium_header))["H100_1x"]
    assert (offer.gpu_id, offer.form_factor) == ("h100", "unknown")  # type: ignore[attr-defined]
    nebius_rows, nebius_header = _replayed_rows("skypilot-nebius")
    [nebius] = [r for r in nebius_rows if r["InstanceType"] == "gpu-h100-sxm_1gpu-16vcpu-200gb"][:1]
    offer = _offers("skypilot-nebius", _csv([nebius], nebius_header))["gpu-h100-sxm_1gpu-16vcpu-200gb"]
    assert (offer.gpu_id, offer.form_factor) == ("h100", "SXM")  # type: ignore[attr-defined]


def test_host_ram_in_the_gpu_memory_field_is_detected_and_the_card_still_named() -> None:
    """The genuine Nebius ``gpu-h100-sxm_1gpu-16vcpu-200gb`` row (200 GiB of host RAM) as a catalog version that
    wrote the RAM into GpuInfo (constructed: SizeInMiB 204,800). Before: 200 GB fits no H100, so a clearly named H100
    stayed unmapped with 200 GB as its memory; now the figure is known for the RAM it is, and the name decides."""
    rows, header = _replayed_rows("skypilot-nebius")
    [row] = [r for r in rows if r["InstanceType"] == "gpu-h100-sxm_1gpu-16vcpu-200gb"][:1]
    row = dict(row, GpuInfo="{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': "
                            "{'SizeInMiB': 204800}}], 'TotalGpuMemoryInMiB': 204800}")
    offer = _offers("skypilot-nebius", _csv([row], header))["gpu-h100-sxm_1gpu-16vcpu-200gb"]
    assert (offer.gpu_id, offer.gpu_memory_gb, offer.gpu_memory_gb_marketed) == ("h100", None, 80)  # type: ignore[attr-defined]


def test_memory_that_is_neither_a_card_nor_the_host_ram_still_leaves_the_row_unmapped() -> None:
    """97.7 GiB named B300 on a machine with 60 vCPUs and its own RAM figure: no card, no RAM, so unmapped."""
    rows, header = _replayed_rows("skypilot-verda")
    [row] = [r for r in rows if r["InstanceType"] == "2B300.60V"]
    row = dict(row, GpuInfo="{'Gpus': [{'Name': 'B300', 'Count': 2, 'MemoryInfo': {'SizeInMiB': 100000}}], "
                            "'TotalGpuMemoryInMiB': 200000}")
    result = _parse("skypilot-verda", _csv([row], header))
    assert [o.gpu_id for o in result.offers] == [None] and result.unmapped
