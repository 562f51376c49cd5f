"""LLM backends: a `GenerationRequest` in, a `Draft` out.

Three kinds exist: `extractive` (no model, see `bot.answer.extractive`),
`openai` (any server that speaks POST /v1/chat/completions: vLLM, llama.cpp,
llama-cpp-python, LM Studio, OpenAI) and `ollama` (POST /api/chat). The HTTP
underneath (retries, the question's deadline, the error tree) is
`bot.answer.llm_http`.

Output cap. Every request carries one (`max_tokens`; Ollama's
`options.num_predict`): without it a model that rambles writes until the
server's context is full, and the asker waits minutes for an apology. A draft
that stopped at the cap has `Draft.truncated` set; it is verified as it is,
never completed (bot.answer.pipeline).

Structured output. A request with a JSON schema (claims mode) is sent in the
first of the backend's forms (bot.answer.structured) that the server takes; the
form is kept for the backend's lifetime (one backend per process and server)
and logged once. A form the server refuses (HTTP 400 or 422, or a 5xx whose
body names the form's field) is a configuration matter, not an outage: the
next form is tried at once, and when every form is refused the error is one
LLMRejected line with what the server said to each.

Reasoning blocks (<think>…</think>) are removed from `Draft.text`; `Draft.raw`
keeps the reply as it came.

Abilities. A backend says what it does besides drafting (`Backend.quotes_kb`,
`quotes_nearest`, `reads_vectors`), and the pipeline asks that (`can`), never
the backend's type: a model has none of them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Protocol, runtime_checkable

import httpx

from bot.answer.extractive import ExtractiveBackend
from bot.answer.llm_http import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    MAX_RETRY_AFTER,
    LLMBadReply,
    LLMClient,
    LLMRejected,
    Sleep,
)
from bot.answer.structured import BODY_REFUSED, OLLAMA_FORMS, OPENAI_FORMS, PROMPT_ONLY, StructuredForm
from bot.answer.verify.text import strip_think
from bot.config import Settings
from bot.models import Draft, GenerationRequest
from citebot_core.http import excerpt
from kb_index.embedding import Embedder

log = logging.getLogger(__name__)

# The output cap when CITEBOT_LLM_MAX_TOKENS is not set, sized on what the
# prompt asks for (bot.i18n PROMPT_RULES_*): a brief prose answer is a few
# sentences, well under 300 tokens in English and somewhat more in German;
# claims JSON is at most 12 claims of one short statement each, about 50 tokens
# apiece with their JSON around them. Twice that leaves room; a model that
# writes past it is rambling.
PROSE_MAX_TOKENS = 512
STRUCTURED_MAX_TOKENS = 1024
# What a server says about itself (its context length) must not hold up anything.
INFO_TIMEOUT = 5.0


@runtime_checkable
class Backend(Protocol):
    name: str  # the model name, recorded in the audit
    quotes_kb: bool  # its drafts are the KB's own words, verbatim: nothing in them for a judge to check
    quotes_nearest: bool  # may answer a question retrieval refused as near with the nearest passages, marked so
    reads_vectors: bool  # chooses passages by meaning: takes the retriever's embedder (`use_embedder`)

    async def generate(self, request: GenerationRequest) -> Draft: ...

    async def aclose(self) -> None: ...

    def use_embedder(self, embedder: Embedder) -> None: ...


def can(backend: Backend, ability: str) -> bool:
    """Does `backend` say it has `ability` (one of `Backend`'s flags)? One that does not say, such as a
    stand-in with only a name and `generate`, is a model: it has none."""
    return getattr(backend, ability, False) is True


# ----------------------------------------------------------------- chat backends


class ChatBackend:
    """What both chat APIs share: the client, the output cap, the structured-output forms."""

    path = ""
    forms: tuple[StructuredForm, ...] = (PROMPT_ONLY,)
    # A model writes its own words (a judge checks them), and is never asked about a question retrieval refused.
    quotes_kb = quotes_nearest = reads_vectors = False

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        *,
        max_tokens: int | None = None,
        backoff: float = DEFAULT_BACKOFF,
        max_retry_after: float = MAX_RETRY_AFTER,
        sleep: Sleep = asyncio.sleep,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.name = model
        self.model = model
        # `url` is the server root (Settings.llm_url is normalised to it); each API adds its path.
        self.client = LLMClient(
            url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff,
            max_retry_after=max_retry_after, sleep=sleep, transport=transport,
        )
        self.endpoint = self.client.root + self.path
        self.shown = self.client.shown(self.path)
        self.timeout = timeout
        self.max_retry_after = max_retry_after
        self.max_tokens = max_tokens  # None: PROSE_MAX_TOKENS or STRUCTURED_MAX_TOKENS
        # The form the server took (None until a request with a schema got through), and where to start next time.
        self.structured_form: StructuredForm | None = None
        self._form_at = 0

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()

    def use_embedder(self, embedder: Embedder) -> None:
        """A model reads the blocks' words: their vectors are of no use to it."""

    def cap(self, request: GenerationRequest) -> int:
        """The output cap of this request: its own, the configured one, or the default for its kind."""
        default = PROSE_MAX_TOKENS if request.json_schema is None else STRUCTURED_MAX_TOKENS
        return request.max_tokens or self.max_tokens or default

    async def generate(self, request: GenerationRequest) -> Draft:
        cap = self.cap(request)
        if request.json_schema is None:
            reply = await self.client.post(self.path, self._body(request, cap))
        else:
            reply = await self._structured(request, request.json_schema, cap)
        raw = self._content(reply)
        truncated = self._stopped_at_cap(reply)
        if truncated:
            log.info("the model's draft stopped at the output cap of %d tokens", cap)
        # Reasoning never reaches the verifier or Slack; `raw` keeps it for the audit.
        return Draft(text=strip_think(raw), model=self.name, raw=raw, truncated=truncated)

    async def _structured(self, request: GenerationRequest, schema: dict[str, Any], cap: int) -> Any:
        """The reply to the request in the first form, from the one the server took last, that it takes."""
        refused: list[tuple[StructuredForm, LLMRejected]] = []
        for at in range(self._form_at, len(self.forms)):
            form = self.forms[at]
            body = self._body(request, cap)
            form.apply(body, schema)
            try:
                reply = await self.client.post(self.path, body, refusable=form.field)
            except LLMRejected as exc:
                if exc.status not in BODY_REFUSED and (exc.status or 0) < 500:
                    raise  # a wrong key or model name: another form would fare no better
                refused.append((form, exc))
                continue
            self._settle(at, refused)
            return reply
        said = "; ".join(f"{form.name}: HTTP {exc.status}: {exc.body}" for form, exc in refused)
        last = refused[-1][1]
        error = LLMRejected(
            f"LLM at {self.shown} refused the request in every form of structured output it was tried in; it said: {said}",
            url=self.shown, status=last.status, body=last.body,
        )
        error.attempts = sum(exc.attempts for _, exc in refused)
        raise error

    def _settle(self, at: int, refused: list[tuple[StructuredForm, LLMRejected]]) -> None:
        """Keeps the form the server took; says so once (and again only if the server changes its mind)."""
        form = self.forms[at]
        if self.structured_form is form:
            return
        self.structured_form, self._form_at = form, at
        why = "".join(f"; {f.name} refused: HTTP {exc.status}: {exc.body}" for f, exc in refused)
        if form.constrained:
            log.info("LLM at %s takes structured output as %s%s", self.shown, form.name, why)
        else:
            log.warning("LLM at %s refused every form of structured output%s: claims answers rely on the prompt "
                        "and the lenient JSON parser alone", self.shown, why)

    async def context_length(self) -> tuple[int, str] | None:
        """(tokens, where the server said so), for the servers that tell; None otherwise."""
        return None

    def _body(self, request: GenerationRequest, cap: int) -> dict[str, Any]:
        raise NotImplementedError

    def _message(self, reply: Any) -> Any:
        """The assistant message object of a parsed reply (KeyError etc. if absent)."""
        raise NotImplementedError

    def _stopped_at_cap(self, reply: Any) -> bool:
        raise NotImplementedError

    def _content(self, reply: Any) -> str:
        try:
            content = self._message(reply)["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise LLMBadReply(
                f"LLM reply from {self.shown} has no message content: {excerpt(json.dumps(reply))}",
                url=self.shown,
                status=200,
            )
        return content


class OpenAIBackend(ChatBackend):
    """Any OpenAI-compatible server: POST {root}/v1/chat/completions."""

    path = "/v1/chat/completions"
    forms = OPENAI_FORMS

    def _body(self, request: GenerationRequest, cap: int) -> dict[str, Any]:
        return {"model": self.model, "messages": request.messages, "temperature": 0, "stream": False, "max_tokens": cap}

    def _message(self, reply: Any) -> Any:
        return reply["choices"][0]["message"]

    def _stopped_at_cap(self, reply: Any) -> bool:
        return _dig(reply, "choices", 0, "finish_reason") == "length"

    async def context_length(self) -> tuple[int, str] | None:
        # llama.cpp's llama-server says it in /props; vLLM per model in /v1/models.
        props = await self.client.info("/props", timeout=INFO_TIMEOUT)
        n_ctx = _dig(props, "default_generation_settings", "n_ctx") or _dig(props, "n_ctx")
        if isinstance(n_ctx, int) and n_ctx > 0:
            return n_ctx, "/props"
        models = _dig(await self.client.info("/v1/models", timeout=INFO_TIMEOUT), "data")
        for entry in models if isinstance(models, list) else []:
            if isinstance(entry, dict) and entry.get("id") == self.model and isinstance(entry.get("max_model_len"), int):
                return entry["max_model_len"], "/v1/models"
        return None


class OllamaBackend(ChatBackend):
    """Ollama's native API: POST {root}/api/chat, JSON schema in `format`."""

    path = "/api/chat"
    forms = OLLAMA_FORMS

    def _body(self, request: GenerationRequest, cap: int) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": request.messages,
            "stream": False,
            "options": {"temperature": 0, "num_predict": cap},
        }

    def _message(self, reply: Any) -> Any:
        return reply["message"]

    def _stopped_at_cap(self, reply: Any) -> bool:
        return _dig(reply, "done_reason") == "length"

    async def context_length(self) -> tuple[int, str] | None:
        # The num_ctx the model runs with, when its Modelfile sets one; else what the model was trained for
        # (Ollama itself may run it with less: its default num_ctx, or OLLAMA_CONTEXT_LENGTH).
        show = await self.client.info("/api/show", {"model": self.model}, timeout=INFO_TIMEOUT)
        parameters = _dig(show, "parameters")
        for line in parameters.splitlines() if isinstance(parameters, str) else []:
            name, _, value = line.partition(" ")
            if name == "num_ctx" and value.strip().isdigit():
                return int(value.strip()), "/api/show num_ctx"
        info = _dig(show, "model_info")
        for key, value in info.items() if isinstance(info, dict) else []:
            if key.endswith(".context_length") and isinstance(value, int):
                return value, "/api/show (the model's; Ollama may run it with a smaller num_ctx)"
        return None


def _dig(data: Any, *path: str | int) -> Any:
    """data[p0][p1]…, or None where the path does not exist."""
    for key in path:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data


# ----------------------------------------------------------------- factory


def make_backend(settings: Settings, *, retries: int = DEFAULT_RETRIES) -> Backend:
    """The backend that CITEBOT_LLM names, from settings bot.config has checked already.
    `retries`: in-call retries of a transient failure (`citebot doctor` asks once)."""
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
        max_tokens=settings.llm_max_tokens,
        max_retry_after=settings.llm_max_retry_after_s,
        retries=retries,
    )
