"""Assigns each labelled question to the tune or the test half, by a hash of its text.

    python bench/extractive/halves.py

Run once when questions are added, before anything is tuned on them: the half of
a question depends on its text alone, so no choice of ours could move a hard case
into the tune half. Writes `half: tune|test` into each line of the questions files.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_LINE = re.compile(r'^- \{q: (?P<q>"(?:[^"\\]|\\.)*")(?P<rest>.*?)(?:, half: \w+)?\}$')


def half(question: str) -> str:
    return "tune" if hashlib.sha256(question.encode()).digest()[0] % 2 == 0 else "test"


def assign(path: Path) -> tuple[int, int]:
    out, counts = [], {"tune": 0, "test": 0}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _LINE.match(line)
        if m:
            h = half(m.group("q")[1:-1])
            counts[h] += 1
            line = f"- {{q: {m.group('q')}{m.group('rest')}, half: {h}}}"
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return counts["tune"], counts["test"]


def main() -> int:
    for path in sorted(HERE.glob("kbs/*/questions.yaml")):
        tune, test = assign(path)
        print(f"{path.parent.name}: {tune} tune, {test} test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
