"""LLM backends over httpx.

A backend turns a `GenerationRequest` into a `Draft`. Three kinds exist:
`extractive` (no model, see `bot.answer.extractive`), `openai` (any server that speaks
POST /v1/chat/completions: vLLM, llama.cpp, LM Studio, OpenAI) and `ollama`
(POST /api/chat). Transient failures (connection errors, timeouts, HTTP 429
and 5xx) are retried with exponential backoff; a 429 or 503 with Retry-After
waits at least that long. Reasoning blocks (<think>…</think>) are removed from
`Draft.text`; `Draft.raw` keeps the reply as it came.

Errors. httpx exceptions never leave this module; they are translated once,
here, and re-raised `from` the original:

    LLMError                  base; the worker catches this and apologises
     ├── LLMUnavailable       connection refused/reset, timeout, 429, 5xx:
     │                        the retries ran out (`retryable` is True, so the
     │                        job may be tried again later)
     ├── LLMRejected          any other 4xx (wrong model name, bad API key, a
     │                        body the server refuses), a redirect, a request
     │                        httpx cannot send; not retried (`retryable` False)
     └── LLMBadReply          2xx, but not a chat reply: not JSON, or no
                              choices/message/content (`retryable` False)

Every error carries `url` (credentials removed), `status` (None when no HTTP
response came) and `attempts` (requests sent); its message names URL and status.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import httpx

from bot.answer.extractive import ExtractiveBackend
from bot.answer.verify.text import strip_think
from bot.config import Settings
from bot.models import Draft, GenerationRequest
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

    def __init__(self, message: str, *, url: str, status: int | None = None):
        super().__init__(message)
        self.url = url
        self.status = status
        self.attempts = 1  # how many requests were sent before giving up, for the audit


class LLMUnavailable(LLMError):
    retryable = True

    def __init__(self, message: str, *, url: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message, url=url, status=status)
        self.retry_after = retry_after  # seconds the server asked us to wait, if it said


class LLMRejected(LLMError):
    pass


class LLMBadReply(LLMError):
    pass


@runtime_checkable
class Backend(Protocol):
    name: str  # the model name, recorded in the audit

    async def generate(self, request: GenerationRequest) -> Draft: ...

    async def aclose(self) -> None: ...


# ----------------------------------------------------------------- retries


def _is_retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


# Transport failures worth another try; the rest (a bad scheme, a request
# httpx cannot even build) will fail the same way every time.
_TRANSIENT_TRANSPORT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def _redact(url: str) -> str:
    """The URL as shown in errors and logs: without user:password."""
    return str(httpx.URL(url).copy_with(username=None, password=None))


# ----------------------------------------------------------------- chat backends


class _ChatBackend:
    """What both chat APIs share: one client, the retry loop, error translation."""

    path = ""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        *,
        backoff: float = DEFAULT_BACKOFF,
        max_retry_after: float = MAX_RETRY_AFTER,
        sleep: Sleep = asyncio.sleep,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.name = model
        self.model = model
        # `url` is the server root (Settings.llm_url is normalised to it); each API adds its path.
        self.endpoint = url.rstrip("/") + self.path
        self._shown = _redact(self.endpoint)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            transport=transport,
        )

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def generate(self, request: GenerationRequest) -> Draft:
        reply = await self._post(self._body(request))
        raw = self._content(reply)
        # Reasoning never reaches the verifier or Slack; `raw` keeps it for the audit.
        return Draft(text=strip_think(raw), model=self.name, raw=raw)

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _message(self, reply: Any) -> Any:
        """The assistant message object of a parsed reply (KeyError etc. if absent)."""
        raise NotImplementedError

    def _content(self, reply: Any) -> str:
        try:
            content = self._message(reply)["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise LLMBadReply(
                f"LLM reply from {self._shown} has no message content: {_excerpt(json.dumps(reply))}",
                url=self._shown,
                status=200,
            )
        return content

    async def _post(self, body: dict[str, Any]) -> Any:
        """POST with retries; the parsed JSON reply, or an LLMError."""
        attempt = 0
        while True:
            try:
                return await self._post_once(body)
            except LLMError as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    exc.attempts = attempt + 1
                    raise
                log.warning("%s; retry %d/%d in %.2fs", exc, attempt + 1, self.retries, delay)
                await self._sleep(delay)
                attempt += 1

    def _retry_delay(self, exc: LLMError, attempt: int) -> float | None:
        """Seconds to wait before the next try, or None to give up."""
        if not isinstance(exc, LLMUnavailable) or attempt >= self.retries:
            return None
        delay = backoff_delay(attempt, base=self.backoff, cap=MAX_BACKOFF, jitter=JITTER)
        if exc.retry_after is not None:
            if exc.retry_after > self.max_retry_after:
                return None
            delay = max(delay, exc.retry_after)
        return delay

    async def _post_once(self, body: dict[str, Any]) -> Any:
        try:
            response = await self._client.post(self.endpoint, json=body)
        except httpx.TimeoutException as exc:
            raise LLMUnavailable(
                f"LLM request to {self._shown} timed out after {self.timeout:g}s", url=self._shown
            ) from exc
        except _TRANSIENT_TRANSPORT as exc:
            raise LLMUnavailable(
                f"LLM at {self._shown} could not be reached: {exc!r}", url=self._shown
            ) from exc
        except httpx.HTTPError as exc:
            raise LLMRejected(f"LLM request to {self._shown} failed: {exc!r}", url=self._shown) from exc
        self._raise_for_status(response)
        try:
            return response.json()
        except ValueError as exc:
            raise LLMBadReply(
                f"LLM reply from {self._shown} is not JSON: {_excerpt(response.text)}",
                url=self._shown,
                status=response.status_code,
            ) from exc

    def _raise_for_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status < 300:
            return
        if status < 400:
            # Not followed: a redirected POST may turn into a GET, and the fix
            # (the right URL in the settings) is the operator's to make.
            where = response.headers.get("Location", "?")
            raise LLMRejected(
                f"LLM request to {self._shown} was redirected (HTTP {status}) to {where}; use that URL",
                url=self._shown,
                status=status,
            )
        message = f"LLM request to {self._shown} failed: HTTP {status}: {_excerpt(response.text)}"
        if not _is_retryable_status(status):
            raise LLMRejected(message, url=self._shown, status=status)
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        raise LLMUnavailable(message, url=self._shown, status=status, retry_after=retry_after)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_EXCERPT else text[:ERROR_EXCERPT] + "…"


class OpenAIBackend(_ChatBackend):
    """Any OpenAI-compatible server: POST {root}/v1/chat/completions.

    In claims mode the schema goes out twice: as `response_format` (OpenAI,
    llama.cpp, newer vLLM) and as vLLM's `guided_json`. Servers that reject
    unknown fields (api.openai.com) need `guided_json=False`.
    """

    path = "/v1/chat/completions"

    def __init__(self, url: str, model: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, guided_json: bool = True, **kwargs: Any):
        super().__init__(url, model, api_key, timeout, retries, **kwargs)
        self.guided_json = guided_json

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": 0,
            "stream": False,
        }
        schema = request.json_schema
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "claims", "schema": schema, "strict": True},
            }
            if self.guided_json:
                body["guided_json"] = schema
        return body

    def _message(self, reply: Any) -> Any:
        return reply["choices"][0]["message"]


class OllamaBackend(_ChatBackend):
    """Ollama's native API: POST {root}/api/chat, JSON schema in `format`."""

    path = "/api/chat"

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "stream": False,
            "options": {"temperature": 0},
        }
        if request.json_schema is not None:
            body["format"] = request.json_schema
        return body

    def _message(self, reply: Any) -> Any:
        return reply["message"]


# ----------------------------------------------------------------- factory


def make_backend(settings: Settings) -> Backend:
    """The backend that CITEBOT_LLM names, from settings bot.config has checked already."""
    if settings.llm == "extractive":
        return ExtractiveBackend()
    cls = OpenAIBackend if settings.llm == "openai" else OllamaBackend
    # Settings refuses a chat backend without both (bot.config, _check_llm_endpoint).
    assert settings.llm_url is not None and settings.llm_model is not None
    return cls(
        settings.llm_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout,
        max_retry_after=settings.llm_max_retry_after_s,
    )
