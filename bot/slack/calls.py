"""The Slack Web API client, and what its failures mean for a job.

slack_sdk retries 429s itself (sleeping Retry-After) and 5xx/connection errors
a couple of times; what still fails after that is translated here, once:
rate limits and server or network trouble become `Transient` (the queue tries
the job again later), everything else is `SlackFailed` (retrying would not
help: a missing scope, an archived channel).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.queue import Transient

T = TypeVar("T")

# In-call retries; past these the job itself is retried with the queue's backoff.
RATE_LIMIT_RETRIES = 3
SERVER_ERROR_RETRIES = 2
# Slack answers in well under a second; a call hanging this long is a network problem.
SLACK_TIMEOUT_S = 15


class SlackFailed(Exception):
    """A Slack call failed in a way that retrying will not fix."""


class SlackRateLimited(Transient):
    """Slack refused the call with 429: it surely did not happen, unlike a timeout."""


def make_client(token: str | None, base_url: str) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=base_url,
        timeout=SLACK_TIMEOUT_S,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            AsyncServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
        ],
    )


async def call(awaitable: Awaitable[T], what: str) -> T:
    try:
        return await awaitable
    except SlackApiError as exc:
        status = exc.response.status_code
        error = exc.response.get("error") if exc.response is not None else None
        metrics.SLACK_ERRORS.labels(kind="rate_limited" if status == 429 else error or f"http_{status}").inc()
        if status == 429 or error == "ratelimited":
            retry_after = _retry_after(exc.response.headers)
            raise SlackRateLimited(f"{what}: Slack rate limit", retry_after=retry_after) from exc
        if status >= 500 or error in ("internal_error", "fatal_error", "service_unavailable", "request_timeout"):
            raise Transient(f"{what}: Slack error {status} {error}") from exc
        raise SlackFailed(f"{what}: Slack said {error or status}") from exc
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        metrics.SLACK_ERRORS.labels(kind="network").inc()
        raise Transient(f"{what}: cannot reach Slack ({type(exc).__name__})") from exc


async def best_effort(awaitable: Awaitable[Any]) -> None:
    """For calls whose failure must not fail the job (a progress reaction)."""
    try:
        await awaitable
    except (SlackApiError, aiohttp.ClientError, asyncio.TimeoutError, OSError):
        pass


def _retry_after(headers: Any) -> float | None:
    for name in ("Retry-After", "retry-after"):
        value = (headers or {}).get(name)
        if value:
            value = value[0] if isinstance(value, list) else value
            try:
                return float(value)
            except ValueError:
                return None
    return None
