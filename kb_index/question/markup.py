"""Slack markup, links, URLs and emoji out of a message: what says who is asked, never what.

Stdlib only, no I/O.
"""

from __future__ import annotations

import re
import unicodedata

from kb_index.question.words import collapse

# Slack's wire format. Mentions say who is asked, never what. Links go with
# their label: "this page" or "here" is no KB topic, and neither is a URL.
# <mailto:a@b|a@b> keeps the address and <!date^..|Feb 18> its text, because
# those can be part of the question.
_MAILTO = re.compile(r"<mailto:([^|>\s]+)(?:\|[^>]*)?>", re.I)
_DATE = re.compile(r"<!date\^[^|>]*\|([^>]*)>")
_SLACK_MARKUP = re.compile(r"<(?:[@#!][^>]*|[a-z][a-z0-9+.-]*:[^>]*)>", re.I)
_BARE_URL = re.compile(r"(?:https?://|www\.)[^\s<>]*[^\s<>.,!?;:)\]'\"]", re.I)
_PLAIN_BROADCAST = re.compile(r"(?<![\w@])@(?:here|channel|everyone)\b", re.I)
# Slack escapes these three in message text; decoded after markup is gone.
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))

# :smile:, :+1:, :thumbsup::skin-tone-2:. Lowercase, with a letter (or +1), so
# times ("10:30:00") and "Note: see: ..." survive.
_SHORTCODE = re.compile(r"(?::(?:[a-z0-9_+'-]*[a-z][a-z0-9_+'-]*|[+-]1):)+")
# Unicode emoji and pictographs, with their joiners and modifiers. Letters,
# currency, °, ©, arrows and math stay.
_PICTOGRAPHS = re.compile(
    "["
    "\U0001F000-\U0001FAFF"  # emoticons, pictographs, transport, flags, skin tones
    "\u2600-\u27BF"  # misc symbols, dingbats (☀ ✅ ❤ ✨)
    "\u2B00-\u2BFF"  # ⭐ ⬆
    "\u2300-\u23FF"  # ⌚ ⏰ ⏳
    "\uFE00-\uFE0F"  # variation selectors
    "\u200D\u20E3"  # zero-width joiner, keycap
    "\U000E0020-\U000E007F"  # tag sequences (subdivision flags)
    "\u3030\u303D\u3297\u3299"
    "]+"
)
# :) ;-) :D xD ^^ <3, only as a token of their own.
_SMILEY = re.compile(r"(?<!\S)(?:[:;=]-?[)(\]\[DPpOo/\\|*3]+|\^\^|<3|[xX]D+)(?=\s|$|[.,!?])")


def strip_markup(text: str) -> str:
    """Slack markup, URLs and emoji out; newlines kept (they end sentences)."""
    text = unicodedata.normalize("NFC", text)
    text = _MAILTO.sub(r" \1 ", text)
    text = _DATE.sub(r" \1 ", text)
    text = _SLACK_MARKUP.sub(" ", text)
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    text = _BARE_URL.sub(" ", text)
    text = _PLAIN_BROADCAST.sub(" ", text)
    text = _SHORTCODE.sub(" ", text)
    text = _PICTOGRAPHS.sub(" ", text)
    text = _SMILEY.sub(" ", text)
    lines = (collapse(line) for line in text.split("\n"))
    return "\n".join(line.lstrip(",;: ") for line in lines)
