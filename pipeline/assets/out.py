"""Out layer: what consumers read (sizing, cheapest setups, published snapshots)."""

import dagster as dg

from ..resources import VramlabSettings
from ..run import size_bundled_models, write_sizing_report

OUT_GROUP = "out"


@dg.asset(name="out__bundled_model_sizing", group_name=OUT_GROUP, kinds={"python"}, tags={"vramlab/layer": "out"},
          description="Memory report (weights per format, KV cache, state) of every bundled model.")
def out__bundled_model_sizing(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    reports, failures = size_bundled_models()
    path = write_sizing_report(vramlab.settings.data_dir, reports, failures)
    for name, why in failures.items():
        context.log.warning(f"{name}: {why}")
    return dg.MaterializeResult(metadata={"models": len(reports), "failures": len(failures),
                                          "path": dg.MetadataValue.path(str(path))})


OUT_ASSETS = [out__bundled_model_sizing]
