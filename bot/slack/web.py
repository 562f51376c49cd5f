"""HTTP front of the web process: /slack/events, /healthz, /metrics (aiohttp).

Bad requests are turned away before Bolt sees them, with the status a client
can act on: a forged or stale signature gets 401 (so does a timestamp that is
not a number: the signature cannot be checked against it), a body that is
neither JSON nor a form with a JSON payload gets 400, and nothing is enqueued
for either.
"""

from __future__ import annotations

import json
import logging
import re
from urllib.parse import parse_qs

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from bot import metrics

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
# Slack bodies are small; a megabyte is far beyond any real event or interaction.
MAX_BODY_BYTES = 1 << 20
# Slack's request timestamp: Unix seconds. The signature check would raise on
# anything else, and a 500 makes Slack send the same request again and again.
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


def create_web_app(bolt: AsyncApp, *, signing_secret: str, health=None, queue=None) -> web.Application:
    verifier = SignatureVerifier(signing_secret)

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
        bolt_response = await bolt.async_dispatch(await to_bolt_request(request))
        if bolt_response.status >= 500:
            metrics.EVENTS.labels(result="failed").inc()
        return await to_aiohttp_response(bolt_response)

    async def metrics_route(request: web.Request) -> web.Response:
        return web.Response(body=await metrics.render(queue), headers={"Content-Type": metrics.CONTENT_TYPE})

    async def healthz(request: web.Request) -> web.Response:
        report = await health() if health else {"ok": True}
        return web.json_response(report, status=200 if report.get("ok") else 503)

    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app.router.add_post(EVENTS_PATH, events)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_route)
    return app


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
            return isinstance(json.loads(body), dict)
        form = parse_qs(body, strict_parsing=True)
    except ValueError:
        return False
    if "payload" in form:
        try:
            return isinstance(json.loads(form["payload"][0]), dict)
        except ValueError:
            return False
    return "ssl_check" in form or "command" in form
