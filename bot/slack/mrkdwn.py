"""Slack's markup for text (mrkdwn): escaping, our own links, mentions and dates, splitting, clipping.

Everything model- or KB-made goes through `escape` before it is put into mrkdwn;
the bot's own control sequences (links, mentions, dates) are built by the
functions here *after* escaping, from values checked against what Slack ids and
URLs look like. That order is the whole defence against a model that writes
`<!channel>`: escaped text can no longer contain a `<`, so it cannot open one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import quote

_SLACK_ID = re.compile(r"^[A-Z0-9]{2,30}$")  # U…, W…, C…, G…, D…: upper-case letters and digits only
_SENTENCE_END = re.compile(r"[.!?…:;][\"'”’)\]]*\s+")
_WHITESPACE = re.compile(r"\s+")
MAX_URL_CHARS = 1000


# -- escaping


def escape(text: str | None) -> str:
    """Slack's three control characters; `&` first so the other two are not escaped twice."""
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_MD_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_MD_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)


def mrkdwn_from_markdown(text: str) -> str:
    """Models write Markdown; Slack shows `**bold**` and `## Heading` literally, so the
    two most common forms become mrkdwn bold. Run on escaped text: it adds no `<`."""
    text = _MD_HEADING.sub(lambda m: f"*{m.group(1)}*", text)
    return _MD_BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)


def escaped_mrkdwn(text: str | None) -> str:
    return mrkdwn_from_markdown(escape(text))


# -- our own control sequences, built after escaping


def mention(user_id: str | None) -> str:
    """`<@U123>` for a real-looking user id; anything else is shown, escaped, never linked."""
    if user_id and _SLACK_ID.match(user_id):
        return f"<@{user_id}>"
    return escape(user_id or "?")


def channel_link(channel_id: str | None) -> str:
    if channel_id and _SLACK_ID.match(channel_id):
        return f"<#{channel_id}>"
    return escape(channel_id or "?")


def safe_url(url: str | None) -> str | None:
    """An http(s) URL fit for `<url|label>`, or None: other schemes (javascript:,
    slack:) are never linked, `|`, `<`, `>`, spaces would end the link early, and
    past MAX_URL_CHARS it is not linked at all."""
    if not url:
        return None
    url = url.strip()
    if not re.match(r"^https?://[^\s/?#]+", url, re.IGNORECASE):
        return None
    url = quote(url, safe="!#$%&'()*+,/:;=?@[]~-._")  # percent-encodes | < > " space and non-ASCII
    url = url.replace("&", "&amp;")
    # A link cannot be cut short; one this long would crowd its footnote out of the block.
    return url if len(url) <= MAX_URL_CHARS else None


def link(url: str | None, label: str) -> str:
    """`<url|label>` with the label escaped; just the escaped label when the URL is unusable."""
    target = safe_url(url)
    text = escape(label).replace("|", "¦")  # a `|` in the label would be read as a second separator
    return f"<{target}|{text}>" if target else escape(label)


def slack_date(value: datetime | float | int | str | None) -> str:
    """`<!date^…>`: every reader sees the time in their own time zone; the fallback
    (UTC) is what clients that cannot format dates show."""
    moment = to_datetime(value)
    if moment is None:
        return ""
    fallback = moment.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


def to_datetime(value: datetime | float | int | str | None) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, int | float):
        moment = datetime.fromtimestamp(float(value), UTC)
    else:
        try:
            moment = datetime.fromtimestamp(float(value), UTC)  # a Slack ts or epoch string
        except ValueError:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # naive values are taken as UTC, as the records store them
    return moment.astimezone(UTC)


# -- splitting and clipping


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at a paragraph, then a line, then a
    sentence, then a word boundary; only a single word longer than `limit` is cut inside."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_point(rest, limit)
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def _cut_point(text: str, limit: int) -> int:
    window = text[: limit + 1]  # a boundary right at the limit still counts
    floor = limit // 2  # a boundary in the first half would waste half a block
    for boundary in ("\n\n", "\n"):
        at = window.rfind(boundary, 0, limit)
        if at >= floor:
            return at
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if floor <= m.end() <= limit]
    if ends:
        return ends[-1]
    spaces = [m.start() for m in _WHITESPACE.finditer(window) if 0 < m.start() <= limit]
    if spaces:
        return spaces[-1]
    return _entity_safe(text, limit)


def _entity_safe(text: str, at: int) -> int:
    """Move a hard cut back to before an `&amp;`-style entity it would split."""
    amp = text.rfind("&", max(0, at - 5), at)
    if amp > 0 and ";" not in text[amp:at]:
        return amp
    return at


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    """At most `limit` characters, cut at a word boundary, with an ellipsis when cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    room = max(1, limit - len(ellipsis))
    cut = text.rfind(" ", 0, room + 1)
    cut = cut if cut > room // 2 else _entity_safe(text, room)
    return text[:cut].rstrip() + ellipsis


def clip_escaped(text: str | None, limit: int) -> str:
    """Escape, then clip to `limit` escaped characters (escaping can grow text fivefold)."""
    return clip(escape(text), limit)


def heading(text: str) -> str:
    """A heading line of our own words: escaped, bold."""
    return f"*{escape(text)}*"
