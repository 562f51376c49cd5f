"""Knowledge base -> Whoosh index -> retrieval. Knows nothing of Slack, LLMs or Redis."""

from kb_index.results import ChunkResult

__all__ = ["ChunkResult"]
