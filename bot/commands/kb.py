"""Knowledge-base commands: `citebot index`, `citebot search`, `citebot ask`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.answer.assemble import error_answer, format_text_answer
from bot.answer.budget import BudgetSpent, within_budget
from bot.answer.llm_http import LLMError
from bot.answer.pipeline import make_pipeline
from bot.answering.source_changes import NotNotified, changed_entries, notify_source_changes
from bot.commands import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, snippet
from bot.commands.build_output import ProblemLines, Progress
from bot.commands.shared import unknown_audience_names
from bot.config import BUNDLED_KB_DIR, BUNDLED_VECTORS_DIR, ConfigError, Settings
from bot.embedder import make_embedder
from bot.models import AnswerMode, Question, clip_question
from bot.slack.calls import SlackError, make_client
from bot.terminal import echo, json_text
from kb_index import IndexEmpty, IndexNotFound, Retriever, build_index
from kb_index.analysis import guess_language
from kb_index.collection import COLLECTION_FILE
from kb_index.embedding import EmbedderError
from kb_index.entries import LoadResult, _collection_files
from kb_index.index import (
    IndexOutdated,
    built_from,
    check_generation,
    check_index,
    current_generation,
    open_problem,
    read_manifest,
)
from kb_index.vector_store import VectorStoreError, store_size
from kb_index.vectors import model_of

# ---------------------------------------------------------------- index


def cmd_index(args, settings: Settings) -> int:
    kb_dir = args.kb or settings.kb_dir
    index_dir = args.index or settings.index_dir
    if not kb_dir.is_dir():
        raise CliError(f"knowledge base folder not found: {kb_dir}", EXIT_USAGE)
    if args.check:
        return check_kb(kb_dir, index_dir, settings, quiet=args.quiet)
    previous = live_entry_hashes(index_dir)
    # A group or channel an audience names that Slack does not know is an error like any other: checked before
    # the build, so that without --keep-going the new index is not switched in.
    unknown = _unknown_audiences(kb_dir, settings)
    if unknown and not args.keep_going:
        print(f"citebot: an audience names a group or channel Slack does not know (see above), so the index was not "
              f"rebuilt and the live index ({_live_name(index_dir)}) is unchanged; fix them, or pass --keep-going "
              "to switch in the index all the same", file=sys.stderr)
        return EXIT_FAILED
    report = build_kb_index(
        kb_dir,
        index_dir,
        settings.language,
        embedder=embedder_of(settings),
        rebuild=args.rebuild,
        quiet=args.quiet,
        keep_going=args.keep_going,
        synced_dir=settings.sync_dir,
    )
    print(report.summary())
    if report.switched and report.chunks == 0:
        print(f"citebot: the new index is empty: no file of {kb_dir} could be indexed (see above); "
              "questions get 'the knowledge base is not ready' until one can", file=sys.stderr)
    if not report.switched:
        print(
            f"citebot: {report.skipped} file(s) skipped, so nothing was indexed or embedded and the live index "
            f"({report.live or 'none yet'}) is unchanged; fix them, or pass --keep-going to switch in the index with "
            "the last good version of each failed entry",
            file=sys.stderr,
        )
        return EXIT_FAILED
    note_source_changes(report, previous, index_dir, settings)
    return EXIT_FAILED if unknown else EXIT_OK


def check_kb(kb_dir: Path, index_dir: Path, settings: Settings, *, quiet: bool) -> int:
    """`citebot index --check`: every file read and cut into chunks, every problem listed; nothing is changed."""
    embedder = embedder_of(settings)
    unknown = _unknown_audiences(kb_dir, settings)
    with Progress(enabled=not quiet) as progress:
        lines = ProblemLines(kb_dir, progress)
        report = check_index(kb_dir, index_dir, language=settings.language, embedder=embedder, progress=progress,
                             synced_dir=settings.sync_dir, on_error=lines.error)
        lines.rest(report)
    problems = report.skipped + (1 if unknown else 0)
    if report.to_embed is None:
        vectors_note = "no embeddings (BM25 only)"
    else:
        vectors_note = f"{report.to_embed} of them not embedded yet with {embedder.name}"
    print(f"check: {report.entries} entries, {report.chunks} chunks, {vectors_note}; {report.skipped} file(s) with "
          f"problems, {len(report.warnings)} warning(s); nothing was changed ({report.seconds:.1f}s)")
    return EXIT_FAILED if problems else EXIT_OK


def _live_name(index_dir: Path) -> str:
    try:
        return current_generation(index_dir).name
    except Exception:  # no index yet, or one that cannot be read: said as such
        return "none yet"


def _unknown_audiences(kb_dir: Path, settings: Settings) -> bool:
    """With a Slack token: an error line per group or channel an audience in the KB's collection files names
    that Slack does not know (it grants nobody access). True if there was one."""
    if not settings.slack_bot_token:
        return False
    # An invalid collection file is the build's own error line; the others' audiences are checked here.
    accesses = {name: c.access for name, c in _collection_files(kb_dir, LoadResult()).items()}
    if not any(a.audience for a in accesses.values()):
        return False
    slack = make_client(settings.slack_bot_token, settings.slack_api_url)
    try:
        problems = asyncio.run(unknown_audience_names(slack, accesses))
    except SlackError as exc:
        echo(f"citebot: the audiences' groups and channels were not checked: {exc}", file=sys.stderr, newlines=False)
        return False
    for name, problem in problems:
        where = kb_dir / COLLECTION_FILE if name == "default" else kb_dir / name / COLLECTION_FILE
        echo(f"{where}: {problem}", file=sys.stderr, newlines=False)
    return bool(problems)


def live_entry_hashes(index_dir: Path) -> dict[str, str] | None:
    """Entry id -> content hash of the live index, read before a build replaces it."""
    try:
        return dict(read_manifest(current_generation(index_dir))["entries"])
    except (IndexNotFound, OSError, ValueError, KeyError):
        return None


def note_source_changes(report, previous, index_dir: Path, settings: Settings) -> None:
    """Answers of the last 30 days that cited a changed or removed entry get a note in Slack.

    The index is live whatever happens here: Redis being down is a note, not a failure.
    """
    if not (report.updated or report.removed or (report.full_rebuild and previous)):
        return  # nothing changed: not even Redis is asked


    changed, removed = changed_entries(report, previous)
    if not (changed or removed):
        return
    try:
        count = asyncio.run(notify_source_changes(settings.redis, index_dir, report.generation, changed, removed))
    except NotNotified as exc:
        echo(
            f"citebot: note: the index is built, but answers citing the {len(changed) + len(removed)} changed or "
            f"removed entries were not notified: {exc}",
            file=sys.stderr,
            newlines=False,
        )
        return
    print(f"source changes: {count} answer(s) in Slack cited a changed or removed entry and will get a note")


def embedder_of(settings: Settings):
    try:
        return make_embedder(settings)
    except ConfigError as exc:
        raise CliError(f"configuration error: {exc}", EXIT_USAGE) from None


def build_kb_index(
    kb_dir: Path,
    index_dir: Path,
    language: str,
    *,
    embedder=None,
    rebuild: bool = False,
    quiet: bool = False,
    keep_going: bool = False,
    synced_dir: Path | None = None,
):
    """build_index with a progress bar and each problem printed as soon as it is found, before the long work;
    Ctrl-C says what was kept."""
    seed = BUNDLED_VECTORS_DIR if kb_dir.resolve() == BUNDLED_KB_DIR and BUNDLED_VECTORS_DIR.is_dir() else None
    live = _live_name(index_dir)
    with Progress(enabled=not quiet) as progress:
        lines = ProblemLines(kb_dir, progress)
        try:
            return build_index(
                kb_dir, index_dir, language=language, embedder=embedder, seed_vectors=seed, rebuild=rebuild,
                keep_going=keep_going, progress=progress, synced_dir=synced_dir, on_error=lines.error,
                on_problems=lines.rest,
            )
        except EmbedderError as exc:
            raise CliError(f"embedding failed, the live index is unchanged: {exc}{_kept(progress, index_dir)}",
                           EXIT_FAILED) from None
        except VectorStoreError as exc:
            raise CliError(f"{exc}; the live index is unchanged", EXIT_FAILED) from None
        except KeyboardInterrupt:
            progress.close()
            now = _live_name(index_dir)
            if now != live:
                where = f"the new index ({now}) had already been switched in"
            else:
                where = "no index was switched in" if live == "none yet" else f"the live index ({live}) is unchanged"
            echo(f"citebot: interrupted: {where}{_kept(progress, index_dir)}", file=sys.stderr, newlines=False)
            raise


def _kept(progress: Progress, index_dir: Path) -> str:
    """What an interrupted build leaves for the next one: the vectors it computed."""
    done = progress.done.get("embed")
    if done is None:
        return "; nothing had been embedded yet"
    stored = store_size(index_dir)
    total = f" ({stored[1]} in the vector store)" if stored and stored[1] is not None else ""
    return (f"; the {done} chunk vectors this run computed are kept{total}, so the next run embeds only the "
            f"{(progress.totals.get('embed') or done) - done} it had not done")


# ---------------------------------------------------------------- search


def open_retriever(index_dir: Path, settings: Settings):
    try:
        return Retriever(index_dir, embedder=embedder_of(settings), min_cosine=settings.min_cosine)
    except IndexNotFound as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def cmd_search(args, settings: Settings) -> int:
    if args.k <= 0:
        raise CliError("-k must be a positive number", EXIT_USAGE)

    with open_retriever(args.index or settings.index_dir, settings) as retriever:
        try:
            found = retriever.retrieve(args.query, k=args.k, collections=args.collection)
        except IndexEmpty as exc:
            raise CliError(f"the knowledge base is not ready: {exc}", EXIT_FAILED) from None
    hits, decision = found.hits, found.answerability
    if args.json:
        print(json_text(
            {"answerability": decision.to_dict(), "parts": found.parts, "semantic": found.semantic,
             "hits": [_hit_json(h) for h in hits]},
            indent=1,
        ))
        return EXIT_OK
    verdict = "answerable" if decision.answerable else "not covered: would be refused before the model"
    echo(f"{verdict} ({decision.reason})", newlines=False)
    if len(found.parts) > 1:
        echo("parts: " + " | ".join(found.parts), newlines=False)
    if not hits:
        print("No hit.")
        return EXIT_OK
    rank = 0
    for hit in hits:
        rank += not hit.expanded
        label = "  +" if hit.expanded else f"{rank:3d}"
        page = f" · p. {hit.page}" if hit.page else ""
        stand = f" · Stand {hit.stand}" if hit.stand else ""
        line = f"{label} {hit.score:7.3f}  [{hit.entry_id}] {hit.title} · {hit.section}{page}{stand}  ({hit.collection})"
        echo(line, newlines=False)
        echo(f"              {snippet(hit.text)}", newlines=False)
    return EXIT_OK


# What `citebot search --json` says of each hit (docs/DESIGN.md 3.4).
HIT_JSON_FIELDS = ("entry_id", "section", "title", "collection", "score", "expanded", "chunk_id", "stand", "url", "page")


def _hit_json(hit) -> dict:
    return {name: getattr(hit, name) for name in HIT_JSON_FIELDS}



# ---------------------------------------------------------------- ask




def ensure_index(settings: Settings) -> None:
    """The embedded default must work on a fresh clone: index the KB on first use
    (or when the index is of another version).

    An index built from another folder than CITEBOT_KB_DIR is only pointed out,
    never rebuilt: the index may be the live one of a running bot, and a wrong
    or unset CITEBOT_KB_DIR must not replace it with another knowledge base.
    """
    embedder = embedder_of(settings)

    try:
        gen_dir = current_generation(settings.index_dir)
        check_generation(gen_dir)
    except IndexNotFound as exc:
        why = "an outdated index" if isinstance(exc, IndexOutdated) else "no index yet"
        # There is no usable live index to protect here, and without one nothing
        # can be answered: a KB with broken files still gets the rest indexed.
        _index_first(settings, embedder, f"{why}; indexing {settings.kb_dir} into {settings.index_dir} first")
        return
    source = built_from(gen_dir)
    same_kb = source is None or source == settings.kb_dir.resolve()
    if same_kb and isinstance(open_problem(settings.index_dir), IndexEmpty):
        # An empty index has nothing a running bot relies on: files may have come since.
        _index_first(settings, embedder, f"the index is empty; indexing {settings.kb_dir} again first")
        return
    if embedder is not None and same_kb and model_of(gen_dir) != embedder.name:
        # Only the vectors are missing or of another model: the update keeps
        # every entry and embeds the chunks, so nothing a running bot relies on changes.
        found = model_of(gen_dir)
        why = f"vectors of {found}" if found else "no chunk vectors"
        _index_first(settings, embedder, f"the index has {why}; embedding it with {embedder.name} first")
        return
    if source is not None and source != settings.kb_dir.resolve():
        print(
            f"citebot: note: the index in {settings.index_dir} was built from {source}, not from "
            f"CITEBOT_KB_DIR ({settings.kb_dir}); run 'citebot index' to index that folder",
            file=sys.stderr,
        )


def _index_first(settings: Settings, embedder, why: str) -> None:
    print(f"citebot: {why}", file=sys.stderr)
    report = build_kb_index(settings.kb_dir, settings.index_dir, settings.language, embedder=embedder, keep_going=True,
                            synced_dir=settings.sync_dir)
    print(report.summary(), file=sys.stderr)


def make_question(text: str, settings: Settings, *, language: str | None = None, collections=None):
    text, truncated = clip_question(text, settings.max_question_chars)
    return Question(
        text=text,
        language=language or guess_language(text, default=settings.language),
        collections=collections,
        truncated=truncated,
    )


def cmd_ask(args, settings: Settings) -> int:
    if not args.question.strip():
        raise CliError("the question is empty", EXIT_USAGE)
    ensure_index(settings)
    question = make_question(args.question, settings, language=args.language, collections=args.collection)
    mode = AnswerMode(args.mode) if args.mode else None

    async def run():
        with open_retriever(settings.index_dir, settings) as retriever:
            pipeline = make_pipeline(settings, retriever)
            try:
                # The same time budget as a question asked in Slack (CITEBOT_QUESTION_BUDGET_S).
                return await within_budget(pipeline.answer(question, mode=mode), settings.question_budget_s)
            finally:
                await pipeline.aclose()

    code = EXIT_OK
    try:
        answer = asyncio.run(run())
    except IndexNotFound as exc:  # empty, or removed while the question ran
        raise CliError(f"the knowledge base is not ready: {exc}", EXIT_FAILED) from None
    except (LLMError, BudgetSpent) as exc:
        failed = (f"no answer within CITEBOT_QUESTION_BUDGET_S={settings.question_budget_s:g}s"
                  if isinstance(exc, BudgetSpent) else "the language model failed")
        echo(f"citebot: {failed}: {exc}", file=sys.stderr, newlines=False)
        answer = error_answer(question, question.language, mode or settings.answer_mode)
        code = EXIT_FAILED
    if args.json:
        print(json_text(answer.model_dump(mode="json"), indent=1))
        return code
    echo(format_text_answer(answer, question.language))
    if answer.draft:
        print(f"\n(not posted: the draft failed verification with {len(answer.violations)} violation(s):", file=sys.stderr)
        for v in answer.violations:
            echo(f"  {v.kind}: {v.detail}", file=sys.stderr, newlines=False)
        print(")", file=sys.stderr)
    return code
