"""The GPU catalog (package data ``data/gpus.csv``, built from ``shared/reference/gpus/gpus.csv``).

Every row is validated on load; a bad row fails loudly with its line number. Memory is kept three ways: as
marketed (``memory_gb``), as the driver reports it where measured (``visible_mib``: H100 81,559 MiB, H200 143,771,
B200 183,359, RTX 5090 32,607), and, for unified-memory machines, the share the GPU may use by default.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import SizingError
from .units import GB, GIB, MIB

Kind = Literal["datacenter", "workstation", "consumer", "unified", "apple"]


class UnknownGPUError(SizingError):
    pass


class GPU(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    aliases: tuple[str, ...] = ()
    name: str
    vendor: str
    arch: str
    kind: Kind
    memory_gb: float = Field(gt=0)  # as marketed
    memory_basis: Literal["gib", "gb"]  # what the marketed "GB" means in bytes (AMD Instinct: 10^9)
    visible_mib: int | None = Field(default=None, gt=0)
    unified_fraction: float | None = Field(default=None, gt=0, le=1)
    unified_note: str | None = None
    memory_kind: str | None = None
    bandwidth_gbs: float | None = Field(default=None, gt=0)
    fp16_tflops_dense: float | None = Field(default=None, gt=0)
    fp8_tflops_dense: float | None = Field(default=None, gt=0)
    fp4_tflops_dense: float | None = Field(default=None, gt=0)
    supports_fp8: bool | None = None
    supports_nvfp4: bool | None = None
    supports_mxfp4: bool | None = None
    tdp_w: float | None = Field(default=None, gt=0)
    launch_msrp_usd: float | None = Field(default=None, gt=0)
    form_factor: str
    interconnect: str | None = None
    max_gpus_per_node: int | None = Field(default=None, gt=0)
    source: str

    @field_validator("aliases", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return tuple(a for a in value.split(";") if a) if isinstance(value, str) else value

    @property
    def memory_bytes(self) -> float:
        """What the GPU can address: driver-visible when measured, else the marketed size in its basis;
        for unified-memory machines the default GPU share of it."""
        if self.visible_mib is not None:
            total = self.visible_mib * MIB
        else:
            total = self.memory_gb * (GIB if self.memory_basis == "gib" else GB)
        return total * (self.unified_fraction or 1.0)

    @property
    def memory_source(self) -> str:
        if self.unified_fraction is not None:
            return f"{self.unified_fraction:.0%} of {self.memory_gb:g} GB unified memory ({self.unified_note})"
        if self.visible_mib is not None:
            return f"driver-reported {self.visible_mib:,} MiB"
        return f"marketed {self.memory_gb:g} GB read as {'GiB' if self.memory_basis == 'gib' else '10^9 bytes'}"

    @property
    def node_size(self) -> int:
        """GPUs one machine holds: the catalog's figure, else 8 for data-centre and workstation cards
        (an 8-slot server), 4 for consumer cards, 1 for unified-memory machines."""
        if self.max_gpus_per_node:
            return self.max_gpus_per_node
        return {"datacenter": 8, "workstation": 8, "consumer": 4}.get(self.kind, 1)

    @property
    def is_nvidia(self) -> bool:
        return self.vendor == "NVIDIA"

    @property
    def is_amd_instinct(self) -> bool:
        return self.vendor == "AMD" and self.id.startswith("mi")

    @property
    def compute_capability(self) -> float | None:
        """NVIDIA SM version parsed from the arch column (``sm_90`` -> 9.0)."""
        if "sm_" not in self.arch:
            return None
        digits = self.arch.split("sm_")[1][:3].rstrip(")").strip()
        return int(digits[:-1]) + int(digits[-1]) / 10 if digits.isdigit() else None


def _none_if_blank(row: dict[str, str]) -> dict[str, str | None]:
    return {k: (v if v not in ("", None) else None) for k, v in row.items()}


def parse_catalog(text: str, origin: str = "gpus.csv") -> dict[str, GPU]:
    gpus: dict[str, GPU] = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        try:
            gpu = GPU.model_validate(_none_if_blank(row) | {"aliases": row.get("aliases") or ""})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise SizingError(f"{origin} line {line} ({row.get('id')}): field '{err['loc'][0]}' {err['msg']}") from exc
        if gpu.id in gpus:
            raise SizingError(f"{origin} line {line}: duplicate GPU id {gpu.id!r}")
        gpus[gpu.id] = gpu
    return gpus


@lru_cache(maxsize=1)
def catalog() -> dict[str, GPU]:
    text = (resources.files("sizing_core") / "data" / "gpus.csv").read_text()
    return parse_catalog(text)


def get_gpu(gpu_id: str) -> GPU:
    """A GPU by id or alias; ``UnknownGPUError`` naming close ids otherwise."""
    gpus = catalog()
    if gpu_id in gpus:
        return gpus[gpu_id]
    for gpu in gpus.values():
        if gpu_id in gpu.aliases:
            return gpu
    close = [g for g in gpus if gpu_id.split("-")[0] in g][:8]
    raise UnknownGPUError(f"unknown GPU {gpu_id!r}" + (f" (did you mean: {', '.join(close)})" if close else ""))
