"""A JSON parser that survives what models wrap around JSON.

Constrained decoding gives strict JSON, but not every backend has it, and unconstrained models
add Markdown fences, a line of prose, typographic quotes or a trailing comma. Each repair is tried
only if the text does not parse yet, and each one made is reported by name, for the audit.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCED = re.compile(r"```[ \t]*[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_CURLY = str.maketrans({"“": '"', "”": '"', "„": '"', "‟": '"'})
_TRAILING = re.compile(r",(\s*[}\]])")


def _unfence(text: str) -> str:
    match = _FENCED.search(text)
    return match.group(1).strip() if match else text


def _trim_prose(text: str) -> str:
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text
    start = min(starts)
    end = text.rfind("}" if text[start] == "{" else "]")
    return text[start : end + 1] if end > start else text


_REPAIRS = (
    ("fence", _unfence),
    ("prose_trim", _trim_prose),
    ("trailing_comma", lambda t: _TRAILING.sub(r"\1", t)),
    # Last: it also turns typographic quotes inside string values into JSON
    # delimiters, so it is tried only when nothing gentler made the text parse.
    ("curly_quotes", lambda t: t.translate(_CURLY)),
)


def parse_lenient_json(text: str) -> tuple[Any, list[str]]:
    """(object, repairs made). Raises json.JSONDecodeError when no repair helps."""
    current, fixups = text.strip(), list[str]()
    for name, repair in _REPAIRS:
        try:
            return json.loads(current), fixups
        except json.JSONDecodeError:
            repaired = repair(current).strip()
        if repaired != current:
            current = repaired
            fixups.append(name)
    return json.loads(current), fixups  # parsed after the last repair, or the decoder's own error, with its position
