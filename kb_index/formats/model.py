"""What a converted document is: its metadata and its sections, and why a file cannot be converted.

Kept apart from __init__ so the format modules can import these without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from citebot_core.errors import Permanent

# The reasons a file is refused: short phrases the KB owners see next to the file's name.
REASONS = ("encrypted", "no text layer (a scan?)", "broken file", "too large", "unsupported")


@dataclass(frozen=True)
class DocSection:
    """One section: its heading path and its text, one Markdown unit per line.

    `path` is the heading path, outermost first (("Reisekosten", "Fristen"));
    () for text before the first heading, or in a document without headings.
    `text` is written the way `kb_index.markdown.render` writes it: paragraphs
    (soft breaks joined) apart by a blank line, list items "- ..." or "1. ...",
    table rows "| a | b |" with the "| --- |" separator after the header row,
    links as [text](url), code blocks fenced. `page` is the 1-based page the
    section starts on (PDF), else None.
    """

    path: tuple[str, ...]
    text: str
    page: int | None = None
    # Where a new page begins inside the section: (0-based line of `text`, page), the first
    # entry the section's own start. Lets a long section cut into chunks give each its page.
    line_pages: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Document:
    """A converted file.

    `title` comes from the document itself (PDF or Office metadata, the
    Confluence page title, <title>, a single leading top heading), `stand` is
    the document's own date as YYYY-MM-DD (modified before created), `language`
    the primary language subtag the document declares ("de", "en"), `url` the
    canonical address an HTML page names for itself. Each is None when the
    document does not say.
    """

    title: str | None
    stand: str | None
    language: str | None
    sections: list[DocSection]
    url: str | None = None


class ConversionError(Permanent):
    """The file cannot be converted.

    `reason` is one of REASONS, a short phrase to show the KB's owners;
    `detail` says what exactly was found.
    """

    def __init__(self, reason: str, detail: str = ""):
        if reason not in REASONS:
            raise ValueError(f"unknown conversion failure reason {reason!r}")
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


@dataclass(frozen=True)
class Limits:
    """Bounds for one conversion; a file beyond any of them is refused as "too large"."""

    max_pages: int = 1000  # a PDF with more pages is refused before any page is read
    max_uncompressed_bytes: int = 50_000_000  # docx: the zip members' declared sizes, summed before extracting
    max_chars: int = 5_000_000  # extracted text, counted as it is extracted
    max_zip_members: int = 10_000  # docx: a Word file has a few dozen parts
    max_html_bytes: int = 20_000_000  # HTML input (a docx's converted body counts against max_chars)
    max_seconds: float = 120.0  # wall time, checked between pages, parts and nodes
