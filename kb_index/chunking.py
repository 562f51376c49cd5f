"""A long section -> chunks of bounded length, cut only between units, then between sentences.

A 40-page section or a PDF without headings would be one chunk: it would
crowd every other block out of the prompt budget, and its embedding would see
only its first few hundred words (the embedding model reads 512 tokens). So a
section longer than MAX_CHUNK_CHARS is cut into about equal parts, between
kb_index.markdown units (paragraphs, list items, table rows) where it can;
only a unit longer than a whole chunk is cut between its sentences, and a
"sentence" longer than that between words. A table cut in two gets its
header row again, so each part still says what its columns are.

The sentence boundary here is deliberately cautious (an abbreviation, a
German ordinal or a date does not end a sentence): a boundary missed makes a
chunk a little longer, one made up cuts a statement from its condition.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from kb_index import markdown

# About 500 tokens: what the embedding model reads of a chunk, and a size at
# which eight blocks fit the default prompt budget with room to spare.
MAX_CHUNK_CHARS = 2000
# A part may be this much longer than an even share: cutting at a unit
# boundary beats cutting parts to exactly equal size.
_SLACK = 1.15

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'»”)\]]*\s+(?=[\"'„»(\[]?[A-ZÄÖÜ0-9])")
_ABBREVIATIONS = {
    "z", "b", "bzw", "nr", "dr", "e.g", "i.e", "ff", "f", "abs", "vgl", "ca", "usw", "etc", "u.a", "d.h", "s",
    "mr", "mrs", "ms", "prof", "st", "no", "vs", "art", "inkl", "ggf", "evtl", "max", "min", "bspw", "sog",
}


def split_long(name: str, text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[tuple[str, str]]:
    """(name, text) of each part; one part named `name` when the text fits, else "name (1)", "name (2)" …"""
    return [(part_name, part) for part_name, part, _ in split_long_lines(name, text, max_chars)]


def split_long_lines(name: str, text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[tuple[str, str, int]]:
    """As split_long, with the 0-based line of `text` each part's own text starts on (a
    repeated table header row is not its own): what a page is looked up by."""
    if len(text) <= max_chars:
        return [(name, text, 0)]
    parts = []
    for units in _parts(_fitting_units(markdown.units(text), max_chars), max_chars):
        rendered = markdown.render(units)
        if rendered.strip():
            own = units[1] if len(units) > 1 and units[0].kind == "row" and units[0].level == 1 \
                and units[1].group == units[0].group else units[0]
            parts.append((rendered, own.line))
    if len(parts) == 1:
        return [(name, parts[0][0], 0)]
    return [(f"{name} ({i})" if name else "", part, line) for i, (part, line) in enumerate(parts, start=1)]


def _cost(unit: markdown.Unit) -> int:
    """An upper bound of what the unit adds to a rendered part (its separator included)."""
    header = unit.text.count(" | ") * 6 + 8 if unit.kind == "row" and unit.level == 1 else 0
    return len(markdown.render_unit(unit)) + 2 + header


def _parts(units: list[markdown.Unit], max_chars: int) -> list[list[markdown.Unit]]:
    total = sum(_cost(u) for u in units)
    count = max(1, math.ceil(total / max_chars))
    target = min(max_chars, math.ceil(total / count * _SLACK))
    parts: list[list[markdown.Unit]] = []
    current: list[markdown.Unit] = []
    size = 0
    headers: dict[int, markdown.Unit] = {}  # table group -> its header row
    for unit in units:
        if unit.kind == "row" and unit.level == 1:
            headers[unit.group] = unit
        cost = _cost(unit)
        if current and size + cost > target:
            parts.append(current)
            current, size = [], 0
            header = headers.get(unit.group)
            if unit.kind == "row" and header is not None and header is not unit:
                current, size = [header], _cost(header)
        current.append(unit)
        size += cost
    if current:
        parts.append(current)
    return parts


def _fitting_units(units: list[markdown.Unit], max_chars: int) -> list[markdown.Unit]:
    """The units, each one longer than a part replaced by pieces that fit."""
    out: list[markdown.Unit] = []
    for unit in units:
        if _cost(unit) <= max_chars:
            out.append(unit)
            continue
        room = max_chars - len(unit.marker) - 2
        if unit.kind == "code":
            pieces = _pack(unit.text.split("\n"), room, "\n")
        else:
            pieces = _pack([s for sentence in sentences(unit.text) for s in _words(sentence, room)], room, " ")
        for i, piece in enumerate(pieces):
            # Pieces of one unit stay one group: they are read as one paragraph.
            out.append(replace(unit, text=piece, marker=unit.marker if i == 0 else "", kind=_piece_kind(unit, i)))
    return out


def _piece_kind(unit: markdown.Unit, i: int) -> markdown.UnitKind:
    # A row or item cut in two: its continuation is plain text, not a second row or item.
    return unit.kind if i == 0 or unit.kind in ("paragraph", "code") else "paragraph"


def _pack(pieces: list[str], room: int, joiner: str) -> list[str]:
    out: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + len(joiner) + len(piece) > room:
            out.append(current)
            current = ""
        current = f"{current}{joiner}{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _words(sentence: str, room: int) -> list[str]:
    """A sentence longer than a part, in pieces at spaces (or anywhere, for a run without one)."""
    if len(sentence) <= room:
        return [sentence]
    out = []
    for piece in _pack(sentence.split(" "), room, " "):
        out += [piece[i : i + room] for i in range(0, len(piece), room)]
    return out


def sentences(text: str) -> list[str]:
    """The text's sentences, cut only where a sentence surely ends."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        before = text[start : match.start()].rstrip("\"'»”)]")
        word = before.rsplit(None, 1)[-1] if before.split() else ""
        stem = word.rstrip(".!?…").lower()
        if word.endswith(".") and (stem in _ABBREVIATIONS or stem.isdigit() or len(stem) == 1):
            continue
        out.append(text[start : match.start()].strip())
        start = match.end()
    out.append(text[start:].strip())
    return [s for s in out if s]
