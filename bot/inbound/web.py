"""HTTP front of the web process: /slack/events, /healthz, /metrics (aiohttp).

Bad requests are turned away before Bolt sees them, with the status a client
can act on: a forged or stale signature gets 401 (so does a timestamp that is
not a number: the signature cannot be checked against it), a body that is
neither JSON nor a form with a JSON payload gets 400, and nothing is enqueued
for either.

Every request Bolt handles runs within a deadline (citebot_core.deadline) of
SLACK_REDIS_BUDGET_S (in Socket Mode too, bot.wiring): the Redis commands it makes (the enqueue, the asker's
list of questions) are tried through a failover until then, and not after, so
the answer reaches Slack inside its 3 seconds whatever Redis does.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from bot import metrics
from bot.jobs.queue import JobQueue
from citebot_core.deadline import deadline_in

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
# /healthz's report: {"ok": bool, ...}
Health = Callable[[], Awaitable[dict[str, Any]]]
Route = Callable[[web.Request], Awaitable[web.Response]]
# Slack bodies are small; a megabyte is far beyond any real event or interaction.
MAX_BODY_BYTES = 1 << 20
# Slack's request timestamp: Unix seconds. The signature check would raise on
# anything else, and a 500 makes Slack send the same request again and again.
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
# Slack counts a request as failed after 3 s and sends it again. Its Redis work
# (retries through a failover included) ends within this, which leaves room for
# the rest of the request and the way back.
SLACK_REDIS_BUDGET_S = 2.0


def create_web_app(bolt: AsyncApp, *, signing_secret: str | None, health: Health | None = None,
                   queue: JobQueue | None = None) -> web.Application:
    """Without a signing secret (Socket Mode) there is no events route: nothing
    could prove that a request came from Slack."""

    async def metrics_route(request: web.Request) -> web.Response:
        return web.Response(body=await metrics.render(queue), headers={"Content-Type": metrics.CONTENT_TYPE})

    async def healthz(request: web.Request) -> web.Response:
        report = await health() if health else {"ok": True}
        return web.json_response(report, status=200 if report.get("ok") else 503)

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    if signing_secret:
        app.router.add_post(EVENTS_PATH, _events_route(bolt, SignatureVerifier(signing_secret)))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_route)
    return app


def _events_route(bolt: AsyncApp, verifier: SignatureVerifier) -> Route:
    async def events(request: web.Request) -> web.Response:
        raw = await request.read()
        body = raw.decode("utf-8", errors="replace")
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        if not _TIMESTAMP.fullmatch(timestamp) or not verifier.is_valid_request(body, dict(request.headers)):
            metrics.EVENTS.labels(result="bad_signature").inc()
            return web.json_response({"error": "invalid signature"}, status=401)
        if not _well_formed(body, request.content_type):
            metrics.EVENTS.labels(result="malformed").inc()
            return web.json_response({"error": "malformed body"}, status=400)
        with deadline_in(SLACK_REDIS_BUDGET_S):
            bolt_response = await bolt.async_dispatch(await to_bolt_request(request))
        if bolt_response.status >= 500:
            metrics.EVENTS.labels(result="failed").inc()
        return await to_aiohttp_response(bolt_response)

    return events


def create_metrics_app() -> web.Application:
    """A worker's own small HTTP server: just /metrics."""

    async def metrics_route(request: web.Request) -> web.Response:
        return web.Response(body=await metrics.render(), headers={"Content-Type": metrics.CONTENT_TYPE})

    app = web.Application()
    app.router.add_get("/metrics", metrics_route)
    return app


def _well_formed(body: str, content_type: str) -> bool:
    """JSON events, or an interactivity form whose `payload` is JSON (ssl_check forms too)."""
    try:
        if content_type == "application/json" or body.lstrip().startswith("{"):
            payload = json.loads(body)
            return isinstance(payload, dict) and _shaped(payload)
        form = parse_qs(body, strict_parsing=True)
    except ValueError:
        return False
    if "payload" in form:
        try:
            payload = json.loads(form["payload"][0])
        except ValueError:
            return False
        return isinstance(payload, dict) and _shaped(payload)
    return "ssl_check" in form or "command" in form


# What Slack always sends in these places. Bolt and our listeners index into
# them without checks (body["user"]["id"], action["action_id"]): a signed
# body of another shape was a 500 on every Slack retry, so it is a 400 here.
_DICT_FIELDS = ("event", "user", "view", "container", "message", "channel", "state")
_STR_FIELDS = ("type", "token", "team_id", "api_app_id", "event_id", "trigger_id", "response_url", "challenge")


def _shaped(payload: dict[str, Any]) -> bool:
    if any(f in payload and not isinstance(payload[f], dict) for f in _DICT_FIELDS if f != "channel"):
        return False
    if "channel" in payload and not isinstance(payload["channel"], dict | str):
        return False
    if any(f in payload and not isinstance(payload[f], str) for f in _STR_FIELDS):
        return False
    event = payload.get("event")
    if event is not None and not isinstance(event.get("type", ""), str):
        return False
    if payload.get("type") in ("block_actions", "view_submission", "view_closed", "shortcut", "message_action"):
        user = payload.get("user")
        if not (isinstance(user, dict) and isinstance(user.get("id"), str)):
            return False
    actions = payload.get("actions", [])
    if not isinstance(actions, list) or not all(_action_shaped(a) for a in actions):
        return False
    if payload.get("type") == "block_actions" and not actions:
        return False
    if "view" in payload and not _view_shaped(payload["view"]):
        return False
    auths = payload.get("authorizations", [])
    return isinstance(auths, list) and all(isinstance(a, dict) for a in auths)


def _view_shaped(view: object) -> bool:
    if not isinstance(view, dict):
        return False
    if any(not isinstance(view.get(f, ""), str) for f in ("id", "type", "callback_id", "private_metadata", "hash")):
        return False
    state = view.get("state", {})
    if not isinstance(state, dict):
        return False
    values = state.get("values", {})
    if not isinstance(values, dict):
        return False
    # state.values: block id -> action id -> {"type": ..., "value": str or None, ...}
    for block in values.values():
        if not isinstance(block, dict) or not all(isinstance(v, dict) for v in block.values()):
            return False
        if any(not isinstance(v.get("value", ""), str | None) for v in block.values()):
            return False
    return True


def _action_shaped(action: object) -> bool:
    return isinstance(action, dict) and all(
        isinstance(action.get(f, ""), str) for f in ("action_id", "block_id", "value", "type")
    )
