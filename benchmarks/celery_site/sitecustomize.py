"""Benchmark-only start-up hook for the Celery scale run (``benchmarks/scale_celery.py`` puts this folder on the
workers' ``PYTHONPATH``; nothing else does). With ``VRAMLAB_BENCH_SITE=1``, the price client of every process
serves the SkyPilot catalogs 10% cheaper (``run_benchmarks._changed_prices_client``) once
``$VRAMLAB_DATA_DIR/.bench-prices-changed`` exists: the incremental run's price change, reaching the workers."""

import os

if os.environ.get("VRAMLAB_BENCH_SITE") == "1":
    from pathlib import Path

    def _install() -> None:
        import run_benchmarks

        import pipeline.assets.raw as raw
        import pipeline.ingest.prices as prices

        plain = prices.client_for
        run_benchmarks._changed_prices_client()  # replaces prices.client_for and raw.client_for
        changed = prices.client_for

        def client_for(*args, **kwargs):  # type: ignore[no-untyped-def]
            flag = Path(os.environ.get("VRAMLAB_DATA_DIR", "data")) / ".bench-prices-changed"
            return (changed if flag.exists() else plain)(*args, **kwargs)

        prices.client_for = raw.client_for = client_for

    try:
        _install()
    except ImportError:  # a process without the project on its path (celery's own helpers)
        pass
