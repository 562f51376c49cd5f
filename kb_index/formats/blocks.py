"""Blocks -> sections: what every format's reader hands over, and how it becomes DocSections.

A reader (pdf, docx, html) walks its document and calls `Builder`: a heading
with its level, a paragraph, a list item, a table row, a code block. The
builder keeps the heading path and renders each section's text with
kb_index.markdown's own `render`, so converted text is stored exactly like a
Markdown entry's: one unit per line, and `markdown.normalize` leaves it as it is.

A document whose first heading is its only one at the top level (a Word title
heading, an HTML page's <h1>, a PDF's largest line) has that heading as its
title: it is left out of the paths, as a Markdown entry's `#` title is.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from kb_index import markdown
from kb_index.formats.model import ConversionError, DocSection, Limits

_SPACE = re.compile(r"\s+")
# Line starts that would make CommonMark read a paragraph as something else.
_BULLET_START = re.compile(r"^([-+*])(\s+)(?=\S)")
_ORDERED_START = re.compile(r"^(\d{1,9})([.)])(\s+)(?=\S)")
_NEEDS_ESCAPE = re.compile(
    r"^(#{1,6}(\s|$)|>|<[A-Za-z/!?]|`{3,}|~{3,}|=+\s*$|([-*_])(\s*\3){2,}\s*$|[-+*]\s*$|\d{1,9}[.)]\s*$|\[[^\]]*\]:)"
)
_ITEM_NEEDS_ESCAPE = re.compile(r"^(\d{1,9}[.)](\s|$)|[-+*](\s|$))")


def clean(text: str) -> str:
    """One line: every run of whitespace (line breaks, tabs, no-break spaces) as one space."""
    return _SPACE.sub(" ", text.replace("\u00ad", "")).strip()


def escape_start(text: str) -> str:
    """The text, its first character escaped where a line starting so would not be a paragraph."""
    return "\\" + text if _NEEDS_ESCAPE.match(text) else text


class Deadline:
    """The conversion's time and text budget; `check` raises "too large" once either is spent."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.ends = time.monotonic() + limits.max_seconds
        self.chars = 0

    def check(self) -> None:
        if time.monotonic() > self.ends:
            raise ConversionError("too large", f"conversion took longer than {self.limits.max_seconds:g} s")

    def count(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > self.limits.max_chars:
            raise ConversionError("too large", f"more than {self.limits.max_chars:,} characters of text")


@dataclass
class _Heading:
    level: int
    text: str
    page: int | None


@dataclass
class _Break:
    """A new section with the same path (a PDF without headings: one section per page)."""

    page: int | None


@dataclass
class _Content:
    unit: markdown.Unit
    page: int | None


@dataclass
class Builder:
    """Collects a document's blocks in reading order; `sections()` makes the DocSections.

    Lists follow CommonMark's reading of the rendered text: items one after the
    other are one list (one group, consecutive lines) when they are of one kind
    (bullets, or numbers with the same delimiter), and an ordered list counts up
    from its first number, as `markdown.render` writes it back.
    """

    deadline: Deadline
    blocks: list[_Heading | _Break | _Content] = field(default_factory=list)
    _group: int = 0
    _last: markdown.Unit | None = None
    _list_kind: str = ""  # "-" or the ordered delimiter of the open top-level list
    _next_number: int = 1

    def _add(self, unit: markdown.Unit, page: int | None) -> None:
        self.deadline.count(unit.text)
        self.blocks.append(_Content(unit, page))
        self._last = unit

    def _new_group(self) -> int:
        self._group += 1
        return self._group

    def heading(self, level: int, text: str, page: int | None = None) -> None:
        text = clean(text)
        if text:
            self.deadline.count(text)
            self.blocks.append(_Heading(max(1, level), text, page))
            self._last = None

    def page_break(self, page: int | None) -> None:
        self.blocks.append(_Break(page))
        self._last = None

    def paragraph(self, text: str, page: int | None = None, quote: int = 0) -> None:
        """A paragraph; one that starts like a list item ("- ", "3. ") is one (as CommonMark reads it)."""
        text = clean(text)
        if not text:
            return
        if not quote:
            bullet, ordered = _BULLET_START.match(text), _ORDERED_START.match(text)
            if bullet:
                self.item(text[bullet.end() :], page=page)
                return
            if ordered and self._numbered_item_fits(int(ordered.group(1)), ordered.group(2)):
                self.item(text[ordered.end() :], number=int(ordered.group(1)), page=page, delim=ordered.group(2))
                return
            if ordered:  # "5. ..." right after a list ending at 3: a list item would be renumbered
                text = f"{ordered.group(1)}\\{text[len(ordered.group(1)):]}"
        self._add(markdown.Unit("paragraph", escape_start(text), 0, 0, "> " * quote, self._new_group()), page)

    def _numbered_item_fits(self, number: int, delim: str) -> bool:
        last = self._last
        continues = last is not None and last.kind == "item" and self._list_kind == delim
        return not continues or number == self._next_number

    def item(self, text: str, depth: int = 1, number: int | None = None, page: int | None = None,
             delim: str = ".") -> None:
        """A list item at `depth` (1 = top level); `number` for an ordered list's item."""
        text = clean(text)
        if not text:
            return
        last = self._last
        in_list = last is not None and last.kind == "item"
        depth = min(depth, last.level + 1) if in_list and last is not None else 1
        kind = "-" if number is None else delim
        if depth == 1:
            if not in_list or kind != self._list_kind:
                self._new_group()
                self._list_kind = kind
                self._next_number = number if number is not None else 1
            if number is not None:
                number = self._next_number
                self._next_number += 1
        elif number is not None:
            number = 1  # nested numbering is the walker's; render counts nested lists itself
        if _ITEM_NEEDS_ESCAPE.match(text) or (_NEEDS_ESCAPE.match(text) and not text.startswith("<")):
            text = "\\" + text
        indent = "  " * (depth - 1)
        marker = f"{indent}{number}{delim} " if number is not None else f"{indent}- "
        self._add(markdown.Unit("item", text, 0, depth, marker, self._group), page)

    def table(self, rows: list[list[str]], page: int | None = None) -> None:
        """A table's rows; the first is the header row (GFM tables need one, so it is one even
        when the source marks none). A one-column table is a run of paragraphs."""
        cleaned = [[clean(cell) for cell in row] for row in rows]
        cleaned = [row for row in cleaned if any(row)]
        if not cleaned:
            return
        width = max(len(row) for row in cleaned)
        if width == 1:
            for row in cleaned:
                self.paragraph(row[0], page)
            return
        group = self._new_group()
        for i, row in enumerate(cleaned):
            cells = [_cell(cell) for cell in row] + [""] * (width - len(row))
            self._add(markdown.Unit("row", "| " + " | ".join(cells) + " |", 0, int(i == 0), "", group), page)

    def code(self, text: str, page: int | None = None) -> None:
        body = text.strip("\n")
        if not body.strip():
            return
        fence = "```"
        while fence in body:
            fence += "`"
        self._add(markdown.Unit("code", f"{fence}\n{body}\n{fence}", 0, 0, "", self._new_group()), page)

    def first_heading(self) -> str | None:
        return next((b.text for b in self.blocks if isinstance(b, _Heading)), None)

    def title_heading(self) -> str | None:
        """The document's title heading: the first heading, when it is the only one at the top level."""
        headings = [b for b in self.blocks if isinstance(b, _Heading)]
        if not headings:
            return None
        top = min(h.level for h in headings)
        if headings[0].level == top and sum(1 for h in headings if h.level == top) == 1:
            return headings[0].text
        return None

    def sections(self, *, title_rule: bool = True) -> list[DocSection]:
        """The sections in order. A heading without text of its own before the next heading
        makes no section; the title heading (`title_heading`) is in no path."""
        title_block = None
        if title_rule and self.title_heading() is not None:
            title_block = next(b for b in self.blocks if isinstance(b, _Heading))
        out: list[DocSection] = []
        stack: list[_Heading] = []
        units: list[markdown.Unit] = []
        page: int | None = None
        path: tuple[str, ...] = ()

        pages: list[int | None] = []

        def flush() -> None:
            text = markdown.render(units).strip()
            if text:
                out.append(DocSection(path, text, page, _line_pages(text, pages)))

        for block in self.blocks:
            if isinstance(block, _Content):
                if not units and page is None:
                    page = block.page
                units.append(block.unit)
                pages.append(block.page)
                continue
            flush()
            units, pages, page = [], [], block.page
            if isinstance(block, _Heading) and block is not title_block:
                while stack and stack[-1].level >= block.level:
                    stack.pop()
                stack.append(block)
                path = tuple(h.text for h in stack)
        flush()
        return out


def _line_pages(text: str, pages: list[int | None]) -> tuple[tuple[int, int], ...]:
    """(line, page) where each page begins in the rendered text: its units read back are the
    units it was rendered from, one by one; should they not be (CommonMark joins what was two),
    nothing is claimed beyond the section's first page."""
    read = markdown.units(text)
    if len(read) != len(pages):
        return ()
    out: list[tuple[int, int]] = []
    for unit, page in zip(read, pages, strict=True):
        if page is not None and (not out or out[-1][1] != page):
            out.append((unit.line, page))
    return tuple(out)


def _cell(text: str) -> str:
    text = text.replace("|", "\\|")
    return text + "\\" if text.endswith("\\") else text
