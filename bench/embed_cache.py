"""A disk cache in front of an embedder, for benchmarks that embed the same corpus again and again.

Keyed by (model, kind, text): a changed text or another model is a miss, never
a stale vector. SQLite, so an interrupted run keeps what it had embedded.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np


class CachedEmbedder:
    def __init__(self, inner, path: str | Path):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        # Retrieval runs in a worker thread (Pipeline), so one connection serves several threads.
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (key TEXT PRIMARY KEY, v BLOB)")
        self.misses = 0

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed("query", texts, self.inner.embed_queries)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed("passage", texts, self.inner.embed_passages)

    def _embed(self, kind: str, texts: list[str], compute) -> np.ndarray:
        keys = [_key(self.name, kind, t) for t in texts]
        found = {}
        for key in set(keys):
            row = self._db.execute("SELECT v FROM vec WHERE key = ?", (key,)).fetchone()
            if row is not None:
                found[key] = np.frombuffer(row[0], dtype=np.float32)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            self.misses += len(missing)
            fresh = compute([texts[i] for i in missing])
            with self._db:
                for i, vec in zip(missing, fresh, strict=False):
                    vec = np.asarray(vec, dtype=np.float32)
                    found[keys[i]] = vec
                    self._db.execute("INSERT OR REPLACE INTO vec VALUES (?, ?)", (keys[i], vec.tobytes()))
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)


def _key(model: str, kind: str, text: str) -> str:
    return hashlib.sha256(f"{model}\0{kind}\0{text}".encode()).hexdigest()
