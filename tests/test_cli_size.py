"""``vramlab size``: the JSON contract other tools rely on, the readable table, and clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXTURES, ROOT, config_path

SEED = json.loads((FIXTURES / "seeds" / "004_kimi-k3.1-pro.json").read_text())


#: the installed console script next to the interpreter running the tests, as a user runs it
CONSOLE_SCRIPT = Path(sys.executable).parent / "vramlab"


def vramlab(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real ``vramlab`` console script on this tree (PYTHONPATH first), 100 columns, empty data dir
    unless ``--data-dir``/``VRAMLAB_DATA_DIR`` says otherwise."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", **(env or {})}
    return subprocess.run([str(CONSOLE_SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env=full)


def test_size_json_contract() -> None:
    out = vramlab("size", str(config_path("deepseek-ai__DeepSeek-V3")), "--tensor-parallel", "8",
                  "--contexts", "8192,32768", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("parameters", "activeParameters", "layers", "weightsGiB", "kvCacheBytesPerToken",
                "kvCacheGiBPerRequest", "recurrentStateGiBPerRequest"):
        assert key in data
    assert isinstance(data["parameters"], float) and isinstance(data["activeParameters"], float)
    assert data["layers"] == {"total": 61, "mla": 61}
    assert {"bf16", "fp16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "iq4_xs", "q3_k_m", "q2_k", "nvfp4",
            "mxfp4", "awq_int4", "native"} <= set(data["weightsGiB"])
    assert data["kvCacheBytesPerToken"]["bf16"] == 70_272 and isinstance(data["kvCacheBytesPerToken"]["fp8"], int)
    assert [r["context"] for r in data["kvCacheGiBPerRequest"]] == [8192, 32768]
    assert data["kvCacheGiBPerRequest"][0]["bf16"] == round(70_272 * 8192 / 2**30, 3)
    assert data["tensorParallel"] == 8


def test_size_registry_id_matches_seed_keys() -> None:
    out = vramlab("size", "kimi-k3.1-pro", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    number = (int, float)  # JSON numbers: the seed writes 106 and 27 without a fraction
    for key in ("parameters", "activeParameters", "recurrentStateGiBPerRequest"):
        assert isinstance(data[key], number) and isinstance(SEED[key], number)
    assert set(SEED["weightsGiB"]) <= set(data["weightsGiB"])
    assert all(set(row) >= {"context", "bf16", "fp8"} for row in data["kvCacheGiBPerRequest"])


def test_size_spec_file_path(tmp_path: Path) -> None:
    spec = json.loads((ROOT / "sizing_core" / "data" / "models" / "kimi-k3.1-pro.json").read_text())
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert json.loads(vramlab("size", str(path), "--json").stdout)["layers"]["mla"] == 24
    del spec["config"]["linear_attn_config"]
    path.write_text(json.dumps(spec))
    out = vramlab("size", str(path))
    assert out.returncode != 0 and "kimi-k3.1-pro: field 'linear_attn_config' is missing" in out.stderr


def test_size_reads_quant_sidecar_explicitly(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(config_path("nvidia__Qwen3-235B-A22B-NVFP4").read_text())
    plain = json.loads(vramlab("size", str(config), "--json").stdout)
    assert plain["nativeFormat"] == "bf16"  # no sidecar beside it under this name
    sidecar = str(config_path("nvidia__Qwen3-235B-A22B-NVFP4")).replace(".json", ".hf_quant_config.json")
    quant = json.loads(vramlab("size", str(config), "--quant-config", sidecar, "--json").stdout)
    assert quant["nativeFormat"] == "nvfp4" and quant["weightsGiB"]["native"] < plain["weightsGiB"]["native"] / 3


def test_size_with_safetensors_index_reports_checkpoint_size(tmp_path: Path) -> None:
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 16_060_522_496}, "weight_map": {}}))
    data = json.loads(vramlab("size", str(config_path("meta-llama__Llama-3.1-8B")), "--safetensors", str(index),
                              "--json").stdout)
    assert data["weightsGiB"]["native"] == round(16_060_522_496 / 2**30, 2)
    assert data["nativeSource"].startswith("checkpoint size")
    assert data["parameterCounts"]["checkpointBytes"] == 16_060_522_496
    assert data["parameterCounts"]["used"] == "config"


def test_size_table_output() -> None:
    out = vramlab("size", str(config_path("Qwen__Qwen3-Next-80B-A3B-Thinking")))
    assert out.returncode == 0, out.stderr
    assert "gated_deltanet" in out.stdout and "KV cache per request" in out.stdout and "q4_k_m" in out.stdout


def _config(tmp_path: Path, **changes: object) -> Path:
    data = json.loads(config_path("meta-llama__Llama-3.1-8B").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("changes", "message"), [
    ({"model_type": "not_a_model", "hidden_size": None}, "field 'hidden_size' is missing"),
    ({"model_type": "not_a_model", "num_hidden_layers": None}, "field 'num_hidden_layers' is missing"),
    ({"num_hidden_layers": "32"}, "field 'num_hidden_layers' must be an integer"),
    ({"hidden_size": -4096}, "field 'hidden_size' must be >= 1, got -4096"),
    ({"num_key_value_heads": "eight"}, "field 'num_key_value_heads' must be an integer"),
])
def test_malformed_config_exits_non_zero_with_one_line(tmp_path: Path, changes: dict, message: str) -> None:
    out = vramlab("size", str(_config(tmp_path, **changes)), "--json")
    assert out.returncode != 0
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr


def test_unknown_model_type_sizes_with_a_warning(tmp_path: Path) -> None:
    """A new model_type with the standard fields is sized by the generic rule; the CLI warns (stderr),
    exit status 0, and the JSON says where the architecture came from."""
    out = vramlab("size", str(_config(tmp_path, model_type="not_a_model")), "--json")
    assert out.returncode == 0, out.stderr
    assert "warning:" in out.stderr and "unknown model_type 'not_a_model'" in out.stderr
    report = json.loads(out.stdout)
    assert report["architectureSource"] == "generic"
    assert any("generic decoder rule" in n for n in report["notes"])
    # Same shapes as Llama-3.1-8B: 32 layers x 2 (K,V) x 8 KV heads x 128 x 2 bytes.
    assert report["kvCacheBytesPerToken"]["bf16"] == 32 * 2 * 8 * 128 * 2


def test_not_json_exits_non_zero(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{ this is not json")
    out = vramlab("size", str(path))
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1
    assert "not valid JSON" in out.stderr


def test_unknown_file_or_id(tmp_path: Path) -> None:
    out = vramlab("size", str(tmp_path / "missing.json"))
    assert out.returncode != 0 and "no such file or registry id" in out.stderr


def test_bad_flags() -> None:
    out = vramlab("size", "kimi-k3.1-pro", "--contexts", "8q")
    assert out.returncode == 2 and "--contexts" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = vramlab("size", "kimi-k3.1-pro", "--tensor-parallel", "0")
    assert out.returncode != 0 and "must be >= 1" in out.stderr


def test_unknown_native_format_gives_null_totals_not_a_traceback(tmp_path: Path) -> None:
    """A checkpoint whose quantization we cannot read (here a made-up method) still sizes: the native
    weights and the native totals are null, every other format has its total (before: TypeError None + float)."""
    path = _config(tmp_path, quantization_config={"quant_method": "not_a_method", "bits": 4})
    out = vramlab("size", str(path), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["weightsGiB"]["native"] is None and "not_a_method" in data["nativeUnsupported"]
    for row in data["totalsGiB"]:
        assert row["byFormat"]["native"] is None
        kv = next(r["bf16"] for r in data["kvCacheGiBPerRequest"] if r["context"] == row["context"])
        assert row["byFormat"]["bf16"] == round(data["weightsGiB"]["bf16"] + kv, 2)
    table = vramlab("size", str(path))
    assert table.returncode == 0 and "Traceback" not in table.stderr, table.stderr
