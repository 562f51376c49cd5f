"""Refreshes the chunk vectors shipped with the bundled sample KB (kb_index/sample_vectors/).

    python bench/sample_vectors.py

The quick start then embeds nothing on first use. Vectors are keyed by the
exact text embedded and the model, so a stale seed is never used wrongly: a
changed chunk is embedded at index time. tests/test_vectors.py fails when the
seed no longer covers the sample KB.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bot.config import BUNDLED_KB_DIR, BUNDLED_VECTORS_DIR
from kb_index import build_index
from kb_index.embedding import LocalE5Embedder
from kb_index.index import current_generation
from kb_index.vectors import write_seed


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = build_index(BUNDLED_KB_DIR, Path(tmp), embedder=LocalE5Embedder())
        rows = write_seed(current_generation(Path(tmp)), BUNDLED_VECTORS_DIR)
    print(f"{rows} chunk vectors of {report.embedder} written to {BUNDLED_VECTORS_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
