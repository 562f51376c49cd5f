"""LLM backends against the fake LLM server (both routes) and httpx.MockTransport.

How each real server's rules are met (structured-output forms, the output
cap, the time budget): tests/test_llm_servers.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bot.answer.backends import Backend, OllamaBackend, OpenAIBackend, make_backend
from bot.answer.extractive import ExtractiveBackend
from bot.answer.llm_http import MAX_BACKOFF, MAX_RETRY_AFTER, LLMBadReply, LLMError, LLMRejected, LLMUnavailable
from bot.answer.prompt import CLAIMS_JSON_SCHEMA
from bot.config import load_settings
from tests.backend_fixtures import MESSAGES, chat_request
from tests.fakes import FakeLLMServer, Reply
from tests.harness import free_port

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = [OpenAIBackend, OllamaBackend]
ROUTES = {OpenAIBackend: "/v1/chat/completions", OllamaBackend: "/api/chat"}


@pytest.fixture
def llm_server():
    with FakeLLMServer() as server:
        yield server


# ----------------------------------------------------------------- happy path and bodies


@pytest.mark.parametrize("cls", BACKENDS)
async def test_returns_the_reply_text_as_draft(llm_server, backends, cls):
    llm_server.script("Employees get 30 days [hr-vac].")
    draft = await backends(cls, llm_server.url, "qwen3:8b").generate(chat_request())
    assert draft.text == "Employees get 30 days [hr-vac]."
    assert draft.raw == "Employees get 30 days [hr-vac]."
    assert draft.model == "qwen3:8b"
    assert [c.path for c in llm_server.calls] == [ROUTES[cls]]


async def test_openai_body_in_citations_mode(llm_server, backends):
    await backends(OpenAIBackend, llm_server.url, "m1").generate(chat_request())
    body = llm_server.calls[0].body
    assert body == {"model": "m1", "messages": MESSAGES, "temperature": 0, "stream": False, "max_tokens": 512}


async def test_openai_body_in_claims_mode_asks_for_the_schema_in_one_form(llm_server, backends):
    await backends(OpenAIBackend, llm_server.url, "m1").generate(chat_request(claims=True))
    body = llm_server.calls[0].body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": CLAIMS_JSON_SCHEMA, "strict": True},
    }
    # One form per request: llama-server refuses a schema next to a grammar, api.openai.com any field it does not know.
    assert "guided_json" not in body
    assert body["max_tokens"] == 1024


async def test_ollama_body(llm_server, backends):
    backend = backends(OllamaBackend, llm_server.url, "llama3")
    await backend.generate(chat_request())
    await backend.generate(chat_request(claims=True))
    plain, claims = (c.body for c in llm_server.calls)
    assert plain == {"model": "llama3", "messages": MESSAGES, "stream": False,
                     "options": {"temperature": 0, "num_predict": 512}}
    assert claims["format"] == CLAIMS_JSON_SCHEMA and claims["options"]["num_predict"] == 1024


async def configured(kind: str, url: str) -> Backend:
    """The backend CITEBOT_LLM=kind and CITEBOT_LLM_URL=url make, after one request."""
    settings = load_settings(env_file=None, CITEBOT_LLM=kind, CITEBOT_LLM_URL=url, CITEBOT_LLM_MODEL="m")
    backend = make_backend(settings)
    try:
        await backend.generate(chat_request())
    finally:
        await backend.aclose()
    return backend


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions"])
async def test_openai_url_with_or_without_v1(llm_server, suffix):
    backend = await configured("openai", llm_server.url + suffix)
    assert isinstance(backend, OpenAIBackend) and backend.endpoint == llm_server.url + "/v1/chat/completions"
    assert llm_server.calls[0].path == "/v1/chat/completions"


@pytest.mark.parametrize("suffix", ["", "/", "/api", "/api/chat"])
async def test_ollama_url_forms(llm_server, suffix):
    await configured("ollama", llm_server.url + suffix)
    assert llm_server.calls[0].path == "/api/chat"


@pytest.mark.parametrize("cls", BACKENDS)
async def test_api_key_is_sent_as_bearer_token(llm_server, backends, cls):
    await backends(cls, llm_server.url, api_key="sk-123").generate(chat_request())
    await backends(cls, llm_server.url).generate(chat_request())
    with_key, without = (c.headers for c in llm_server.calls)
    assert with_key["Authorization"] == "Bearer sk-123"
    assert "Authorization" not in without


@pytest.mark.parametrize("cls", BACKENDS)
async def test_reasoning_is_stripped_from_text_but_kept_in_raw(llm_server, backends, cls):
    reply = "<think>The user wants days.\nBlock 1 says 30.</think>\n\nEmployees get 30 days [hr-vac]."
    llm_server.script(reply)
    draft = await backends(cls, llm_server.url).generate(chat_request())
    assert draft.text == "Employees get 30 days [hr-vac]."
    assert draft.raw == reply


def test_backends_satisfy_the_protocol():
    backend = OpenAIBackend("http://127.0.0.1:1", "m")
    assert isinstance(backend, Backend)
    assert isinstance(ExtractiveBackend(), Backend)
    assert backend.name == "m"


# ----------------------------------------------------------------- reasoning blocks


def reply_with(content: str) -> httpx.MockTransport:
    return httpx.MockTransport(lambda req: httpx.Response(200, json={"choices": [{"message": {"content": content}}]}))


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("<thinking>\nplan\n</thinking>\nAnswer [a].", "Answer [a]."),
        ("plan without an opening tag</think>Answer [a].", "Answer [a]."),
        ("<think>ran out of tokens while thinking", ""),
        ("  Answer [a].  ", "Answer [a]."),
    ],
)
async def test_every_shape_of_reasoning_is_stripped(backends, raw, text):
    draft = await backends(OpenAIBackend, "http://llm.test", transport=reply_with(raw)).generate(chat_request())
    assert (draft.text, draft.raw) == (text, raw)


# ----------------------------------------------------------------- retries and errors


@pytest.mark.parametrize("cls", BACKENDS)
async def test_retries_5xx_then_succeeds(llm_server, backends, sleeps, cls):
    llm_server.script(Reply(status=500), Reply(status=503), "Recovered [a].")
    draft = await backends(cls, llm_server.url, retries=2).generate(chat_request())
    assert draft.text == "Recovered [a]."
    assert len(llm_server.calls) == 3
    assert len(sleeps.delays) == 2


async def test_5xx_past_the_retries_raises_unavailable(llm_server, backends):
    llm_server.set_script([], default=Reply(status=502))
    backend = backends(OpenAIBackend, llm_server.url, retries=2)
    with pytest.raises(LLMUnavailable) as info:
        await backend.generate(chat_request())
    exc = info.value
    assert len(llm_server.calls) == 3 and exc.attempts == 3
    assert exc.retryable and exc.status == 502
    assert "HTTP 502" in str(exc) and backend.endpoint in str(exc)
    assert "scripted HTTP 502" in str(exc)  # the server's own words help the operator


@pytest.mark.parametrize("cls", BACKENDS)
async def test_429_waits_for_retry_after(llm_server, backends, sleeps, cls):
    llm_server.script(Reply(status=429, retry_after=7), "After the wait [a].")
    draft = await backends(cls, llm_server.url).generate(chat_request())
    assert draft.text == "After the wait [a]."
    assert sleeps.delays == [7.0]
    assert len(llm_server.calls) == 2


async def test_retry_after_beyond_the_cap_fails_at_once(llm_server, backends, sleeps):
    llm_server.script(Reply(status=429, retry_after=int(MAX_RETRY_AFTER) + 60), "never sent")
    with pytest.raises(LLMUnavailable) as info:
        await backends(OpenAIBackend, llm_server.url).generate(chat_request())
    assert info.value.status == 429
    assert sleeps.delays == []
    assert len(llm_server.calls) == 1


async def test_backoff_doubles_with_bounded_jitter_up_to_a_cap(llm_server, backends, sleeps):
    llm_server.set_script([], default=Reply(status=500))
    with pytest.raises(LLMUnavailable):
        await backends(OpenAIBackend, llm_server.url, retries=6, backoff=0.5).generate(chat_request())
    nominal = [0.5, 1.0, 2.0, 4.0, MAX_BACKOFF, MAX_BACKOFF]
    assert len(sleeps.delays) == len(nominal)
    for delay, expected in zip(sleeps.delays, nominal, strict=True):
        assert expected <= delay <= expected * 1.1


@pytest.mark.parametrize("cls", BACKENDS)
async def test_hanging_server_times_out_after_the_retries(llm_server, backends, cls):
    # Two tries of 0.2 s against a server that would answer after 100 s: a
    # bound of 10 s stands far from both, so it tells them apart without flaking.
    llm_server.set_script([], default=Reply(text="too late", delay=100))
    backend = backends(cls, llm_server.url, timeout=0.2, retries=1)
    started = time.monotonic()
    with pytest.raises(LLMUnavailable) as info:
        await backend.generate(chat_request())
    assert time.monotonic() - started < 10
    assert len(llm_server.wait_for_calls(2)) == 2
    assert "timed out" in str(info.value) and info.value.status is None
    assert isinstance(info.value.__cause__, httpx.TimeoutException)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
async def test_other_4xx_is_not_retried(llm_server, backends, sleeps, status):
    llm_server.script(Reply(status=status), "never sent")
    with pytest.raises(LLMRejected) as info:
        await backends(OpenAIBackend, llm_server.url).generate(chat_request())
    assert not info.value.retryable and info.value.status == status and info.value.attempts == 1
    assert f"HTTP {status}" in str(info.value)
    assert len(llm_server.calls) == 1 and sleeps.delays == []


@pytest.mark.parametrize(
    ("cls", "body"),
    [
        (OpenAIBackend, "<html>Bad Gateway</html>"),
        (OpenAIBackend, '{"choices": []}'),
        (OpenAIBackend, '{"choices": [{"message": {}}]}'),
        (OpenAIBackend, '{"choices": [{"message": {"content": null}}]}'),
        (OpenAIBackend, '["not", "an", "object"]'),
        (OllamaBackend, '{"done": true}'),
        (OllamaBackend, '{"message": {"content": 42}}'),
        (OllamaBackend, ""),
    ],
)
async def test_malformed_reply_is_an_llm_error(llm_server, backends, cls, body):
    llm_server.script(Reply(body=body), "never sent")
    with pytest.raises(LLMBadReply) as info:
        await backends(cls, llm_server.url).generate(chat_request())
    assert isinstance(info.value, LLMError) and not info.value.retryable
    assert llm_server.url in str(info.value)
    assert len(llm_server.calls) == 1


async def test_credentials_in_the_url_stay_out_of_errors(llm_server, backends):
    llm_server.script(Reply(status=400))
    url = llm_server.url.replace("http://", "http://admin:hunter2@")
    with pytest.raises(LLMRejected) as info:
        await backends(OpenAIBackend, url).generate(chat_request())
    assert "hunter2" not in str(info.value) and "hunter2" not in info.value.url


async def test_concurrent_requests_each_get_their_own_scripted_reply(llm_server, backends):
    texts = [f"Answer {i} [a]." for i in range(20)]
    llm_server.script(*texts)
    backend = backends(OllamaBackend, llm_server.url)
    drafts = await asyncio.gather(*(backend.generate(chat_request()) for _ in texts))
    assert sorted(d.text for d in drafts) == sorted(texts)


# ----------------------------------------------------------------- transport errors (MockTransport)


def mock_backend(handler, backends, **kwargs):
    return backends(OpenAIBackend, "http://llm.test:8000", transport=httpx.MockTransport(handler), **kwargs)


def scripted(*outcomes):
    """A MockTransport handler and the requests it saw. Each request gets the next
    outcome, the last one repeating: a Response, or (httpx error class, message) to raise."""
    attempts: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        attempts.append(req)
        outcome = outcomes[min(len(attempts), len(outcomes)) - 1]
        if isinstance(outcome, httpx.Response):
            return outcome
        error, text = outcome
        raise error(text, request=req)

    return handler, attempts


async def test_connection_refused_is_retried_then_unavailable(backends):
    refuse, attempts = scripted((httpx.ConnectError, "connection refused"))
    with pytest.raises(LLMUnavailable) as info:
        await mock_backend(refuse, backends, retries=2).generate(chat_request())
    assert len(attempts) == 3
    assert "could not be reached" in str(info.value) and "llm.test:8000" in str(info.value)
    assert isinstance(info.value.__cause__, httpx.ConnectError)


async def test_dropped_connection_then_success(backends):
    flaky, attempts = scripted(
        (httpx.RemoteProtocolError, "server disconnected without a response"),
        httpx.Response(200, json={"choices": [{"message": {"content": "Back [a]."}}]}),
    )
    draft = await mock_backend(flaky, backends).generate(chat_request())
    assert draft.text == "Back [a]." and len(attempts) == 2


async def test_a_request_httpx_cannot_send_is_not_retried(backends):
    broken, attempts = scripted((httpx.LocalProtocolError, "illegal header value"))
    with pytest.raises(LLMRejected) as info:
        await mock_backend(broken, backends).generate(chat_request())
    assert len(attempts) == 1
    assert isinstance(info.value.__cause__, httpx.LocalProtocolError)


async def test_retry_after_on_503_is_honoured(backends, sleeps):
    retry_later, _ = scripted(
        httpx.Response(503, headers={"Retry-After": "3"}),
        httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]}),
    )
    draft = await mock_backend(retry_later, backends).generate(chat_request())
    assert draft.text == "ok" and sleeps.delays == [3.0]


async def test_a_redirect_is_not_followed_but_named(backends):
    redirect, attempts = scripted(httpx.Response(301, headers={"Location": "https://llm.test:8443/v1/chat/completions"}))
    with pytest.raises(LLMRejected) as info:
        await mock_backend(redirect, backends).generate(chat_request())
    assert "https://llm.test:8443/v1/chat/completions" in str(info.value) and info.value.status == 301
    assert len(attempts) == 1


async def test_backend_closes_as_async_context_manager():
    backend = OpenAIBackend("http://llm.test", "m", transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    async with backend:
        pass
    with pytest.raises(RuntimeError):  # httpx refuses a closed client
        await backend.client.info("/", timeout=1)


# ----------------------------------------------------------------- factory


def test_make_backend_extractive_needs_no_endpoint():
    backend = make_backend(load_settings(env_file=None, CITEBOT_LLM="extractive"))
    assert isinstance(backend, ExtractiveBackend) and backend.name == "extractive"


@pytest.mark.parametrize(("kind", "cls", "endpoint"), [
    ("openai", OpenAIBackend, "http://h:8000/v1/chat/completions"),
    ("OLLAMA", OllamaBackend, "http://h:8000/api/chat"),
])
async def test_make_backend_chat_kinds(kind, cls, endpoint):
    settings = load_settings(env_file=None, CITEBOT_LLM=kind, CITEBOT_LLM_URL="http://h:8000/v1",
                             CITEBOT_LLM_MODEL="m", CITEBOT_LLM_API_KEY="key", CITEBOT_LLM_TIMEOUT="12.5",
                             CITEBOT_LLM_MAX_RETRY_AFTER_S="4", CITEBOT_LLM_MAX_TOKENS="300")
    backend = make_backend(settings)
    try:
        assert type(backend) is cls
        assert backend.endpoint == endpoint and backend.name == "m" and backend.timeout == 12.5
        assert backend.max_retry_after == 4.0 and backend.max_tokens == 300
    finally:
        await backend.aclose()


# ----------------------------------------------------------------- the fake server from another process


@pytest.fixture
def server_process(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": ["From the file [a]."], "default": "Default [a]."}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--port", str(free_port()), "--script", str(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        yield line.split()[-1]
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0
        proc.stdout.close()


@pytest.mark.e2e
async def test_fake_server_is_scriptable_over_http(server_process, backends):
    url = server_process
    backend = backends(OllamaBackend, url, "m")
    assert (await backend.generate(chat_request())).text == "From the file [a]."
    async with httpx.AsyncClient(base_url=url) as control:
        resp = await control.post("/_script", json={"replies": ["Over HTTP [a].", {"status": 500}]})
        assert resp.status_code == 200
        assert (await backend.generate(chat_request())).text == "Over HTTP [a]."
        with pytest.raises(LLMUnavailable):
            await backends(OllamaBackend, url, "m", retries=0).generate(chat_request())
        assert (await backend.generate(chat_request())).text == "Default [a]."
        calls = (await control.get("/_calls")).json()
        assert [c["path"] for c in calls] == ["/api/chat"] * 4
        assert calls[0]["body"]["messages"] == MESSAGES
        assert (await control.post("/_script", content="{broken")).status_code == 400
