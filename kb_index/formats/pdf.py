"""PDF -> Document: text by page; sections from the outline, else from headings by font, else by page.

pypdf reads the file (pure Python; AES through `cryptography`): the page tree,
the outline, the Info dictionary, the catalog's /Lang, and each page's text
runs with their position, font and size (`extract_text(visitor_text=...)`).
From those runs this module builds lines, and from lines blocks:

- running headers and footers are dropped: a line at the top or bottom of a
  page that is a page number ("Seite 2 von 3", "Page 1 of 3", "- 4 -") or that
  comes back on most pages (digits aside);
- a paragraph's lines are joined (a soft break is a space; "Abwe-" + "senheit"
  is "Abwesenheit"); a paragraph ends at a larger vertical gap, a change of
  font size, or a line that starts a list item ("•", "1.");
- consecutive lines whose runs start at the same x positions are table rows;
- headings: the outline's entries, found on their page by their title (or put
  at the top of the page they point to); without an outline, lines in a larger
  size than the body text, or bold where the body is not, ranked by size;
  without either, each page is a section of its own.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadWarning
from pypdf.generic import Destination

from kb_index.formats.blocks import Builder, Deadline, clean
from kb_index.formats.model import ConversionError, Document, Limits

_ITEM = re.compile(r"^([•◦▪▫■□●○‣⁃∙·*–—-]\s*|\(?\d{1,3}[.)]\s+|\(?[a-z][.)]\s+)(?=\S)")
_PAGE_NUMBER = re.compile(
    r"^(?:(?:seite|page|pag\.?|p\.|s\.)\s*)?[-–—]?\s*\d{1,5}\s*[-–—]?(?:\s*(?:von|of|de|/|\|)\s*\d{1,5})?$",
    re.IGNORECASE,
)
_DATE = re.compile(r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?")
_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_WORDISH = re.compile(r"\w", re.UNICODE)


@dataclass
class _Run:
    text: str
    x: float
    y: float
    size: float
    bold: bool


@dataclass
class _Line:
    page: int  # 1-based
    y: float
    size: float
    runs: list[_Run] = field(default_factory=list)
    heading: int = 0  # level, when the line is a heading
    cells: list[str] | None = None  # table row

    @property
    def x(self) -> float:
        return self.runs[0].x

    @property
    def bold(self) -> bool:
        return all(r.bold for r in self.runs if r.text.strip())

    @property
    def text(self) -> str:
        out = self.runs[0].text
        for previous, run in zip(self.runs, self.runs[1:], strict=False):
            if not out.endswith(" ") and not run.text.startswith(" ") and _gap(previous, run) > 0.15:
                out += " "
            out += run.text
        return clean(out)


def _gap(previous: _Run, run: _Run) -> float:
    """The gap between two runs of a line, in multiples of the font size (estimated widths)."""
    end = previous.x + _width(previous)
    return (run.x - end) / max(previous.size, 1.0)


def _width(run: _Run) -> float:
    return len(run.text) * 0.5 * run.size  # an average glyph is about half an em wide


def read(data: bytes, limits: Limits) -> Document:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PdfReadWarning)
        return _read(data, limits)


def _read(data: bytes, limits: Limits) -> Document:
    deadline = Deadline(limits)
    if b"%PDF" not in data[:1024]:
        raise ConversionError("broken file", "no PDF header")
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError as exc:
            raise ConversionError("encrypted", f"cannot decrypt: {exc}") from exc
        if opened == PasswordType.NOT_DECRYPTED:
            raise ConversionError("encrypted", "a password is needed to open it")
    try:
        count = len(reader.pages)
    except FileNotDecryptedError as exc:
        raise ConversionError("encrypted", str(exc)) from exc
    if count > limits.max_pages:
        raise ConversionError("too large", f"{count:,} pages (at most {limits.max_pages:,})")
    if count == 0:
        raise ConversionError("broken file", "no pages")

    pages: list[list[_Line]] = []
    heights: list[float] = []
    for index in range(count):
        deadline.check()
        page = reader.pages[index]
        try:
            heights.append(float(page.mediabox.height) or 842.0)
        except (ValueError, TypeError, KeyError):
            heights.append(842.0)
        lines = _page_lines(page, index + 1)
        deadline.count("".join(r.text for line in lines for r in line.runs))
        pages.append(lines)
    if not any(_WORDISH.search(r.text) for lines in pages for line in lines for r in line.runs):
        raise ConversionError("no text layer (a scan?)", f"{count} page(s) without any text")

    _drop_running_lines(pages, heights)
    lines = [line for page_lines in pages for line in page_lines]
    outline = _outline(reader, count)
    if outline:
        _mark_outline(lines, outline)
        by_page = False
    else:
        by_page = not _mark_font_headings(lines)
    _mark_tables(lines)

    info = _info(reader)
    title_rule = not outline
    if outline and info.get("/Title"):
        # The title line above the outline's first entry (Word's and Writer's Title style is not in
        # the outline): the title heading, one level above the outline's.
        wanted = _norm(info["/Title"])
        for line in lines:
            if line.heading:
                break
            if _norm(line.text) == wanted:
                for other in lines:
                    other.heading += 1 if other.heading else 0
                line.heading, title_rule = 1, True
                break
    builder = Builder(deadline)
    _emit(lines, builder, by_page)
    title = info.get("/Title") or (builder.title_heading() if not by_page else None)
    stand = _date(info.get("/ModDate")) or _date(info.get("/CreationDate"))
    language = _language(reader)
    return Document(title=title or None, stand=stand, language=language, sections=builder.sections(title_rule=title_rule))


# -- reading a page


def _multiply(a: list[float], b: list[float]) -> list[float]:
    return [
        a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5],
    ]


def _page_lines(page: Any, number: int) -> list[_Line]:
    """The page's text lines in content order, each a list of runs at one baseline."""
    runs: list[_Run] = []

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        if not text or not text.strip():
            return
        try:
            m = _multiply([float(v) for v in tm], [float(v) for v in cm])
            scale = math.hypot(m[2], m[3]) or 1.0
            name = str(font.get("/BaseFont", "")) if font is not None and hasattr(font, "get") else ""
            effective = abs(float(size)) * scale
        except (TypeError, ValueError, AttributeError):
            return
        if not all(math.isfinite(v) for v in (m[4], m[5], effective)):
            return
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if part.strip():
                runs.append(_Run(part, m[4] if i == 0 else 0.0, m[5] - i * effective * 1.2, effective, bool(_BOLD.search(name))))

    page.extract_text(visitor_text=visit)
    lines: list[_Line] = []
    for run in runs:
        size = max(run.size, 1.0)
        line = lines[-1] if lines else None
        if line is not None and abs(line.y - run.y) < 0.5 * min(size, line.size) and run.x >= line.runs[-1].x - 1:
            line.runs.append(run)
            line.size = max(line.size, run.size)
        else:
            lines.append(_Line(number, run.y, run.size, [run]))
    return [line for line in lines if line.text]


# -- running headers and footers


def _shape(text: str) -> str:
    return re.sub(r"\d+", "#", text.casefold())


def _drop_running_lines(pages: list[list[_Line]], heights: list[float]) -> None:
    """Drops page numbers and lines repeated at the top or bottom of most pages."""
    bands: list[list[_Line]] = []
    for lines, height in zip(pages, heights, strict=True):
        if not lines:
            bands.append([])
            continue
        ys = sorted({round(line.y, 1) for line in lines})
        low, high = set(ys[:2]), set(ys[-2:])
        bands.append([
            line for line in lines
            if (round(line.y, 1) in low and line.y < 0.15 * height) or (round(line.y, 1) in high and line.y > 0.85 * height)
        ])
    seen = Counter(shape for band in bands for shape in {_shape(line.text) for line in band})
    repeated = {shape for shape, n in seen.items() if len(pages) >= 2 and n >= max(2, math.ceil(len(pages) / 2))}
    for lines, band in zip(pages, bands, strict=True):
        drop = {id(line) for line in band if _PAGE_NUMBER.match(line.text) or _shape(line.text) in repeated}
        lines[:] = [line for line in lines if id(line) not in drop]


# -- headings


def _outline(reader: PdfReader, count: int) -> list[tuple[int, str, int, float | None]]:
    """The outline as (level, title, 1-based page, top), in order; [] when the file has none."""
    found: list[tuple[int, str, int, float | None]] = []

    def walk(items: Any, level: int) -> None:
        if level > 6 or len(found) > 10_000:
            return
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
            elif isinstance(item, Destination):
                try:
                    page = reader.get_destination_page_number(item)
                    top = item.get("/Top")
                except Exception:  # a destination the file does not resolve is no heading
                    continue
                title = clean(str(item.title or ""))
                if title and page is not None and 0 <= page < count:
                    found.append((level, title, page + 1, float(top) if isinstance(top, (int, float)) else None))

    try:
        walk(reader.outline, 1)
    except Exception:  # a broken outline: read the file as if it had none
        return []
    return found


def _norm(text: str) -> str:
    return re.sub(r"\W+", "", text.casefold())


def _mark_outline(lines: list[_Line], outline: list[tuple[int, str, int, float | None]]) -> None:
    """Marks each outline entry's line as a heading; an entry not found in the text gets a line of its own."""
    start = 0
    for level, title, page, top in outline:
        wanted = _norm(title)
        hit = None
        for i in range(start, len(lines)):
            line = lines[i]
            if line.page > page:
                break
            if line.page == page and not line.heading and wanted and _norm(line.text) == wanted:
                hit = i
                break
        if hit is None:  # the heading is not in the text (or not as written): put it where the entry points
            at = next(
                (i for i in range(start, len(lines)) if lines[i].page > page
                 or (lines[i].page == page and (top is None or lines[i].y <= top + 1))),
                len(lines),
            )
            lines.insert(at, _Line(page, top or 0.0, 0.0, [_Run(title, 0.0, top or 0.0, 0.0, False)], heading=level))
            start = at + 1
        else:
            lines[hit].heading = level
            start = hit + 1


def _mark_font_headings(lines: list[_Line]) -> bool:
    """Marks lines set larger than the body text, or bold where it is not, as headings; False when none are."""
    sizes: Counter[tuple[float, bool]] = Counter()
    for line in lines:
        for run in line.runs:
            sizes[(round(run.size * 2) / 2, run.bold)] += len(run.text)
    if not sizes:
        return False
    (body_size, body_bold), _ = sizes.most_common(1)[0]
    candidates: list[_Line] = []
    for line in lines:
        text = line.text
        size = round(line.size * 2) / 2
        if len(text) > 120 or _ITEM.match(text) or text.endswith((".", ",", ";")) and size <= body_size:
            continue
        larger = size >= body_size * 1.15 and all(round(r.size * 2) / 2 >= body_size * 1.15 for r in line.runs)
        bolder = line.bold and not body_bold and size >= body_size and _distinct_x_runs(line) <= 1
        if larger or bolder:
            candidates.append(line)
    if not candidates or len(candidates) > max(3, len(lines) // 3):
        return False
    styles = sorted({(round(c.size * 2) / 2, c.bold) for c in candidates}, key=lambda s: (-s[0], not s[1]))
    rank = {style: i + 1 for i, style in enumerate(styles[:6])}
    for line in candidates:
        line.heading = rank.get((round(line.size * 2) / 2, line.bold), 6)
    return True


def _distinct_x_runs(line: _Line) -> int:
    """How many of the line's runs start a new column (a big gap before them)."""
    return sum(1 for a, b in zip(line.runs, line.runs[1:], strict=False) if _gap(a, b) > 2.0)


# -- tables


def _column_starts(line: _Line) -> list[float]:
    starts = [line.runs[0].x]
    for a, b in zip(line.runs, line.runs[1:], strict=False):
        if _gap(a, b) > 0.5:
            starts.append(b.x)
    return starts


def _mark_tables(lines: list[_Line]) -> None:
    """Consecutive body lines of one page with the same two or more column starts are table rows."""
    i = 0
    while i < len(lines):
        starts = _column_starts(lines[i]) if not lines[i].heading else []
        if len(starts) < 2 or _ITEM.match(lines[i].text):
            i += 1
            continue
        j = i + 1
        while (
            j < len(lines) and not lines[j].heading and lines[j].page == lines[i].page
            and _same_columns(_column_starts(lines[j]), starts)
        ):
            j += 1
        if j - i >= 2:
            for line in lines[i:j]:
                line.cells = _cells(line, starts)
        i = max(j, i + 1)


def _same_columns(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) < 2.0 for x, y in zip(a, b, strict=True))


def _cells(line: _Line, starts: list[float]) -> list[str]:
    cells: list[list[_Run]] = [[] for _ in starts]
    for run in line.runs:
        column = max(i for i, x in enumerate(starts) if run.x >= x - 2.0) if run.x >= starts[0] - 2.0 else 0
        cells[column].append(run)
    return [_Line(line.page, line.y, line.size, runs).text if runs else "" for runs in cells]


# -- blocks


def _join(lines: list[str]) -> str:
    """A paragraph's lines as one: hyphenated line ends joined, soft breaks as spaces."""
    out = ""
    for text in lines:
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and text[:1].isalpha():
            out = out[:-1] + text if text[:1].islower() else out + text
        else:
            out = f"{out} {text}" if out else text
    return out


def _emit(lines: list[_Line], builder: Builder, by_page: bool) -> None:
    pitches = [
        a.y - b.y
        for a, b in zip(lines, lines[1:], strict=False)
        if a.page == b.page and not a.heading and not b.heading and abs(a.size - b.size) < 0.5 and a.y > b.y
    ]
    pitch = sorted(pitches)[len(pitches) // 2] if pitches else 14.0
    paragraph: list[str] = []
    item: bool = False
    page_of_block = 1
    table: list[list[str]] = []
    table_page = 1
    previous: _Line | None = None
    current_page = 0

    def flush() -> None:
        nonlocal paragraph, item
        if paragraph:
            text = _join(paragraph)
            if item:
                marker = _ITEM.match(text)
                body = text[marker.end():] if marker else text
                number = re.match(r"^\(?(\d{1,3})[.)]", text)
                if number:
                    builder.item(body, number=int(number.group(1)), page=page_of_block)
                else:
                    builder.item(body, page=page_of_block)
            else:
                builder.paragraph(text, page=page_of_block)
        paragraph, item = [], False

    def flush_table() -> None:
        nonlocal table
        if table:
            builder.table(table, page=table_page)
        table = []

    for line in lines:
        if line.page != current_page:
            current_page = line.page
            if by_page:
                flush()
                flush_table()
                builder.page_break(line.page)
                previous = None
        if line.heading:
            flush()
            flush_table()
            builder.heading(line.heading, line.text, page=line.page)
            previous = line
            continue
        if line.cells is not None:
            flush()
            if not table:
                table_page = line.page
            table.append(line.cells)
            previous = line
            continue
        flush_table()
        text = line.text
        starts_item = bool(_ITEM.match(text)) and not (text[:1] in "-–—" and len(text) > 1 and text[1:2].isalpha())
        new_block = (
            previous is None or previous.heading or previous.cells is not None or starts_item
            or abs(previous.size - line.size) >= 0.5
            or (previous.page == line.page and (previous.y - line.y > pitch * 1.35 or previous.y < line.y))
            or (previous.page != line.page and (text[:1].isupper() or paragraph[-1:] == [] or
                                                 paragraph[-1].endswith((".", ":", "!", "?"))))
        )
        if new_block:
            flush()
            page_of_block = line.page
            item = starts_item
        paragraph.append(text)
        previous = line
    flush()
    flush_table()


# -- metadata


def _info(reader: PdfReader) -> dict[str, str]:
    try:
        info = reader.metadata
    except Exception:  # a broken Info dictionary: no metadata
        return {}
    if not info:
        return {}
    out = {}
    for key in ("/Title", "/ModDate", "/CreationDate"):
        try:
            value = info.get(key)
        except Exception:  # an unresolvable reference in the Info dictionary
            continue
        text = clean(str(value)) if value is not None else ""
        if key == "/Title":
            text = re.sub(r"^Microsoft (Word|PowerPoint) - ", "", text)
            if text.lower() in ("untitled", "unbenannt", "") or re.fullmatch(r".*\.(docx?|odt|rtf|txt|pdf)", text, re.I):
                continue
        out[key] = text
    return out


def _date(value: str | None) -> str | None:
    match = _DATE.match(value or "")
    if not match or not match.group(2) or not match.group(3):
        return None
    year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31 and 1980 <= year <= 2200):
        return None
    return f"{year:04d}-{month:02d}-{day:02d}"


def _language(reader: PdfReader) -> str | None:
    try:
        root: Any = reader.trailer["/Root"]
        lang = root.get("/Lang")
    except Exception:  # no catalog to read it from
        return None
    primary = str(lang or "").replace("_", "-").split("-")[0].strip().lower()
    return primary if primary.isalpha() and 2 <= len(primary) <= 3 else None
