"""`citebot doctor`'s `sources` check: each source of the sources file reachable, its credentials taken, its
scope found, and when it was last synced."""

from __future__ import annotations

import asyncio

from bot.commands.finding import FAIL, OK, WARN, Finding
from bot.config import Settings
from kb_index.sources.config import SourcesError, load_sources
from kb_index.sources.model import SourceError
from kb_index.sources.runner import make_connector
from kb_index.sources.store import SyncedStore

LEVELS = {"ok": OK, "warn": WARN, "fail": FAIL}


async def check_sources(settings: Settings) -> list[Finding]:
    if settings.sources_file is None:
        return []
    try:
        sources = load_sources(settings.sources_file)
    except SourcesError as exc:
        return [Finding("sources", FAIL, str(exc), {"path": exc.path, "line": exc.line})]
    if not sources.sources:
        return [Finding("sources", WARN, f"{settings.sources_file} names no source")]
    findings: list[Finding] = []
    for name, source in sorted(sources.sources.items()):
        findings += await asyncio.to_thread(_check_one, settings, name, source)
    return findings


def _check_one(settings: Settings, name: str, source) -> list[Finding]:
    data = {"source": name, "type": source.type}
    try:
        connector = make_connector(name, source, sleep=lambda _s: None)
    except SourceError as exc:
        return [Finding("sources", FAIL, f"{name}: {exc}", data)]
    try:
        found = [Finding("sources", LEVELS.get(level, WARN), f"{name}: {text}", data)
                 for level, text in connector.check()]
    except SourceError as exc:
        found = [Finding("sources", FAIL, f"{name}: {exc}", data)]
    finally:
        connector.close()
    state = SyncedStore(settings.sync_dir, name).load_state()
    when = f"last synced {state.synced_at}, {len(state.docs)} document(s)" if state.synced_at else "never synced yet"
    found.append(Finding("sources", OK if state.synced_at else WARN,
                         f"{name}: {when}" + ("" if state.synced_at else ": run `citebot sync`"), data))
    return found
