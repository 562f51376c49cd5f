"""Service and operator commands: `citebot serve`, `worker`, `review`, `audit`."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from dataclasses import asdict

from bot import logs
from bot.access.scope import Accesses
from bot.channels import ChannelsError
from bot.commands import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, snippet
from bot.commands.kb import ensure_index
from bot.commands.shared import shared_history_lines, with_redis
from bot.config import ConfigError, Settings
from bot.helpdesk import report
from bot.jobs.queue import QueueUnavailable
from bot.models import Outcome
from bot.review.gaps import GapQuestion, format_gaps, gap_outcome, group_questions
from bot.slack.startup import StartupError
from bot.store.audit import AuditTrail, check_cited, entry_json, format_entry
from bot.store.escalations import Escalations
from bot.store.records import Records
from bot.store.shared_history import restricted_in_shared_channels
from bot.terminal import echo, json_text
from bot.wiring import run_web, run_worker
from kb_index import IndexNotFound, Retriever


def _logging(role: str) -> None:
    logs.setup(role)


def _run_service(coro) -> int:
    try:
        asyncio.run(coro)
    except (ConfigError, ChannelsError) as exc:
        raise CliError(f"configuration error: {exc}", EXIT_USAGE) from None
    except StartupError as exc:
        raise CliError(str(exc), EXIT_FAILED) from None
    except QueueUnavailable as exc:
        raise CliError(f"{str(exc).rstrip('.')} (is Redis running at CITEBOT_REDIS_URL?)", EXIT_FAILED) from None
    except IndexNotFound as exc:
        raise CliError(f"the knowledge base is not ready: {exc}", EXIT_FAILED) from None
    return EXIT_OK


def cmd_serve(args, settings: Settings) -> int:
    _logging("web")
    return _run_service(run_web(settings, host=args.host, port=args.port))


def cmd_worker(args, settings: Settings) -> int:
    if args.concurrency < 1:
        raise CliError("--concurrency must be at least 1", EXIT_USAGE)
    try:
        settings.require_bot_token()  # before indexing: a missing token should not wait for a build
    except ConfigError as exc:
        raise CliError(f"configuration error: {exc}", EXIT_USAGE) from None
    _logging("worker")
    ensure_index(settings)
    given = {"visibility_timeout": args.visibility_timeout, "max_tries": args.max_tries, "backoff_base": args.backoff_base}
    options = {name: value for name, value in given.items() if value is not None}
    return _run_service(run_worker(settings, concurrency=args.concurrency, metrics_port=args.metrics_port, **options))


def cmd_review_list(args, settings: Settings) -> int:
    async def fetch(redis):
        return await Records(redis).open_reviews(), await Escalations(redis).since(0)

    reviews, escalations = with_redis(settings, fetch)
    if args.json:
        print(json_text([r.model_dump(mode="json") for r in reviews], indent=1))
        return EXIT_OK
    # Questions handed over to people that nobody has answered in the thread yet (`review escalations`: all).
    waiting = [e for e in escalations if not e.replies]
    if waiting:
        echo(f"Handed over to people, no answer in the thread yet ({len(waiting)}):", newlines=False)
        for e in waiting:
            echo(f"  {report.line(e)}", newlines=False)
    if not reviews:
        print("No open reviews.")
        return EXIT_OK
    for r in reviews:
        when = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
        where = "a direct message" if r.is_dm else f"<#{r.channel}>"
        kinds = ", ".join(sorted({v.kind for v in r.violations})) or r.kind
        # No card means no reviewer can see it: the reason is what an operator must fix.
        card = f"  (no card: {r.card_error})" if r.card_error and not r.card_ts else ""
        echo(f"{r.review_id}  {when}  {where}  [{kinds}]  {snippet(r.question, 70)}{card}", newlines=False)
    return EXIT_OK




def cmd_review_gaps(args, settings: Settings) -> int:
    if args.days < 1:
        raise CliError("--days must be at least 1", EXIT_USAGE)

    async def fetch(redis):
        # Refused and uncertain questions, and answered ones whose answer said what the KB does not cover.
        since = time.time() - args.days * 86400
        entries = AuditTrail(redis).entries(since=since, outcomes={Outcome.REFUSED, Outcome.UNCERTAIN, Outcome.ANSWERED})
        return [GapQuestion(text=e.question, language=e.language, at=e.at, outcome=gap_outcome(e)) async for e in entries
                if e.outcome is not Outcome.ANSWERED or e.not_covered]

    gaps = group_questions(with_redis(settings, fetch))
    if args.json:
        print(json_text([g.as_json() for g in gaps], indent=1))
    else:
        print(format_gaps(gaps, days=args.days))  # each line cleaned by format_gaps
        if escalated := _escalations(settings, args.days):
            echo(f"\n{report.gaps_line(escalated, args.days)}", newlines=True)
    return EXIT_OK


def _escalations(settings: Settings, days: int):
    return with_redis(settings, lambda redis: Escalations(redis).since(time.time() - days * 86400))


def cmd_review_escalations(args, settings: Settings) -> int:
    """Questions handed over to people ("Still need help?"), oldest first, and their count by collection."""
    if args.days < 1:
        raise CliError("--days must be at least 1", EXIT_USAGE)
    escalated = _escalations(settings, args.days)
    if args.json:
        print(json_text({"escalations": [e.model_dump(mode="json") for e in escalated],
                         "by_collection": report.by_collection(escalated)}, indent=1))
        return EXIT_OK
    for e in escalated:
        echo(report.line(e), newlines=False)
    echo(report.gaps_line(escalated, args.days), newlines=False)
    return EXIT_OK


def cmd_audit_shared(args, settings: Settings) -> int:
    """Each channel Slack said is shared with another organization, and the answers posted there (while it was
    internal) that cite a collection it may not read now: for an admin to delete or keep."""
    try:
        accesses = Accesses(settings.index_dir).current()
    except IndexNotFound:
        accesses = {}  # no index says any collection is external: every answer's collections count as restricted
    found = with_redis(settings, lambda redis: restricted_in_shared_channels(redis, accesses))
    if args.json:
        print(json_text([asdict(c) for c in found], indent=1))
        return EXIT_OK
    if not found:
        echo("no channel citebot answers in has been shared with another organization", newlines=False)
    for line in shared_history_lines(found):
        echo(line, newlines=False)
    return EXIT_OK




def cmd_audit_show(args, settings: Settings) -> int:
    async def fetch(redis):
        return await AuditTrail(redis).get(args.question_id), await Escalations(redis).get(args.question_id)

    entry, escalation = with_redis(settings, fetch)
    if entry is None:
        raise CliError(f"no audit entry for question {args.question_id!r} (never answered, or older than the audit trail keeps)")
    try:
        with Retriever(args.index or settings.index_dir) as retriever:
            status = check_cited(entry, retriever.entry_chunks)
    except IndexNotFound:
        status = check_cited(entry, None)
    if args.json:
        data = entry_json(entry, status)
        if escalation is not None:
            data["escalation"] = escalation.model_dump(mode="json", exclude={"question"})
        print(json_text(data, indent=1))
    else:
        print(format_entry(entry, status))  # each line cleaned by format_entry
        if escalation is not None:
            echo(report.audit_line(escalation), newlines=False)
    return EXIT_OK
