"""Block Kit building blocks: escaping, splitting, links, mentions, dates, limits.

Everything model- or KB-made goes through `escape` before it is put into mrkdwn;
the bot's own control sequences (links, mentions, dates) are built by the
functions here *after* escaping, from values checked against what Slack ids and
URLs look like. That order is the whole defence against a model that writes
`<!channel>`: escaped text can no longer contain a `<`, so it cannot open one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

# Slack's limits (Block Kit reference; the cumulative one is observed, not documented).
MAX_MESSAGE_BLOCKS = 50
MAX_MODAL_BLOCKS = 100
MAX_SECTION_CHARS = 3000  # section text, context element text
MAX_CONTEXT_ELEMENTS = 10
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_VIEW_TITLE = 24  # modal title, close and submit labels
MAX_PRIVATE_METADATA = 3000
MAX_HEADER_CHARS = 150
MAX_INPUT_CHARS = 3000  # plain_text_input max_length
MAX_FALLBACK_CHARS = 40000  # chat.postMessage truncates `text` past this
# chat.postMessage answers msg_blocks_too_long once the text of all blocks
# together passes roughly 12,000 characters, well before 50 full sections;
# 10,000 leaves room for the JSON around the text.
MESSAGE_TEXT_BUDGET = 10000

_SLACK_ID = re.compile(r"^[A-Z0-9]{2,30}$")  # U…, W…, C…, G…, D…: upper-case letters and digits only
_SENTENCE_END = re.compile(r"[.!?…:;][\"'”’)\]]*\s+")
_WHITESPACE = re.compile(r"\s+")


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
    slack:) are never linked, and `|`, `<`, `>`, spaces would end the link early."""
    if not url:
        return None
    url = url.strip()
    if not re.match(r"^https?://[^\s/?#]+", url, re.IGNORECASE):
        return None
    url = quote(url, safe="!#$%&'()*+,/:;=?@[]~-._")  # percent-encodes | < > " space and non-ASCII
    return url.replace("&", "&amp;")


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


def split_text(text: str, limit: int = MAX_SECTION_CHARS) -> list[str]:
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


# -- blocks


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def heading(text: str) -> str:
    """A heading line of our own words in mrkdwn: escaped, bold."""
    return f"*{escape(text)}*"


def headed_section(title: str, body: str) -> dict[str, Any]:
    """The one way a section with a heading is written: `title` in bold, then `body` (mrkdwn, escaped already)."""
    return section(f"{heading(title)}\n{body}")


def context(texts: Iterable[str]) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in texts]}


def contexts(lines: list[str]) -> list[dict[str, Any]]:
    """One element per line, a new context block every 10 (Slack's element limit)."""
    return [context(lines[i : i + MAX_CONTEXT_ELEMENTS]) for i in range(0, len(lines), MAX_CONTEXT_ELEMENTS)]


def plain_text(text: str, limit: int | None = None) -> dict[str, Any]:
    return {"type": "plain_text", "text": clip(text, limit) if limit else text, "emoji": True}


def header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": plain_text(text, MAX_HEADER_CHARS)}


def divider() -> dict[str, Any]:
    return {"type": "divider"}


def button(label: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "text": plain_text(label, MAX_BUTTON_TEXT),
        "action_id": action_id,
        "value": checked_value(value),
    }
    if style:
        element["style"] = style
    return element


def actions(elements: list[dict[str, Any]], block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "actions", "elements": elements}
    if block_id:
        block["block_id"] = block_id
    return block


def checked_value(value: str, limit: int = MAX_BUTTON_VALUE) -> str:
    """A reference id for a button or view: Slack rejects the whole message for an
    oversized one, so a caller's mistake fails here, where it is easy to find."""
    if not value or not isinstance(value, str):
        raise ValueError("a button or view reference must be a non-empty string")
    if len(value) > limit:
        raise ValueError(f"reference is {len(value)} characters; Slack allows {limit}")
    return value


def modal(
    title: str,
    blocks: list[dict[str, Any]],
    *,
    close: str,
    submit: str | None = None,
    callback_id: str | None = None,
    private_metadata: str | None = None,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "type": "modal",
        "title": plain_text(title, MAX_VIEW_TITLE),
        "close": plain_text(close, MAX_VIEW_TITLE),
        "blocks": blocks[:MAX_MODAL_BLOCKS],
    }
    if submit:
        view["submit"] = plain_text(submit, MAX_VIEW_TITLE)
    if callback_id:
        view["callback_id"] = callback_id
    if private_metadata is not None:
        view["private_metadata"] = checked_value(private_metadata, MAX_PRIVATE_METADATA)
    return view


def block_text_length(blocks: list[dict[str, Any]]) -> int:
    """Characters in every `text` string of the blocks: what Slack's cumulative limit counts."""
    total = 0
    stack: list[Any] = list(blocks)
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "text" and isinstance(value, str):
                    total += len(value)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return total
