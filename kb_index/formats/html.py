"""html reader (being written)."""

from __future__ import annotations

from kb_index.formats.model import ConversionError, Document, Limits


def read(data: bytes, limits: Limits) -> Document:
    raise ConversionError("unsupported", "the html converter is not built yet")
