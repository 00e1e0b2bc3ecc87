"""The static report of a replay snapshot with a real price history, checked as a person would see it: in headless
Chromium (the Debian package), driven by Playwright. Expected counts come from the snapshot's files, read here with
DuckDB SQL written for the test."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from pipeline.exports.publish import check_snapshot
from pipeline.report import render_report
from pipeline.report.i18n import catalog

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DOCS = Path(__file__).resolve().parent.parent / "docs"
CLASSES = """CASE WHEN allocation IN ('on_demand', 'reference_on_demand') THEN 'on_demand'
                 WHEN allocation IN ('spot', 'interruptible', 'preemptible') THEN 'spot'
                 WHEN allocation LIKE 'marketplace%' OR allocation = 'reference_marketplace' THEN 'marketplace'
            END"""  # a reference price (gpu-price-feed's dated record) is drawn with the class it records


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Backfill the replay series, then run the whole graph on the current recordings; the published snapshot."""
    import dagster as dg
    from dagster_duckdb import DuckDBResource

    from pipeline.definitions import ALL_ASSETS
    from pipeline.ops.replay_backfill import backfill_history
    from pipeline.resources import VramlabSettings

    tmp = tmp_path_factory.mktemp("report")
    db = tmp / "vramlab.duckdb"
    assert [s.status for s in backfill_history(tmp, db)] == ["loaded"]
    result = dg.materialize(ALL_ASSETS, resources={"vramlab": VramlabSettings(data_dir=str(tmp), db_path=str(db)),
                                                   "duckdb": DuckDBResource(database=str(db))})
    assert result.success
    return (tmp / "exports" / "latest").resolve()


def _where(path: Path, table: str) -> str:
    """What the board and the charts show: eligible rows (the published verdict) of an hourly class."""
    return " AND ".join(["coalesce(eligible, false)", f"({CLASSES}) IS NOT NULL"])


def expected(snapshot: Path) -> dict:
    con = duckdb.connect()
    offers = f"'{snapshot}/offers_current.parquet'"
    obs = f"read_parquet('{snapshot}/price_observations/*/*.parquet')"
    board_gpus = con.execute(f"SELECT count(DISTINCT gpu_id) FROM {offers} WHERE {_where(snapshot, offers)}"
                             ).fetchall()[0][0]
    # observations the quality stage rejected are not drawn: by the eligible stamp each got when observed,
    # else (rows without it) by the offer's current quarantine and duplicate verdict (staleness: not the past's)
    kept = (f"(SELECT * REPLACE (coalesce(h.eligible, o.offer_key IS NULL OR (NOT coalesce(o.quarantined, false) "
            f"AND o.duplicate_of IS NULL)) AS eligible) FROM {obs} h LEFT JOIN (SELECT offer_key, quarantined, "
            f"duplicate_of FROM {offers}) o USING (offer_key))")
    kept = f"(SELECT * FROM {kept} WHERE {_where(snapshot, kept)})"
    providers = dict(con.execute(f"""SELECT gpu_id, count(DISTINCT provider) FILTER (WHERE {CLASSES} = 'on_demand')
                                     FROM {kept} GROUP BY gpu_id""").fetchall())
    spot = {r[0] for r in con.execute(f"SELECT DISTINCT gpu_id FROM {kept} WHERE {CLASSES} <> 'on_demand'"
                                      ).fetchall()}
    series = {g: (int(n > 0) * 2 + (g in spot), n) for g, n in providers.items()}  # (shown, providers)
    # per (GPU, on-demand provider): the cheapest price of each UTC day, in day order
    runs = con.execute(f"""SELECT gpu_id, provider, list(price ORDER BY day) FROM (
                               SELECT gpu_id, provider, (observed_at AT TIME ZONE 'UTC')::DATE AS day,
                                      round(min(price_per_gpu_hour_usd), 4) AS price FROM {kept}
                               WHERE {CLASSES} = 'on_demand' GROUP BY ALL)
                           GROUP BY ALL HAVING count(*) >= 3 ORDER BY ALL""").fetchall()
    # a real price history: three or more days, the price changing on every one of them
    moving = [r for r in runs if all(a != b for a, b in zip(r[2], r[2][1:], strict=False))]
    return {"board_gpus": board_gpus, "series": series, "moving": moving}


def test_report_is_published_inside_the_snapshot_and_listed_in_its_manifest(replayed: Path) -> None:
    manifest = json.loads((replayed / "manifest.json").read_text())
    index = json.loads((replayed / "index.json").read_text())
    ok = [m["id"] for m in index["models"] if m["status"] == "ok"]
    assert "report/index.html" in manifest["files"] and "report/prices.html" in manifest["files"]
    assert {f"report/models/{i}.html" for i in ok} <= set(manifest["files"])
    assert "report/static/chart.umd.min.js" in manifest["files"]
    assert check_snapshot(replayed) == []
    assert (replayed.parent / "latest" / "report" / "index.html").is_file()
    # no page refers to anything off the disk (no CDN, no web fonts)
    for page in (replayed / "report").rglob("*.html"):
        text = page.read_text()
        assert "http://" not in text.replace('xmlns="http://', "") and "//cdn" not in text, page
        assert "<script src=\"http" not in text and "<link rel=\"stylesheet\" href=\"http" not in text


def test_english_and_german_share_message_ids_and_format_numbers_per_locale(replayed: Path, tmp_path: Path) -> None:
    assert set(catalog("en")) == set(catalog("de"))
    out = render_report(replayed, out=tmp_path / "de", lang="de")
    page = (out / "models" / "kimi-k3.1-pro.html").read_text()
    kimi = json.loads((replayed / "models" / "kimi-k3.1-pro.json").read_text())
    assert '<html lang="de">' in page and "Wenigste GPUs" in page
    # 2780.110363392 B parameters -> "2.780,1" in German (thousands dot, decimal comma), "2,780.1" in English
    assert "2.780,1 Mrd. Parameter" in page
    assert "2,780.1B parameters" in (replayed / "report" / "models" / "kimi-k3.1-pro.html").read_text()
    assert kimi["parameters"] == pytest.approx(2780.110363392)
    with pytest.raises(ValueError, match="report language"):
        render_report(replayed, out=tmp_path / "xx", lang="xx")


def test_report_in_headless_chromium(replayed: Path, tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run does it)")
    from playwright.sync_api import sync_playwright

    report = replayed / "report"
    want = expected(replayed)
    index = json.loads((replayed / "index.json").read_text())
    kimi = json.loads((replayed / "models" / "kimi-k3.1-pro.json").read_text())
    shots = DOCS if os.environ.get("VRAMLAB_UPDATE_SCREENSHOTS") else tmp_path
    external, problems = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True,
            viewport={"width": 1280, "height": 900},
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"])

        def guard(route) -> None:  # noqa: ANN001
            if route.request.url.startswith("file://"):
                route.continue_()
            else:
                external.append(route.request.url)
                route.abort()

        browser.route("**/*", guard)
        page = browser.new_page()
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

        page.goto((report / "index.html").as_uri())
        assert page.locator("#models tbody tr").count() == len(index["models"])
        assert page.locator("#models tbody tr a").first.is_visible()
        page.screenshot(path=str(shots / "report-index.png"))

        page.goto((report / "models" / "kimi-k3.1-pro.html").as_uri())
        assert page.locator("h1").inner_text().startswith("Kimi K3.1 Pro")
        assert page.locator("#kv tbody tr").count() == len(kimi["kvCacheGiBPerRequest"])
        assert page.locator("#gpus tbody tr").count() == len(kimi["gpusNeeded"]["gpus"])
        assert page.locator("#weights tbody tr").count() == 4  # native (NVFP4) + BF16 + 8-bit + 4-bit, as seed 003
        assert page.locator("#setups tbody tr").count() == len(kimi["cheapestSetups"]) > 0
        assert page.locator("#launch").inner_text().startswith("vllm serve") or kimi["launch"]["engine"] != "vllm"
        page.screenshot(path=str(shots / "report-model.png"))

        page.goto((report / "prices.html").as_uri())
        assert page.locator("#board tbody tr").count() == want["board_gpus"]
        drawn = page.evaluate("""() => [...document.querySelectorAll('canvas[data-gpu]')].map(c => {
            const chart = Chart.getChart(c);
            const pixels = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let inked = 0;
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) inked++;
            const sets = chart.data.datasets;
            return {gpu: c.dataset.gpu, shown: sets.filter(d => d.role !== 'provider' && d.data.length).length,
                    providers: sets.filter(d => d.role === 'provider').length,
                    hidden: sets.filter(d => d.role === 'provider' && !d.hidden).length === 0,
                    inked: inked, width: c.width,
                    points: sets.filter(d => d.role === 'provider').map(d => d.data.filter(p => p.y !== null)
                                                                                 .map(p => p.y))};
        })""")
        # one clear chart per GPU: the cheapest line and the spread band (+ spot dashed), providers on demand
        assert {d["gpu"]: (d["shown"], d["providers"]) for d in drawn} == {
            g: v for g, v in want["series"].items() if v[1] > 0 or v[0] > 0}
        assert all(d["shown"] <= 3 and d["hidden"] for d in drawn)
        assert all(d["inked"] > 2000 and d["width"] > 300 for d in drawn), [d["gpu"] for d in drawn if d["inked"] < 2000]
        # a GPU's chart holds a provider's price moving over three or more real days (Scaleway's H100 PCIe in the
        # gpu-price-feed's daily records: 3.2655, 3.2612, 3.2922, ... $/GPU-h), shown on demand
        assert want["moving"], "no provider with three days of changing prices in price_observations"
        charts = {d["gpu"]: d for d in drawn}
        shown = [m for m in want["moving"] if m[0] in charts and m[2] in charts[m[0]]["points"]]
        assert shown, want["moving"]
        target = min(shown, key=lambda m: m[0] != "h100-pcie")[0]
        page.locator(f"button.show-providers[data-gpu='{target}']").click()
        visible = page.evaluate(f"""() => Chart.getChart(document.querySelector("canvas[data-gpu='{target}']"))
            .data.datasets.filter(d => d.role === 'provider' && !d.hidden).length""")
        assert visible == charts[target]["providers"] > 0
        section = page.locator(f"#gpu-{target}")
        section.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(shots / "report-prices.png"))
        browser.close()
    assert problems == []
    assert external == []


def _day(ms: float) -> str:
    """A chart point's x (ms since the epoch, 00:00 UTC of its day) as its ISO day."""
    return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()


def _usd(text: str) -> float:
    """``$1,234.56`` as the English report writes money, back to a number."""
    return float(text.strip().lstrip("$").replace(",", ""))


def test_model_page_switches_loads_in_headless_chromium(replayed: Path, tmp_path: Path) -> None:
    """A reader picks a load (requests x context) and an order on a model page, without a server: the table shown
    changes to that load's published answer."""
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run does it)")
    from playwright.sync_api import sync_playwright

    model = json.loads((replayed / "models" / "deepseek-v3.json").read_text())
    loads = model["cheapestSetupsByLoad"]
    # DeepSeek-V3 reaches 163,840 tokens: 8K x 1, 32K x 8, 128K x 1 and its maximum x 1 (config)
    assert [(a["context"], a["concurrency"]) for a in loads] == [(8192, 1), (32768, 8), (131072, 1), (163840, 1)]
    second = loads[1]
    assert second["byPrice"] and second["byCostPerToken"]
    external, problems = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, viewport={"width": 1280, "height": 900},
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"])
        browser.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else (
            external.append(route.request.url), route.abort()))
        page = browser.new_page()
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.goto((replayed / "report" / "models" / "deepseek-v3.html").as_uri())

        def shown() -> dict:
            return page.evaluate("""() => {
                const visible = [...document.querySelectorAll('#loads .load-answer')].filter(el => !el.hidden);
                const el = visible[0];
                return {count: visible.length, context: +el.dataset.context, concurrency: +el.dataset.concurrency,
                        sort: el.dataset.sort,
                        hour: [...el.querySelectorAll('tbody tr td:nth-of-type(1)')].map(td => td.innerText),
                        token: [...el.querySelectorAll('tbody tr td.token-cost')].map(td => td.innerText)};
            }""")

        first = shown()
        assert (first["count"], first["context"], first["concurrency"], first["sort"]) == (1, 8192, 1, "price")
        assert [_usd(h) for h in first["hour"]] == [s["pricePerHour"] for s in loads[0]["byPrice"]]
        page.get_by_role("button", name="8 × 32K").click()
        after = shown()
        assert (after["count"], after["context"], after["concurrency"]) == (1, 32768, 8)
        # the numbers a reader now sees are the 32K x 8 answer's, not the 8K one's
        assert [_usd(h) for h in after["hour"]] == [s["pricePerHour"] for s in second["byPrice"]]
        assert [_usd(c) for c in after["token"]] == pytest.approx(
            [s["usdPerMillionTokensAtLoad"] for s in second["byPrice"]], abs=0.006)
        assert after["token"] != first["token"]
        page.get_by_role("button", name="By cost per token").click()
        ranked = shown()
        assert (ranked["context"], ranked["sort"]) == (32768, "token")
        costs = [_usd(c) for c in ranked["token"]]
        assert costs == pytest.approx([s["usdPerMillionTokensAtLoad"] for s in second["byCostPerToken"]], abs=0.006)
        # lowest cost per token first (a multi-machine setup ranked at 1.25x its cost, as by price)
        ranks = [s["usdPerMillionTokensAtLoad"] * (1.25 if s["nodes"] > 1 else 1) for s in second["byCostPerToken"]]
        assert ranks == sorted(ranks)
        browser.close()
    assert problems == [] and external == []


def test_h100_chart_draws_the_cheapest_spot_per_day_and_marks_provider_changes(replayed: Path, tmp_path: Path) -> None:
    """The H100 chart as a reader's browser holds it: its spot/marketplace line is, per day, the cheapest spot or
    marketplace price of any provider (the day table under the chart and a DuckDB query over the published history
    say the same; on the snapshot's day also the provider table's cheapest spot/marketplace cell), its points are in
    date order, a day whose providers differ from the day before is marked and not joined by a line, and no chart
    repeats a date on its axis."""
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run does it)")
    from playwright.sync_api import sync_playwright

    con = duckdb.connect()
    obs = f"read_parquet('{replayed}/price_observations/*/*.parquet', hive_partitioning = false)"
    # by hand: eligible (as stamped when observed) spot/marketplace prices of the H100 SXM, cheapest per UTC day
    want_spot = dict(con.execute(f"""
        SELECT strftime((observed_at AT TIME ZONE 'UTC')::DATE, '%Y-%m-%d'), round(min(price_per_gpu_hour_usd), 4)
        FROM {obs} WHERE gpu_id = 'h100' AND coalesce(eligible, false) AND ({CLASSES}) IN ('spot', 'marketplace')
          AND price_per_gpu_hour_usd > 0 GROUP BY 1""").fetchall())
    providers = dict(con.execute(f"""
        SELECT strftime((observed_at AT TIME ZONE 'UTC')::DATE, '%Y-%m-%d'), list(DISTINCT provider ORDER BY provider)
        FROM {obs} WHERE gpu_id = 'h100' AND coalesce(eligible, false) AND ({CLASSES}) = 'on_demand'
          AND price_per_gpu_hour_usd > 0 GROUP BY 1""").fetchall())
    assert len(want_spot) >= 2 and len(providers) >= 2
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, viewport={"width": 1280, "height": 900},
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"])
        browser.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                      else route.abort())
        page = browser.new_page()
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.goto((replayed / "report" / "prices.html").as_uri())
        got = page.evaluate("""() => {
            const chart = Chart.getChart(document.querySelector("canvas[data-gpu='h100']"));
            const sets = chart.data.datasets;
            const of = role => sets.findIndex(d => d.role === role);
            const line = i => sets[i].data.map((p, j) => ({x: p.x, y: p.y, changed: !!p.changed,
                style: chart.getDatasetMeta(i).data[j].options.pointStyle}));
            const table = [...document.querySelectorAll("table.history-table[data-gpu='h100'] tbody tr")].map(tr => ({
                day: tr.dataset.day, changed: tr.dataset.changed === 'true',
                spot: tr.querySelector('td.spot').dataset.price}));
            const cells = [...document.querySelectorAll("table.provider-table[data-gpu='h100'] tbody tr")].flatMap(tr =>
                [...tr.querySelectorAll('td.num')].slice(1, 3).map(td => td.innerText.trim()));
            const ticks = [...document.querySelectorAll('canvas[data-gpu]')].map(c => {
                const x = Chart.getChart(c).scales.x;
                return {gpu: c.dataset.gpu, labels: x.ticks.map(t => t.label)};
            });
            return {spot: line(of('spot')), cheapest: line(of('cheapest')), table, cells, ticks};
        }""")
        browser.close()
    assert problems == []
    spot = [p for p in got["spot"] if p["y"] is not None]
    assert [p["x"] for p in spot] == sorted(p["x"] for p in spot)  # date order
    drawn = {_day(p["x"]): p["y"] for p in spot}
    assert drawn == want_spot
    # the day table under the chart says the same, day by day
    assert {r["day"]: float(r["spot"]) for r in got["table"] if r["spot"]} == drawn
    # the snapshot's day: the provider table's cheapest spot / marketplace cell
    cells = [_usd(c.split()[0]) for c in got["cells"] if c.startswith("$")]
    assert min(cells) == pytest.approx(drawn[max(drawn)], abs=0.005)
    # a day with other providers than the day before: marked in the chart (a triangle) and the table, and the
    # line is broken before it (a null point), so 12.29 (one provider) -> 1.29 (many) is no drawn price move
    days = sorted(providers)
    changed = {d for a, d in zip(days, days[1:], strict=False) if providers[a] != providers[d]}
    assert changed
    points = got["cheapest"]
    marked = {_day(p["x"]) for p in points if p["changed"]}
    assert marked == changed
    assert all(p["style"] == "triangle" for p in points if p["changed"])
    assert all(points[i - 1]["y"] is None for i, p in enumerate(points) if p["changed"])
    assert {r["day"] for r in got["table"] if r["changed"]} == changed
    # whole-day ticks: no chart repeats a date (a one-day chart used to print its day several times)
    assert all(len(t["labels"]) == len(set(t["labels"])) >= 2 for t in got["ticks"]), got["ticks"]
