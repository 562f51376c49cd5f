"""Legal references ("§ 19 JArbSchG", "SGB III § 96"): a name with a number, compared as one.

A model that cites the wrong paragraph ("under § 3 BUrlG" for a rule the block
bases on § 19 JArbSchG) writes a number and a law that both stand in the block,
so neither the numbers check nor the words check sees it. A statement's
reference must be one the sentences it is aligned to name, when they name any;
references do not translate, so this holds across languages too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_LAW = r"[A-ZÄÖÜ][A-Za-zäöü]*[A-Z][A-Za-z]*(?:\s+[IVX]+\b)?"
_NUMBER = r"(\d+[a-z]?)(?:\s+(?:Abs\.|Absatz|Satz|S\.|Nr\.|Buchst\.)\s*\w+)*"
_FORWARD = re.compile(rf"§+\s*{_NUMBER}\s+({_LAW})")  # "§ 19 Abs. 1 JArbSchG"
_BACKWARD = re.compile(rf"\b({_LAW})\s*§+\s*{_NUMBER}")  # "JArbSchG § 19" (a block's legal bases)

Reference = tuple[str, str]  # (paragraph, law): ("19", "JArbSchG")


def references(text: str) -> set[Reference]:
    found = {(m.group(1), _law(m.group(2))) for m in _FORWARD.finditer(text)}
    return found | {(m.group(2), _law(m.group(1))) for m in _BACKWARD.finditer(text)}


def _law(name: str) -> str:
    return " ".join(name.split())


def swapped_reference(text: str, aligned: Sequence[str]) -> tuple[Reference, set[Reference]] | None:
    """(the statement's reference, the ones it should be) when it names one the sentences it is aligned
    to (best first) do not, though they name one; None otherwise. A reference of a further aligned
    sentence counts when the statement also names the best one's: a statement that joins two rules
    names both laws, one that takes its law from the next sentence has swapped it."""
    said = references(text)
    if not said or not aligned:
        return None
    best = references(aligned[0])
    stated = set().union(*(references(s) for s in aligned))
    if not stated:
        return None  # the sentences name none: the block's legal bases back it (the numbers check)
    allowed = stated if not best or said & best else best
    for ref in sorted(said):
        if ref not in allowed:
            return ref, allowed
    return None
