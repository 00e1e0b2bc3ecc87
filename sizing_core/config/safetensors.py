"""Safetensors headers: the exact tensor names, shapes and dtypes of a checkpoint, without its weights.

A ``.safetensors`` file starts with an 8-byte little-endian length ``N`` and ``N`` bytes of JSON: one entry per
tensor (``dtype``, ``shape``, ``data_offsets`` [begin, end) into the data that follows) plus an optional
``__metadata__`` object of strings (https://github.com/huggingface/safetensors, "Format"). The pipeline reads the
first bytes of each shard by HTTP range request; this module only parses bytes (no I/O).

Parameter counts from headers need care, because the file stores what the checkpoint format needs, not the
model's parameters:

- packed low-bit weights hold several values per element: gpt-oss MXFP4 ``*_blocks`` (U8, 2 values per byte),
  compressed-tensors ``weight_packed`` (I32: 8 four-bit values; U8: 2), GPTQ/AWQ ``qweight`` (I32: 8), ModelOpt
  NVFP4 ``weight`` stored as U8 next to a ``weight_scale`` (2 per byte);
- scales, zero points, ``g_idx``, ``weight_shape`` (quantization metadata) and ``position_ids`` buffers are not
  parameters;
- multi-token-prediction layers (``mtp.*``, or decoder layers past ``num_hidden_layers``) ship in the file but are
  not served by default; vision towers are reported apart too.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any

from pydantic import Field

from ..schema import CamelModel
from ..units import SAFETENSORS_DTYPE_BYTES

#: Largest JSON header accepted (the format's own reference implementation caps it at 100 MB).
MAX_HEADER_BYTES = 100_000_000

_QUANT_METADATA = re.compile(
    r"(_scale|_scale_inv|_scale_2|_scales|\.scales|_zero_point|\.qzeros|\.g_idx|weight_shape|input_scale|"
    r"_global_scale|\.k_scale|\.v_scale|\.q_scale|\.prob_scale|position_ids)$")
_MTP = re.compile(r"(^|\.)mtp\.|^model\.mtp|(^|\.)nextn\.")
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_VISION = re.compile(r"(^|\.)(visual|vision_tower|vision_model|vision_encoder|multi_modal_projector|mm_projector|"
                     r"audio_tower|vision)\.")


class HeaderError(ValueError):
    """A safetensors header that cannot be read; the message names the file and what is wrong."""


class HeaderTensor(CamelModel):
    name: str
    dtype: str
    shape: list[int]
    data_bytes: int

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


class ShardHeader(CamelModel):
    """One shard's header: what is needed to size it exactly (tensor list kept for the parameter rules)."""

    file: str
    header_length: int  # N: the JSON header's length in bytes
    data_bytes: int  # bytes of tensor data after the header (max end offset)
    tensors: list[HeaderTensor]
    metadata: dict[str, str] = Field(default_factory=dict)

    @property
    def file_bytes(self) -> int:
        return 8 + self.header_length + self.data_bytes


def header_length(prefix: bytes, file: str = "model.safetensors") -> int:
    """N from the first 8 bytes (little-endian unsigned 64-bit)."""
    if len(prefix) < 8:
        raise HeaderError(f"{file}: fewer than 8 bytes ({len(prefix)}): not a safetensors file")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n < 2 or n > MAX_HEADER_BYTES:
        raise HeaderError(f"{file}: header length {n} outside 2..{MAX_HEADER_BYTES}")
    return n


def parse_header(prefix: bytes, file: str = "model.safetensors") -> ShardHeader:
    """Parse ``prefix`` (the file's first ``8 + N`` bytes or more) into a :class:`ShardHeader`."""
    n = header_length(prefix, file)
    if len(prefix) < 8 + n:
        raise HeaderError(f"{file}: header says {n} bytes but only {len(prefix) - 8} were read")
    try:
        raw = json.loads(prefix[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HeaderError(f"{file}: header is not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise HeaderError(f"{file}: header must be a JSON object")
    meta = raw.pop("__metadata__", None) or {}
    tensors, end = [], 0
    for name, entry in raw.items():
        if not isinstance(entry, dict):
            raise HeaderError(f"{file}: tensor {name!r} is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPE_BYTES:
            raise HeaderError(f"{file}: tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise HeaderError(f"{file}: tensor {name!r} has a bad shape {shape!r}")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets)
                or offsets[0] > offsets[1] or offsets[0] < 0):
            raise HeaderError(f"{file}: tensor {name!r} has bad data_offsets {offsets!r}")
        t = HeaderTensor(name=name, dtype=dtype, shape=shape, data_bytes=offsets[1] - offsets[0])
        if dtype in ("F4", "F6_E2M3", "F6_E3M2"):
            pass  # sub-byte: byte length is the truth, checked loosely
        elif (needed := t.numel * SAFETENSORS_DTYPE_BYTES[dtype]) != t.data_bytes:
            raise HeaderError(f"{file}: tensor {name!r} {dtype}{shape} needs {int(needed)} "
                              f"bytes, data_offsets span {t.data_bytes}")
        tensors.append(t)
        end = max(end, offsets[1])
    return ShardHeader(file=file, header_length=n, data_bytes=end, tensors=tensors,
                       metadata={str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {})


def _values_per_element(t: HeaderTensor, names: set[str]) -> int:
    """How many model values one stored element holds (packed low-bit formats)."""
    base = t.name.rsplit(".", 1)[0]
    if t.name.endswith("_blocks") and t.dtype == "U8":
        return 2  # MXFP4 (gpt-oss): two FP4 values per byte
    if t.name.endswith((".weight_packed", ".qweight")):
        return {"I32": 8, "U32": 8, "I64": 16, "U8": 2, "I8": 2}.get(t.dtype, 1)
    if t.name.endswith(".weight") and t.dtype == "U8" and f"{base}.weight_scale" in names:
        return 2  # ModelOpt NVFP4: packed FP4 in U8 beside its FP8 block scales
    return 1


class CheckpointSummary(CamelModel):
    """What every shard header of one revision says, summed. ``parameters`` excludes quantization metadata, MTP
    layers and (when given) a stored copy of tied embeddings; packed values are unpacked."""

    files: int
    tensors: int
    file_bytes: int  # sum of shard sizes: 8 + N + data
    data_bytes: int
    bytes_by_dtype: dict[str, int]
    stored_elements: int  # sum of numel as stored (what the Hub's "safetensors.total" counts)
    parameters: int  # served parameters, unpacked
    mtp_parameters: int
    vision_parameters: int
    quant_metadata_bytes: int
    tied_copy_parameters: int = 0  # an lm_head stored although embeddings are tied (not counted in parameters)


def summarize(shards: list[ShardHeader], num_hidden_layers: int | None = None, tied: bool = False) -> CheckpointSummary:
    names = {t.name for s in shards for t in s.tensors}
    by_dtype: dict[str, int] = {}
    stored = params = mtp = vision = meta = tied_copy = 0
    for shard in shards:
        for t in shard.tensors:
            by_dtype[t.dtype] = by_dtype.get(t.dtype, 0) + t.data_bytes
            stored += t.numel
            if _QUANT_METADATA.search(t.name):
                meta += t.data_bytes
                continue
            values = t.numel * _values_per_element(t, names)
            layer = _LAYER.search(t.name)
            if _MTP.search(t.name) or (num_hidden_layers is not None and layer and int(layer.group(1)) >= num_hidden_layers
                                       and not _VISION.search(t.name)):
                mtp += values
                continue
            if tied and t.name in ("lm_head.weight", "model.lm_head.weight") and any(
                    n.endswith("embed_tokens.weight") for n in names):
                tied_copy += values
                continue
            if _VISION.search(t.name):
                vision += values
            params += values
    return CheckpointSummary(
        files=len(shards), tensors=sum(len(s.tensors) for s in shards),
        file_bytes=sum(s.file_bytes for s in shards), data_bytes=sum(s.data_bytes for s in shards),
        bytes_by_dtype=dict(sorted(by_dtype.items())), stored_elements=stored, parameters=params,
        mtp_parameters=mtp, vision_parameters=vision, quant_metadata_bytes=meta, tied_copy_parameters=tied_copy)


def shard_files(index: dict[str, Any] | None, siblings: list[str]) -> list[str]:
    """Shard file names of a checkpoint: the index's ``weight_map`` values, else the ``*.safetensors`` files."""
    if index and isinstance(index.get("weight_map"), dict):
        return sorted(set(str(v) for v in index["weight_map"].values()))
    return sorted(s for s in siblings if s.endswith(".safetensors") and "/" not in s)
