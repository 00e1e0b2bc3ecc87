"""The GPU catalog (package data ``data/gpus.csv``, built from ``shared/reference/gpus/gpus.csv``).

Every row is validated on load; a bad row fails loudly with its line number. Memory is kept three ways: as
marketed (``memory_gb``), as the driver reports it where measured (``visible_mib``: H100 81,559 MiB, H200 143,771,
B200 183,359, RTX 5090 32,607), and, for unified-memory machines, the share the GPU may use by default.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from .errors import SizingError
from .record import InvalidField, Record, checked, record
from .units import GB, GIB, MIB

Kind = Literal["datacenter", "workstation", "consumer", "unified", "apple"]
KINDS = ("datacenter", "workstation", "consumer", "unified", "apple")


class UnknownGPUError(SizingError):
    pass


_NUMBER = (int, float)


@record
class GPU(Record):
    """One catalog row. Checked on construction (ids, kinds, positive figures); :func:`parse_catalog` converts the
    CSV's text cells first and names the line of a bad one."""

    id: str = checked(kind=str, pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    aliases: tuple[str, ...] = ()
    name: str = checked(kind=str)
    vendor: str = checked(kind=str)
    arch: str = checked(kind=str)
    kind: Kind = checked(one_of=KINDS)
    memory_gb: float = checked(kind=_NUMBER, gt=0)  # as marketed
    memory_basis: Literal["gib", "gb"] = checked(one_of=("gib", "gb"))  # the marketed "GB" in bytes (AMD: 10^9)
    visible_mib: int | None = checked(None, kind=int, gt=0)
    unified_fraction: float | None = checked(None, kind=_NUMBER, gt=0, le=1)
    unified_note: str | None = None
    memory_kind: str | None = None
    bandwidth_gbs: float | None = checked(None, kind=_NUMBER, gt=0)
    fp16_tflops_dense: float | None = checked(None, kind=_NUMBER, gt=0)
    fp8_tflops_dense: float | None = checked(None, kind=_NUMBER, gt=0)
    fp4_tflops_dense: float | None = checked(None, kind=_NUMBER, gt=0)
    supports_fp8: bool | None = checked(None, kind=bool)
    supports_nvfp4: bool | None = checked(None, kind=bool)
    supports_mxfp4: bool | None = checked(None, kind=bool)
    tdp_w: float | None = checked(None, kind=_NUMBER, gt=0)
    launch_msrp_usd: float | None = checked(None, kind=_NUMBER, gt=0)
    form_factor: str = checked(kind=str)
    interconnect: str | None = None
    max_gpus_per_node: int | None = checked(None, kind=int, gt=0)
    source: str = checked(kind=str)

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
    def generation(self) -> str:
        """The architecture's name without the chip (``Ampere (GA100 sm_80)`` -> ``Ampere``)."""
        return self.arch.split(" (")[0].strip()

    @property
    def compute_capability(self) -> float | None:
        """NVIDIA SM version parsed from the arch column (``sm_90`` -> 9.0)."""
        if "sm_" not in self.arch:
            return None
        digits = self.arch.split("sm_")[1][:3].rstrip(")").strip()
        return int(digits[:-1]) + int(digits[-1]) / 10 if digits.isdigit() else None


_TRUE, _FALSE = ("true", "t", "yes", "y", "on", "1"), ("false", "f", "no", "n", "off", "0")


def _cell(name: str, kind: str, text: str) -> Any:  # noqa: ANN401 - the cell's value
    """One CSV cell as the field's type; ``ValueError`` saying what it should be."""
    if kind.startswith("float"):
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"must be a number, got {text!r}") from None
    if kind.startswith("int"):
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not number.is_integer():  # "12.0" is 12 (as pydantic read it), "12.5" or "12 GB" are refused
            raise ValueError(f"must be an integer, got {text!r}")
        return int(number)
    if kind.startswith("bool"):
        if text.lower() in _TRUE or text.lower() in _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"must be true or false, got {text!r}")
    if kind.startswith("tuple"):
        return tuple(a for a in text.split(";") if a)
    return text


_COLUMNS = {f.name: (str(f.type), f.default is dataclasses.MISSING) for f in dataclasses.fields(GPU)}


def gpu_from_row(row: dict[str, str | None]) -> GPU:
    """A GPU from a CSV row of text cells (blank = absent); ``InvalidField`` naming the bad or missing column."""
    values: dict[str, Any] = {}
    for name, (kind, required) in _COLUMNS.items():
        text = row.get(name)
        if text is None or text == "":
            if required:
                raise InvalidField("GPU", name, "is missing")
            continue
        try:
            values[name] = _cell(name, kind, text)
        except ValueError as exc:
            raise InvalidField("GPU", name, str(exc)) from None
    return GPU(**values)  # other columns are ignored


def parse_catalog(text: str, origin: str = "gpus.csv") -> dict[str, GPU]:
    gpus: dict[str, GPU] = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        try:
            gpu = gpu_from_row(row)
        except InvalidField as exc:
            message = str(exc).removeprefix(f"GPU.{exc.field} ")
            raise SizingError(f"{origin} line {line} ({row.get('id')}): field '{exc.field}' {message}") from exc
        if gpu.id in gpus:
            raise SizingError(f"{origin} line {line}: duplicate GPU id {gpu.id!r}")
        gpus[gpu.id] = gpu
    return gpus


@lru_cache(maxsize=1)
def catalog() -> dict[str, GPU]:
    # package data beside this file (as pipeline/cli/resolve.py reads it); importlib.resources costs the quick
    # commands ~5 ms of imports (zipfile, tempfile) for a package that is always installed as a directory
    text = (Path(__file__).parent / "data" / "gpus.csv").read_text()
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
