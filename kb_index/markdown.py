"""Markdown as units of meaning: paragraphs, list items, table rows, headings, code.

KB files in the wild are hard-wrapped: a paragraph runs over several lines, and
a line break inside it is only a soft break (CommonMark renders it as a space).
Anything that splits text at line breaks (the sentence splitter, the extractive
backend) would cut such a paragraph mid-sentence and lose its "nicht" to the
next line. So the text is parsed once with a CommonMark parser (markdown-it-py)
and written back with one unit per line: a paragraph's soft breaks joined, each
list item and table row on a line of its own, headings as headings, code
blocks as they were. The indexer stores chunks in that form; the verifiers and
the extractive backend read answers and blocks through `units`.

Inline markup (links, emphasis, code spans, citations in square brackets) is
kept as written: it is what the model saw, and links must stay checkable.

This module is part of kb_index and must not import from `bot`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

UnitKind = Literal["heading", "paragraph", "item", "row", "code", "html"]

# CommonMark plus GFM tables: KB pages and wiki exports hold tables, and a row
# is a unit of its own. For KB text html=True keeps raw HTML blocks as blocks
# instead of paragraphs of tag soup; an answer is read with html off, because
# Slack's own syntax (<!channel>, <@U123>, <https://x|y>) looks like HTML to
# CommonMark and must stay text that the verifiers see.
_PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")
_TEXT_PARSER = MarkdownIt("commonmark", {"html": False}).enable("table")


@dataclass(frozen=True)
class Unit:
    kind: UnitKind
    text: str  # one line, except for code blocks
    line: int  # 0-based line of the source where the unit starts
    level: int = 0  # heading level; list nesting depth for items
    marker: str = ""  # "- " or "3. " for list items, "> " per blockquote level
    group: int = 0  # units of one paragraph, list or table share a group
    atx: bool = True  # a heading written "## ..." (not underlined: "Text\n---")


def _inline_text(token: Token) -> str:
    """The raw inline source with its soft and hard line breaks joined."""
    return " ".join(part.strip() for part in token.content.splitlines() if part.strip())


class _Walker:
    """Turns markdown-it's flat token stream into Units (containers tracked on a stack)."""

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.lists: list[dict] = []  # per open list: ordered?, next number, marker char
        self.quote_depth = 0
        self.group = 0
        self.item_open: list[bool] = []  # per open list item: has its first paragraph been emitted?
        self.row: list[str] = []
        self.row_line = 0
        self.in_head = False

    def add(self, kind: UnitKind, text: str, line: int, level: int = 0, marker: str = "", atx: bool = True) -> None:
        if text:
            quote = "> " * self.quote_depth
            self.units.append(Unit(kind, text, line, level, quote + marker, self.group, atx))

    def walk(self, tokens: list[Token]) -> list[Unit]:
        for i, tok in enumerate(tokens):
            handler = getattr(self, f"_on_{tok.type}", None)
            if handler:
                handler(tok, tokens, i)
        return self.units

    # -- containers
    def _on_bullet_list_open(self, tok, tokens, i):
        if not self.lists:
            self.group += 1
        self.lists.append({"ordered": False, "bullet": tok.markup or "-"})

    def _on_ordered_list_open(self, tok, tokens, i):
        if not self.lists:
            self.group += 1
        start = int(tok.attrGet("start") or 1)
        self.lists.append({"ordered": True, "next": start, "delim": tok.markup or "."})

    def _on_bullet_list_close(self, tok, tokens, i):
        self.lists.pop()

    _on_ordered_list_close = _on_bullet_list_close

    def _on_list_item_open(self, tok, tokens, i):
        self.item_open.append(False)

    def _on_list_item_close(self, tok, tokens, i):
        self.item_open.pop()

    def _on_blockquote_open(self, tok, tokens, i):
        self.quote_depth += 1
        self.group += 1

    def _on_blockquote_close(self, tok, tokens, i):
        self.quote_depth -= 1
        self.group += 1

    # -- leaves
    def _item_marker(self) -> str:
        current = self.lists[-1]
        indent = "  " * (len(self.lists) - 1)
        if current["ordered"]:
            number = current["next"]
            current["next"] += 1
            return f"{indent}{number}{current['delim']} "
        return f"{indent}- "

    def _on_inline(self, tok, tokens, i):
        parent = tokens[i - 1].type if i else ""
        line = tok.map[0] if tok.map else 0
        text = _inline_text(tok)
        if parent == "heading_open":
            self.group += 1
            opening = tokens[i - 1]
            self.add("heading", text, line, int(opening.tag[1]), atx=opening.markup.startswith("#"))
            self.group += 1
        elif parent in ("th_open", "td_open"):
            self.row.append(text)
            self.row_line = line
        elif parent == "paragraph_open" and self.item_open:
            if not self.item_open[-1]:
                self.item_open[-1] = True
                self.add("item", text, line, len(self.lists), self._item_marker())
            else:  # a further paragraph of the same item: its own unit, indented under it
                self.add("item", text, line, len(self.lists), "  " * len(self.lists))
        elif parent == "paragraph_open":
            self.group += 1
            self.add("paragraph", text, line)

    def _on_table_open(self, tok, tokens, i):
        self.group += 1

    def _on_tr_open(self, tok, tokens, i):
        self.row = []

    def _on_thead_open(self, tok, tokens, i):
        self.in_head = True

    def _on_thead_close(self, tok, tokens, i):
        self.in_head = False

    def _on_tr_close(self, tok, tokens, i):
        if any(self.row):
            # level 1: the header row, after which a table needs its separator line
            self.add("row", "| " + " | ".join(self.row) + " |", self.row_line, level=int(self.in_head))

    def _on_fence(self, tok, tokens, i):
        self.group += 1
        fence = tok.markup or "```"
        self.add("code", f"{fence}{tok.info}\n{tok.content.rstrip()}\n{fence}", tok.map[0] if tok.map else 0)

    def _on_code_block(self, tok, tokens, i):
        self.group += 1
        self.add("code", "```\n" + tok.content.rstrip() + "\n```", tok.map[0] if tok.map else 0)

    def _on_html_block(self, tok, tokens, i):
        self.group += 1
        self.add("html", tok.content.strip(), tok.map[0] if tok.map else 0)


def units(text: str, *, html: bool = True) -> list[Unit]:
    """The units of a Markdown text, in order; `html=False` reads raw HTML as text."""
    return _Walker().walk((_PARSER if html else _TEXT_PARSER).parse(text))


def render_unit(unit: Unit) -> str:
    if unit.kind == "heading":
        return f"{'#' * unit.level} {unit.text}"
    return f"{unit.marker}{unit.text}"


def render(found: list[Unit]) -> str:
    """Units back to Markdown, one unit per line: paragraphs apart by a blank line, the
    items of one list and the rows of one table on consecutive lines."""
    out: list[str] = []
    previous: Unit | None = None
    for unit in found:
        if previous is not None:
            together = unit.group == previous.group and unit.kind in ("item", "row")
            out.append("\n" if together else "\n\n")
        out.append(render_unit(unit))
        if unit.kind == "row" and unit.level == 1:
            out.append("\n|" + " --- |" * (unit.text.count(" | ") + 1))
        previous = unit
    return "".join(out)


def normalize(text: str) -> str:
    """The text with one unit per line (`render`). Any Markdown reader renders it as the
    original (soft breaks are spaces); a line-based reader now splits it correctly."""
    return render(units(text))
