"""Text for the operator's terminal: what users, the model or KB files wrote, made inert.

Questions, drafts, violation details, KB titles and file names all reach the
CLI's output (`audit show`, `review list`, `review gaps`, `search`, `ask`,
`index`) and the logs. Printed raw, an escape sequence in them would drive the
operator's terminal: retitle it, clear it, rewrite lines already on screen,
or (with some terminals) answer back into its input. A line break would forge
an output line ("outcome answered"), and a bidi override would show text in
another order than it is.

Everything such text goes through `clean` (for plain output) or `json_text`
(for --json and log lines): each control character is shown as a visible
escape (ESC as "\\x1b"), so the operator sees that it was there, and the
terminal gets nothing to obey.
"""

from __future__ import annotations

import json
import re
from typing import Any

# C0 controls, DEL and the C1 controls (0x9b is a one-byte CSI to some
# terminals), bidi embeddings, overrides and isolates, Unicode line and
# paragraph separators, and lone surrogates (undecodable bytes of a file name:
# printing them would raise).
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_IN_TEXT = re.compile(f"[{_UNSAFE}]")
_UNSAFE_IN_LINE = re.compile(f"[\t\n{_UNSAFE}]")


_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, *, newlines: bool = True) -> str:
    """`text` safe to print: control characters as visible escapes.

    With `newlines` (the default), line breaks and tabs stay: for text whose
    lines are meant as lines (an answer). Without, they are escaped too: for a
    value printed on one line of its own (a question, a title, a file name).
    """
    pattern = _UNSAFE_IN_TEXT if newlines else _UNSAFE_IN_LINE
    return pattern.sub(_escape, str(text))


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def json_text(obj: Any, **dumps_options: Any) -> str:
    """`json.dumps(obj, ensure_ascii=False, ...)` with the controls it leaves raw as \\u escapes.

    These characters can only stand inside JSON strings, where a \\u escape
    means the very same character: the value a reader parses is unchanged.
    """
    # json.dumps(ensure_ascii=False) escapes the C0 controls only.
    return _UNSAFE_IN_TEXT.sub(_json_escape, json.dumps(obj, ensure_ascii=False, **dumps_options))


def echo(text: object, *, file=None, newlines: bool = True) -> None:
    """print() for text that may hold what users, the model or KB files wrote."""
    print(clean(text, newlines=newlines), file=file)
