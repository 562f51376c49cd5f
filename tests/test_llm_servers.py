"""The chat backends against the servers teams run, each a fake that refuses what the real one refuses
(tests/fakes/llm_shapes.py): the structured-output form each one takes, the rule that a refused form is a
configuration matter and not an outage, the output cap, and the question's time budget over all tries."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from bot.answer.backends import PROSE_MAX_TOKENS, STRUCTURED_MAX_TOKENS, ChatBackend, OllamaBackend, OpenAIBackend
from bot.answer.budget import BudgetSpent, time_left, within_budget
from bot.answer.llm_http import LLMRejected, LLMUnavailable
from bot.answer.prompt import CLAIMS_JSON_SCHEMA
from tests.backend_fixtures import MESSAGES, chat_request
from tests.fakes import FakeLLMServer, Reply
from tests.fakes.llm_shapes import CONTEXT_TOKENS, SERVED_MODEL, SHAPES

CLAIMS = '{"claims": [{"text": "Employees get 30 days.", "evidence_ids": ["E1"]}]}'

# server shape -> the form it takes, and the statuses of the requests it took to find it out
FORMS = {
    "openai": ("json_schema", [200]),
    "lmstudio": ("json_schema", [200]),
    "llama-cpp-python": ("json_object+schema", [500, 200]),
    "llama-server": ("json_schema", [200]),
    "vllm": ("json_schema", [200]),
    "ollama": ("format schema", [200]),
    "ollama-0.4": ("format json", [400, 200]),
}


def backend_for(backends, server: FakeLLMServer, cls: type[ChatBackend] | None = None, model: str = SERVED_MODEL,
                **kwargs) -> ChatBackend:
    """A backend (instant retries) of the kind the server's shape speaks; OpenAI-compatible without a shape."""
    if cls is None:
        cls = OllamaBackend if server.shape and server.shape.path == "/api/chat" else OpenAIBackend
    return backends(cls, server.url, model, **kwargs)


# ----------------------------------------------------------------- structured output: which form, per server


@pytest.mark.parametrize("shape", sorted(FORMS))
async def test_claims_mode_finds_the_form_each_server_takes_and_keeps_it(backends, caplog, shape):
    form, statuses = FORMS[shape]
    with FakeLLMServer(default=CLAIMS, shape=shape) as server:
        backend = backend_for(backends, server)
        with caplog.at_level(logging.INFO, logger="bot.answer.backends"):
            first = await backend.generate(chat_request(claims=True))
            second = await backend.generate(chat_request(claims=True))
        assert first.text == second.text == CLAIMS
        assert backend.structured_form is not None and backend.structured_form.name == form
        # The search happens once; the next request goes straight to the form the server took.
        assert [c.status for c in server.calls] == [*statuses, 200]
        assert server.calls[-1].body == server.calls[len(statuses) - 1].body
    said = [r.getMessage() for r in caplog.records if "structured output" in r.getMessage()]
    assert len(said) == 1 and f"takes structured output as {form}" in said[0]


@pytest.mark.parametrize("shape", sorted(FORMS))
async def test_citations_mode_is_taken_at_once_by_every_server(backends, shape):
    with FakeLLMServer(default="Employees get 30 days [hr-vac].", shape=shape) as server:
        draft = await backend_for(backends, server).generate(chat_request())
        assert draft.text == "Employees get 30 days [hr-vac]." and not draft.truncated
        assert [c.status for c in server.calls] == [200]


async def test_a_refused_form_is_not_retried_as_an_outage(backends, sleeps):
    # llama-cpp-python answers json_schema with HTTP 500: its body names the field, so it is a refusal.
    with FakeLLMServer(default=CLAIMS, shape="llama-cpp-python") as server:
        await backend_for(backends, server, retries=2).generate(chat_request(claims=True))
        assert [c.status for c in server.calls] == [500, 200]
        assert sleeps.delays == []
        assert server.calls[1].body["response_format"] == {"type": "json_object", "schema": CLAIMS_JSON_SCHEMA}


async def test_a_5xx_that_names_no_field_is_an_outage_and_retried(backends, sleeps):
    with FakeLLMServer(default=Reply(status=503)) as server:
        with pytest.raises(LLMUnavailable):
            await backend_for(backends, server, retries=2).generate(chat_request(claims=True))
        # All three tries in the first form: an overloaded server says nothing about the form.
        assert len(server.calls) == 3 and len(sleeps.delays) == 2
        assert all(c.body["response_format"]["type"] == "json_schema" for c in server.calls)


async def test_when_every_form_is_refused_one_line_says_what_the_server_said(backends):
    with FakeLLMServer(default=Reply(status=400)) as server:
        backend = backend_for(backends, server)
        with pytest.raises(LLMRejected) as info:
            await backend.generate(chat_request(claims=True))
        assert len(server.calls) == 4  # json_schema, json_object+schema, guided_json, prompt only
        assert "guided_json" in server.calls[2].body and "response_format" not in server.calls[3].body
    error = info.value
    assert not error.retryable and error.status == 400 and error.attempts == 4
    text = str(error)
    assert "\n" not in text and "refused the request in every form of structured output" in text
    for form in ("json_schema", "json_object+schema", "guided_json", "prompt only"):
        assert f"{form}: HTTP 400: " in text
    assert "scripted HTTP 400" in text  # the server's own words
    assert backend.structured_form is None


@pytest.mark.parametrize("shape", ["vllm", "ollama"])
async def test_a_wrong_model_name_fails_at_once_in_the_first_form(backends, shape):
    with FakeLLMServer(default=CLAIMS, shape=shape) as server:
        with pytest.raises(LLMRejected) as info:
            await backend_for(backends, server, model="no-such-model").generate(chat_request(claims=True))
        assert info.value.status == 404 and len(server.calls) == 1


async def test_the_form_search_starts_again_from_the_kept_form_when_it_is_refused(backends):
    with FakeLLMServer(default=CLAIMS) as server:
        backend = backend_for(backends, server)
        await backend.generate(chat_request(claims=True))
        assert backend.structured_form.name == "json_schema"
        server.script(Reply(status=422), CLAIMS)
        assert (await backend.generate(chat_request(claims=True))).text == CLAIMS
        assert backend.structured_form.name == "json_object+schema"


def test_each_shape_refuses_what_its_server_refuses():
    schema = {"type": "json_schema", "json_schema": {"name": "answer", "schema": CLAIMS_JSON_SCHEMA}}
    body = {"model": SERVED_MODEL, "messages": MESSAGES}
    openai, lmstudio = SHAPES["openai"], SHAPES["lmstudio"]
    assert openai.check("/v1/chat/completions", {**body, "guided_json": {}})[1]["error"]["message"] == (
        "Unrecognized request argument supplied: guided_json")
    assert openai.check("/v1/chat/completions", {**body, "response_format": schema}) is None
    assert lmstudio.check("/v1/chat/completions", {**body, "response_format": {"type": "json_object"}}) == (
        400, {"error": "'response_format.type' must be 'json_schema' or 'text'"})
    status, error = SHAPES["llama-cpp-python"].check("/v1/chat/completions", {**body, "response_format": schema})
    assert status == 500 and "Input should be 'text' or 'json_object'" in error["error"]["message"]
    grammar = SHAPES["llama-server"].check("/v1/chat/completions", {**body, "response_format": schema, "grammar": "x"})
    assert grammar[0] == 400 and "can be specified, but not both" in grammar[1]["error"]["message"]
    long_prompt = [{"role": "user", "content": "word " * 4 * CONTEXT_TOKENS}]
    status, error = SHAPES["vllm"].check("/v1/chat/completions", {**body, "messages": long_prompt, "max_tokens": 10})
    assert status == 400 and "maximum context length" in error["message"]
    assert SHAPES["ollama"].check("/v1/chat/completions", body)[0] == 404  # Ollama's own API only


# ----------------------------------------------------------------- the output cap


@pytest.mark.parametrize(("cls", "field"), [(OpenAIBackend, ("max_tokens",)), (OllamaBackend, ("options", "num_predict"))])
async def test_every_request_carries_an_output_cap(backends, cls, field):
    def cap(call):
        value = call.body
        for key in field:
            value = value[key]
        return value

    with FakeLLMServer(default=CLAIMS) as server:
        await backend_for(backends, server, cls).generate(chat_request())
        await backend_for(backends, server, cls).generate(chat_request(claims=True))
        await backend_for(backends, server, cls, max_tokens=300).generate(chat_request(claims=True))
        await backend_for(backends, server, cls, max_tokens=300).generate(chat_request(max_tokens=20))
        assert [cap(c) for c in server.calls] == [PROSE_MAX_TOKENS, STRUCTURED_MAX_TOKENS, 300, 20]


@pytest.mark.parametrize("shape", ["llama-cpp-python", "ollama"])
async def test_a_draft_cut_at_the_cap_is_marked_and_kept_as_it_came(backends, shape):
    long = "Employees get thirty days of paid leave every calendar year [hr-vac]."
    with FakeLLMServer(default=long, shape=shape) as server:
        draft = await backend_for(backends, server, max_tokens=4).generate(chat_request())
        assert draft.truncated and draft.text == "Employees get thirty days"
        assert not (await backend_for(backends, server, max_tokens=40).generate(chat_request())).truncated


# ----------------------------------------------------------------- the question's time budget


async def test_within_budget_sets_the_deadline_and_says_when_it_passed():
    assert time_left() is None

    async def look() -> float | None:
        return time_left()

    left = await within_budget(look(), 30)
    assert left is not None and 0 < left <= 30
    assert time_left() is None
    with pytest.raises(BudgetSpent):
        await within_budget(asyncio.sleep(30), 0.05)


async def test_a_hanging_model_is_cut_off_by_what_is_left_of_the_budget_not_the_request_timeout(backends):
    # The request timeout (30 s) and three tries would keep the asker a minute and a half;
    # the budget of 1 s caps the first request's timeout, and no second request is sent.
    with FakeLLMServer(default=Reply(delay=60)) as server:
        backend = backend_for(backends, server, timeout=30, retries=2)
        started = time.monotonic()
        with pytest.raises(BudgetSpent):
            await within_budget(backend.generate(chat_request()), 1.0)
        assert time.monotonic() - started < 15
        assert len(server.wait_for_calls(1)) == 1


async def test_a_retry_that_cannot_start_within_the_budget_is_not_waited_for(backends, sleeps):
    with FakeLLMServer(default=Reply(status=503, retry_after=20)) as server:
        backend = backend_for(backends, server, retries=2, max_retry_after=30)
        with pytest.raises(BudgetSpent) as info:
            await within_budget(backend.generate(chat_request()), 5.0)
        assert sleeps.delays == [] and len(server.calls) == 1
        assert "HTTP 503" in str(info.value)


async def test_without_a_budget_the_request_timeout_alone_bounds_a_try(backends):
    with FakeLLMServer(default=Reply(delay=60)) as server:
        with pytest.raises(LLMUnavailable) as info:
            await backend_for(backends, server, timeout=0.2, retries=0).generate(chat_request())
        assert "timed out after 0.2s" in str(info.value)
