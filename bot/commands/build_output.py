"""What a build says on a terminal or in a log while it runs: a progress bar (or a line every 30 s) with the
rate and the time left, and each problem of the KB as soon as it is found. Used by `citebot index` and
`citebot sync`."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Never

from tqdm import tqdm

from bot.terminal import clean, echo
from kb_index.entries import LoadError


def print_errors(kb_dir: Path, report, shown: Mapping[str, str] | None = None) -> None:
    """Every file that is not indexed as it is, one line each: errors, warnings, other types. `shown` has the
    errors printed already (path -> message): of those only what was added since is printed (that the index
    keeps the entry's last good version).

    File names and the YAML parser's words about them come from the KB: one escaped line each.
    """
    shown = shown or {}
    for error in report.errors:
        before = shown.get(error.path)
        if before == error.message:
            continue
        if before is not None and error.message.startswith(f"{before}; "):
            error = LoadError(error.path, error.line, error.message[len(before) + 2 :])
        echo(error_line(kb_dir, error), file=sys.stderr, newlines=False)
    for warning in report.warnings:
        echo(f"{kb_dir / warning.path}:{warning.line}: warning: {warning.message}", file=sys.stderr, newlines=False)
    for other in report.not_indexed:
        echo(f"{kb_dir / other.path}: not indexed: {other.message}", file=sys.stderr, newlines=False)


def error_line(kb_dir: Path, error) -> str:
    return f"{kb_dir / error.path}:{error.line}: {error.message}"


class ProblemLines:
    """A build's problems on stderr, each once: a file that fails as soon as it is read (above the progress
    bar), so that the first problem of a large folder shows at once; then, every file read, the rest (duplicate
    ids, warnings, files of other types), still before the long work."""

    def __init__(self, kb_dir: Path, progress: Progress):
        self.kb_dir = kb_dir
        self.progress = progress
        self.shown: dict[str, str] = {}

    def error(self, error) -> None:
        self.shown[error.path] = error.message
        self.progress.write(clean(error_line(self.kb_dir, error), newlines=False))

    def rest(self, report) -> None:
        self.progress.close()
        print_errors(self.kb_dir, report, self.shown)


class Progress:
    """A tqdm bar per build stage on stderr: done, rate and time left where the total is known.

    When stderr is not a terminal (a log, CI), a slow stage says what it is
    doing when it starts and then every `every_s` seconds, with its rate and
    the time left: embedding a KB takes minutes to hours on a CPU, and silence
    would look like a hang.
    """

    LABELS = {
        "load": "reading KB",
        "index": "indexing",
        "score": "scoring terms",
        "store": "storing chunks",
        "embed": "embedding chunks",
    }  # and "sync NAME": a source's documents (kb_index.sources.sync)
    UNITS = {"embed": " chunks"}
    LINE_EVERY_S = 30.0

    def __init__(self, enabled: bool, *, bars: bool | None = None, every_s: float = LINE_EVERY_S, clock=time.monotonic):
        self.enabled = enabled
        self.bars = enabled and (sys.stderr.isatty() if bars is None else bars)
        self.every_s = every_s
        self.clock = clock
        self.done: dict[str, int] = {}  # the last count each stage reported
        self.totals: dict[str, int | None] = {}
        self._bar: tqdm[Never] | None = None
        self._stage: str | None = None
        self._started = self._last_line = 0.0
        self._first = 0  # the count the stage reported first: the rate is of what came after it

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        self.done[stage], self.totals[stage] = done, total
        if not self.enabled:
            return
        if stage != self._stage:
            self.close()
            self._stage = stage
            self._started = self._last_line = self.clock()
            self._first = done
            if self.bars:
                self._bar = tqdm(total=total, desc=self.LABELS.get(stage, stage), unit=self.UNITS.get(stage, ""),
                                 file=sys.stderr, leave=False)
            elif line := self._slow_stage_line(stage, total):
                print(line, file=sys.stderr, flush=True)
        if self._bar is not None:
            self._bar.update(done - self._bar.n)
        elif not self.bars and total and self.clock() - self._last_line >= self.every_s:
            self._last_line = self.clock()
            print(self._rate_line(stage, done, total), file=sys.stderr, flush=True)

    @staticmethod
    def _slow_stage_line(stage: str, total: int | None) -> str | None:
        if stage == "embed":
            return f"citebot: embedding {total} chunks (only new or changed ones; this can take a while)…"
        if stage.startswith("sync "):
            return f"citebot: {stage}: {total} document(s) to check (only changed ones are fetched)…"
        return None

    def _rate_line(self, stage: str, done: int, total: int) -> str:
        rate = (done - self._first) / max(self.clock() - self._started, 1e-9)
        left = (total - done) / rate if rate else float("inf")
        unit = self.UNITS.get(stage, "")
        return (f"citebot: {self.LABELS.get(stage, stage)}: {done} of {total}{unit} ({100 * done // total} %), "
                f"{rate:.1f}{unit}/s, about {_duration(left)} left")

    def write(self, line: str) -> None:
        """A line on stderr that the bar, if one is drawn, stays below."""
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "an unknown time"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
