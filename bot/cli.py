"""The `citebot` command.

Every subcommand reads the settings once (environment and `.env`); a bad
setting ends the command with one line naming the variable and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bot.config import ConfigError, Settings, load_settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"citebot: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args, settings)
    except KeyboardInterrupt:
        return 130
    except CliError as exc:
        print(f"citebot: {exc}", file=sys.stderr)
        return exc.code


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citebot", description="Answers questions from a knowledge base, with checked citations."
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser("index", help="build or update the search index of the knowledge base")
    p.add_argument("--kb", type=Path, help="knowledge base folder (default: CITEBOT_KB_DIR or the bundled sample)")
    p.add_argument("--index", type=Path, help="index folder (default: CITEBOT_INDEX_DIR)")
    p.add_argument("--keep-going", action="store_true", help="exit 0 even if some entries were skipped")
    p.add_argument("--rebuild", action="store_true", help="re-index every entry, not only the changed ones")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", help="show the ranked knowledge-base chunks for a question")
    p.add_argument("query", help="the question, as plain text")
    p.add_argument("-k", type=int, default=10, help="number of main hits (default 10)")
    p.add_argument("--collection", action="append", help="search only this collection (repeatable)")
    p.add_argument("--json", action="store_true", help="print a JSON list of hits")
    p.add_argument("--index", type=Path, help="index folder (default: CITEBOT_INDEX_DIR)")
    p.set_defaults(func=cmd_search)
    return parser


# ---------------------------------------------------------------- index


def cmd_index(args, settings: Settings) -> int:
    kb_dir = args.kb or settings.kb_dir
    index_dir = args.index or settings.index_dir
    if not kb_dir.is_dir():
        raise CliError(f"knowledge base folder not found: {kb_dir}", EXIT_USAGE)
    report = build_kb_index(kb_dir, index_dir, settings.language, rebuild=args.rebuild, quiet=args.quiet)
    for error in report.errors:
        print(f"{kb_dir / error.path}:{error.line}: {error.message}", file=sys.stderr)
    print(report.summary())
    if report.errors and not args.keep_going:
        print(
            f"citebot: {report.skipped} file(s) skipped; fix them, or pass --keep-going to accept a partial index",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def build_kb_index(kb_dir: Path, index_dir: Path, language: str, *, rebuild: bool = False, quiet: bool = False):
    from kb_index import build_index

    with _Progress(enabled=not quiet) as progress:
        return build_index(kb_dir, index_dir, language=language, rebuild=rebuild, progress=progress)


class _Progress:
    """A tqdm bar per build stage on stderr; silent when stderr is not a terminal."""

    LABELS = {"load": "reading KB", "index": "indexing", "score": "scoring terms"}

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self._bar = None
        self._stage = None

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        if stage != self._stage:
            self._close()
            self._stage = stage
            self._bar = tqdm(total=total, desc=self.LABELS.get(stage, stage), unit="", file=sys.stderr, leave=False)
        self._bar.update(done - self._bar.n)

    def _close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._close()


# ---------------------------------------------------------------- search


def open_retriever(index_dir: Path):
    from kb_index import IndexNotFound, Retriever

    try:
        return Retriever(index_dir)
    except IndexNotFound as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def cmd_search(args, settings: Settings) -> int:
    if args.k <= 0:
        raise CliError("-k must be a positive number", EXIT_USAGE)
    with open_retriever(args.index or settings.index_dir) as retriever:
        hits = retriever.search(args.query, k=args.k, collections=args.collection)
    if args.json:
        print(json.dumps([_hit_json(h) for h in hits], ensure_ascii=False, indent=1))
        return EXIT_OK
    if not hits:
        print("No usable hit: the knowledge base does not seem to cover this.")
        return EXIT_OK
    rank = 0
    for hit in hits:
        rank += not hit.expanded
        label = "  +" if hit.expanded else f"{rank:3d}"
        stand = f" · Stand {hit.stand}" if hit.stand else ""
        print(f"{label} {hit.score:7.3f}  [{hit.entry_id}] {hit.title} · {hit.section}{stand}  ({hit.collection})")
        print(f"              {_snippet(hit.text)}")
    return EXIT_OK


def _hit_json(hit) -> dict:
    return {
        "entry_id": hit.entry_id,
        "section": hit.section,
        "title": hit.title,
        "collection": hit.collection,
        "score": hit.score,
        "expanded": hit.expanded,
        "chunk_id": hit.chunk_id,
        "stand": hit.stand,
        "url": hit.url,
    }


def _snippet(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rsplit(" ", 1)[0] + " …"


if __name__ == "__main__":
    sys.exit(main())
