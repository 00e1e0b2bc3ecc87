"""Page texts from one set of message ids (``messages/<lang>.json``, the same ids in every language) and numbers,
money and dates formatted per locale with Babel."""

from __future__ import annotations

import json
from datetime import date, datetime
from functools import cache
from pathlib import Path

from babel import Locale
from babel.dates import format_date, format_datetime
from babel.numbers import format_decimal, parse_pattern

MESSAGES = Path(__file__).resolve().parent / "messages"
LOCALES = {"en": "en_US", "de": "de_DE"}


@cache
def catalog(lang: str) -> dict[str, str]:
    if lang not in LOCALES:
        raise ValueError(f"report language {lang!r} is not one of {', '.join(sorted(LOCALES))}")
    return json.loads((MESSAGES / f"{lang}.json").read_text())


class Texts:
    """``t("model.summary", name=...)`` in templates; number helpers bound to the page's locale."""

    def __init__(self, lang: str):
        self.messages = catalog(lang)  # raises for an unknown language
        self.lang, self.locale = lang, LOCALES[lang]
        self._babel = Locale.parse(self.locale)
        self._money = parse_pattern(self._babel.currency_formats["standard"])
        self._patterns: dict[int, object] = {}
        self._cache: dict[tuple[str, float, int], str] = {}  # a report formats the same prices many times

    def __call__(self, msg_id: str, **values: object) -> str:
        return self.messages[msg_id].format(**values)

    def num(self, value: float | None, digits: int = 2) -> str:
        if value is None:
            return "—"
        key = ("num", value, digits)
        if key not in self._cache:
            if digits not in self._patterns:
                self._patterns[digits] = parse_pattern("#,##0" + ("." + "0" * digits if digits else ""))
            self._cache[key] = self._patterns[digits].apply(value, self._babel)  # type: ignore[attr-defined]
        return self._cache[key]

    def usd(self, value: float | None) -> str:
        if value is None:
            return "—"
        key = ("usd", value, 2)
        if key not in self._cache:
            self._cache[key] = self._money.apply(value, self._babel, currency="USD")
        return self._cache[key]

    def count(self, value: int | None) -> str:
        return "—" if value is None else format_decimal(value, format="#,##0", locale=self.locale)

    def day(self, value: str | datetime | date | None) -> str:
        if value is None:
            return "—"
        if isinstance(value, str):
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return format_date(value, format="medium", locale=self.locale)

    def moment(self, value: str | datetime | None) -> str:
        if value is None:
            return "—"
        if isinstance(value, str):
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return format_datetime(value, format="medium", tzinfo=value.tzinfo, locale=self.locale) + " UTC"

    def tokens(self, context: int) -> str:
        """8K, 32K, 128K, 1M as the seeds write context lengths."""
        if context >= 2**20 and context % 2**20 == 0:
            return f"{context // 2**20}M"
        return f"{context // 1024}K" if context % 1024 == 0 else self.count(context)
