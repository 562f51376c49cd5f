"""Every passage vector computed, kept by (model, text key) across builds.

    index_dir/vectors.sqlite

Embedding is the slow part of a build: about 5 chunks a second on two CPU
cores, hours for a large KB. A generation keeps its own matrix (vectors.py,
memory-mapped by every reader), but a build that never switches in (killed,
interrupted, refused, a full disk, the embedding server gone) would lose all
it computed. So a build writes each batch of vectors here as soon as the
model returns it, one transaction per batch, and looks here before it embeds:
the next build computes only what no build has computed before.

Keys are `vectors.text_key` of the normalised passage text, so a renamed or
moved file, or one whose only change is white space, finds its vectors.
Vectors that no generation on disk uses any more are removed when old
generations are (`keep_only`).

SQLite in WAL mode: one writer at a time and readers beside it, across
processes (two workers syncing, `citebot index` next to a running bot); a
killed process loses at most the batch it was writing. Keep the index folder
on a local disk: SQLite's locks are not safe on network file systems.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from citebot_core.errors import Permanent
from kb_index.vectors import text_key

STORE_FILE = "vectors.sqlite"
# A batch waits this long for another process's write to finish before giving up.
BUSY_TIMEOUT_S = 60.0
# Keys per SELECT: under SQLite's limit on bound parameters.
LOOKUP_BATCH = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    key   BLOB NOT NULL,
    dtype TEXT NOT NULL,
    vec   BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""


class VectorStoreError(Permanent):
    """The vector store could not be read or written (a full disk, a damaged file); the message says which."""


class VectorStore:
    """The vectors of one index folder (or of a benchmark's cache), safe to share between processes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Builds embed in a worker thread of the bot too: one connection, used by one thread at a time.
            self._db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # WAL with NORMAL: a commit survives the process being killed; only a power cut may lose the last ones.
            self._db.execute("PRAGMA synchronous=NORMAL")
            with self._db:
                self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise VectorStoreError(f"the vector store {self.path} could not be opened: {exc}") from exc

    def get(self, model: str, keys: Iterable[bytes]) -> dict[bytes, np.ndarray]:
        """The stored vectors of `keys` under `model` (keys not stored are left out)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[bytes, np.ndarray] = {}
        try:
            for start in range(0, len(wanted), LOOKUP_BATCH):
                part = wanted[start : start + LOOKUP_BATCH]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, dtype, vec FROM vectors WHERE model = ? AND key IN ({marks})", (model, *part)
                )
                found.update((bytes(key), np.frombuffer(vec, dtype=dtype)) for key, dtype, vec in rows)
        except sqlite3.Error as exc:
            raise VectorStoreError(f"the vector store {self.path} could not be read: {exc}") from exc
        return found

    def put(self, model: str, rows: Mapping[bytes, np.ndarray]) -> None:
        """Stores `rows` (key -> vector, float16 or float32) under `model` in one transaction."""
        values = []
        for key, row in rows.items():
            vec = np.ascontiguousarray(row)
            if vec.dtype not in (np.float16, np.float32):
                vec = vec.astype(np.float32)
            values.append((model, key, vec.dtype.str, vec.tobytes()))
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", values)
        except sqlite3.Error as exc:
            raise VectorStoreError(f"the vector store {self.path} could not be written ({exc}); "
                                   "the vectors stored before are kept") from exc

    def count(self) -> int:
        try:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        except sqlite3.Error as exc:
            raise VectorStoreError(f"the vector store {self.path} could not be read: {exc}") from exc

    def keep_only(self, used: Mapping[str, set[bytes]]) -> int:
        """Removes every vector whose (model, key) is not in `used`; returns how many were removed."""
        try:
            stale = [(model, key) for model, key in self._db.execute("SELECT model, key FROM vectors")
                     if bytes(key) not in used.get(model, ())]
            with self._db:
                self._db.executemany("DELETE FROM vectors WHERE model = ? AND key = ?", stale)
            # Give the pages back to the file system once the write-ahead log is folded in.
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise VectorStoreError(f"the vector store {self.path} could not be cleaned up: {exc}") from exc
        return len(stale)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def store_size(index_dir: Path) -> tuple[int, int | None] | None:
    """(bytes on disk, vectors stored) of an index folder's store; None without one. The count is None when the
    file cannot be opened here (a read-only mount of a live index): the size is still known."""
    path = Path(index_dir) / STORE_FILE
    files = [path, path.with_name(path.name + "-wal")]
    if not path.exists():
        return None
    size = sum(f.stat().st_size for f in files if f.exists())
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            count = int(db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        count = None
    return size, count


class StoredEmbedder:
    """An embedder whose vectors (queries and passages) are kept in a VectorStore: for benchmarks that embed the
    same questions and corpora run after run. A changed text or another model is a miss, never a stale vector."""

    def __init__(self, inner, store: VectorStore):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.store = store
        self.misses = 0

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed("query", texts, self.inner.embed_queries)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed("passage", texts, self.inner.embed_passages)

    def _embed(self, kind: str, texts: list[str], compute) -> np.ndarray:
        model = f"{self.name}\0{kind}"
        keys = [text_key(t) for t in texts]
        found = self.store.get(model, keys)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            self.misses += len(missing)
            fresh = np.asarray(compute([texts[i] for i in missing]), dtype=np.float32)
            rows = {keys[i]: row for i, row in zip(missing, fresh, strict=True)}
            self.store.put(model, rows)
            found.update(rows)
        if not keys:
            return np.zeros((0, self.dim or 0), np.float32)
        return np.stack([np.asarray(found[k], dtype=np.float32) for k in keys])
