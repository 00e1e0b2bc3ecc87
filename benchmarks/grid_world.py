"""CPU and wall time of ``compute_grid`` alone on the first N models of the scale run's world, in ``out__sizing``'s
chunks of models, on the whole GPU catalog.

The models are the bundled real configs (``tests/helpers.py``), then the generated variants of
``benchmarks/hub_world.py``'s world in file order, up to N. The world folder is built when it has no manifest.

    python benchmarks/grid_world.py 2000 /tmp/world [label]

The machine is shared: compare the CPU seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers import all_config_names, arch  # noqa: E402

from benchmarks.hub_world import build  # noqa: E402
from pipeline.assets.out import GRID_CHUNK_MODELS  # noqa: E402
from pipeline.compute.grid import compute_grid  # noqa: E402
from sizing_core import parse_config  # noqa: E402
from sizing_core.gpus import catalog  # noqa: E402


def main() -> None:
    n, folder = int(sys.argv[1]), Path(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else "grid"
    if not (folder / "manifest.json").exists():
        build(folder, n)
    models = {name: ("r", arch(name)) for name in all_config_names()}
    for p in sorted((folder / "configs").glob("*.json")):
        if p.name.endswith(".hf_quant_config.json") or len(models) >= n:
            continue
        q = p.with_name(p.stem + ".hf_quant_config.json")
        quant = json.loads(q.read_text()) if q.exists() else None
        models[p.stem] = ("r", parse_config(p.stem, json.loads(p.read_text()), quant))
    gpus, items = list(catalog().values()), list(models.items())
    cpu, wall, rows = time.process_time(), time.time(), 0
    for i in range(0, len(items), GRID_CHUNK_MODELS):
        rows += compute_grid(dict(items[i:i + GRID_CHUNK_MODELS]), gpus).height
    print(f"{label}: {len(models)} models, {rows:,} rows: grid {time.time() - wall:.1f} s wall, "
          f"{time.process_time() - cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
