"""Whoosh's sort runs written in blocks give the very index its own runs give."""

from __future__ import annotations

import random

from whoosh import index as whoosh_index
from whoosh.fields import ID, TEXT, Schema

from kb_index.whoosh_runs import BLOCK, BlockRunPool, use_block_runs


def build(folder, docs: list[str], blocks: bool) -> dict:
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), Schema(key=ID(stored=True), body=TEXT))
    writer = ix.writer(limitmb=1)  # 1 MB: the postings go through several runs on disk
    if blocks:
        use_block_runs(writer)
        assert isinstance(writer.pool, BlockRunPool)
    for n, text in enumerate(docs):
        writer.add_document(key=str(n), body=text)
    runs = len(writer.pool.runs)
    writer.commit()
    with ix.reader() as reader:
        postings = {term: list(reader.postings("body", term).items_as("frequency"))
                    for term in reader.lexicon("body")}
    ix.close()
    return {"runs": runs, "postings": postings}


def test_block_runs_give_the_same_postings(tmp_path):
    rng = random.Random(3)
    words = [f"w{i}" for i in range(3000)]
    docs = [" ".join(rng.choices(words, k=120)) for _ in range(1500)]
    pickled, blocked = build(tmp_path / "a", docs, blocks=False), build(tmp_path / "b", docs, blocks=True)
    assert pickled["runs"] > 1 and blocked["runs"] > 1  # the runs were used, with more postings than a block
    assert sum(len(p) for p in blocked["postings"].values()) > 2 * BLOCK
    assert blocked["postings"] == pickled["postings"]
