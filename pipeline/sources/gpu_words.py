"""GPU names read as words: the model number, the tier words after it (Ti, Super, S), the form factor words (SXM,
PCIe, NVL, OAM) and the interconnect words (NVLink, NVSwitch) of a listing's GPU name and instance type.

One table of variant words, ``data/gpu_variant_words.csv`` (word, kind, value, why), read by every rule here:

- a **tier** word changes the card (RTX 5070 Ti is not RTX 5070): when an instance type names tier words after the
  GPU name's own model number that the name leaves out (Vast's ``1x-RTX_5070_Ti-...`` listed as ``RTX5070``), the
  name with those words is the card the offer rents (:func:`with_instance_tiers`);
- an **interconnect** word names no card: ``NVLink`` in an instance type is not the NVL card, so interconnect words
  are taken out before a map row's instance pattern is tried (:func:`without_interconnects`);
- a **form factor** word states the form factor (:func:`stated_form_factor`); where no word states it and the card
  comes in more than one, the form factor is unknown, never guessed.

Words are split at every separator and at each change between letters and digits: ``4070S_Ti`` is
``4070 s ti``, ``A100_SXM4`` is ``a 100 sxm 4``, ``H100x8-NVLink`` is ``h 100 x 8 nvlink``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

WORDS_PATH = Path(__file__).parent / "data" / "gpu_variant_words.csv"
KINDS = ("tier", "form_factor", "interconnect")
_WORD = re.compile(r"[a-z]+|\d+")


@dataclass(frozen=True)
class VariantWord:
    word: str
    kind: str
    value: str


@lru_cache(maxsize=1)
def variant_words() -> dict[str, VariantWord]:
    out = {}
    for line, r in enumerate(csv.DictReader(WORDS_PATH.open()), start=2):
        if r["kind"] not in KINDS:
            raise ValueError(f"{WORDS_PATH.name} line {line}: kind {r['kind']!r} not in {KINDS}")
        if not r["note"]:
            raise ValueError(f"{WORDS_PATH.name} line {line}: every word needs its reason")
        out[r["word"]] = VariantWord(r["word"], r["kind"], r["value"])
    return out


def words(text: str) -> list[str]:
    """Lower-case words and numbers, split at separators and at letter / digit changes."""
    return _WORD.findall(text.lower())


def _kind(word: str) -> str | None:
    v = variant_words().get(word)
    return v.kind if v else None


def _tiers_after(tokens: list[str], number: str) -> list[str]:
    """The tier words right after the first occurrence of ``number`` (the model number) in ``tokens``."""
    if number not in tokens:
        return []
    out = []
    for word in tokens[tokens.index(number) + 1:]:
        if _kind(word) != "tier":
            break
        out.append(word)
    return out


def with_instance_tiers(name: str, instance_type: str) -> str:
    """``name`` with the tier words its instance type adds after the same model number (``RTX5070`` on
    ``1x-RTX_5070_Ti-32-65536`` is ``RTX5070 Ti``); ``name`` itself when the instance adds none."""
    own = words(name)
    numbers = [w for w in own if w.isdigit()]
    if not numbers or not instance_type:
        return name
    number = numbers[-1]
    have = _tiers_after(own, number)
    extra = [w for w in _tiers_after(words(instance_type), number) if w not in have]
    if not extra:
        return name
    return " ".join([name, *(variant_words()[w].value for w in extra)])


@lru_cache(maxsize=1)
def _interconnects() -> re.Pattern[str]:
    names = [re.escape(w.word) for w in variant_words().values() if w.kind == "interconnect"]
    return re.compile(rf"(?<![a-z])(?:{'|'.join(names)})(?![a-z])", re.I)


def without_interconnects(text: str) -> str:
    """``text`` with its interconnect words taken out (``n3-H100x8-NVLink`` -> ``n3-H100x8-``): what is left may
    name a form factor (``nvl``, ``pcie``), an interconnect never does."""
    return _interconnects().sub("", text)


def stated_form_factor(*texts: str) -> str | None:
    """The form factor the texts' words state (``SXM``, ``PCIe``, ``NVL``, ``OAM``), None when none does or when
    they disagree."""
    found = {variant_words()[w].value for t in texts for w in words(t) if _kind(w) == "form_factor"}
    return found.pop() if len(found) == 1 else None
