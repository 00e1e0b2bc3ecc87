"""sizing_core's own types: immutable stdlib dataclasses with the few checks they need, not pydantic models.

Why (``docs/decisions.md``): ``vramlab size`` and ``fit`` must answer in well under 0.3 s, and importing
pydantic and building the validators of a handful of models costs ~0.2 s on our machine, more than the sizing
itself. The sizing types are built by our own code from values already checked (``config.reader.Fields`` names the
config field of every bad value), so a validating framework earns little there; pydantic stays at the edges where
it validates outside input and describes published files: the pipeline's sources and published schemas. Spec files
(hand-written input) are checked by the declarations below (``spec.py``, :func:`from_mapping`).

Each is declared ``@record class X(Record)`` (or ``CamelRecord``): a keyword-only dataclass whose ``__init__`` is
generated and whose equality, hashing, ``repr`` and immutability come from :class:`Record` (see :func:`record` for
why not ``frozen=True``). :class:`Record` also gives the part of pydantic's model API the pipeline uses, with the same
output, so a pydantic model and a record serialize alike wherever both are published:

- ``model_dump(mode="python"|"json", by_alias=None, include=None, exclude=None)``: a dict; nested records become
  dicts; in JSON mode tuples become lists and dates ISO strings (``Z`` for UTC, as pydantic); keys are camelCase
  (``camel = True``) or the field's explicit ``alias`` unless ``by_alias=False``;
- ``model_dump_json()``: compact JSON as pydantic writes it (non-finite floats as ``null``);
- ``model_copy(update=...)``: :func:`dataclasses.replace` (the copy is checked again).

:func:`checked` declares a field's constraints (``gt``, ``ge``, ``le``, ``pattern``, ``one_of``, ``kind``); they are
checked on construction and a bad value raises :class:`InvalidField` (a :class:`~sizing_core.errors.SizingError`)
naming the class and field. Fields annotated ``tuple[...]`` accept a list and store a tuple, as pydantic did.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from datetime import date, datetime
from typing import Any, ClassVar, Self, TypeVar

from .errors import SizingError

T = TypeVar("T")


class InvalidField(SizingError):
    """A value a record does not accept; ``field`` names it."""

    def __init__(self, owner: str, field: str, message: str):
        self.owner, self.field = owner, field
        super().__init__(f"{owner}.{field} {message}")


class _Rule:
    """What :func:`checked` declares for one field."""

    __slots__ = ("ge", "gt", "kind", "le", "nullable", "one_of", "pattern")

    def __init__(self, *, gt: float | None = None, ge: float | None = None, le: float | None = None,
                 pattern: str | None = None, one_of: tuple[Any, ...] | None = None,
                 kind: type | tuple[type, ...] | None = None, nullable: bool = False) -> None:
        self.gt, self.ge, self.le, self.pattern, self.one_of, self.kind = gt, ge, le, pattern, one_of, kind
        self.nullable = nullable

    def check(self, owner: str, name: str, value: Any) -> None:  # noqa: ANN401 - any field value
        if value is None:
            if self.nullable:
                return
            raise InvalidField(owner, name, "must not be null")
        if self.kind is not None and (isinstance(value, bool) and self.kind is not bool
                                      or not isinstance(value, self.kind)):
            raise InvalidField(owner, name, f"must be of type {_kind_name(self.kind)}, got {value!r}")
        if self.gt is not None or self.ge is not None or self.le is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidField(owner, name, f"must be a number, got {value!r}")
            if self.gt is not None and not value > self.gt:
                raise InvalidField(owner, name, f"must be greater than {self.gt:g}, got {value!r}")
            if self.ge is not None and not value >= self.ge:
                raise InvalidField(owner, name, f"must be greater than or equal to {self.ge:g}, got {value!r}")
            if self.le is not None and not value <= self.le:
                raise InvalidField(owner, name, f"must be less than or equal to {self.le:g}, got {value!r}")
        if self.pattern is not None and (not isinstance(value, str) or re.fullmatch(self.pattern, value) is None):
            raise InvalidField(owner, name, f"must match the pattern {self.pattern!r}, got {value!r}")
        if self.one_of is not None and value not in self.one_of:
            raise InvalidField(owner, name, f"must be one of {', '.join(map(repr, self.one_of))}, got {value!r}")


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__


def checked(default: Any = dataclasses.MISSING, *, gt: float | None = None,  # noqa: ANN401 - a field default
            ge: float | None = None, le: float | None = None, pattern: str | None = None,
            one_of: tuple[Any, ...] | None = None, kind: type | tuple[type, ...] | None = None) -> Any:  # noqa: ANN401
    """A dataclass field whose value is checked on construction; ``None`` passes only where it is the default."""
    rule = _Rule(gt=gt, ge=ge, le=le, pattern=pattern, one_of=one_of, kind=kind, nullable=default is None)
    return dataclasses.field(default=default, metadata={"rule": rule})


def alias(name: str, default: Any = dataclasses.MISSING) -> Any:  # noqa: ANN401 - a field default
    """A dataclass field published under ``name`` instead of its camelCase name (``weightsGiB``)."""
    return dataclasses.field(default=default, metadata={"alias": name})


def described(default: Any = dataclasses.MISSING, description: str | None = None, *,  # noqa: ANN401
               unit: str | None = None, default_factory: Any = dataclasses.MISSING) -> Any:  # noqa: ANN401
    """A dataclass field with its meaning and unit, for the published schema built from the record (the data
    dictionary reads them as it reads pydantic's ``Field(description=...)``)."""
    return dataclasses.field(default=default, default_factory=default_factory,
                             metadata={"description": description, "unit": unit})


def to_camel(name: str) -> str:
    """``kv_cache_bytes`` -> ``kvCacheBytes``: the key pydantic's ``alias_generators.to_camel`` gives a field name
    (``tests/test_records.py`` compares the two over every field)."""
    if "_" not in name and re.search(r"\d[a-z]", name) is None:
        return name
    pascal = re.sub("([0-9A-Za-z])_(?=[0-9A-Z])", lambda m: m.group(1), name.title())
    return re.sub("(^_*[A-Z])", lambda m: m.group(1).lower(), pascal)


class _Layout:
    """Per class, computed once: field names, published keys, checks and tuple coercions."""

    __slots__ = ("checks", "keys", "names", "tuples")

    def __init__(self, cls: type[Record]) -> None:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        self.names = tuple(f.name for f in fields)
        self.keys = tuple(f.metadata.get("alias") or (to_camel(f.name) if cls.camel else f.name) for f in fields)
        self.checks = tuple((f.name, f.metadata["rule"]) for f in fields if "rule" in f.metadata)
        self.tuples = tuple(f.name for f in fields if str(f.type).startswith("tuple["))


_LAYOUTS: dict[type, _Layout] = {}


def _layout(cls: type[Record]) -> _Layout:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = _Layout(cls)
    return layout


def record(cls: type[T] | None = None, *, many: bool = False) -> Any:  # noqa: ANN401 - a class or a decorator
    """Make ``cls`` (a :class:`Record` subclass) a keyword-only dataclass.

    Only ``__init__`` is generated; equality, hashing, ``repr`` and immutability come from :class:`Record`. Why
    not ``@dataclass(frozen=True)``: it compiles six methods per class, ~1-2 ms each class on our machine, and the
    ~30 classes ``vramlab size`` loads took 60 ms of a 155 ms answer (``docs/benchmarks.md``); generating
    ``__init__`` alone costs a fifth of that. The result is still a dataclass (``dataclasses.fields``, ``replace``
    and ``is_dataclass`` work; pydantic validates it as one).

    ``@record(many=True)`` is for a class built thousands of times per run (``Setup``, ~50 fields: ~6,000 ranked
    and ~6,000 read back for the exports per hourly run): its ``__init__`` sets fields with ``object.__setattr__``,
    as a frozen dataclass's does, instead of calling :meth:`Record.__setattr__` once per field (construction 2.3x
    faster), for ~1 ms more to create the class. Immutability is the same: Record's guards stay.
    """
    if cls is None:
        return lambda c: record(c, many=many)
    if not many:
        return dataclasses.dataclass(kw_only=True, eq=False, repr=False)(cls)
    made = dataclasses.dataclass(kw_only=True, eq=False, repr=False, frozen=True)(cls)
    del made.__setattr__, made.__delattr__  # frozen=True only for its __init__
    return made


class Record:
    """Base of sizing_core's records (decorate each subclass with :func:`record`): immutable (a field is set once,
    by ``__init__``; ``cached_property`` values are kept beside), equal and hashed by type and field values."""

    #: publish keys in camelCase (what seed 004 and the exports use); field names otherwise
    camel: ClassVar[bool] = False

    def __setattr__(self, name: str, value: Any) -> None:  # noqa: ANN401 - any field value
        if name in self.__dict__ or name not in self.__dataclass_fields__:  # type: ignore[attr-defined]
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        layout = _LAYOUTS.get(type(self)) or _layout(type(self))
        return tuple([getattr(self, name) for name in layout.names])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self is other or self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        layout = _LAYOUTS.get(type(self)) or _layout(type(self))
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in layout.names)})"

    def __post_init__(self) -> None:
        layout = _LAYOUTS.get(type(self)) or _layout(type(self))
        for name in layout.tuples:
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        if layout.checks:
            owner = type(self).__name__
            for name, rule in layout.checks:
                rule.check(owner, name, getattr(self, name))

    def model_dump(self, *, mode: str = "python", by_alias: bool | None = None,
                   include: set[str] | None = None, exclude: set[str] | None = None) -> dict[str, Any]:
        layout = _LAYOUTS.get(type(self)) or _layout(type(self))
        json_mode = mode == "json"
        keys = layout.names if by_alias is False else layout.keys
        out: dict[str, Any] = {}
        for name, key in zip(layout.names, keys, strict=True):
            if (include is not None and name not in include) or (exclude is not None and name in exclude):
                continue
            out[key] = _plain(getattr(self, name), json_mode, by_alias)
        return out

    def model_dump_json(self) -> str:
        return json.dumps(_finite(self.model_dump(mode="json")), separators=(",", ":"), ensure_ascii=False)

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


class CamelRecord(Record):
    """A record published with camelCase keys (snake_case in Python), as seed 004 writes them."""

    camel = True


def from_mapping(cls: type[T], data: dict[str, Any]) -> T:
    """Build record ``cls`` from a mapping read from a file (a spec's keys): unknown and missing keys are refused
    like bad values, as :class:`InvalidField` naming the key, instead of the constructor's ``TypeError``."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    names = {f.name for f in fields}
    unknown = sorted(str(k) for k in data if k not in names)
    if unknown:
        raise InvalidField(cls.__name__, unknown[0], f"is not a known key (known: {', '.join(sorted(names))})")
    for f in fields:
        if f.name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise InvalidField(cls.__name__, f.name, "is missing")
    return cls(**data)


def _plain(value: Any, json_mode: bool, by_alias: bool | None) -> Any:  # noqa: ANN401 - any field value
    if isinstance(value, Record):
        return value.model_dump(mode="json" if json_mode else "python", by_alias=by_alias)
    if isinstance(value, tuple):
        items = [_plain(v, json_mode, by_alias) for v in value]
        return items if json_mode else tuple(items)
    if isinstance(value, list):
        return [_plain(v, json_mode, by_alias) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, json_mode, by_alias) for k, v in value.items()}
    if json_mode and isinstance(value, date):  # datetimes too; pydantic writes a zero UTC offset as "Z"
        text = value.isoformat()
        return text[:-6] + "Z" if isinstance(value, datetime) and text.endswith("+00:00") else text
    return value


def _finite(value: Any) -> Any:  # noqa: ANN401 - a JSON-ready value
    """pydantic writes non-finite floats as ``null`` in JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value
