"""What retrieval hands to the answering side, and the entry metadata every chunk carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

DEFAULT_SOURCE_ROLE = "primary_answer_source"


@dataclass(frozen=True, kw_only=True)
class EntryMetadata:
    """What an entry's front matter says besides its id, title and language.

    Declared once for the entry as loaded (entries.Entry) and each chunk as
    retrieved (ChunkResult); the chunk store keeps them with every chunk.
    """

    stand: str | None = None
    work: str | None = None
    chapter: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    legal_bases: tuple[str, ...] = ()
    cross_refs: tuple[str, ...] = ()
    url: str | None = None
    source_role: str = DEFAULT_SOURCE_ROLE

    def stored_metadata(self) -> dict[str, Any]:
        """These fields as the chunk store writes them: lists for tuples (JSON)."""
        return {f.name: _stored(getattr(self, f.name)) for f in fields(EntryMetadata)}


def _stored(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def metadata_of(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata fields of a stored chunk, as keyword arguments for an Entry or a ChunkResult."""
    found: dict[str, Any] = {}
    for f in fields(EntryMetadata):
        value = doc.get(f.name)
        if isinstance(f.default, tuple):
            found[f.name] = tuple(value or ())
        elif value is not None:
            found[f.name] = value
    return found


@dataclass(frozen=True)
class ChunkResult(EntryMetadata):
    """One section of one KB entry, as retrieved.

    Ranked best first by `Retriever.search`; cross-ref expansions come after the
    main hits with `expanded=True`. `content_hash` identifies the exact text an
    answer relied on, so an audit can tell when the entry changed later.
    """

    chunk_id: str
    entry_id: str
    section: str
    text: str
    title: str
    collection: str = "default"
    language: str = "en"
    score: float = 0.0
    expanded: bool = False
    content_hash: str = ""
    path: str = field(default="", compare=False)
    page: int | None = None  # the page the section starts on (PDF), shown as "p. 4"
