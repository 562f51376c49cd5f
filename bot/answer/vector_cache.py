"""Text vectors by text, cached: the extractive backend embeds the same passages and questions again and again."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

# Vectors kept per process (384 float32 each: 1.5 KB; 30 MB in all).
CACHE_SIZE = 20_000

Embed = Callable[[list[str]], np.ndarray]


class VectorCache:
    """Vectors by text, least recently used dropped first; thread-safe (the pipeline runs the
    backend in a worker thread)."""

    def __init__(self, embed: Embed, size: int = CACHE_SIZE):
        self.embed = embed
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            fresh = self.embed(todo)
            with self._lock:
                for text, vector in zip(todo, fresh, strict=True):
                    self._vectors[text] = np.asarray(vector, dtype=np.float32)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        with self._lock:
            rows = []
            for t in texts:
                vector = self._vectors.get(t)
                if vector is None:  # evicted meanwhile by another thread's batch
                    vector = np.asarray(self.embed([t])[0], dtype=np.float32)
                else:
                    self._vectors.move_to_end(t)
                rows.append(vector)
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
