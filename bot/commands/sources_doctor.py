"""`citebot doctor`'s `sources` check: each source of the sources file reachable, its credentials taken, its
scope found, and when it was last synced."""

from __future__ import annotations

import asyncio

from bot.commands.finding import FAIL, OK, WARN, Finding
from bot.commands.shared import granted_scopes
from bot.config import Settings
from bot.slack.calls import SlackError, call, make_client
from kb_index.sources.config import SourcesError, load_sources
from kb_index.sources.model import SourceError
from kb_index.sources.runner import make_connector
from kb_index.sources.store import SyncedStore

LEVELS = {"ok": OK, "warn": WARN, "fail": FAIL}
EMAIL_SCOPE = "users:read.email"


async def check_sources(settings: Settings) -> list[Finding]:
    if settings.sources_file is None:
        return []
    try:
        sources = load_sources(settings.sources_file)
    except SourcesError as exc:
        return [Finding("sources", FAIL, str(exc), {"path": exc.path, "line": exc.line})]
    if not sources.sources:
        return [Finding("sources", WARN, f"{settings.sources_file} names no source")]
    findings = await _email_scope(settings)
    for name, source in sorted(sources.sources.items()):
        findings += await asyncio.to_thread(_check_one, settings, name, source)
    return findings


async def _email_scope(settings: Settings) -> list[Finding]:
    """A page's readers are matched to Slack users by e-mail: without the scope, no restricted page is indexed."""
    if not settings.slack_bot_token:
        return [Finding("sources", WARN, "SLACK_BOT_TOKEN is not set: no reader can be matched to a Slack user, so "
                                         "only documents the whole organization may read are synced")]
    slack = make_client(settings.slack_bot_token, settings.slack_api_url)
    try:
        reply = await call(slack.auth_test(), "auth.test")
    except SlackError as exc:
        return [Finding("sources", FAIL, f"cannot check the token's scopes: {exc}")]
    scopes = granted_scopes(reply)
    if scopes is not None and EMAIL_SCOPE not in scopes:
        return [Finding("sources", FAIL, f"the token lacks {EMAIL_SCOPE}: no page's readers can be matched to Slack "
                                         "users (add it in the app's OAuth & Permissions, then reinstall)")]
    return []


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
