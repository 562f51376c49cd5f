"""The vector store: vectors kept by (model, text key) in SQLite, shared safely between processes."""

from __future__ import annotations

import multiprocessing
import sqlite3

import numpy as np
import pytest

from kb_index.vector_store import StoredEmbedder, VectorStore, VectorStoreError, store_size
from kb_index.vectors import normalised, passage_text, text_key


def rows(n: int, start: int = 0, dtype=np.float16) -> dict[bytes, np.ndarray]:
    return {text_key(f"text {i}"): np.full(8, i, dtype=dtype) for i in range(start, start + n)}


def test_vectors_come_back_by_model_and_key_in_their_own_dtype(tmp_path):
    with VectorStore(tmp_path / "v.sqlite") as store:
        store.put("model-a", rows(3))
        store.put("model-a", rows(1, start=10, dtype=np.float32))
        found = store.get("model-a", [text_key("text 1"), text_key("text 10"), text_key("never stored")])
        assert set(found) == {text_key("text 1"), text_key("text 10")}
        assert found[text_key("text 1")].dtype == np.float16 and found[text_key("text 1")][0] == 1
        assert found[text_key("text 10")].dtype == np.float32
        assert store.get("model-b", [text_key("text 1")]) == {}  # another model's vectors are never mixed in
        assert store.count() == 4


def test_a_lookup_of_more_keys_than_sqlite_binds_at_once(tmp_path):
    with VectorStore(tmp_path / "v.sqlite") as store:
        store.put("m", rows(1200))
        assert len(store.get("m", list(rows(1300)))) == 1200


def test_keep_only_removes_what_no_generation_uses(tmp_path):
    with VectorStore(tmp_path / "v.sqlite") as store:
        store.put("m", rows(5))
        store.put("old-model", rows(2))
        used = {"m": {text_key("text 0"), text_key("text 3")}}
        assert store.keep_only(used) == 5
        assert set(store.get("m", list(rows(5)))) == used["m"] and store.count() == 2


def test_size_for_doctor(tmp_path):
    assert store_size(tmp_path) is None
    with VectorStore(tmp_path / "vectors.sqlite") as store:
        store.put("m", rows(100))
    size, count = store_size(tmp_path)
    assert count == 100 and size > 100 * 16


def test_a_damaged_file_is_one_clear_error(tmp_path):
    (tmp_path / "v.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(VectorStoreError, match="could not be opened"):
        VectorStore(tmp_path / "v.sqlite")


def _writer(path: str, start: int) -> None:
    store = VectorStore(path)
    for batch in range(start, start + 400, 16):
        store.put("m", rows(16, start=batch))
    store.close()


def test_processes_writing_at_once_lose_nothing(tmp_path):
    """Two workers syncing, or an index run beside another: each batch is one transaction, none is lost."""
    path = str(tmp_path / "v.sqlite")
    VectorStore(path).close()  # created once, as a build does before its batches
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(path, start)) for start in (0, 10_000)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with VectorStore(path) as store:
        assert store.count() == 2 * 400


def test_the_key_is_of_the_normalised_text():
    decomposed = "Ku\u0308ndigung  der\n\nStelle"  # ü as u + combining diaeresis, doubled white space
    assert normalised(decomposed) == "K\u00fcndigung der Stelle"
    assert passage_text({"title": "T", "section": "S", "text": decomposed}) == "T S K\u00fcndigung der Stelle"
    assert text_key(normalised(decomposed)) == text_key("K\u00fcndigung der Stelle")
    assert text_key("a") != text_key("b")


def test_a_key_ending_in_zero_bytes_reads_back_the_same_from_an_array():
    # Items of an "S16" array lose trailing zero bytes; text_key's keys never have any, so both forms match.
    for i in range(2000):
        key = text_key(f"text {i}")
        assert bytes(np.array([key], dtype="S16")[0]) == key


class Counting:
    name, dim = "count", 4

    def __init__(self):
        self.calls: list[list[str]] = []

    def embed_queries(self, texts):
        self.calls.append(texts)
        return np.ones((len(texts), 4), np.float32)

    embed_passages = embed_queries


def test_a_stored_embedder_computes_each_text_once_across_runs(tmp_path):
    inner = Counting()
    with VectorStore(tmp_path / "cache.sqlite") as store:
        StoredEmbedder(inner, store).embed_queries(["a", "b"])
    with VectorStore(tmp_path / "cache.sqlite") as store:
        again = StoredEmbedder(inner, store)
        assert again.embed_queries(["b", "a", "c"]).shape == (3, 4)
        assert again.embed_passages(["a"]).shape == (1, 4)  # a passage is not a query: its own vector
    assert inner.calls == [["a", "b"], ["c"], ["a"]]
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == 4
