"""HTTP to a model server: one client, its retry numbers, the error tree.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are
retried with exponential backoff; a 429 or 503 with Retry-After waits at
least that long. Within a question (bot.answer.budget) each request's timeout
is capped by what is left of its budget, and a retry that cannot start in
time ends the question with BudgetSpent instead of a wait nobody benefits from.
The loop that does this is the one the embedders use too (citebot_core.http).

Errors. httpx exceptions never leave this module; they are translated once,
here, and re-raised `from` the original:

    LLMError                  base; a worker tries a retryable one again and
                              apologises after the last try, the others at once
     ├── LLMUnavailable       connection refused/reset, timeout, 429, 5xx:
     │                        the retries ran out (`retryable` is True, so the
     │                        job may be tried again later)
     ├── LLMRejected          any other 4xx (wrong model name, bad API key, a
     │                        body the server refuses), a 5xx whose body names a
     │                        field the caller marked as refusable, a redirect,
     │                        a request httpx cannot send; not retried (`retryable` False)
     └── LLMBadReply          2xx, but not a chat reply: not JSON, or no
                              choices/message/content (`retryable` False)

Every error carries `url` (credentials removed), `status` (None when no HTTP
response came), `attempts` (requests sent) and `body` (the start of the
server's error body, "" if none); its message names URL and status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from citebot_core.deadline import BudgetSpent, request_timeout
from citebot_core.errors import CitebotError, Permanent, Retryable
from citebot_core.http import TRANSIENT_TRANSPORT, RetryPolicy, asend, excerpt, redact, transient_status
from citebot_core.retry import parse_retry_after

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]

DEFAULT_TIMEOUT = 60.0  # seconds per attempt; a local model writing a long answer is slow
DEFAULT_RETRIES = 2  # after the first attempt: three tries in all
DEFAULT_BACKOFF = 0.5  # seconds before the first retry, doubled each time
MAX_BACKOFF = 8.0
# Up to this fraction is added to each delay, so workers that failed together
# do not all come back in the same instant.
JITTER = 0.1
# A Retry-After longer than this is not waited out: the asker is watching a
# Slack thread, an apology now beats an answer in ten minutes. The default of
# CITEBOT_LLM_MAX_RETRY_AFTER_S.
MAX_RETRY_AFTER = 30.0
# The connect phase gets its own short limit: an unreachable host should fail
# fast, while generating may legitimately take the whole timeout.
CONNECT_TIMEOUT = 10.0


class LLMError(CitebotError):
    """The LLM could not produce a draft. See the module docstring for the tree."""

    retryable = False

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = ""):
        super().__init__(message)
        self.url = url
        self.status = status
        self.body = body
        self.attempts = 1  # how many requests were sent before giving up, for the audit


class LLMUnavailable(LLMError, Retryable):
    retryable = True

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = "",
                 retry_after: float | None = None):
        super().__init__(message, url=url, status=status, body=body)
        self.retry_after = retry_after  # seconds the server asked us to wait, if it said


class LLMRejected(LLMError, Permanent):
    pass


class LLMBadReply(LLMError, Permanent):
    pass


class LLMClient:
    """Requests to one model server (`root`, the URL without an API path), with retries."""

    def __init__(
        self,
        root: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_retry_after: float = MAX_RETRY_AFTER,
        sleep: Sleep = asyncio.sleep,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.root = root.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(headers=headers, timeout=self._timeout(timeout), transport=transport)

    async def aclose(self) -> None:
        await self._client.aclose()

    def shown(self, path: str) -> str:
        return redact(self.root + path)

    async def post(self, path: str, body: dict[str, Any], *, refusable: str | None = None) -> Any:
        """POST with retries; the parsed JSON reply, or an LLMError (BudgetSpent past the question's deadline).

        A 5xx whose body names `refusable` (a request field) is the server
        refusing that field, raised at once as LLMRejected."""
        policy = RetryPolicy(
            self.retries, base=self.backoff, cap=MAX_BACKOFF, jitter=JITTER, max_retry_after=self.max_retry_after,
            deadline=True,
        )
        return await asend(lambda: self._post_once(path, body, refusable), policy, sleep=self._sleep, log=log)

    async def info(self, path: str, body: dict[str, Any] | None = None, *, timeout: float) -> Any:
        """A JSON document about the server: GET `path`, or POST `body` to it (Ollama's /api/show).
        None on any failure: what a server tells about itself is a nicety, never needed to answer."""
        try:
            if body is None:
                response = await self._client.get(self.root + path, timeout=self._timeout(timeout))
            else:
                response = await self._client.post(self.root + path, json=body, timeout=self._timeout(timeout))
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    @staticmethod
    def _timeout(seconds: float) -> httpx.Timeout:
        return httpx.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT))

    async def _post_once(self, path: str, body: dict[str, Any], refusable: str | None) -> Any:
        shown = self.shown(path)
        timeout = request_timeout(self.timeout, "a model call")
        try:
            response = await self._client.post(self.root + path, json=body, timeout=self._timeout(timeout))
        except httpx.TimeoutException as exc:
            if timeout < self.timeout:  # the question's budget set this limit, not the server's slowness alone
                raise BudgetSpent(f"the model at {shown} did not answer in the {timeout:g}s left of the question's budget") from exc
            raise LLMUnavailable(f"LLM request to {shown} timed out after {timeout:g}s", url=shown) from exc
        except TRANSIENT_TRANSPORT as exc:
            raise LLMUnavailable(f"LLM at {shown} could not be reached: {exc!r}", url=shown) from exc
        except httpx.HTTPError as exc:
            raise LLMRejected(f"LLM request to {shown} failed: {exc!r}", url=shown) from exc
        _raise_for_status(response, shown, refusable)
        try:
            return response.json()
        except ValueError as exc:
            raise LLMBadReply(
                f"LLM reply from {shown} is not JSON: {excerpt(response.text)}", url=shown, status=response.status_code
            ) from exc


def _raise_for_status(response: httpx.Response, shown: str, refusable: str | None) -> None:
    status = response.status_code
    if status < 300:
        return
    if status < 400:
        # Not followed: a redirected POST may turn into a GET, and the fix
        # (the right URL in the settings) is the operator's to make.
        where = response.headers.get("Location", "?")
        raise LLMRejected(
            f"LLM request to {shown} was redirected (HTTP {status}) to {where}; use that URL", url=shown, status=status
        )
    said = excerpt(response.text)
    message = f"LLM request to {shown} failed: HTTP {status}: {said}"
    if not transient_status(status) or (status >= 500 and refusable and refusable in response.text):
        raise LLMRejected(message, url=shown, status=status, body=said)
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    raise LLMUnavailable(message, url=shown, status=status, body=said, retry_after=retry_after)
