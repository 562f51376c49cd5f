"""Replies only the asker sees: sent to the response_url of /citebot or a shortcut, once per key.

The same three steps as the Poster (bot.slack.posting), through the same post
ledger, so a job handler replies through either without knowing which:
claim_unless_posted, release_claim, post_and_record.

What differs is the doubt. An ephemeral message cannot be looked up in
Slack afterwards, so a post whose outcome is unknown (a timeout, the worker
dying between the post and its record) is taken as sent: the asker may miss
an answer they can ask for again, but never gets it twice. A post Slack
answered with an error surely did not happen: the claim is released and the
job tried again (5xx, 429) or given up (4xx: the URL expired, or was used
the 5 times Slack allows).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx

from bot import metrics
from bot.slack.calls import SLACK_TIMEOUT_S, SlackError, SlackFailed, SlackUnavailable
from bot.slack.posting import IN_DOUBT_WINDOW_S, LedgerSteps
from bot.store.ledger import PostClaim, PostLedger
from bot.store.records import EPHEMERAL_TS

log = logging.getLogger(__name__)


async def claim_ephemeral(ledger: PostLedger, key: str) -> bool:
    """Claims `key` for a message only one person sees; False when it was sent, or may have been."""
    claim = await ledger.claim_post(key)
    if claim is PostClaim.POSTED:
        return False
    if claim is PostClaim.IN_DOUBT:
        # A try was sent and nothing came back: taken as delivered (see the module docstring).
        return await ledger.look_until(key) is None
    return True


@dataclass
class ResponseUrlPoster(LedgerSteps):
    """Replies to `response_url`, each key's once, as an ephemeral message to the asker."""

    ledger: PostLedger
    response_url: str

    async def claim_unless_posted(self, key: str, channel: str, thread_ts: str | None, *,
                                  retried: bool = False) -> bool:
        return await claim_ephemeral(self.ledger, key)  # an ephemeral message cannot be looked up

    async def post_and_record(
        self, key: str, channel: str, thread_ts: str | None, *forms: dict[str, Any], what: str
    ) -> tuple[None, dict[str, Any]]:
        """Sends the first of `forms` Slack takes (a later one only when the one before was too
        big), replacing nothing the asker saw before; records it under `key`."""
        for i, msg in enumerate(forms):
            await self.ledger.mark_attempt(key, time.time() + IN_DOUBT_WINDOW_S)
            try:
                await self._send({"response_type": "ephemeral", "replace_original": False, **msg}, what)
            except SlackFailed as exc:
                await self.ledger.release_post(key)
                if exc.code in ("invalid_blocks", "msg_too_long") and i + 1 < len(forms):
                    log.warning("%s: Slack said %s; sending a shorter form", what, exc.code)
                    continue
                raise
            except SlackError as exc:
                if exc.code not in ("timeout", "connection_error"):
                    await self.ledger.release_post(key)  # Slack answered: it did not take it
                raise
            await self.ledger.record_posted(key, channel, EPHEMERAL_TS)
            return None, msg
        raise ValueError("post_and_record() needs at least one form of the message")

    async def _send(self, body: dict[str, Any], what: str) -> None:
        await send(self.response_url, body, what)


async def replace_original(response_url: str, msg: dict[str, Any], what: str) -> None:
    """`msg` in place of the message whose interaction gave `response_url` (an ephemeral
    message too, which no chat.update can reach). Replacing twice shows the same, so no
    ledger is needed; SlackFailed once the URL is used up or expired."""
    await send(response_url, {"response_type": "ephemeral", "replace_original": True, **msg}, what)


async def send(response_url: str, body: dict[str, Any], what: str) -> None:
    """One POST to a response URL; Slack's answer as the error tree of bot.slack.calls."""
    try:
        async with httpx.AsyncClient(timeout=SLACK_TIMEOUT_S) as client:
            response = await client.post(response_url, json=body)
    except httpx.TimeoutException as exc:
        raise _counted(SlackUnavailable(f"{what}: Slack did not answer in time", code="timeout")) from exc
    except httpx.HTTPError as exc:
        raise _counted(SlackUnavailable(f"{what}: cannot reach Slack ({type(exc).__name__})",
                                        code="connection_error")) from exc
    if response.status_code == 200:
        return
    code = _error_code(response)
    if response.status_code == 429 or response.status_code >= 500:
        raise _counted(SlackUnavailable(f"{what}: Slack error {code}", code=code))
    raise _counted(SlackFailed(f"{what}: Slack said {code}", code=code))


def _error_code(response: httpx.Response) -> str:
    """Slack's error for a response URL: a JSON `error`, or a bare word such as used_url."""
    try:
        data = response.json()
        error = data.get("error") if isinstance(data, dict) else None
    except ValueError:
        error = response.text.strip()
    return error if isinstance(error, str) and error and len(error) < 60 else f"http_{response.status_code}"


def _counted(error: SlackError) -> SlackError:
    metrics.SLACK_ERRORS.labels(code=error.code).inc()
    return error
