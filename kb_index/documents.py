"""Metadata for files without front matter, and converted documents -> sections.

A PDF, a Word file, a wiki export or a plain Markdown page names no KB-ID and
often no date or language. What it does say wins over guesses, and what it
cannot say comes from its collection's `_collection.yml`:

    id           from the path ('hr/travel-policy.pdf' -> 'hr-travel-policy')
    title        the document's own (PDF/Office metadata, <title>, a single top
                 heading), else the file name
    stand        the document's own date, else the file's modification date
    language     the collection file's, else detected from the text, else what
                 the document declares, else the KB's default: templates
                 declare lang="en" on German pages more often than not
    url          the document's own canonical address, else the collection's
                 base_url with the file's path
    source_role  the collection file's, else the default

A converted document's sections keep their heading path, shown joined with
" › " ("Reisekosten › Fristen"), and their page.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from citebot_core.languages import LANGUAGES
from kb_index.analysis import detect_language
from kb_index.chunking import split_long_lines
from kb_index.collection import NO_COLLECTION_FILE, Collection
from kb_index.formats.model import DocSection, Document
from kb_index.results import DEFAULT_SOURCE_ROLE

PATH_SEPARATOR = " › "
# Text before a document's first heading, as for a Markdown entry.
OVERVIEW = "Overview"


@dataclass(frozen=True)
class FileContext:
    """What the indexer knows of a file besides its bytes."""

    rel: str  # its path in the KB
    collection: str
    settings: Collection = NO_COLLECTION_FILE
    mtime: float | None = None
    default_language: str = "en"

    @property
    def rel_in_collection(self) -> str:
        return self.rel.split("/", 1)[1] if "/" in self.rel else self.rel

    def language(self, text: str, declared: str | None = None) -> str:
        declared = (declared or "").lower() or None
        for candidate in (self.settings.language, detect_language(text), declared):
            if candidate in LANGUAGES:
                return candidate
        return self.default_language

    def stand(self, own: str | None = None) -> str | None:
        if own:
            return own
        if self.mtime is None:
            return None
        return dt.datetime.fromtimestamp(self.mtime, dt.UTC).strftime("%Y-%m-%d")

    def url(self, own: str | None = None) -> str | None:
        return own or self.settings.url_of(self.rel_in_collection)

    @property
    def source_role(self) -> str:
        return self.settings.source_role or DEFAULT_SOURCE_ROLE


@dataclass(frozen=True)
class SectionText:
    name: str
    text: str
    page: int | None


def document_sections(doc: Document) -> list[SectionText]:
    """The document's sections with their path as the name, long ones cut (kb_index.chunking)."""
    out: list[SectionText] = []
    for section in doc.sections:
        text = section.text.strip()
        if not text:
            continue
        name = PATH_SEPARATOR.join(p for p in section.path if p) or ("" if section.page else OVERVIEW)
        out += [SectionText(part_name, part, _page_at(section, line))
                for part_name, part, line in split_long_lines(name, text)]
    return out


def _page_at(section: DocSection, line: int) -> int | None:
    """The page the section's text is on at `line`: a long section's parts each name their own."""
    page = section.page
    for start, on in section.line_pages:
        if start > line:
            break
        page = on
    return page


def document_text(doc: Document) -> str:
    """Enough of the document's text to detect its language."""
    return "\n".join(s.text for s in doc.sections)[:50_000]
