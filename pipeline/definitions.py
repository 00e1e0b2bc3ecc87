"""Dagster code location for vramlab (``workspace.yaml`` and ``[tool.dg]`` both point here). Thin glue: the assets
call the pipeline's plain functions; policies (resources, schedule) are applied here, in one place."""

import dagster as dg

from pipeline.assets.core import CORE_ASSETS
from pipeline.assets.out import OUT_ASSETS
from pipeline.assets.quality import QUALITY_ASSETS
from pipeline.assets.raw import RAW_ASSETS
from pipeline.resources import default_resources
from pipeline.schedules import hourly_refresh

ALL_ASSETS = [*RAW_ASSETS, *CORE_ASSETS, *QUALITY_ASSETS, *OUT_ASSETS]

defs = dg.Definitions(assets=ALL_ASSETS, schedules=[hourly_refresh], resources=default_resources())
