"""The partitions of the partitioned graph: price sources are static partitions (the currency source
``ecb`` among them: its part carries its fetch), models are dynamic partitions added by discovery (``parts__models``
from the watchlist and the discovered models). Each partition is its own step and its own run: a backfill of
either set runs them side by side, each writing a Parquet part (``pipeline/storage/parts.py``)."""

import dagster as dg

from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES

PARTS_GROUP = "parts"
#: the dynamic partitions' name: ``instance.get_dynamic_partitions(MODELS)`` lists the registered model ids
MODELS = "models"

SOURCES = {CURRENCY_SOURCE.name: CURRENCY_SOURCE, **PRICE_SOURCES}
SOURCE_PARTITIONS = dg.StaticPartitionsDefinition(list(SOURCES))
MODEL_PARTITIONS = dg.DynamicPartitionsDefinition(name=MODELS)

#: a partition step that raises is tried again (a full disk, a lost worker): each attempt writes its own part,
#: atomically, so a retry never meets half of an earlier attempt's file
PARTITION_RETRY = dg.RetryPolicy(max_retries=2, delay=1)

#: partition runs: each step in its own process, forked from a server that preloaded the code location (as the
#: hourly job's executor, pipeline/schedules.py); several runs at once make the parallel writers
PARTS_EXECUTOR = dg.multiprocess_executor.configured(
    {"max_concurrent": 2, "start_method": {"forkserver": {"preload_modules": ["pipeline.definitions"]}}},
    name="parts_multiprocess")
