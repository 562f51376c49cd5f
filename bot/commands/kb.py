"""Knowledge-base commands: `citebot index`, `citebot search`, `citebot ask`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bot.commands import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, snippet
from bot.config import Settings

# ---------------------------------------------------------------- index


def cmd_index(args, settings: Settings) -> int:
    kb_dir = args.kb or settings.kb_dir
    index_dir = args.index or settings.index_dir
    if not kb_dir.is_dir():
        raise CliError(f"knowledge base folder not found: {kb_dir}", EXIT_USAGE)
    previous = _live_entry_hashes(index_dir)
    report = build_kb_index(kb_dir, index_dir, settings.language, rebuild=args.rebuild, quiet=args.quiet)
    for error in report.errors:
        print(f"{kb_dir / error.path}:{error.line}: {error.message}", file=sys.stderr)
    print(report.summary())
    _notify_source_changes(report, previous, index_dir, settings)
    if report.errors and not args.keep_going:
        print(
            f"citebot: {report.skipped} file(s) skipped; fix them, or pass --keep-going to accept a partial index",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _live_entry_hashes(index_dir: Path) -> dict[str, str] | None:
    """Entry id -> content hash of the live index, read before a build replaces it."""
    from kb_index.index import IndexNotFound, current_generation, read_manifest

    try:
        return dict(read_manifest(current_generation(index_dir))["entries"])
    except (IndexNotFound, OSError, ValueError, KeyError):
        return None


def _notify_source_changes(report, previous, index_dir: Path, settings: Settings) -> None:
    """Answers of the last 30 days that cited a changed or removed entry get a note in Slack.

    The index is live whatever happens here: Redis being down is a note, not a failure.
    """
    if not (report.updated or report.removed or (report.full_rebuild and previous)):
        return  # nothing changed: not even Redis is asked
    import asyncio

    from bot.source_changes import NotNotified, changed_entries, notify_source_changes

    changed, removed = changed_entries(report, previous)
    if not (changed or removed):
        return
    try:
        count = asyncio.run(notify_source_changes(settings.redis_url, index_dir, report.generation, changed, removed))
    except NotNotified as exc:
        print(
            f"citebot: note: the index is built, but answers citing the {len(changed) + len(removed)} changed or "
            f"removed entries were not notified: {exc}",
            file=sys.stderr,
        )
        return
    print(f"source changes: {count} answer(s) in Slack cited a changed or removed entry and will get a note")


def build_kb_index(kb_dir: Path, index_dir: Path, language: str, *, rebuild: bool = False, quiet: bool = False):
    from kb_index import build_index

    with _Progress(enabled=not quiet) as progress:
        return build_index(kb_dir, index_dir, language=language, rebuild=rebuild, progress=progress)


class _Progress:
    """A tqdm bar per build stage on stderr; silent when stderr is not a terminal."""

    LABELS = {"load": "reading KB", "index": "indexing", "score": "scoring terms", "store": "storing chunks"}

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
        print(f"              {snippet(hit.text)}")
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



# ---------------------------------------------------------------- ask


def ensure_index(settings: Settings) -> None:
    """The embedded default must work on a fresh clone: index the KB on first use
    (or when the index is of another version).

    An index built from another folder than CITEBOT_KB_DIR is only pointed out,
    never rebuilt: the index may be the live one of a running bot, and a wrong
    or unset CITEBOT_KB_DIR must not replace it with another knowledge base.
    """
    from kb_index.index import IndexNotFound, IndexOutdated, built_from, check_generation, current_generation

    try:
        gen_dir = current_generation(settings.index_dir)
        check_generation(gen_dir)
    except IndexNotFound as exc:
        why = "an outdated index" if isinstance(exc, IndexOutdated) else "no index yet"
        print(f"citebot: {why}; indexing {settings.kb_dir} into {settings.index_dir} first", file=sys.stderr)
        report = build_kb_index(settings.kb_dir, settings.index_dir, settings.language)
        for error in report.errors:
            print(f"{settings.kb_dir / error.path}:{error.line}: {error.message}", file=sys.stderr)
        print(report.summary(), file=sys.stderr)
        return
    source = built_from(gen_dir)
    if source is not None and source != settings.kb_dir.resolve():
        print(
            f"citebot: note: the index in {settings.index_dir} was built from {source}, not from "
            f"CITEBOT_KB_DIR ({settings.kb_dir}); run 'citebot index' to index that folder",
            file=sys.stderr,
        )


def make_question(text: str, settings: Settings, *, language: str | None = None, collections=None):
    from bot.models import Question, clip_question
    from kb_index.analysis import guess_language

    text, truncated = clip_question(text, settings.max_question_chars)
    return Question(
        text=text,
        language=language or guess_language(text, default=settings.language),
        collections=collections,
        truncated=truncated,
    )


def make_pipeline(settings: Settings, retriever):
    from bot.llm import make_backend
    from bot.pipeline import Pipeline

    try:
        backend = make_backend(
            settings.llm, settings.llm_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout,
            max_retry_after=settings.llm_max_retry_after_s,
        )
    except ValueError as exc:
        raise CliError(f"configuration error: {exc}", EXIT_USAGE) from None
    return Pipeline(
        retriever,
        backend,
        mode=settings.answer_mode,
        top_k=settings.top_k,
        budget_chars=settings.prompt_budget_chars,
    )


def cmd_ask(args, settings: Settings) -> int:
    import asyncio

    from bot.grounding.answer import error_answer, format_text_answer
    from bot.llm import LLMError
    from bot.models import AnswerMode

    if not args.question.strip():
        raise CliError("the question is empty", EXIT_USAGE)
    ensure_index(settings)
    question = make_question(args.question, settings, language=args.language, collections=args.collection)
    mode = AnswerMode(args.mode) if args.mode else None

    async def run():
        with open_retriever(settings.index_dir) as retriever:
            pipeline = make_pipeline(settings, retriever)
            try:
                return await pipeline.answer(question, mode=mode)
            finally:
                await pipeline.backend.aclose()

    code = EXIT_OK
    try:
        answer = asyncio.run(run())
    except LLMError as exc:
        print(f"citebot: the language model failed: {exc}", file=sys.stderr)
        answer = error_answer(question, question.language, mode or settings.answer_mode)
        code = EXIT_FAILED
    if args.json:
        print(json.dumps(answer.model_dump(mode="json"), ensure_ascii=False, indent=1))
        return code
    print(format_text_answer(answer, question.language))
    if answer.draft:
        print(f"\n(not posted: the draft failed verification with {len(answer.violations)} violation(s):", file=sys.stderr)
        for v in answer.violations:
            print(f"  {v.kind}: {v.detail}", file=sys.stderr)
        print(")", file=sys.stderr)
    return code
