"""The fake Slack Web API, driven by the real slack_sdk client and by plain httpx."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from bot.models import Answer, Source
from bot.slack.replies import answer_message, sources_modal
from tests.fakes.slack_server import FakeSlackServer, parse_body

TOKEN = "xoxb-test-token"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def slack():
    with FakeSlackServer() as server:
        yield server


def client_for(server: FakeSlackServer, **kw) -> AsyncWebClient:
    kw.setdefault("retry_handlers", [])  # each test says which retries it wants
    return AsyncWebClient(token=TOKEN, base_url=server.url, **kw)


# ------------------------------------------------------------------ with slack_sdk


async def test_post_message_is_recorded_with_body_token_and_json_encoding(slack):
    msg = answer_message(
        Answer(question="q", answer="Dreißig Tage [1].", verified=True, refused=False,
               sources=[Source(n=1, id="kb-1", title="Urlaub", section="Details", stand="2026-01")]),
        language="de", ref="ans-1",
    )
    response = await client_for(slack).chat_postMessage(channel="C1", thread_ts="1699999999.000100", **msg)
    assert response["ok"] is True and response["channel"] == "C1"
    assert re.fullmatch(r"\d{10}\.\d{6}", response["ts"])
    assert response["message"]["blocks"] == msg["blocks"] and response["message"]["thread_ts"] == "1699999999.000100"
    [call] = slack.calls("chat.postMessage")
    assert call.token == TOKEN and call.headers["authorization"] == f"Bearer {TOKEN}"
    assert call.content_type.startswith("application/json")
    assert call.body["blocks"] == msg["blocks"] and call.body["text"] == msg["text"]


async def test_timestamps_are_unique_and_increasing_under_concurrent_posts(slack):
    client = client_for(slack)
    responses = await asyncio.gather(*(client.chat_postMessage(channel="C1", text=f"m{i}") for i in range(20)))
    stamps = [r["ts"] for r in responses]
    assert len(set(stamps)) == 20
    assert sorted(float(t) for t in stamps) == [float(m["ts"]) for m in slack.messages("C1")]
    assert min(stamps) >= "1700000000.000100"


async def test_429_with_retry_after_is_honoured_by_the_rate_limit_retry_handler(slack):
    # 2 s, because slack_sdk waits 1 s (plus jitter) when the header is missing:
    # only a honoured Retry-After makes the wait reach 2 s.
    slack.rate_limit(times=1, retry_after=2, method="chat.postMessage")
    client = client_for(slack, retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)])
    started = time.monotonic()
    response = await client.chat_postMessage(channel="C1", text="after the limit")
    assert response["ok"] is True
    assert time.monotonic() - started >= 2.0
    assert [c.status for c in slack.calls("chat.postMessage")] == [429, 200]


async def test_429_without_a_retry_handler_surfaces_status_and_retry_after(slack):
    slack.rate_limit(times=1, retry_after=7)
    with pytest.raises(SlackApiError) as caught:
        await client_for(slack).chat_postMessage(channel="C1", text="x")
    assert caught.value.response.status_code == 429
    assert caught.value.response.headers["Retry-After"] == "7"
    assert caught.value.response["error"] == "ratelimited"


async def test_a_method_scoped_failure_leaves_other_methods_alone(slack):
    slack.rate_limit(times=1, retry_after=1, method="chat.postMessage")
    client = client_for(slack)
    assert (await client.auth_test())["user_id"] == "UBOT0001"
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel="C1", text="x")
    assert (await client.chat_postMessage(channel="C1", text="x"))["ok"] is True


async def test_http_500_fails_and_the_server_error_handler_retries(slack):
    slack.fail(status=500)
    with pytest.raises(SlackApiError) as caught:
        await client_for(slack).chat_postMessage(channel="C1", text="x")
    assert caught.value.response.status_code == 500
    slack.fail(status=500, times=1)
    handler = AsyncServerErrorRetryHandler(max_retry_count=1, interval_calculator=FixedValueRetryIntervalCalculator(0))
    retrying = client_for(slack, retry_handlers=[handler])
    assert (await retrying.chat_postMessage(channel="C1", text="x"))["ok"] is True
    assert [c.status for c in slack.calls()] == [500, 500, 200]


async def test_ok_false_error_is_raised_as_slack_api_error(slack):
    slack.fail(error="channel_not_found", method="chat.postMessage")
    with pytest.raises(SlackApiError) as caught:
        await client_for(slack).chat_postMessage(channel="C404", text="x")
    assert caught.value.response["error"] == "channel_not_found"
    [call] = slack.calls()
    assert call.error == "channel_not_found" and call.ok is False


async def test_update_changes_the_stored_message_and_unknown_ts_is_not_found(slack):
    client = client_for(slack)
    posted = await client.chat_postMessage(channel="C1", text="Looking that up…")
    await client.chat_update(channel="C1", ts=posted["ts"], text="the answer", blocks=[])
    [message] = slack.messages("C1")
    assert message["text"] == "the answer" and message["ts"] == posted["ts"] and "edited" in message
    with pytest.raises(SlackApiError) as caught:
        await client.chat_update(channel="C1", ts="1.000000", text="x")
    assert caught.value.response["error"] == "message_not_found"


async def test_views_open_returns_a_view_with_an_id(slack):
    client = client_for(slack)
    view = sources_modal([Source(n=1, id="kb-1", title="T", section="S", passage="P")], question="q", language="en")
    opened = await client.views_open(trigger_id="trig-1", view=view)
    assert opened["view"]["id"].startswith("V") and opened["view"]["blocks"] == view["blocks"]
    assert slack.calls("views.open")[0].body["view"] == view
    with pytest.raises(SlackApiError):
        await client.views_open(trigger_id="", view=view)


async def test_reactions_add_and_remove_behave_like_slack(slack):
    client = client_for(slack)
    await client.reactions_add(channel="C1", timestamp="1.000100", name="eyes")
    with pytest.raises(SlackApiError) as caught:
        await client.reactions_add(channel="C1", timestamp="1.000100", name="eyes")
    assert caught.value.response["error"] == "already_reacted"
    await client.reactions_remove(channel="C1", timestamp="1.000100", name="eyes")
    with pytest.raises(SlackApiError) as caught:
        await client.reactions_remove(channel="C1", timestamp="1.000100", name="eyes")
    assert caught.value.response["error"] == "no_reaction"
    assert slack.calls("reactions.add")[0].body == {"channel": "C1", "timestamp": "1.000100", "name": "eyes"}


async def test_conversations_replies_returns_the_scripted_thread_and_the_bots_replies(slack):
    client = client_for(slack)
    slack.set_replies("C1", "1699999999.000100", [
        {"type": "message", "user": "U1", "text": "Wie viel Urlaub?", "ts": "1699999999.000100"},
    ])
    await client.chat_postMessage(channel="C1", thread_ts="1699999999.000100", text="30 Tage [1].")
    await client.chat_postMessage(channel="C1", thread_ts="other", text="elsewhere")
    replies = await client.conversations_replies(channel="C1", ts="1699999999.000100")
    assert [m["text"] for m in replies["messages"]] == ["Wie viel Urlaub?", "30 Tage [1]."]
    assert replies["messages"][1]["bot_id"] == "BBOT0001"
    assert slack.calls("conversations.replies")[0].http_method == "GET"


async def test_post_ephemeral_answers_with_a_message_ts(slack):
    client = client_for(slack)
    response = await client.chat_postEphemeral(channel="C1", user="U1", text="only you")
    assert re.fullmatch(r"\d{10}\.\d{6}", response["message_ts"])


async def test_a_configured_token_rejects_other_tokens():
    with FakeSlackServer(token=TOKEN) as strict:
        assert (await client_for(strict).auth_test())["ok"] is True
        with pytest.raises(SlackApiError) as caught:
            await AsyncWebClient(token="xoxb-wrong", base_url=strict.url, retry_handlers=[]).auth_test()
        assert caught.value.response["error"] == "invalid_auth"


async def test_wait_for_returns_once_calls_arrive_and_fails_after_its_deadline(slack):
    task = asyncio.create_task(client_for(slack).chat_postMessage(channel="C1", text="x"))
    calls = await asyncio.to_thread(slack.wait_for, "chat.postMessage", 1, 5.0)
    await task
    assert calls[0].body["text"] == "x"
    started = time.monotonic()
    with pytest.raises(AssertionError, match="expected 1 views.open calls"):
        slack.wait_for("views.open", 1, timeout=0.2)
    assert time.monotonic() - started < 2.0


# ------------------------------------------------------------------ with plain httpx


def test_form_encoded_body_with_json_string_blocks_is_decoded(slack):
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]
    with httpx.Client(base_url=slack.url) as http:
        response = http.post("chat.postMessage", data={"token": TOKEN, "channel": "C1", "blocks": json.dumps(blocks)})
    assert response.status_code == 200 and response.json()["ok"] is True
    [call] = slack.calls("chat.postMessage")
    assert call.body["blocks"] == blocks and call.token == TOKEN
    assert call.content_type.startswith("application/x-www-form-urlencoded")


def test_httpx_sees_429_retry_after_and_then_success(slack):
    slack.rate_limit(times=2, retry_after=3)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=slack.url, headers=headers) as http:
        statuses = [http.post("chat.postMessage", json={"channel": "C1", "text": "x"}) for _ in range(3)]
    assert [r.status_code for r in statuses] == [429, 429, 200]
    assert statuses[0].headers["Retry-After"] == "3"
    assert statuses[0].json() == {"ok": False, "error": "ratelimited"}


def test_missing_token_unknown_method_and_bad_json(slack):
    with httpx.Client(base_url=slack.url) as http:
        assert http.post("auth.test").json() == {"ok": False, "error": "not_authed"}
        unknown = http.post("chat.frobnicate", headers={"Authorization": "Bearer x"})
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_method"
        bad = http.post("chat.postMessage", content=b"{", headers={"Content-Type": "application/json"})
        assert bad.json() == {"ok": False, "error": "invalid_json"}


def test_parse_body_merges_query_form_and_json():
    body = parse_body(b'{"text": "t", "blocks": []}', "application/json; charset=utf-8", "channel=C1")
    assert body == {"channel": "C1", "text": "t", "blocks": []}
    assert parse_body(b"a=1&a=2&view=%7B%7D", "application/x-www-form-urlencoded", "") == {"a": ["1", "2"], "view": {}}


# ------------------------------------------------------------------ as a separate process


def read_line(proc: subprocess.Popen, timeout: float) -> str:
    """The next stdout line, or AssertionError once `timeout` passes without one."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            return proc.stdout.readline()
    raise AssertionError(f"no output within {timeout}s")


@pytest.fixture
def slack_process():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.slack_server", "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = read_line(proc, 15.0)
        match = re.fullmatch(r"listening on (http://127\.0\.0\.1:\d+/api/)\n", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0


@pytest.mark.e2e
def test_separate_process_serves_records_and_takes_scripts(slack_process):
    api = slack_process
    root = api.removesuffix("/api/")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(timeout=10) as http:
        script = {
            "failures": [{"status": 429, "retry_after": 1, "method": "chat.postMessage"}],
            "replies": [{"channel": "C1", "thread_ts": "1.000100", "messages": [{"text": "q", "ts": "1.000100"}]}],
        }
        assert http.post(f"{root}/_script", json=script).json() == {"ok": True}
        assert http.post(f"{api}chat.postMessage", json={"channel": "C1", "text": "x"}, headers=auth).status_code == 429
        posted = http.post(f"{api}chat.postMessage", json={"channel": "C1", "text": "x", "thread_ts": "1.000100"}, headers=auth)
        assert posted.json()["ok"] is True
        replies = http.get(f"{api}conversations.replies", params={"channel": "C1", "ts": "1.000100"}, headers=auth)
        assert [m["text"] for m in replies.json()["messages"]] == ["q", "x"]
        calls = http.get(f"{root}/_calls", params={"method": "chat.postMessage"}).json()["calls"]
        assert [c["status"] for c in calls] == [429, 200]
        assert calls[1]["body"] == {"channel": "C1", "text": "x", "thread_ts": "1.000100"}
        assert calls[1]["headers"]["authorization"] == f"Bearer {TOKEN}"
        assert http.post(f"{root}/_script", content=b"{broken").status_code == 400


@pytest.mark.e2e
async def test_separate_process_works_with_the_sdk_client(slack_process):
    client = AsyncWebClient(token=TOKEN, base_url=slack_process, retry_handlers=[])
    assert (await client.auth_test())["bot_id"] == "BBOT0001"
    assert (await client.chat_postMessage(channel="D1", text="privat"))["channel"] == "D1"


# ------------------------------------------------------------------ the assistant panel's methods


async def test_assistant_threads_methods_keep_what_the_thread_shows_and_a_reply_clears_the_status(slack):
    client = client_for(slack)
    thread = ("DASKER", "1700000000.000100")
    prompts = [{"title": "Leave", "message": "How many days of leave do I get?"}]
    await client.assistant_threads_setSuggestedPrompts(channel_id=thread[0], thread_ts=thread[1], prompts=prompts,
                                                       title="Try")
    await client.assistant_threads_setTitle(channel_id=thread[0], thread_ts=thread[1], title="Days of leave")
    await client.assistant_threads_setStatus(channel_id=thread[0], thread_ts=thread[1], status="is searching…")
    assert slack.assistant_thread(*thread) == {"prompts": prompts, "prompts_title": "Try", "title": "Days of leave",
                                               "status": "is searching…"}
    [title] = slack.calls("assistant.threads.setTitle")
    assert title.body == {"channel_id": thread[0], "thread_ts": thread[1], "title": "Days of leave"}
    await client.chat_postMessage(channel=thread[0], thread_ts=thread[1], text="28 days")
    assert slack.assistant_thread(*thread)["status"] == ""
    await client.assistant_threads_setStatus(channel_id=thread[0], thread_ts=thread[1], status="")  # clears it
    assert slack.calls("assistant.threads.setStatus")[-1].ok


@pytest.mark.parametrize(("method", "fields", "missing"), [
    ("assistant.threads.setStatus", {"channel_id": "D1", "thread_ts": "1.0"}, ["status"]),
    ("assistant.threads.setStatus", {"status": "is thinking…"}, ["channel_id", "thread_ts"]),
    ("assistant.threads.setTitle", {"channel_id": "D1", "thread_ts": "1.0"}, ["title"]),
    ("assistant.threads.setTitle", {"channel_id": "D1", "title": "t"}, ["thread_ts"]),
    ("assistant.threads.setSuggestedPrompts", {"channel_id": "D1", "thread_ts": "1.0"}, ["prompts"]),
])
def test_assistant_threads_methods_answer_invalid_arguments_for_what_is_missing(slack, method, fields, missing):
    answer = httpx.post(f"{slack.url}{method}", json=fields, headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert answer["ok"] is False and answer["error"] == "invalid_arguments"
    assert answer["response_metadata"]["messages"] == [f"[ERROR] missing required field: {m}" for m in missing]
    assert slack.assistant_thread("D1", "1.0") == {}


@pytest.mark.parametrize("prompts", [
    [],
    [{"title": "t", "message": "m"}] * 5,  # Slack shows up to four
    [{"title": "t"}],  # each prompt has its title and message
])
async def test_suggested_prompts_must_be_one_to_four_with_title_and_message(slack, prompts):
    with pytest.raises(SlackApiError) as raised:
        await client_for(slack).assistant_threads_setSuggestedPrompts(channel_id="D1", thread_ts="1.0", prompts=prompts)
    assert raised.value.response["error"] == "invalid_arguments"


async def test_assistant_threads_are_in_a_dm_only(slack):
    with pytest.raises(SlackApiError) as raised:
        await client_for(slack).assistant_threads_setTitle(channel_id="CGENERAL", thread_ts="1.0", title="t")
    assert raised.value.response["error"] == "channel_not_found"
