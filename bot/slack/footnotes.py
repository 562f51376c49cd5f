"""Footnotes in Slack: the answer's `[n] title · section · Stand` lines in mrkdwn.

The line itself is bot.answer.assemble.footnote, the one footnote format (the
terminal prints it plain); this module only says how Slack writes its parts:
KB text escaped and cut so that one odd entry cannot crowd out the rest, and
the title linked to the entry's url in blocks, the url after the line in the
notification text (`text`, where links are not clickable everywhere).
"""

from __future__ import annotations

from bot.answer.assemble import FootnoteMarkup, footnote, format_text_answer
from bot.i18n import Key, message
from bot.models import Answer, Source
from bot.slack.blockkit import MAX_CONTEXT_ELEMENTS
from bot.slack.mrkdwn import clip, clip_escaped, escape, link

TITLE_CHARS = 120
SECTION_NAME_CHARS = 80
STAND_CHARS = 80  # a date, as the KB writes it; longer is a mistake in the entry
# Keeps room after a cut footnote list for its "…and N more sources" line.
MORE_LINE_CHARS = 60


class Mrkdwn(FootnoteMarkup):
    """`linked`: in blocks the title is the link; in `text` (linked=False) the url follows the line."""

    url_separator = " "  # right after the line, so that a client which links bare urls shows it as the line's link

    def __init__(self, *, linked: bool):
        self.linked = linked

    def title(self, source: Source) -> str:
        title = clip(source.title or source.id, TITLE_CHARS)
        return link(source.url, title) if self.linked else escape(title)

    def text(self, value: str) -> str:
        return escape(value)

    def section(self, value: str) -> str:
        return clip_escaped(value, SECTION_NAME_CHARS)

    def stand(self, value: str) -> str:
        return clip_escaped(value, STAND_CHARS)

    def url(self, source: Source) -> str | None:
        return escape(source.url) if source.url and not self.linked else None


IN_BLOCKS = Mrkdwn(linked=True)
IN_TEXT = Mrkdwn(linked=False)


def source_line(source: Source) -> str:
    """`[n] title · section · Stand YYYY-MM`, the title linked when the entry has a url."""
    return footnote(source, IN_BLOCKS)


def source_lines(sources: list[Source], language: str, max_chars: int, max_blocks: int) -> list[str]:
    """One line per footnote, for `contexts`; past `max_chars` or `max_blocks` context
    blocks the list ends with "…and N more sources"."""
    lines: list[str] = []
    used = 0
    max_lines = max_blocks * MAX_CONTEXT_ELEMENTS
    for i, source in enumerate(sources):
        line = source_line(source)
        left = len(sources) - i
        # Unless this is the last source, keep room for the "…and N more" line after it.
        if left > 1 and (len(lines) + 2 > max_lines or used + len(line) > max_chars - MORE_LINE_CHARS):
            lines.append(escape(message(Key.MORE_SOURCES, language, count=left)))
            break
        lines.append(line)
        used += len(line)
    return lines


def answer_text(answer: Answer, language: str, limit: int) -> str:
    """The answer with its footnotes as the message's `text`: what notifications and
    clients without blocks show. It is mrkdwn too, so escaped."""
    return clip(format_text_answer(answer, language, IN_TEXT), limit)
