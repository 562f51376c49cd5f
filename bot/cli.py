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

    p = sub.add_parser("ask", help="answer a question from the knowledge base (the whole pipeline, no Slack)")
    p.add_argument("question", help="the question, as plain text")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    p.add_argument("--mode", choices=("citations", "claims"), help="answer mode (default: CITEBOT_ANSWER_MODE)")
    p.add_argument("--collection", action="append", help="answer only from this collection (repeatable)")
    p.add_argument("--language", choices=("en", "de"), help="the bot's language (default: guessed from the question)")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("serve", help="the web process: Slack events and interactivity, /healthz")
    p.add_argument("--port", type=int, default=3000)
    p.add_argument("--host", default="0.0.0.0")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("worker", help="answer queued questions")
    p.add_argument("--concurrency", type=int, default=8, help="questions in flight at once (default 8)")
    p.add_argument("--metrics-port", type=int, default=9100, help="serve Prometheus /metrics here (0: off; default 9100)")
    # Tuning for tests and drills; the defaults in bot.queue are what production wants.
    p.add_argument("--visibility-timeout", type=float, help=argparse.SUPPRESS)
    p.add_argument("--max-tries", type=int, help=argparse.SUPPRESS)
    p.add_argument("--backoff-base", type=float, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("review", help="rejected drafts awaiting triage")
    review = p.add_subparsers(title="review commands", metavar="COMMAND")
    q = review.add_parser("list", help="list the open reviews, oldest first")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_review_list)
    q = review.add_parser("gaps", help="questions the KB could not answer, similar ones grouped, most asked first")
    q.add_argument("--days", type=int, default=30, help="look back this many days (default 30)")
    q.add_argument("--json", action="store_true", help="print a JSON list of groups")
    q.set_defaults(func=cmd_review_gaps)

    p = sub.add_parser("audit", help="the answer audit trail")
    audit = p.add_subparsers(title="audit commands", metavar="COMMAND")
    q = audit.add_parser("show", help="what one answer relied on and how it was checked")
    q.add_argument("question_id", metavar="ID", help="the question id (channel:ts), as in the logs")
    q.add_argument("--json", action="store_true", help="print the audit entry as JSON")
    q.add_argument("--index", type=Path, help="index to compare the cited chunks with (default: CITEBOT_INDEX_DIR)")
    q.set_defaults(func=cmd_audit_show)
    return parser


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
        print(f"              {_snippet(hit.text)}")
    return EXIT_OK


# ---------------------------------------------------------------- ask


def ensure_index(settings: Settings) -> None:
    """The embedded default must work on a fresh clone: index the KB on first use."""
    from kb_index.index import IndexNotFound, IndexOutdated, check_generation, current_generation

    try:
        check_generation(current_generation(settings.index_dir))
    except IndexNotFound as exc:
        why = "an outdated index" if isinstance(exc, IndexOutdated) else "no index yet"
        print(f"citebot: {why}; indexing {settings.kb_dir} into {settings.index_dir} first", file=sys.stderr)
        report = build_kb_index(settings.kb_dir, settings.index_dir, settings.language)
        for error in report.errors:
            print(f"{settings.kb_dir / error.path}:{error.line}: {error.message}", file=sys.stderr)
        print(report.summary(), file=sys.stderr)


def make_question(text: str, settings: Settings, *, language: str | None = None, collections=None):
    from bot.models import Question
    from kb_index.analysis import guess_language

    text = text.strip()
    truncated = len(text) > settings.max_question_chars
    if truncated:
        text = text[: settings.max_question_chars]
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
            settings.llm, settings.llm_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout
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


# ---------------------------------------------------------------- serve, worker, review


def _logging(role: str) -> None:
    from bot import logs

    logs.setup(role)


def _run_service(coro) -> int:
    import asyncio

    from bot.channels import ChannelsError

    try:
        asyncio.run(coro)
    except (ConfigError, ChannelsError) as exc:
        raise CliError(f"configuration error: {exc}", EXIT_USAGE) from None
    return EXIT_OK


def cmd_serve(args, settings: Settings) -> int:
    from bot.runtime import serve

    _logging("web")
    return _run_service(serve(settings, host=args.host, port=args.port))


def cmd_worker(args, settings: Settings) -> int:
    from bot.runtime import work

    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1", EXIT_USAGE)
    _logging("worker")
    ensure_index(settings)
    given = {"visibility_timeout": args.visibility_timeout, "max_tries": args.max_tries, "backoff_base": args.backoff_base}
    options = {name: value for name, value in given.items() if value is not None}
    return _run_service(work(settings, concurrency=args.concurrency, metrics_port=args.metrics_port, **options))


def cmd_review_list(args, settings: Settings) -> int:
    import asyncio
    import datetime as dt

    from bot.queue import connect
    from bot.records import Records

    async def fetch():
        redis = connect(settings.redis_url, timeout=5.0)
        try:
            return await Records(redis).open_reviews()
        finally:
            await redis.aclose()

    try:
        reviews = asyncio.run(fetch())
    except OSError as exc:
        raise CliError(f"cannot reach Redis at {settings.redis_url}: {exc}") from None
    if args.json:
        print(json.dumps([json.loads(r.model_dump_json()) for r in reviews], ensure_ascii=False, indent=1))
        return EXIT_OK
    if not reviews:
        print("No open reviews.")
        return EXIT_OK
    for r in reviews:
        when = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
        where = "a direct message" if r.is_dm else f"<#{r.channel}>"
        kinds = ", ".join(sorted({v.kind for v in r.violations})) or r.kind
        print(f"{r.review_id}  {when}  {where}  [{kinds}]  {_snippet(r.question, 70)}")
    return EXIT_OK


def _with_redis(settings: Settings, use):
    """Runs `use(redis)` against CITEBOT_REDIS_URL; a Redis that does not answer is one clear line."""
    import asyncio

    from redis.exceptions import RedisError

    from bot.queue import connect, redis_location

    async def run():
        redis = connect(settings.redis_url, timeout=5.0)
        try:
            return await use(redis)
        finally:
            await redis.aclose()

    try:
        return asyncio.run(run())
    except (OSError, RedisError) as exc:
        raise CliError(f"cannot reach Redis at {redis_location(settings.redis_url)}: {exc}") from None


def cmd_review_gaps(args, settings: Settings) -> int:
    import time

    from bot.audit import AuditTrail
    from bot.gaps import GapQuestion, format_gaps, group_questions
    from bot.models import Outcome

    if args.days < 1:
        raise CliError("--days must be at least 1", EXIT_USAGE)

    async def fetch(redis):
        unanswered = AuditTrail(redis).entries(since=time.time() - args.days * 86400, outcomes={Outcome.REFUSED, Outcome.UNCERTAIN})
        return [GapQuestion(text=e.question, language=e.language, at=e.at, outcome=str(e.outcome)) async for e in unanswered]

    gaps = group_questions(_with_redis(settings, fetch))
    if args.json:
        print(json.dumps([g.as_json() for g in gaps], ensure_ascii=False, indent=1))
    else:
        print(format_gaps(gaps, days=args.days))
    return EXIT_OK


def cmd_audit_show(args, settings: Settings) -> int:
    from bot.audit import AuditTrail, check_cited, entry_json, format_entry
    from kb_index import IndexNotFound, Retriever

    entry = _with_redis(settings, lambda redis: AuditTrail(redis).get(args.question_id))
    if entry is None:
        raise CliError(f"no audit entry for question {args.question_id!r} (never answered, or older than the audit trail keeps)")
    try:
        with Retriever(args.index or settings.index_dir) as retriever:
            status = check_cited(entry, retriever.entry_chunks)
    except IndexNotFound:
        status = check_cited(entry, None)
    if args.json:
        print(json.dumps(entry_json(entry, status), ensure_ascii=False, indent=1))
    else:
        print(format_entry(entry, status))
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
