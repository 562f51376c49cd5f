"""Chunk vectors in the index: embedded once, reused while the text and the model stay, never mixed."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kb_index import Retriever, build_index
from kb_index.index import current_generation, read_manifest
from kb_index.vectors import Vectors, model_of, write_seed
from tests.kb_fixtures import MINI_KB, write_entry, write_mini_kb


class CountingEmbedder:
    """Deterministic bag-of-words vectors; counts what it was asked to embed."""

    dim = 64

    def __init__(self, name: str = "bow-a"):
        self.name = name
        self.passages: list[str] = []

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        for word in text.lower().split():
            v[int(hashlib.md5(f"{self.name}{word}".encode()).hexdigest(), 16) % self.dim] += 1.0
        return v / (np.linalg.norm(v) or 1.0)

    def embed_passages(self, texts):
        self.passages += texts
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return np.stack([self._vec(t) for t in texts])


@pytest.fixture
def kb(tmp_path):
    return write_mini_kb(tmp_path / "kb")


def test_first_build_embeds_every_chunk_and_records_the_model(kb, tmp_path):
    emb = CountingEmbedder()
    report = build_index(kb, tmp_path / "ix", embedder=emb)
    gen = current_generation(tmp_path / "ix")
    assert report.embedded == report.chunks == len(emb.passages) > 0
    assert model_of(gen) == "bow-a" and read_manifest(gen)["embedder"] == "bow-a"
    vectors = Vectors.load(gen)
    norms = np.linalg.norm(np.asarray(vectors.matrix, np.float32), axis=1)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-2)


def test_an_update_embeds_only_the_changed_chunks(kb, tmp_path):
    build_index(kb, tmp_path / "ix", embedder=CountingEmbedder())
    meta, sections = MINI_KB["handbook/pto-01.md"]
    write_entry(kb, "handbook/pto-01.md", meta, {**sections, "Entitlement": "Every employee gets 30 days."})
    emb = CountingEmbedder()
    report = build_index(kb, tmp_path / "ix", embedder=emb)
    assert report.embedded == 1 and not report.reembedded
    assert emb.passages == [next(t for t in emb.passages if "30 days" in t)]


def test_a_changed_embedding_model_forces_a_full_re_embed(kb, tmp_path):
    first = build_index(kb, tmp_path / "ix", embedder=CountingEmbedder("bow-a"))
    emb = CountingEmbedder("bow-b")
    report = build_index(kb, tmp_path / "ix", embedder=emb)
    assert report.reembedded and report.embedded == first.chunks == len(emb.passages)
    assert model_of(current_generation(tmp_path / "ix")) == "bow-b"
    assert "model changed" in report.summary()


def test_a_retriever_never_mixes_models(kb, tmp_path):
    build_index(kb, tmp_path / "ix", embedder=CountingEmbedder("bow-a"))
    with Retriever(tmp_path / "ix", embedder=CountingEmbedder("bow-b")) as other:
        found = other.retrieve("How many vacation days can I carry over?")
        assert not found.semantic and found.answerability.cosine is None
        assert found.hits  # BM25 still answers
    with Retriever(tmp_path / "ix", embedder=CountingEmbedder("bow-a")) as same:
        assert same.retrieve("How many vacation days can I carry over?").semantic


def test_a_build_without_an_embedder_has_no_vectors_and_searches_bm25(kb, tmp_path):
    report = build_index(kb, tmp_path / "ix")
    assert report.embedder is None and "BM25 only" in report.summary()
    assert model_of(current_generation(tmp_path / "ix")) is None


def test_seed_vectors_are_used_instead_of_embedding(kb, tmp_path):
    build_index(kb, tmp_path / "a", embedder=CountingEmbedder())
    write_seed(current_generation(tmp_path / "a"), tmp_path / "seed")
    emb = CountingEmbedder()
    report = build_index(kb, tmp_path / "b", embedder=emb, seed_vectors=tmp_path / "seed")
    assert report.embedded == 0 and emb.passages == []
    # A seed of another model is ignored, not mixed in.
    other = CountingEmbedder("bow-b")
    assert build_index(kb, tmp_path / "c", embedder=other, seed_vectors=tmp_path / "seed").embedded > 0


def test_an_embedding_failure_leaves_the_live_index(kb, tmp_path):
    from kb_index.embedding import EmbedderError

    build_index(kb, tmp_path / "ix", embedder=CountingEmbedder())
    live = current_generation(tmp_path / "ix")

    class Down(CountingEmbedder):
        def embed_passages(self, texts):
            raise EmbedderError("embedding server http://127.0.0.1:9 is down")

    meta, sections = MINI_KB["handbook/pto-01.md"]
    write_entry(kb, "handbook/pto-01.md", meta, {**sections, "Entitlement": "Every employee gets 31 days."})
    with pytest.raises(EmbedderError):
        build_index(kb, tmp_path / "ix", embedder=Down())
    assert current_generation(tmp_path / "ix") == live
