"""All GPU rows of every SkyPilot catalog CSV (shared/reference/prices/skypilot_catalog, replayed from
pipeline/replay/prices/skypilot-*) map to a catalog GPU id, or are listed with a reason in the committed
pipeline/sources/data/unmapped.csv. The mapped share is printed and must be at least 98%."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.sources.base import RawPart, RawPayload
from pipeline.sources.replay import REPLAY_ROOT
from pipeline.sources.skypilot import SOURCES

UNMAPPED = Path(__file__).resolve().parent.parent / "pipeline" / "sources" / "data" / "unmapped.csv"


def test_skypilot_rows_map_to_catalog_ids(capsys) -> None:  # type: ignore[no-untyped-def]
    listed = {(r["source"], r["accelerator_name"], r["instance_type"]) for r in csv.DictReader(UNMAPPED.open())}
    assert all(r["reason"] for r in csv.DictReader(UNMAPPED.open()))
    rows = mapped = 0
    unmapped = set()
    for source in SOURCES:
        body = (REPLAY_ROOT / "prices" / source.name / "vms.csv").read_bytes()
        raw = RawPayload(source=source.name, fetched_at=datetime.now(UTC),
                         parts=(RawPart(url=source.endpoint, status=200, body=body),))
        text = body.decode("utf-8-sig")
        gpu_rows = [r for r in csv.DictReader(text.splitlines()) if r["AcceleratorName"]]
        result = source.parse(raw)
        assert not result.rejected, result.rejected[:3]
        rows += len(gpu_rows)
        by_key = {(o.instance_type, o.region, o.zone): o for o in result.offers}
        for r in gpu_rows:
            offer = by_key.get((r["InstanceType"], r["Region"] or None, r.get("AvailabilityZone") or None))
            if offer is not None and offer.gpu_id:
                mapped += 1
            else:
                unmapped.add((source.name, r["AcceleratorName"], r["InstanceType"]))
    share = mapped / rows
    with capsys.disabled():
        print(f"\nSkyPilot catalog GPU rows: {rows}, mapped to a catalog id: {mapped} ({share:.2%})")
    assert unmapped <= listed, f"unmapped rows missing from {UNMAPPED.name}: {sorted(unmapped)[:10]}"
    assert share >= 0.98


def test_gpu_info_is_parsed_by_one_thread_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The price sources parse in threads, and CPython 3.11's AST constructor keeps its recursion depth in shared
    state: two ``ast.literal_eval`` at once can raise "SystemError: AST constructor recursion depth mismatch"
    (python/cpython#106905; it failed one CI run's skypilot-shadeform parse). Eight threads parse distinct GpuInfo
    texts through a literal_eval that records how many calls overlap: never more than one."""
    import ast
    import threading
    import time

    from pipeline.sources import skypilot

    inside, most, guard = [0], [0], threading.Lock()
    real = ast.literal_eval

    def watched(text: str) -> object:
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.002)  # a thread switch in the middle, as the GC can cause in the real constructor
        try:
            return real(text)
        finally:
            with guard:
                inside[0] -= 1

    monkeypatch.setattr(skypilot.ast, "literal_eval", watched)
    skypilot._gpu_info.cache_clear()
    texts = [[f"{{'Gpus': [{{'Name': 'H100', 'Count': {k}, 'MemoryInfo': {{'SizeInMiB': {i}}}}}]}}" for i in range(20)]
             for k in range(8)]
    threads = [threading.Thread(target=lambda batch: [skypilot._gpu_info(t) for t in batch], args=(batch,))
               for batch in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    skypilot._gpu_info.cache_clear()
    assert most[0] == 1
    assert skypilot._gpu_info(texts[3][5])["Gpus"][0]["MemoryInfo"]["SizeInMiB"] == 5
