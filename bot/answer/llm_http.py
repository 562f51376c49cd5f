"""HTTP to a model server: one client, the retry loop, the question's deadline, the error tree.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are
retried with exponential backoff; a 429 or 503 with Retry-After waits at
least that long. Within a question (bot.answer.budget) each request's timeout
is capped by what is left of its budget, and a retry that cannot start in
time ends the question with BudgetSpent instead of a wait nobody benefits from.

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

from bot.answer.budget import BudgetSpent, time_left
from kb_index.retry import backoff_delay, parse_retry_after

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
# How much of an error body goes into the message (servers send whole HTML pages).
ERROR_EXCERPT = 200


class LLMError(Exception):
    """The LLM could not produce a draft. See the module docstring for the tree."""

    retryable = False

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = ""):
        super().__init__(message)
        self.url = url
        self.status = status
        self.body = body
        self.attempts = 1  # how many requests were sent before giving up, for the audit


class LLMUnavailable(LLMError):
    retryable = True

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = "",
                 retry_after: float | None = None):
        super().__init__(message, url=url, status=status, body=body)
        self.retry_after = retry_after  # seconds the server asked us to wait, if it said


class LLMRejected(LLMError):
    pass


class LLMBadReply(LLMError):
    pass


def _is_retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


# Transport failures worth another try; the rest (a bad scheme, a request
# httpx cannot even build) will fail the same way every time.
_TRANSIENT_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def redact(url: str) -> str:
    """The URL as shown in errors and logs: without user:password."""
    return str(httpx.URL(url).copy_with(username=None, password=None))


def excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_EXCERPT else text[:ERROR_EXCERPT] + "…"


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
        attempt = 0
        while True:
            timeout = self._try_timeout()
            try:
                return await self._post_once(path, body, timeout, refusable)
            except LLMUnavailable as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    exc.attempts = attempt + 1
                    raise
                left = time_left()
                if left is not None and delay >= left:
                    raise BudgetSpent(f"no time left of the question's budget for another try after: {exc}") from exc
                log.warning("%s; retry %d/%d in %.2fs", exc, attempt + 1, self.retries, delay)
                await self._sleep(delay)
                attempt += 1
            except LLMError as exc:
                exc.attempts = attempt + 1
                raise

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

    def _try_timeout(self) -> float:
        """This try's timeout: the configured one, or what is left of the question's budget if that is less."""
        left = time_left()
        if left is None:
            return self.timeout
        if left <= 0:
            raise BudgetSpent("no time left of the question's budget for a model call")
        return min(self.timeout, left)

    def _retry_delay(self, exc: LLMUnavailable, attempt: int) -> float | None:
        """Seconds to wait before the next try, or None to give up."""
        if attempt >= self.retries:
            return None
        delay = backoff_delay(attempt, base=self.backoff, cap=MAX_BACKOFF, jitter=JITTER)
        if exc.retry_after is not None:
            if exc.retry_after > self.max_retry_after:
                return None
            delay = max(delay, exc.retry_after)
        return delay

    async def _post_once(self, path: str, body: dict[str, Any], timeout: float, refusable: str | None) -> Any:
        shown = self.shown(path)
        try:
            response = await self._client.post(self.root + path, json=body, timeout=self._timeout(timeout))
        except httpx.TimeoutException as exc:
            if timeout < self.timeout:  # the question's budget set this limit, not the server's slowness alone
                raise BudgetSpent(f"the model at {shown} did not answer in the {timeout:g}s left of the question's budget") from exc
            raise LLMUnavailable(f"LLM request to {shown} timed out after {timeout:g}s", url=shown) from exc
        except _TRANSIENT_TRANSPORT as exc:
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
    if not _is_retryable_status(status) or (status >= 500 and refusable and refusable in response.text):
        raise LLMRejected(message, url=shown, status=status, body=said)
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    raise LLMUnavailable(message, url=shown, status=status, body=said, retry_after=retry_after)
