"""The Slack Web API client, and what its failures mean for a job.

slack_sdk retries 429s itself (sleeping Retry-After) and 5xx/connection errors
a couple of times; what still fails after that is translated here, once, into
the one error tree the rest of the bot sees, re-raised `from` slack_sdk's or
aiohttp's exception:

    SlackError                 base: a Slack call failed. `code` is Slack's error
     │                         code ("not_in_channel", "msg_too_long"), or
     │                         "http_503", "timeout", "connection_error"
     ├── SlackUnavailable      retrying helps: 5xx, internal_error, fatal_error,
     │    │                    service_unavailable, request_timeout, timeouts and
     │    │                    connection errors. A `Retryable`, so the queue
     │    │                    tries the job again later. The call may have been
     │    │                    carried out (a post that timed out may show up later).
     │    └── SlackRateLimited 429 / ratelimited, with Retry-After: surely not
     │                         carried out
     └── SlackFailed           retrying will not help (the bot is not in the
                               channel, a missing scope, a message too long):
                               surely not carried out; for the operator to fix;
                               a `Permanent`

Every failure is counted by its code (citebot_slack_errors_total), so an
operator sees "not_in_channel" on a graph instead of an apology in a thread.
"""

from __future__ import annotations

import contextlib
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
from citebot_core.errors import CitebotError, Permanent, Retryable
from citebot_core.retry import parse_retry_after

T = TypeVar("T")

# In-call retries; past these the job itself is retried with the queue's backoff.
RATE_LIMIT_RETRIES = 3
SERVER_ERROR_RETRIES = 2
# Slack answers in well under a second; a call hanging this long is a network problem.
SLACK_TIMEOUT_S = 15
# Error codes with which Slack itself says "try again" (Web API docs, per method).
RETRYABLE_CODES = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout"})


class SlackError(CitebotError):
    """A Slack call failed past the client's retries. See the module docstring for the tree."""

    def __init__(self, message: str, *, code: str, retry_after: float | None = None):
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class SlackUnavailable(SlackError, Retryable):
    """Slack or the way to it is in trouble: the job is worth another try."""


class SlackRateLimited(SlackUnavailable):
    """Slack refused the call with 429: it surely did not happen, unlike a timeout."""


class SlackFailed(SlackError, Permanent):
    """A Slack call failed in a way that retrying will not fix."""


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
    """Awaits a Slack call; its failure as a `SlackError` whose message says `what` failed."""
    try:
        return await awaitable
    except SlackApiError as exc:
        raise _translated(exc, what) from exc
    except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
        raise _counted(SlackUnavailable(f"{what}: Slack did not answer in time", code="timeout")) from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise _counted(
            SlackUnavailable(f"{what}: cannot reach Slack ({type(exc).__name__})", code="connection_error")
        ) from exc


def _translated(exc: SlackApiError, what: str) -> SlackError:
    response = exc.response
    status = response.status_code if response is not None else 0
    error = response.get("error") if response is not None else None
    if status == 429 or error == "ratelimited":
        retry_after = _retry_after(response.headers if response is not None else None)
        return _counted(SlackRateLimited(f"{what}: Slack rate limit", code="ratelimited", retry_after=retry_after))
    code = error or f"http_{status}"
    if status >= 500 or error in RETRYABLE_CODES:
        return _counted(SlackUnavailable(f"{what}: Slack error {code}", code=code))
    return _counted(SlackFailed(f"{what}: Slack said {code}", code=code))


def _counted(error: SlackError) -> SlackError:
    metrics.SLACK_ERRORS.labels(code=error.code).inc()
    return error


async def best_effort(awaitable: Awaitable[Any]) -> None:
    """For calls whose failure must not fail the job (a progress reaction)."""
    with contextlib.suppress(TimeoutError, SlackApiError, aiohttp.ClientError, OSError):
        await awaitable


def _retry_after(headers: Any) -> float | None:
    # slack_sdk hands headers over as a plain dict, its values sometimes lists.
    for name in ("Retry-After", "retry-after"):
        value = (headers or {}).get(name)
        if value:
            return parse_retry_after(value[0] if isinstance(value, list) else value)
    return None
