"""Format converters: a PDF, Word (.docx) or HTML file's bytes -> a Document of sections.

`convert(data, suffix)` is the one entry point. It returns a Document
(kb_index.formats.model) or raises ConversionError with one of REASONS
("encrypted", "no text layer (a scan?)", "broken file", "too large",
"unsupported"); anything else a parsing library raises on a malformed file is
reported as "broken file", so the indexer can list the file with its reason and
go on with the rest.

Each reader lives in its own module (pdf, docx, html), imported only when a
file of its kind is converted.
"""

from __future__ import annotations

import importlib

from kb_index.formats.model import REASONS, ConversionError, DocSection, Document, Limits

__all__ = ["REASONS", "SUFFIXES", "ConversionError", "DocSection", "Document", "Limits", "convert"]

# suffix (lower case, with the dot) -> reader module in this package
_READERS = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html"}
SUFFIXES: frozenset[str] = frozenset(_READERS)


def convert(data: bytes, suffix: str, limits: Limits = Limits()) -> Document:  # noqa: B008 - Limits is frozen
    """The file's Document; ConversionError (never another exception) when it cannot be converted.

    `suffix` is the file's suffix with its dot (".pdf"; any case).
    """
    reader = _READERS.get(suffix.lower())
    if reader is None:
        raise ConversionError("unsupported", f"no converter for {suffix or 'files without a suffix'}")
    module = importlib.import_module(f"{__name__}.{reader}")
    try:
        document: Document = module.read(data, limits)
    except ConversionError:
        raise
    except RecursionError as exc:
        raise ConversionError("broken file", "nested too deeply") from exc
    except MemoryError as exc:
        raise ConversionError("too large", "out of memory while converting") from exc
    except Exception as exc:  # a library's own error on a malformed file
        raise ConversionError("broken file", f"{type(exc).__name__}: {exc}"[:300]) from exc
    return document
