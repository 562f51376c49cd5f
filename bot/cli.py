"""The `citebot` command.

Every subcommand reads the settings once (environment and `.env`); a bad
setting ends the command with one line naming the variable and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

from bot.commands import EXIT_USAGE, CliError
from bot.config import ConfigError, Settings, load_settings
from bot.terminal import echo


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = load_settings()
    except ConfigError as exc:
        echo(f"citebot: configuration error: {exc}", file=sys.stderr, newlines=False)
        return EXIT_USAGE
    try:
        return _command(args.func)(args, settings)
    except KeyboardInterrupt:
        return 130
    except CliError as exc:
        echo(f"citebot: {exc}", file=sys.stderr, newlines=False)
        return exc.code


def _command(where: str) -> Callable[[argparse.Namespace, Settings], int]:
    """A command's function, from "module:function": its module (and all it needs, the pipeline, Slack, Redis)
    is imported only when that command runs, so that `citebot --help` and `citebot index` stay quick."""
    module, _, name = where.partition(":")
    command: Callable[[argparse.Namespace, Settings], int] = getattr(importlib.import_module(module), name)
    return command


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citebot", description="Answers questions from a knowledge base, with checked citations."
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser("index", help="build or update the search index of the knowledge base")
    p.add_argument("--kb", type=Path, help="knowledge base folder (default: CITEBOT_KB_DIR or the bundled sample)")
    p.add_argument("--index", type=Path, help="index folder (default: CITEBOT_INDEX_DIR)")
    p.add_argument("--keep-going", action="store_true", help="switch in the new index (and exit 0) even if some files were skipped; failed entries keep their last good version")
    p.add_argument("--rebuild", action="store_true", help="re-index every entry, not only the changed ones")
    p.add_argument("--check", action="store_true", help="only read every file and list the problems, with how many chunks are not embedded yet; changes nothing")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func="bot.commands.kb:cmd_index")

    p = sub.add_parser("sync", help="bring the Confluence spaces and Drive folders of the sources file into the index, with their permissions")
    p.add_argument("--source", metavar="NAME", help="sync this source only (default: every source in CITEBOT_SOURCES_FILE)")
    p.add_argument("--full", action="store_true", help="list every document and fetch each one again, instead of only what changed since the last sync")
    p.add_argument("--keep-going", action="store_true", help="switch in the new index even if some KB files were skipped (as citebot index --keep-going)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func="bot.commands.sync:cmd_sync")

    p = sub.add_parser("search", help="show the ranked knowledge-base chunks for a question")
    p.add_argument("query", help="the question, as plain text")
    p.add_argument("-k", type=int, default=10, help="number of main hits (default 10)")
    p.add_argument("--collection", action="append", help="search only this collection (repeatable)")
    p.add_argument("--json", action="store_true", help="print the answerability decision, the question's parts and the hits as one JSON object")
    p.add_argument("--index", type=Path, help="index folder (default: CITEBOT_INDEX_DIR)")
    p.set_defaults(func="bot.commands.kb:cmd_search")

    p = sub.add_parser("ask", help="answer a question from the knowledge base (the whole pipeline, no Slack)")
    p.add_argument("question", help="the question, as plain text")
    p.add_argument("--json", action="store_true", help="print the answer as one JSON object")
    p.add_argument("--mode", choices=("citations", "claims"), help="answer mode (default: CITEBOT_ANSWER_MODE)")
    p.add_argument("--collection", action="append", help="answer only from this collection (repeatable)")
    p.add_argument("--language", choices=("en", "de"), help="the bot's language (default: guessed from the question)")
    p.set_defaults(func="bot.commands.kb:cmd_ask")

    p = sub.add_parser("doctor", help="check the configuration: the model, Slack, Redis and the index")
    p.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    p.set_defaults(func="bot.commands.doctor:cmd_doctor")

    p = sub.add_parser("access", help="which collections a person may read, in their DM or in a channel, and why")
    p.add_argument("--user", required=True, help="the person's Slack user ID (U…)")
    p.add_argument("--channel", help="also what an answer posted in this channel (C…) may draw on")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func="bot.commands.access:cmd_access")

    p = sub.add_parser("serve", help="the web process: Slack events and interactivity, /healthz")
    p.add_argument("--port", type=int, default=3000, help="HTTP port for Slack's requests and /healthz (default 3000)")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0: every interface)")
    p.set_defaults(func="bot.commands.ops:cmd_serve")

    p = sub.add_parser("worker", help="answer queued questions")
    p.add_argument("--concurrency", type=int, default=8, help="questions in flight at once (default 8)")
    p.add_argument("--metrics-port", type=int, default=9100, help="serve Prometheus /metrics here (0: off; default 9100)")
    # Tuning for tests and drills; the defaults in bot.jobs.queue are what production wants.
    p.add_argument("--visibility-timeout", type=float, help=argparse.SUPPRESS)
    p.add_argument("--max-tries", type=int, help=argparse.SUPPRESS)
    p.add_argument("--backoff-base", type=float, help=argparse.SUPPRESS)
    p.set_defaults(func="bot.commands.ops:cmd_worker")

    p = sub.add_parser("review", help="rejected drafts awaiting triage")
    review = p.add_subparsers(title="review commands", metavar="COMMAND")
    q = review.add_parser("list", help="list the open reviews, oldest first")
    q.add_argument("--json", action="store_true", help="print a JSON list of reviews")
    q.set_defaults(func="bot.commands.ops:cmd_review_list")
    q = review.add_parser("gaps", help="questions the KB could not answer, similar ones grouped, most asked first")
    q.add_argument("--days", type=int, default=30, help="look back this many days (default 30)")
    q.add_argument("--json", action="store_true", help="print a JSON list of groups")
    q.set_defaults(func="bot.commands.ops:cmd_review_gaps")
    q = review.add_parser("escalations", help="questions handed over to people, and how many per collection")
    q.add_argument("--days", type=int, default=30, help="look back this many days (default 30)")
    q.add_argument("--json", action="store_true", help="print the hand-overs and the count per collection as one JSON object")
    q.set_defaults(func="bot.commands.ops:cmd_review_escalations")

    p = sub.add_parser("audit", help="the answer audit trail")
    audit = p.add_subparsers(title="audit commands", metavar="COMMAND")
    q = audit.add_parser("show", help="what one answer relied on and how it was checked")
    q.add_argument("question_id", metavar="ID", help="the question id (channel:ts), as in the logs")
    q.add_argument("--json", action="store_true", help="print the audit entry as JSON")
    q.add_argument("--index", type=Path, help="index to compare the cited chunks with (default: CITEBOT_INDEX_DIR)")
    q.set_defaults(func="bot.commands.ops:cmd_audit_show")
    q = audit.add_parser("shared", help="answers from restricted collections already in channels now shared with "
                                        "another organization")
    q.add_argument("--json", action="store_true", help="print one JSON object per shared channel, in a list")
    q.set_defaults(func="bot.commands.ops:cmd_audit_shared")
    return parser


if __name__ == "__main__":
    sys.exit(main())
