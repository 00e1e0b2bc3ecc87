"""What every price source shares: the raw payload it fetches, the offer rows it parses, its errors.

A source has two halves (``GUIDE.md`` §1): ``fetch(client) -> RawPayload`` is the only code that touches the
network, ``parse(raw, rates) -> list[Offer]`` is pure. A parser that meets a shape it does not know raises
:class:`ParseError` naming the source and the field; it never guesses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, get_args

import httpx
from pydantic import BaseModel, ConfigDict, Field

from pipeline.sources import offer_facts
from pipeline.sources.fx import FxError, FxRates
from pipeline.sources.http import get_part
from pipeline.sources.payload import RawPart, RawPayload

Allocation = Literal["on_demand", "spot", "marketplace", "marketplace_median", "bid_statistics", "monthly",
                     "reference_on_demand", "reference_marketplace"]
#: every allocation class a source can emit, and those an hourly price can be rented at (what can be eligible)
ALLOCATIONS: tuple[Allocation, ...] = get_args(Allocation)
RENTABLE: tuple[Allocation, ...] = ("on_demand", "spot", "marketplace")
#: prices a third party recorded in the past (the cheapest on-demand per-GPU price it saw at a provider on a day),
#: each with the rentable class whose price history it extends. They are observations for the price history
#: only: no instance, region or size can be rented from them, so they never become current offers
#: (``storage/loaders.rebuild_current``), never enter the quality stage's reference prices and never price a setup.
REFERENCE: dict[Allocation, Allocation] = {"reference_on_demand": "on_demand",
                                           "reference_marketplace": "marketplace"}
PriceUnit = Literal["instance-hour", "gpu-hour", "instance-month"]
HOURS_PER_MONTH = 730  # the providers' own convention (Hetzner, Scaleway, Vultr monthly caps): 8760 h / 12
PRICE_DECIMALS = 6  # prices are rounded once, here: 12 x 0.031611 + ... is 3.673385, not 3.6733849999999997


class SourceError(Exception):
    """Base class of errors raised while fetching or parsing a source."""


class ParseError(SourceError):
    def __init__(self, source: str, field: str, message: str):
        self.source, self.field = source, field
        super().__init__(f"{source}: field '{field}': {message}")


class RowRejected(ParseError):
    """One row cannot become an offer (zero price, unknown currency); the rest of the payload still parses."""


class NotOffered(SourceError):
    """A listed price of exactly 0: the source's way of saying "not offered here" (RunPod's ``securePrice: 0`` on a
    type not on Secure Cloud, SkyPilot's 0 for an unpriced shape). Counted as ignored, never as a rejected row."""


class NotConfigured(SourceError):
    """A keyed source whose key is not in the environment."""


class Offer(BaseModel):
    """One price for one rentable shape: a normalized row of ``price_observations``."""

    model_config = ConfigDict(frozen=True)

    source: str
    provider: str
    instance_type: str
    region: str | None = None
    zone: str | None = None
    gpu_name: str  # as the source names it
    gpu_id: str | None  # canonical catalog id; None when unmapped (never guessed)
    gpu_count: float = Field(gt=0)  # GPU-equivalents rented: 8 for an 8-GPU node, 0.05 for a 1/20 vGPU slice
    fractional: bool = False  # a slice of one GPU (vGPU, MIG): gpu_share < 1
    gpu_share: float = Field(default=1.0, gt=0, le=1)  # share of each GPU that is rented (1/20 vGPU -> 0.05)
    gpu_memory_gb: float | None = None  # per GPU device as the source lists it (a slice: the slice's), never a total
    parent_gpu_memory_gb: float | None = None  # per-GPU memory of the whole card a slice is cut from
    gpu_memory_gib: float | None = None  # driver-visible per GPU device, from the catalog (offer_facts.memory)
    gpu_memory_gb_marketed: float | None = None  # the vendor's figure per GPU device, from the catalog
    form_factor: str | None = None  # SXM, PCIe, NVL, OAM, Superchip (offer_facts.form_factor)
    gpu_link: str | None = None  # within the instance: NVSwitch, NVLink, NVLink bridge, xGMI, PCIe, none
    cluster_fabric: str | None = None  # across instances: InfiniBand, RoCE, EFA, NVLink domain + RoCE, none
    cluster_gbps: float | None = None  # the cluster fabric's Gb/s per instance, where the family table states it
    interconnect_source: str | None = None  # the family table's source URL, or the rule that gave gpu_link
    vcpus: float | None = None
    ram_gb: float | None = None
    currency: str
    price_per_hour: float = Field(gt=0)  # for the whole instance, listed currency
    price_per_gpu_hour: float = Field(gt=0)
    price_per_hour_usd: float = Field(gt=0)
    price_per_gpu_hour_usd: float = Field(gt=0)
    price_per_month: float | None = None  # listed monthly price of the instance (allocation "monthly"), currency
    unit: PriceUnit  # how the source quotes it
    unit_scale: str = "1"  # "1", "cents", "1e-8", "nanos"
    fx_rate: float = 1.0  # units of the listed currency per USD on fx_date: usd = price / fx_rate
    fx_date: str | None = None
    allocation: Allocation
    availability: str | None = None  # as the source states it (stock status, capacity, free GPUs)
    availability_status: offer_facts.AvailabilityStatus | None = None  # None: the source does not say
    available_count: int | None = Field(default=None, ge=0)  # GPUs free, where the source counts them
    observed_at: datetime
    mapping_version: str

    @property
    def offer_key(self) -> str:
        """Identity of the rentable thing, stable across fetches (prices change, keys do not)."""
        return "|".join([self.source, self.instance_type, self.region or "", self.zone or "", self.allocation])


def make_offer(source: str, provider: str, *, instance_type: str, gpu_name: str, gpu_count: float, price: float,
               unit: PriceUnit, currency: str, allocation: Allocation, observed_at: datetime, rates: FxRates | None,
               resolve: Callable[..., tuple[str | None, str]], region: str | None = None, zone: str | None = None,
               memory_gb: float | None = None, vcpus: float | None = None, ram_gb: float | None = None,
               availability: str | None = None, unit_scale: str = "1", fractional: bool | None = None,
               gpu_share: float = 1.0, parent_memory_gb: float | None = None, map_name: str | None = None,
               priced_units: float | None = None, availability_status: str | None = None,
               available_count: int | None = None) -> Offer:
    """Build an offer from a listed price, converting per-GPU <-> per-instance, month -> hour and currency once;
    prices are rounded to :data:`PRICE_DECIMALS` here and nowhere else.

    ``memory_gb`` is per GPU device (callers divide machine totals by the GPU count). For a slice of one GPU
    (``gpu_share`` < 1), ``gpu_count`` is the GPU-equivalents rented (slices x share), ``memory_gb`` the slice's
    memory and ``parent_memory_gb`` the whole card's, which is what the GPU map is matched on; ``map_name`` is
    the card's name when the listing names the slice (``PRO 6000`` for ``PRO 6000 MIG 24GB``), and a
    ``gpu-hour`` price of a slice is per slice: ``priced_units`` says how many (default ``gpu_count``).

    Raises :class:`ParseError` for a price that is not positive or a currency without a rate, so the caller can
    count the row as rejected without losing the others.
    """
    if price == 0:
        raise NotOffered(f"{source}: {instance_type}: price 0 (not offered)")
    if not price > 0:
        raise RowRejected(source, "price", f"{instance_type}: price must be positive, got {price!r}")
    if not gpu_count > 0:
        raise RowRejected(source, "gpu_count", f"{instance_type}: GPU count must be positive, got {gpu_count!r}")
    if not 0 < gpu_share <= 1:
        raise RowRejected(source, "gpu_share", f"{instance_type}: GPU share must be in (0, 1], got {gpu_share!r}")
    if availability_status is not None and availability_status not in offer_facts.AVAILABILITY:
        raise ParseError(source, "availability", f"{instance_type}: unknown status {availability_status!r}")
    match_memory = parent_memory_gb if parent_memory_gb is not None else memory_gb
    name = map_name or gpu_name
    gpu_id, version = resolve(provider, name, instance_type, match_memory)
    monthly = price if unit == "instance-month" else None
    units = priced_units if priced_units is not None else gpu_count
    per_instance = price * units if unit == "gpu-hour" else price / HOURS_PER_MONTH if monthly else price
    rate, fx_date = 1.0, None
    if currency.upper() != "USD":
        if rates is None:
            raise RowRejected(source, "currency", f"{instance_type}: {currency} price but no exchange rates were given")
        try:
            rate, fx_date = rates.per_usd(currency, source)
        except FxError as exc:
            raise RowRejected(source, "currency", f"{instance_type}: {exc}") from exc
    prices = {"price_per_hour": per_instance, "price_per_gpu_hour": per_instance / gpu_count,
              "price_per_hour_usd": per_instance / rate, "price_per_gpu_hour_usd": per_instance / rate / gpu_count}
    prices = {k: round(v, PRICE_DECIMALS) for k, v in prices.items()}
    if not all(prices.values()):
        raise RowRejected(source, "price", f"{instance_type}: price {price!r} rounds to 0 at {PRICE_DECIMALS} decimals")
    fractional = fractional if fractional is not None else (gpu_share < 1 or gpu_count < 1)
    gib, marketed = offer_facts.memory(gpu_id, gpu_share)
    ff = offer_facts.form_factor(provider, name, instance_type, match_memory, gpu_id)
    link = offer_facts.interconnect(provider, instance_type, gpu_id, ff, gpu_count, fractional)
    return Offer(
        source=source, provider=provider, instance_type=instance_type, region=region, zone=zone, gpu_name=gpu_name,
        gpu_id=gpu_id, gpu_count=gpu_count, fractional=fractional,
        gpu_share=gpu_share, gpu_memory_gb=memory_gb, parent_gpu_memory_gb=parent_memory_gb,
        gpu_memory_gib=gib, gpu_memory_gb_marketed=marketed, form_factor=ff, gpu_link=link.gpu_link,
        cluster_fabric=link.cluster_fabric, cluster_gbps=link.cluster_gbps, interconnect_source=link.source,
        vcpus=vcpus, ram_gb=ram_gb, currency=currency.upper(), **prices,
        price_per_month=round(monthly, PRICE_DECIMALS) if monthly else None, unit=unit,
        unit_scale=unit_scale, fx_rate=rate, fx_date=fx_date, allocation=allocation, availability=availability,
        availability_status=availability_status, available_count=available_count,
        observed_at=observed_at, mapping_version=version,
    )


NOT_OFFERED = "not offered (price absent, empty or 0)"


def listed_price(source: str, value: Any, what: str) -> float | None:  # noqa: ANN401 - a JSON or CSV cell
    """A listed price, or None when the source says "not offered" by leaving it absent, empty or 0 (RunPod's
    ``securePrice: 0`` on a community-only type, SkyPilot's ``0`` for an unpriced shape): skipped, never a
    rejected row. A negative or unreadable price is returned / raised as before, so it is counted as rejected."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    price = number(source, value, what)
    return None if price == 0 else price


class Ignored(str):
    """What a row builder returns for a row that is not a GPU offer (a CPU plan, a Windows price): counted by
    reason in :attr:`ParseResult.ignored`, never reported as rejected."""


NOT_A_GPU_OFFER = Ignored("not a GPU offer")


class ParseResult(BaseModel):
    """Offers parsed from one payload, the rows that could not become offers and why, and the rows that were
    out of scope (not GPU offers, other terms/OS) counted by reason."""

    offers: list[Offer]
    rejected: list[str] = Field(default_factory=list)  # one reason per rejected row
    ignored: dict[str, int] = Field(default_factory=dict)  # reason -> rows quietly skipped (e.g. CPU-only plans)

    @property
    def ignored_total(self) -> int:
        return sum(self.ignored.values())

    @property
    def unmapped(self) -> list[str]:
        return sorted({f"{o.provider}: {o.gpu_name} ({o.instance_type})" for o in self.offers if o.gpu_id is None})


class RowOffers:
    """The offers of one row built one by one: a rejected price (zero, negative, unknown currency) is recorded
    and the row's other offers survive (a bad on-demand price must not take the valid spot price with it)."""

    def __init__(self) -> None:
        self.offers: list[Offer] = []
        self.rejected: list[str] = []
        self.not_offered = 0  # prices of 0: "not offered here", counted as ignored

    def add(self, build: Callable[[], Offer]) -> None:
        try:
            self.offers.append(build())
        except RowRejected as exc:
            self.rejected.append(str(exc))
        except NotOffered:
            self.not_offered += 1


def collect(items: Any, build: Callable[[Any], Offer | list[Offer] | RowOffers | Ignored | None]) -> ParseResult:
    """Build offers row by row: a rejected row is recorded and skipped, a row built as ``None`` or an
    :class:`Ignored` reason is counted as ignored, a shape error stops the parse. A build returning
    :class:`RowOffers` keeps its good offers and adds its rejections."""
    offers: list[Offer] = []
    rejected: list[str] = []
    ignored: dict[str, int] = {}
    for item in items:
        try:
            built = build(item)
        except RowRejected as exc:
            rejected.append(str(exc))
            continue
        except NotOffered:
            built = Ignored(NOT_OFFERED)
        if built is None or isinstance(built, Ignored):
            reason = str(built or NOT_A_GPU_OFFER)
            ignored[reason] = ignored.get(reason, 0) + 1
            continue
        if isinstance(built, RowOffers):
            offers.extend(built.offers)
            rejected.extend(built.rejected)
            if built.not_offered:
                ignored[NOT_OFFERED] = ignored.get(NOT_OFFERED, 0) + built.not_offered
            continue
        offers.extend(built if isinstance(built, list) else [built])
    return ParseResult(offers=offers, rejected=rejected, ignored=ignored)


def json_body(source: str, part: RawPart) -> Any:
    """The JSON of a response; ParseError naming the source when it is truncated or not JSON."""
    try:
        return json.loads(part.body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ParseError(source, "body", f"{part.url}: not valid JSON ({exc.__class__.__name__}: {exc})") from exc


def field(source: str, obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]...``; ParseError naming the dotted field when it is missing."""
    current = obj
    for i, key in enumerate(path):
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            raise ParseError(source, ".".join(str(p) for p in path[: i + 1]), "missing") from None
    return current


def number(source: str, value: Any, what: str) -> float:
    """A price or count that may arrive as a string (Verda, Vast); ParseError when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ParseError(source, what, f"expected a number, got {value!r}") from None


class Source:
    """A price source. Subclasses set the class attributes and implement ``fetch`` and ``parse_payload``."""

    name: str = ""
    provider: str = ""
    auth: str = "none"  # "none", or the environment variable(s) holding the key
    key_env: tuple[str, ...] = ()
    endpoint: str = ""
    unit: str = ""
    conditional: bool = False  # the endpoint honours ETag / Last-Modified
    yields_offers: bool = True  # False for the currency source
    #: values the parser branches on, per field, that it knows (drift canary: anything else is a new enum value)
    known_enums: dict[str, tuple[str, ...]] = {}

    def configured(self, env: dict[str, str] | None = None) -> bool:
        env = os.environ if env is None else env
        return all(env.get(k) for k in self.key_env)

    def key(self, env: dict[str, str] | None = None) -> str:
        env = os.environ if env is None else env
        if not self.configured(env):
            raise NotConfigured(f"{self.name}: set {', '.join(self.key_env)} to enable it")
        return env[self.key_env[0]]

    def bearer_headers(self) -> dict[str, str]:
        """Authorization header when the key is set; none otherwise (replay serves keyed sources without one)."""
        return {"Authorization": f"Bearer {self.key()}"} if self.configured() else {}

    def fetch(self, client: httpx.Client) -> RawPayload:  # pragma: no cover - interface
        raise NotImplementedError

    def parse(self, raw: RawPayload, rates: FxRates | None = None) -> ParseResult:
        return self.parse_payload(raw, rates)

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:  # pragma: no cover
        raise NotImplementedError

    def enum_values(self, raw: RawPayload) -> dict[str, set[str]]:
        """The values of :attr:`known_enums`' fields the payload carries (drift canary); none by default."""
        return {}

    # helpers shared by the modules
    def get(self, client: httpx.Client, url: str, **kwargs: Any) -> RawPart:
        return get_part(client, url, **kwargs)
