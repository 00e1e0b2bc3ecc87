"""Cost arithmetic: hourly to monthly, per million output tokens, rent-versus-buy break-even."""

from __future__ import annotations

HOURS_PER_MONTH = 730  # 8,760 hours a year / 12: an always-on month
DAYS_PER_MONTH = 30.4  # seed 000's "monthly at selected hours" uses 30.4 days


def monthly(price_per_hour: float, hours: float = HOURS_PER_MONTH) -> float:
    """Always-on monthly cost (730 hours by default)."""
    _positive(price_per_hour, "price per hour")
    return price_per_hour * hours


def monthly_at_usage(price_per_hour: float, hours_per_day: float, days: float = DAYS_PER_MONTH) -> float:
    _positive(price_per_hour, "price per hour")
    return price_per_hour * hours_per_day * days


def per_million_tokens(price_per_hour: float, tokens_per_second: float) -> float:
    """Dollars per 1M output tokens at a sustained decode rate."""
    _positive(price_per_hour, "price per hour")
    _positive(tokens_per_second, "tokens per second")
    return price_per_hour / (tokens_per_second * 3600) * 1e6


def power_cost_per_month(watts: float, hours_per_day: float, usd_per_kwh: float, days: float = DAYS_PER_MONTH) -> float:
    return watts / 1000 * hours_per_day * days * usd_per_kwh


def break_even_months(hardware_usd: float, rent_per_hour: float, hours_per_day: float, watts: float,
                      usd_per_kwh: float) -> float | None:
    """Months after which buying beats renting: hardware / (rent per month - own power per month) at the same
    usage. None when owning costs more per month than renting (never breaks even)."""
    saving = monthly_at_usage(rent_per_hour, hours_per_day) - power_cost_per_month(watts, hours_per_day, usd_per_kwh)
    return hardware_usd / saving if saving > 0 else None


def _positive(value: float, what: str) -> None:
    if not value > 0:
        raise ValueError(f"{what} must be positive, got {value}")
