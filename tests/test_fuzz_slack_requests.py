"""Fuzzing the web process with signed Events API and interactivity payloads.

A signed request is Slack (or someone holding the signing secret) speaking;
its payload can still be anything Slack ever sends, or a broken one. Whatever
it is, the app answers without a server error: a 500 makes Slack retry the
same payload again and again, and a listener that crashes on one field Slack
leaves out is a question that never gets an answer.

In-process signed AsyncBoltRequests against the app of bot/inbound/listeners.py's
factory, with real Redis and a fake Slack API. Bounded like the other fuzz
modules.
"""

from __future__ import annotations

import asyncio
import json
import os
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.channels import ChannelsConfig
from bot.config import load_settings
from bot.inbound.intake import AppDeps
from bot.inbound.listeners import create_app
from bot.inbound.web import _well_formed
from bot.jobs.queue import JobQueue
from bot.slack import replies, review_card
from bot.store.connection import connect
from bot.store.records import Records
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import BOT_TOKEN, REVIEW_CHANNEL, SIGNING_SECRET, signed_headers

FUZZ = settings(
    max_examples=40,
    deadline=3000,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**12) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
TEXTS = st.one_of(st.text(max_size=40), st.sampled_from(["<@UCITEBOT>", "<@UCITEBOT> How many days?", "<!channel>", ""]))


def maybe(strategy, *, shaped: bool):
    """Slack-shaped: the value or the key left out (None: dropped below). Otherwise
    also a value of any other type, as no real Slack payload has it."""
    return st.one_of(strategy, st.just(None)) if shaped else st.one_of(strategy, ANY_JSON, st.just(None))


def _drop_missing(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


@st.composite
def events(draw, shaped: bool) -> dict:
    event = _drop_missing({
        "type": draw(st.sampled_from(["app_mention", "message", "reaction_added", "bogus"])),
        "user": draw(maybe(st.sampled_from(["UASKER", "UCITEBOT", ""]), shaped=shaped)),
        "text": draw(maybe(TEXTS, shaped=shaped)),
        "channel_type": draw(maybe(st.sampled_from(["im", "channel"]), shaped=shaped)),
        "thread_ts": draw(maybe(st.just("1700000000.000001"), shaped=shaped)),
        "subtype": draw(maybe(st.sampled_from(["message_changed", "file_share", "bot_message"]), shaped=shaped)),
        "bot_id": draw(maybe(st.just("B1"), shaped=shaped)),
    })
    # Slack sends every event with its channel and ts; the unshaped ones may lack them.
    event["channel"] = draw(st.sampled_from(["CGENERAL", "DASKER", ""]) if shaped else maybe(st.just("CGENERAL"), shaped=False))
    event["ts"] = draw(st.sampled_from(["1700000001.000100", "1700000002.000100"]) if shaped else maybe(st.just("1.1"), shaped=False))
    envelope = {
        "token": "legacy", "team_id": "T0FAKE", "api_app_id": "A0FAKE", "type": "event_callback",
        "event_id": draw(st.text(min_size=1, max_size=10)), "event_time": 1700000000,
        "event": _drop_missing(event) if shaped else draw(st.one_of(st.just(_drop_missing(event)), ANY_JSON)),
    }
    return envelope


ACTION_IDS = [
    replies.ACTION_SOURCES, replies.ACTION_FEEDBACK_UP, replies.ACTION_FEEDBACK_DOWN,
    review_card.ACTION_REVIEW_APPROVE, review_card.ACTION_REVIEW_DISMISS, review_card.ACTION_REVIEW_ANSWER, "unknown",
]


@st.composite
def block_actions(draw, shaped: bool) -> dict:
    action = {
        "action_id": draw(st.sampled_from(ACTION_IDS)), "block_id": "b", "type": "button",
        # Slack echoes the value the bot set on the button: never empty.
        "value": draw(st.text(min_size=1, max_size=20) if shaped else maybe(st.text(max_size=20), shaped=False)),
        "action_ts": "1",
    }
    channel = st.sampled_from([REVIEW_CHANNEL, "CGENERAL", "DASKER"])
    payload = {
        "type": "block_actions", "team": {"id": "T0FAKE"}, "api_app_id": "A0FAKE",
        "user": draw(st.fixed_dictionaries({"id": st.sampled_from(["UREVIEWER", "UASKER"])}) if shaped
                     else maybe(st.just({"id": "U1"}), shaped=False)),
        # Slack sends a trigger_id with every click.
        "trigger_id": "trigger-1" if shaped else draw(maybe(st.just("trigger-1"), shaped=False)),
        "channel": draw(maybe(st.fixed_dictionaries({"id": channel}), shaped=shaped)),
        "container": draw(maybe(st.fixed_dictionaries({"channel_id": channel}), shaped=shaped)),
        "actions": [action] if shaped else draw(st.one_of(st.just([action]), st.lists(ANY_JSON, max_size=2))),
    }
    return _drop_missing(payload)


@st.composite
def view_submissions(draw, shaped: bool) -> dict:
    value = st.fixed_dictionaries({"type": st.just("plain_text_input"), "value": st.one_of(st.none(), st.text(max_size=30))})
    state = st.fixed_dictionaries({"values": st.fixed_dictionaries({
        review_card.REVIEW_ANSWER_BLOCK: st.fixed_dictionaries({review_card.REVIEW_ANSWER_ACTION: value}),
    })}) | st.just({"values": {}})
    view = _drop_missing({
        "id": "V1",
        "type": "modal",
        "callback_id": draw(st.sampled_from([replies.CALLBACK_FEEDBACK_REASON, review_card.CALLBACK_REVIEW_ANSWER_SUBMIT, "x"])),
        # Slack sends private_metadata with every view ("" when the bot set none).
        "private_metadata": draw(st.text(max_size=20) if shaped else maybe(st.text(max_size=20), shaped=False)),
        "state": draw(state if shaped else st.one_of(state, ANY_JSON)),
    })
    payload = {
        "type": "view_submission", "team": {"id": "T0FAKE"}, "api_app_id": "A0FAKE",
        "user": draw(st.just({"id": "UREVIEWER"}) if shaped else maybe(st.just({"id": "U1"}), shaped=False)),
        "view": view,
    }
    return _drop_missing(payload)


def signed(body: str, content_type: str) -> AsyncBoltRequest:
    headers = {"content-type": content_type, **{k.lower(): v for k, v in signed_headers(body).items()}}
    return AsyncBoltRequest(body=body, headers=headers)


@pytest.fixture
def app_env(redis_url, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        for name, value in {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                            "CITEBOT_SLACK_API_URL": slack.url, "CITEBOT_REDIS_URL": redis_url,
                            "CITEBOT_REVIEW_CHANNEL": REVIEW_CHANNEL}.items():
            monkeypatch.setenv(name, value)
        yield load_settings()


def dispatch(settings_, request: AsyncBoltRequest) -> int:
    async def run():
        queue = JobQueue(settings_.redis_url)
        redis = connect(settings_.redis_url, timeout=2.0)
        try:
            app = create_app(AppDeps(settings=settings_, queue=queue, records=Records(redis), channels=ChannelsConfig()))
            return (await app.async_dispatch(request)).status
        finally:
            await queue.close()
            await redis.aclose()

    return asyncio.run(run())


def events_body(payload) -> tuple[str, str]:
    return json.dumps(payload), "application/json"


def form_body(payload) -> tuple[str, str]:
    return urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"


def status_of(settings_, body: str, content_type: str) -> int:
    """The status the web process answers with: its front (bot/inbound/web.py) turns
    a body that is not a JSON object, or a form without one, away with 400 before
    Bolt sees it; the rest goes to the app."""
    if not _well_formed(body, content_type):
        return 400
    return dispatch(settings_, signed(body, content_type))


@FUZZ
@given(events(shaped=True))
def test_signed_slack_shaped_events_never_get_a_server_error(app_env, payload):
    assert status_of(app_env, *events_body(payload)) < 500


@FUZZ
@given(st.one_of(block_actions(shaped=True), view_submissions(shaped=True)))
def test_signed_slack_shaped_interactivity_never_gets_a_server_error(app_env, payload):
    assert status_of(app_env, *form_body(payload)) < 500


@FUZZ
@given(st.binary(max_size=200), st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain"]))
def test_signed_garbage_never_gets_a_server_error(app_env, body, content_type):
    assert status_of(app_env, body.decode("utf-8", errors="replace"), content_type) < 500


# Payloads no Slack sends (an event without channel or ts, a list where an
# object belongs, a click without a user or with an empty button value): the
# web front answers 400 to a body of the wrong shape (web._shaped), listeners
# ignore a click that names no answer.
@settings(FUZZ, derandomize=True)
@given(st.one_of(events(shaped=False), ANY_JSON))
def test_signed_malformed_events_never_get_a_server_error(app_env, payload):
    assert status_of(app_env, *events_body(payload)) < 500


@settings(FUZZ, derandomize=True)
@given(st.one_of(block_actions(shaped=False), view_submissions(shaped=False), ANY_JSON))
@example({"type": "view_submission", "user": {"id": "U1"}, "view": {"id": "V1", "type": "modal", "state": []}})
@example({"type": "view_submission", "user": {"id": "U1"}, "view": []})
def test_signed_malformed_interactivity_never_gets_a_server_error(app_env, payload):
    assert status_of(app_env, *form_body(payload)) < 500


def test_the_fuzzed_app_is_the_real_one(app_env):
    # The same dispatch answers a real mention with a 200: the fuzz above talks to a working app.
    from tests.harness import mention_event

    assert dispatch(app_env, signed(json.dumps(mention_event("How many days?")), "application/json")) == 200
    assert os.environ["CITEBOT_REVIEW_CHANNEL"] == REVIEW_CHANNEL
