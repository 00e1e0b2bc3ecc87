"""Dagster code location for vramlab (``workspace.yaml`` and ``[tool.dg]`` both point here).

Thin glue only: assets call the pipeline's plain functions.
"""

import dagster as dg

from .run import resolve_data_dir, size_bundled_models, write_sizing_report


@dg.asset(group_name="out", description="Memory report (weights per format, KV cache, state) of every bundled model.")
def out__bundled_model_sizing(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    reports, failures = size_bundled_models()
    path = write_sizing_report(resolve_data_dir(), reports, failures)
    for name, why in failures.items():
        context.log.warning(f"{name}: {why}")
    return dg.MaterializeResult(metadata={
        "models": len(reports), "failures": len(failures), "path": dg.MetadataValue.path(str(path)),
    })


defs = dg.Definitions(assets=[out__bundled_model_sizing])
