"""What retrieval hands to the answering side."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ChunkResult:
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
    stand: str | None = None
    work: str | None = None
    chapter: str | None = None
    topic: str | None = None
    tags: tuple[str, ...] = ()
    legal_bases: tuple[str, ...] = ()
    cross_refs: tuple[str, ...] = ()
    url: str | None = None
    collection: str = "default"
    source_role: str = "primary_answer_source"
    language: str = "en"
    score: float = 0.0
    expanded: bool = False
    content_hash: str = ""
    path: str = field(default="", compare=False)
