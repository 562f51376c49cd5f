"""`citebot sync`: bring the sources of the sources file into the index (kb_index/sources)."""

from __future__ import annotations

import sys

from bot.access.by_email import SlackPeople
from bot.commands import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError
from bot.commands.build_output import Progress
from bot.commands.kb import (
    build_kb_index,
    embedder_of,
    live_entry_hashes,
    note_source_changes,
)
from bot.config import Settings
from bot.terminal import echo
from kb_index.sources.config import SourcesError, SourcesFile, load_sources
from kb_index.sources.runner import SyncRun, run_sync
from kb_index.sources.sync import NoSlack, People

CONNECTORS_PAGE = "docs/connectors.md"


def cmd_sync(args, settings: Settings) -> int:
    sources = sources_of(settings)
    if args.source is not None and args.source not in sources.sources:
        known = ", ".join(sorted(sources.sources)) or "none"
        raise CliError(f"no source named {args.source!r} in {settings.sources_file} (sources: {known})", EXIT_USAGE)
    embedder = embedder_of(settings)
    previous = live_entry_hashes(settings.index_dir)

    def build():
        return build_kb_index(settings.kb_dir, settings.index_dir, settings.language, embedder=embedder,
                              quiet=args.quiet, keep_going=args.keep_going, synced_dir=settings.sync_dir)

    with Progress(enabled=not args.quiet) as progress:
        run = run_sync(sources, settings.sync_dir, people_of(settings), build, only=args.source, full=args.full,
                       language=settings.language, progress=progress)
    print_run(run, settings)
    if run.build is not None and run.build.switched:
        note_source_changes(run.build, previous, settings.index_dir, settings)
    return EXIT_OK if run.ok else EXIT_FAILED


def sources_of(settings: Settings) -> SourcesFile:
    if settings.sources_file is None:
        raise CliError(f"CITEBOT_SOURCES_FILE is not set: there is nothing to sync (see {CONNECTORS_PAGE})",
                       EXIT_USAGE)
    try:
        return load_sources(settings.sources_file)
    except SourcesError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def people_of(settings: Settings) -> People:
    """Slack's users by e-mail; without a bot token nobody can be matched, which the sync says once."""
    if not settings.slack_bot_token:
        echo("citebot: note: SLACK_BOT_TOKEN is not set, so no reader can be matched to a Slack user: only "
             "documents the whole organization may read are indexed", file=sys.stderr, newlines=False)
        return NoSlack()
    return SlackPeople(settings.slack_bot_token, settings.slack_api_url)


def print_run(run: SyncRun, settings: Settings) -> None:
    for report in run.reports:
        for problem in report.not_indexed:
            echo(f"{report.source}: not indexed: {problem}", file=sys.stderr, newlines=False)
        for problem in report.failed:
            echo(f"{report.source}: skipped: {problem}", file=sys.stderr, newlines=False)
        for note in report.notes:
            echo(f"{report.source}: note: {note}", file=sys.stderr, newlines=False)
        print(report.summary())
    for name, why in sorted(run.failed.items()):
        echo(f"citebot: {name}: not synced, its documents stay as the last sync left them: {why}",
             file=sys.stderr, newlines=False)
    for name in run.forgotten:
        print(f"{name}: no longer in {settings.sources_file}: its documents were removed")
    build = run.build
    if build is None:
        return
    print(build.summary())
    if not build.switched:
        echo(f"citebot: {build.skipped} file(s) skipped, so the new index was not switched in and the live index "
             f"({build.live or 'none yet'}) still answers from the last sync; fix them, or pass --keep-going",
             file=sys.stderr, newlines=False)
