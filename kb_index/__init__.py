"""Knowledge base -> Whoosh index -> retrieval. Knows nothing of Slack, LLMs or Redis."""

from kb_index.entries import Entry, LoadError, LoadResult, load_kb
from kb_index.index import BuildReport, IndexEmpty, IndexNotFound, IndexOutdated, build_index
from kb_index.results import ChunkResult
from kb_index.search import Retriever

__all__ = [
    "BuildReport",
    "ChunkResult",
    "Entry",
    "IndexEmpty",
    "IndexNotFound",
    "IndexOutdated",
    "LoadError",
    "LoadResult",
    "Retriever",
    "build_index",
    "load_kb",
]
