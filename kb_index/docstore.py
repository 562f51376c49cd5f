"""The stored chunks of a generation, readable without opening Whoosh.

A Whoosh reader keeps much of its segment files in memory (about the size of
the index on disk): for 100,000 chunks that alone is several hundred MB in
every web and worker process. Searching needs only the chunks it returns, so
the build also writes them out as JSON lines with an offsets array; both are
memory-mapped, and a search touches just the pages of its hits.
"""

from __future__ import annotations

import json
import mmap
from pathlib import Path

import numpy as np

DOCS_FILE = "docs.jsonl"
OFFSETS_FILE = "docs-offsets.npy"


def write(reader, gen_dir: Path, progress=None) -> None:
    """Dumps the stored document of every docnum (deleted ones as empty lines)."""
    n_docs = reader.doc_count_all()
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    position = 0
    with open(gen_dir / DOCS_FILE, "wb") as fh:
        for docnum in range(n_docs):
            line = b"\n"
            if not reader.is_deleted(docnum):
                doc = reader.stored_fields(docnum)["doc"]
                line = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
            fh.write(line)
            position += len(line)
            offsets[docnum + 1] = position
            if progress:
                progress(1)
    np.save(gen_dir / OFFSETS_FILE, offsets, allow_pickle=False)


class DocStore:
    def __init__(self, gen_dir: Path):
        self._offsets = np.load(gen_dir / OFFSETS_FILE, mmap_mode="r")
        with open(gen_dir / DOCS_FILE, "rb") as fh:
            size = fh.seek(0, 2)
            # An empty KB has an empty file, which mmap refuses.
            self._data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def get(self, docnum: int) -> dict:
        start, end = int(self._offsets[docnum]), int(self._offsets[docnum + 1])
        return json.loads(self._data[start:end])

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def get_live(self, docnum: int) -> dict | None:
        """The stored document, or None for a deleted docnum (stored as an empty line)."""
        start, end = int(self._offsets[docnum]), int(self._offsets[docnum + 1])
        return json.loads(self._data[start:end]) if end - start > 1 else None

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            self._data.close()
