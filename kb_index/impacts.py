"""BM25F impact arrays derived from a Whoosh index, for fast ranking.

Whoosh scores a query by walking every matching posting in Python; on long
questions that costs around 100 ms. Here each (term, chunk) pair gets its
BM25F contribution computed once, when the index is built, and stored as a
CSR-like set of numpy arrays next to the Whoosh files. A query is then one
slice per term and one `np.bincount`: a few hundred microseconds, whatever
the question's length.

The arrays are derived from the Whoosh reader, never from anything else, so
they always describe exactly the documents the Whoosh index holds (deleted
documents included as dead rows, masked by `live`).

Term keys are `space:term`. Each language is its own space ("en", "de"), so an
English stem never meets a German one; German subword grams are a third space
("dg") whose weight is applied at query time.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

# Arrays are separate .npy files opened with mmap: pages load on first touch
# and are shared by every process on the machine (web, workers).
ARRAY_PREFIX = "impacts-"
META_FILE = "impacts.json"
_ARRAYS = ("terms", "offsets", "docs", "weights", "idf", "live", "collection_of", "entry_of")

# Tuned on the SciFact train qrels (bench/retrieval_scifact.py --tune), where
# titles carry strong signal; they are per-field BM25F weights and saturation.
DEFAULT_K1 = 1.2
DEFAULT_FIELD_WEIGHTS = {"title": 3.0, "meta": 1.0, "body": 1.0, "sub": 1.0}
DEFAULT_FIELD_B = {"title": 0.6, "meta": 0.5, "body": 0.75, "sub": 0.75}


@dataclass(frozen=True)
class Params:
    k1: float = DEFAULT_K1
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FIELD_WEIGHTS))
    b: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FIELD_B))


def _spaces(fieldnames: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Groups Whoosh fields 'kind_lang' into term spaces: {'en': [('title', 'title_en'), ...]}."""
    spaces: dict[str, list[tuple[str, str]]] = {}
    for name in fieldnames:
        kind, _, lang = name.partition("_")
        if kind in ("title", "meta", "body"):
            spaces.setdefault(lang, []).append((kind, name))
        elif kind == "sub":
            spaces.setdefault(f"{lang[0]}g", []).append((kind, name))
    return spaces


@dataclass
class Impacts:
    """Postings of BM25F impacts plus per-chunk facts used for filtering."""

    terms: np.ndarray  # sorted utf-8 term keys ("en:urlaub"), one per row
    offsets: np.ndarray  # int64, len(vocab) + 1
    docs: np.ndarray  # int32 docnums, row by row
    weights: np.ndarray  # float32 impacts, aligned with docs
    idf: np.ndarray  # float32 per row: the term's idf (for coverage)
    live: np.ndarray  # bool per docnum: False for deleted documents
    collection_of: np.ndarray  # int16 per docnum -> index into `collections`
    entry_of: np.ndarray  # int32 per docnum -> index into `entries`
    collections: list[str]
    entries: list[str]
    params: Params = field(default_factory=Params)

    @property
    def doc_count(self) -> int:
        return len(self.live)

    def row(self, key: str) -> int | None:
        encoded = key.encode("utf-8")
        i = int(np.searchsorted(self.terms, encoded))
        return i if i < len(self.terms) and self.terms[i] == encoded else None

    def postings(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = self.offsets[row], self.offsets[row + 1]
        return self.docs[start:end], self.weights[start:end]

    def score(self, rows: list[int], query_weights: list[float]) -> np.ndarray:
        """Sum of the impacts of the given term rows, one float per docnum."""
        if not rows:
            return np.zeros(self.doc_count, dtype=np.float32)
        starts, ends = self.offsets[rows], self.offsets[np.asarray(rows) + 1]
        ids = np.concatenate([self.docs[s:e] for s, e in zip(starts, ends, strict=True)])
        vals = np.concatenate([self.weights[s:e] * w for s, e, w in zip(starts, ends, query_weights, strict=True)])
        return np.bincount(ids, weights=vals, minlength=self.doc_count)

    def contains(self, row: int, docnums: np.ndarray) -> np.ndarray:
        """For each docnum: does the term of `row` occur in it?"""
        ids, _ = self.postings(row)
        pos = np.searchsorted(ids, docnums)
        pos = np.minimum(pos, max(len(ids) - 1, 0))
        return (ids[pos] == docnums) if len(ids) else np.zeros(len(docnums), dtype=bool)

    # ------------------------------------------------------------ persistence

    def save(self, gen_dir: Path) -> None:
        for name in _ARRAYS:
            np.save(gen_dir / f"{ARRAY_PREFIX}{name}.npy", getattr(self, name), allow_pickle=False)
        meta = {"collections": self.collections, "entries": self.entries, "params": asdict(self.params)}
        (gen_dir / META_FILE).write_text(json.dumps(meta, ensure_ascii=False))

    @classmethod
    def load(cls, gen_dir: Path) -> Impacts:
        meta = json.loads((gen_dir / META_FILE).read_text())
        data = {name: np.load(gen_dir / f"{ARRAY_PREFIX}{name}.npy", mmap_mode="r") for name in _ARRAYS}
        return cls(
            collections=meta["collections"],
            entries=meta["entries"],
            params=Params(**meta["params"]),
            **data,
        )


def build(reader, params: Params | None = None, progress=None) -> Impacts:
    """Derives the impact arrays from an open Whoosh reader."""
    params = params or Params()
    n_docs = reader.doc_count_all()
    leaves = reader.leaf_readers()
    live = np.zeros(n_docs, dtype=bool)
    for leaf, offset in leaves:
        ids = np.fromiter(leaf.all_doc_ids(), dtype=np.int64)
        live[ids + offset] = True
    n_live = max(int(live.sum()), 1)

    collections, collection_of = _id_field_codes(reader, "collection", n_docs, np.int16)
    entries, entry_of = _id_field_codes(reader, "entry_id", n_docs, np.int32)

    keys: list[bytes] = []
    doc_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    idfs: list[float] = []
    for space, fields in _spaces(list(reader.schema.names())).items():
        norm_tf = {kind: _length_norm(reader, leaves, name, params.b[kind], n_docs) for kind, name in fields}
        terms: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for kind, name in fields:
            weight, norm = params.weights[kind], norm_tf[kind]
            for term in reader.lexicon(name):
                ids, tfs = _postings(leaves, name, term)
                keep = live[ids]
                ids, tfs = ids[keep], tfs[keep]
                if len(ids):
                    text = term.decode("utf-8") if isinstance(term, bytes) else term
                    terms.setdefault(text, []).append((ids, weight * tfs / norm[ids]))
        for text, parts in terms.items():
            ids, tf = _merge(parts, n_docs)
            df = len(ids)
            idf = math.log(1.0 + (n_live - df + 0.5) / (df + 0.5))
            keys.append(f"{space}:{text}".encode())
            doc_parts.append(ids.astype(np.int32))
            weight_parts.append((idf * tf / (tf + params.k1)).astype(np.float32))
            idfs.append(idf)
            if progress:
                progress(1)

    # Rows in key order, so a term is found by binary search without a dict.
    order = sorted(range(len(keys)), key=keys.__getitem__)
    doc_parts = [doc_parts[i] for i in order]
    weight_parts = [weight_parts[i] for i in order]
    sizes = np.fromiter((len(p) for p in doc_parts), dtype=np.int64, count=len(doc_parts))
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return Impacts(
        terms=np.array([keys[i] for i in order], dtype=bytes) if keys else np.zeros(0, dtype="S1"),
        offsets=offsets,
        docs=np.concatenate(doc_parts) if doc_parts else np.zeros(0, np.int32),
        weights=np.concatenate(weight_parts) if weight_parts else np.zeros(0, np.float32),
        idf=np.asarray([idfs[i] for i in order], dtype=np.float32),
        live=live,
        collection_of=collection_of,
        entry_of=entry_of,
        collections=collections,
        entries=entries,
        params=params,
    )


def _merge(parts: list[tuple[np.ndarray, np.ndarray]], n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Adds the weighted tf of one term over its fields; returns sorted docnums and sums."""
    if len(parts) == 1:
        return parts[0]
    ids = np.concatenate([p[0] for p in parts])
    vals = np.concatenate([p[1] for p in parts])
    uniq, inverse = np.unique(ids, return_inverse=True)
    return uniq, np.bincount(inverse, weights=vals)


def _length_norm(reader, leaves, fieldname: str, b: float, n_docs: int) -> np.ndarray:
    """Per docnum: 1 - b + b * len / avg_len (BM25's length normalisation)."""
    lengths = np.zeros(n_docs, dtype=np.float64)
    for leaf, offset in leaves:
        for docnum in range(leaf.doc_count_all()):
            lengths[offset + docnum] = leaf.doc_field_length(docnum, fieldname, 0)
    present = lengths > 0
    avg = lengths[present].mean() if present.any() else 1.0
    return 1.0 - b + b * lengths / avg


def _postings(leaves, fieldname: str, term) -> tuple[np.ndarray, np.ndarray]:
    """All (docnum, term frequency) of a term, through Whoosh's public matcher API.

    Only `is_active`, `id`, `weight` and `next` are used, so a Whoosh update
    that changes how postings are stored cannot break the arrays silently.
    """
    ids: list[int] = []
    tfs: list[float] = []
    for leaf, offset in leaves:
        if (fieldname, term) not in leaf:
            continue
        matcher = leaf.postings(fieldname, term)
        # Bound once: this loop runs once per posting of the whole index.
        active, doc, weight, advance = matcher.is_active, matcher.id, matcher.weight, matcher.next
        add_id, add_tf = ids.append, tfs.append
        while active():
            add_id(doc() + offset)
            add_tf(weight())
            advance()
    return np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=np.float64)


def _id_field_codes(reader, fieldname: str, n_docs: int, dtype) -> tuple[list[str], np.ndarray]:
    """For an ID field: its distinct values and, per docnum, the index of its value."""
    names: list[str] = []
    codes = np.full(n_docs, -1, dtype=dtype)
    for term in reader.lexicon(fieldname):
        text = term.decode("utf-8") if isinstance(term, bytes) else term
        ids, _ = _postings(reader.leaf_readers(), fieldname, term)
        codes[ids] = len(names)
        names.append(text)
    return names, codes
