"""Chunk embeddings of a generation, stored beside the BM25 arrays.

    gen-000007/vectors.npy        float16, one row per docnum (zeros for deleted docs)
    gen-000007/vectors-keys.npy   per docnum: a hash of the exact text that was embedded
    gen-000007/vectors-lang.npy   per docnum: the chunk's language, an index into meta["languages"]
    gen-000007/vectors.json       {"model": ..., "dim": ..., "format": ..., "languages": [...]}

A build embeds only the chunks whose text (as embedded) neither the previous
generation nor the vector store (vector_store.py: what every earlier build
computed, switched in or not) has under the same model: a hash match reuses
the stored row. A different model name means every chunk is embedded again
unless the store has it; vectors of two models are never mixed in one matrix.

float16 halves what every web and worker process maps (100,000 chunks x 384
dims: 77 MB instead of 154 MB); cosines lose about 1e-3, far below any
threshold margin. Scoring converts blocks of rows to float32, because BLAS has
no float16 kernels.

Ranking uses cosines standardised per chunk language (`ranking_scores`): a
small multilingual model rates a German question closer to every German chunk
than to any English one, so raw cosines would hide the English page that
answers it. Within one language the order is the raw cosine order.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

VECTORS_FILE = "vectors.npy"
KEYS_FILE = "vectors-keys.npy"
LANG_FILE = "vectors-lang.npy"
META_FILE = "vectors.json"
# Bump when passage_text or text_key changes: stored keys would no longer describe the rows.
# 2: keys of the normalised text (kb_index/vector_store.py); 1: keys of the text as it was.
FORMAT = 2
# Older formats whose rows are still reused, each looked up with its own key.
READABLE_FORMATS = (1, 2)
# Rows per embedder call: big enough to batch, small enough for a smooth progress bar
# and to lose little when a build is killed (each batch is stored as it comes).
EMBED_BATCH = 16
# Rows converted to float32 at a time when scoring.
SCORE_BLOCK = 16_384


def passage_text(doc: dict) -> str:
    """What is embedded for a chunk: its title, its section name, its text, with white space normalised."""
    return normalised(f"{doc.get('title', '')}\n{doc.get('section', '')}\n{doc.get('text', '')}")


def normalised(text: str) -> str:
    """The text as the model reads it: one form of each letter (NFC), runs of white space as one space.

    Two texts that differ only in these get one vector: the model's tokenizer does not tell them apart either.
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def text_key(text: str) -> bytes:
    # Without its trailing zero bytes, as an item of an "S16" array reads: one key, however it was stored.
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest().rstrip(b"\0")


def _format_1_key(doc: dict) -> bytes:
    """The key format 1 gave a chunk: of its text as it was. Read so that an index of that format is not
    embedded again after an upgrade."""
    return text_key(f"{doc.get('title', '')}\n{doc.get('section', '')}\n{doc.get('text', '')}")


@dataclass
class Vectors:
    model: str
    matrix: np.ndarray  # (n_docs, dim) float16, memory-mapped
    keys: np.ndarray  # (n_docs,) S16
    language_of: np.ndarray | None = None  # (n_docs,) int8 codes; None in a seed
    languages: tuple[str, ...] = ()
    format: int = FORMAT

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def cosines(self, query: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Cosine of `query` (normalised) with every row; -1 where `mask` is False."""
        out = np.full(len(self.matrix), -1.0, dtype=np.float32)
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        for start in range(0, len(self.matrix), SCORE_BLOCK):
            block = np.asarray(self.matrix[start : start + SCORE_BLOCK], dtype=np.float32)
            out[start : start + len(block)] = block @ q
        return np.where(mask, out, -1.0)

    def in_language(self, language: str) -> np.ndarray:
        """Per docnum: is the chunk in `language`? (All False when the KB has no chunk in it.)"""
        if self.language_of is None or language not in self.languages:
            return np.zeros(len(self.matrix), dtype=bool)
        return self.language_of == self.languages.index(language)

    def ranking_scores(self, cosines: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Cosines as z-scores within each chunk language (over the `mask`ed chunks); -inf outside `mask`.

        No preference for the question's own language: on the tune half of
        tests/data/answerability.yaml any bonus for it (0.25 to 1 standard
        deviation) lost more cross-language hits than it gained elsewhere.
        """
        out = np.full(len(cosines), -np.inf)
        codes = self.language_of if self.language_of is not None else np.zeros(len(cosines), np.int8)
        for code in np.unique(codes[mask]):
            mine = mask & (codes == code)
            values = cosines[mine]
            spread = float(values.std()) or 1.0
            out[mine] = (values - float(values.mean())) / spread
        return out

    @classmethod
    def load(cls, gen_dir: Path) -> Vectors | None:
        """The generation's vectors, or None when it was built without an embedder."""
        try:
            meta = json.loads((gen_dir / META_FILE).read_text())
        except FileNotFoundError:
            return None
        if meta.get("format") not in READABLE_FORMATS:
            return None
        matrix = np.load(gen_dir / VECTORS_FILE, mmap_mode="r")
        keys = np.load(gen_dir / KEYS_FILE, mmap_mode="r")
        lang_file = gen_dir / LANG_FILE
        language_of = np.load(lang_file) if lang_file.exists() else None
        languages = tuple(meta.get("languages", ()))
        return cls(model=meta["model"], matrix=matrix, keys=keys, language_of=language_of, languages=languages,
                   format=meta["format"])


def write_seed(gen_dir: Path, seed_dir: Path) -> int:
    """Copies a generation's vectors (live rows only) into `seed_dir`; returns the row count."""
    found = Vectors.load(gen_dir)
    if found is None:
        raise ValueError(f"{gen_dir} has no vectors")
    live = np.array([any(k) for k in found.keys], dtype=bool)
    seed_dir.mkdir(parents=True, exist_ok=True)
    np.save(seed_dir / VECTORS_FILE, np.asarray(found.matrix)[live], allow_pickle=False)
    np.save(seed_dir / KEYS_FILE, np.asarray(found.keys)[live], allow_pickle=False)
    (seed_dir / META_FILE).write_text(json.dumps({"model": found.model, "dim": found.dim, "format": found.format}))
    return int(live.sum())


def model_of(gen_dir: Path) -> str | None:
    """The embedding model a generation's vectors came from (None: no vectors)."""
    try:
        meta = json.loads((gen_dir / META_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return meta.get("model") if meta.get("format") in READABLE_FORMATS else None


def build(
    docs: list[dict | None], embedder, previous: Vectors | None, gen_dir: Path, progress=None, seeds: tuple = (),
    store=None,
) -> tuple[int, bool]:
    """Embeds the live `docs` (None for deleted docnums) into `gen_dir`.

    Returns (chunks embedded now, whether the model changed since `previous`).
    A chunk's vector is taken, in this order, from `previous` (the live
    generation) or any of `seeds` (vectors shipped with a KB) of the same
    model, or from `store` (kb_index.vector_store: what earlier builds
    computed, switched in or not); only the rest is embedded, each text once,
    and each batch goes into `store` as soon as it is computed.
    `progress(stage, done, total)` is called after each batch.
    """
    model = embedder.name
    model_changed = previous is not None and previous.model != model
    texts = [passage_text(d) if d is not None else "" for d in docs]
    keys = np.array([text_key(t) if d is not None else b"" for t, d in zip(texts, docs, strict=True)], dtype="S16")
    rows = _known_rows(docs, keys, model, (*seeds, previous), store)
    todo = list(dict.fromkeys(bytes(keys[i]) for i, d in enumerate(docs) if d is not None and bytes(keys[i]) not in rows))
    text_of = {bytes(k): texts[i] for i, k in enumerate(keys)}
    for start in range(0, len(todo), EMBED_BATCH):
        batch = todo[start : start + EMBED_BATCH]
        fresh = dict(zip(batch, np.asarray(embedder.embed_passages([text_of[k] for k in batch]), np.float16),
                         strict=True))
        if store is not None:
            store.put(model, fresh)
        rows.update(fresh)
        if progress:
            progress("embed", start + len(batch), len(todo))

    dim = _dim(rows, embedder)
    matrix = np.zeros((len(docs), dim), dtype=np.float16)
    for i, d in enumerate(docs):
        if d is not None:
            matrix[i] = rows[bytes(keys[i])]
    languages = sorted({d.get("language", "en") for d in docs if d is not None})
    language_of = np.array(
        [languages.index(d.get("language", "en")) if d is not None else 0 for d in docs], dtype=np.int8
    )
    np.save(gen_dir / VECTORS_FILE, matrix, allow_pickle=False)
    np.save(gen_dir / KEYS_FILE, keys, allow_pickle=False)
    np.save(gen_dir / LANG_FILE, language_of, allow_pickle=False)
    meta = {"model": model, "dim": dim, "format": FORMAT, "languages": languages}
    (gen_dir / META_FILE).write_text(json.dumps(meta))
    return len(todo), model_changed


def _known_rows(docs: list[dict | None], keys: np.ndarray, model: str, sources: tuple, store) -> dict[bytes, np.ndarray]:
    """Key -> vector of every chunk of `docs` some source already has under `model`."""
    rows: dict[bytes, np.ndarray] = {}
    for source in sources:
        if source is None or source.model != model:
            continue
        have = {bytes(k): i for i, k in enumerate(source.keys) if any(k)}
        for i, d in enumerate(docs):
            if d is None:
                continue
            found = have.get(bytes(keys[i]) if source.format == FORMAT else _format_1_key(d))
            if found is not None:
                rows.setdefault(bytes(keys[i]), source.matrix[found])
    if store is not None:
        missing = {bytes(keys[i]) for i, d in enumerate(docs) if d is not None} - rows.keys()
        rows.update(store.get(model, missing))
    return rows


def missing(passages: list[dict], model: str, sources: tuple, store) -> int:
    """How many distinct chunk texts of `passages` neither `sources` nor `store` has a vector of under `model`."""
    keys = np.array([text_key(passage_text(d)) for d in passages], dtype="S16")
    known = _known_rows(list(passages), keys, model, sources, store)
    return len({bytes(k) for k in keys} - known.keys())


def keys_in_use(gen_dirs) -> dict[str, set[bytes]]:
    """Model -> the keys of the vectors the generations in `gen_dirs` hold (format 1 keys match no stored one)."""
    used: dict[str, set[bytes]] = {}
    for gen_dir in gen_dirs:
        found = Vectors.load(gen_dir)
        if found is not None and found.format == FORMAT:
            used.setdefault(found.model, set()).update(bytes(k) for k in found.keys if any(k))
    return used


def _dim(rows: dict, embedder) -> int:
    for row in rows.values():
        return int(len(row))
    return int(getattr(embedder, "dim", None) or 0)
