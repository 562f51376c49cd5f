"""End to end: the assistant panel (Slack's Agents & AI Apps), as Slack's signed events into a running
`citebot serve` (and over Socket Mode), a `citebot worker`, real Redis, the fake Slack and the fake LLM."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from bot.channels import ChannelsConfig
from bot.i18n import Key, message
from bot.inbound.assistant import panel_policy
from bot.store.assistant_threads import AssistantThreads
from bot.store.connection import connect
from tests.citebot_fixtures import answers_in
from tests.fakes import FakeLLMServer
from tests.fakes.slack_server import FakeSlackServer
from tests.fakes.socket_mode import FakeSocketMode
from tests.harness import BOT_TOKEN, REVIEW_CHANNEL, ROOT, dm_event, envelope, free_port, make_env
from tests.polling import wait_until

GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
PTO_QUESTION = "How many days of annual leave do I get?"
GERMAN_GOOD = "Altersteilzeit ist ab dem 55. Lebensjahr möglich [lb-atz-01]."
GERMAN_QUESTION = "Ab wann ist Altersteilzeit möglich?"
DM = "DASKER"
_counter = iter(range(1, 1_000_000))


def thread_event(kind: str, *, thread_ts: str, beside: str | None = "CGENERAL", user: str = "UASKER",
                 event_ts: str | None = None) -> dict:
    """assistant_thread_started / _context_changed as Slack sends them: the DM thread, and the
    channel the user is viewing beside the panel."""
    n = next(_counter)
    context = {"channel_id": beside, "team_id": "T0FAKE", "enterprise_id": None} if beside else {}
    event = {"type": f"assistant_thread_{kind}", "assistant_thread": {
        "user_id": user, "context": context, "channel_id": DM, "thread_ts": thread_ts},
        "event_ts": event_ts or f"{time.time():.6f}"}
    return envelope(event, f"EvA{n:07d}", int(time.time()))


def panel_message(text: str, *, thread_ts: str, user: str = "UASKER") -> dict:
    """A message the user writes in the panel's thread: a message.im with the thread's ts."""
    payload = dm_event(text, channel=DM, user=user)
    payload["event"]["thread_ts"] = thread_ts
    return payload


def new_thread() -> str:
    return f"1699990{next(_counter):03d}.000300"


def thread_root(thread_ts: str, user: str = "UASKER") -> dict:
    """The message Slack opens a panel thread with, in the user's name."""
    return {"type": "message", "subtype": "assistant_app_thread", "user": user, "text": "Chats from 2026-12-01",
            "ts": thread_ts, "thread_ts": thread_ts, "assistant_app_thread": {"title": "Chats from 2026-12-01"}}


def settle(bot) -> None:
    wait_until(bot.queue_idle, 20, "the queue to empty")
    time.sleep(0.5)


def greetings(bot, thread_ts: str) -> list[dict]:
    return [m for m in bot.replies(DM, thread_ts) if "knowledge base" in m["text"] or "Wissensbasis" in m["text"]]


def statuses(bot, thread_ts: str) -> list[str]:
    return [c.body["status"] for c in bot.slack.calls("assistant.threads.setStatus") if c.ok
            and (c.body["channel_id"], c.body["thread_ts"]) == (DM, thread_ts)]


@pytest.mark.e2e
def test_a_new_thread_is_greeted_once_with_prompts_from_the_users_questions_and_the_collections(citebot):
    bot = citebot()
    # An earlier question of the user's, answered in a DM: the panel offers it again.
    bot.llm.script(GOOD)
    bot.send_event(dm_event(PTO_QUESTION))
    answers_in(bot, DM, None)
    settle(bot)

    thread = new_thread()
    started = thread_event("started", thread_ts=thread)
    assert bot.send_event(started).status_code == 200
    [greeting] = answers_in(bot, DM, thread)
    assert greeting["text"] == message(Key.ASSISTANT_GREETING, "en")
    shown = wait_until(lambda: bot.slack.assistant_thread(DM, thread).get("prompts"), 10, "the suggested prompts")
    assert shown[0] == {"title": PTO_QUESTION, "message": PTO_QUESTION}
    assert [p["title"] for p in shown[1:]] == ["handbook", "payroll"]
    assert shown[1]["message"] == "What does the knowledge base say about handbook?"
    assert bot.slack.assistant_thread(DM, thread)["prompts_title"] == "Try asking"
    # Slack's retry of the event: no second greeting, no second set of prompts.
    assert bot.send_event(started, retry_num=1).status_code == 200
    settle(bot)
    assert len(greetings(bot, thread)) == 1
    assert len(bot.slack.calls("assistant.threads.setSuggestedPrompts")) == 1


@pytest.mark.e2e
def test_a_question_in_the_panel_is_answered_in_its_thread_with_status_title_and_footnotes_once(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    thread = new_thread()
    bot.slack.set_replies(DM, thread, [thread_root(thread)])
    bot.send_event(thread_event("started", thread_ts=thread))
    answers_in(bot, DM, thread)
    question = panel_message(PTO_QUESTION, thread_ts=thread)
    assert bot.send_event(question).status_code == 200
    [_, answer] = answers_in(bot, DM, thread, count=2)
    assert "28 days" in answer["text"] and "[1]" in answer["text"]
    blocks = json.dumps(answer["blocks"])
    assert "Annual leave" in blocks and "Stand 2026-02" in blocks and "citebot_sources" in blocks
    # The stages as the thread's status, in order, and the thread titled by the question.
    assert statuses(bot, thread) == ["is searching the knowledge base…", "is checking the answer…"]
    assert bot.slack.assistant_thread(DM, thread)["title"] == PTO_QUESTION
    # The reply cleared the status (Slack does, and the fake with it); no 👀 in the panel.
    assert bot.slack.assistant_thread(DM, thread)["status"] == ""
    assert bot.slack.calls("reactions.add") == []
    # Slack's retry of the message: one answer, one model call.
    bot.send_event(question, retry_num=1)
    settle(bot)
    assert len(bot.replies(DM, thread)) == 2 and len(bot.llm.calls) == 1
    # A follow-up in the thread keeps the title (Slack lists the first question in the thread).
    first = question["event"]
    bot.slack.set_replies(DM, thread, [thread_root(thread), {"type": "message", "user": "UASKER", "text": first["text"],
                                                             "ts": first["ts"], "thread_ts": thread}])
    bot.llm.script(GOOD)
    bot.send_event(panel_message("And in my first year?", thread_ts=thread))
    answers_in(bot, DM, thread, count=3)
    assert [c.body["title"] for c in bot.slack.calls("assistant.threads.setTitle")] == [PTO_QUESTION]


@pytest.mark.e2e
def test_the_panels_answers_get_the_dms_checks_and_its_review_card_keeps_the_asker_private(citebot):
    bot = citebot()
    draft = "<!channel> Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
    bot.llm.script(draft, draft)
    thread = new_thread()
    bot.send_event(thread_event("started", thread_ts=thread))
    bot.send_event(panel_message(PTO_QUESTION, thread_ts=thread))
    [_, reply] = answers_in(bot, DM, thread, count=2)
    # A Slack link the sections do not have fails the check twice: nothing of the draft is posted.
    assert reply["text"].startswith("I'm not sure") and "<!channel>" not in json.dumps(reply)
    assert len(bot.llm.calls) == 2
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    assert "UASKER" not in json.dumps(card) and PTO_QUESTION in json.dumps(card["blocks"])
    # The draft reaches the reviewers escaped: no @channel in the review channel either.
    assert "<!channel>" not in json.dumps(card) and "&lt;!channel&gt;" in json.dumps(card["blocks"])


def test_the_channel_beside_the_panel_picks_its_collections_and_a_late_retry_cannot_undo_a_change(
        citebot, tmp_path):
    channels = tmp_path / "channels.yml"
    channels.write_text("channels:\n  CPAYROLL:\n    collections: [payroll]\n")
    bot = citebot(CITEBOT_CHANNELS_FILE=str(channels))
    bot.llm.script(GOOD, GOOD, GOOD)
    # Beside #general, which may search everything: the handbook's answer.
    general = new_thread()
    bot.send_event(thread_event("started", thread_ts=general, event_ts="1700000100.000001"))
    bot.send_event(panel_message(PTO_QUESTION, thread_ts=general))
    [_, answer] = answers_in(bot, DM, general, count=2)
    assert "28 days" in answer["text"]
    # The user moves to #payroll with the panel open; then Slack retries the older start.
    payroll = new_thread()
    started = thread_event("started", thread_ts=payroll, event_ts="1700000200.000001")
    bot.send_event(started)
    bot.send_event(thread_event("context_changed", thread_ts=payroll, beside="CPAYROLL", event_ts="1700000300.000001"))
    bot.send_event(started, retry_num=1)
    calls_before = len(bot.llm.calls)
    bot.send_event(panel_message(PTO_QUESTION, thread_ts=payroll))
    [_, reply] = answers_in(bot, DM, payroll, count=2)
    settle(bot)
    # Only payroll was searched: the handbook's section is neither shown to the model nor posted.
    assert "28 days" not in reply["text"]
    assert all("hb-pto-01" not in json.dumps(c.body) for c in bot.llm.calls[calls_before:])
    # And the prompts followed the user to #payroll: only what it may search (the leave question
    # asked beside #general cited the handbook).
    assert [p["title"] for p in bot.slack.assistant_thread(DM, payroll)["prompts"]] == ["payroll"]


@pytest.mark.e2e
def test_a_german_user_is_greeted_in_german(citebot):
    bot = citebot()
    bot.llm.script(GERMAN_GOOD)
    bot.send_event(dm_event(GERMAN_QUESTION, user="UDE", channel="DDE"))
    answers_in(bot, "DDE", None)
    settle(bot)
    thread = new_thread()
    started = thread_event("started", thread_ts=thread, user="UDE")
    started["event"]["assistant_thread"]["channel_id"] = "DDE"
    bot.send_event(started)
    [greeting] = answers_in(bot, "DDE", thread)
    assert greeting["text"] == message(Key.ASSISTANT_GREETING, "de") and greeting["text"].startswith("Hallo")
    shown = wait_until(lambda: bot.slack.assistant_thread("DDE", thread).get("prompts"), 10, "the prompts")
    assert shown[0]["message"] == GERMAN_QUESTION
    assert "Was sagt die Wissensbasis zu handbook?" in [p["message"] for p in shown]
    assert bot.slack.assistant_thread("DDE", thread)["prompts_title"] == "Zum Beispiel"
    # Someone new is greeted in CITEBOT_LANGUAGE.
    other = new_thread()
    bot.send_event(thread_event("started", thread_ts=other, user="UNEW"))
    [hello] = answers_in(bot, DM, other)
    assert hello["text"] == message(Key.ASSISTANT_GREETING, "en")


@pytest.mark.e2e
def test_a_thread_of_the_dm_outside_the_panel_is_answered_as_a_dm(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    # A reply under an earlier answer in the Messages tab: a thread no panel started.
    thread = "1700008000.000100"
    bot.send_event(panel_message(PTO_QUESTION, thread_ts=thread))
    [answer] = answers_in(bot, DM, thread)
    assert "28 days" in answer["text"]
    settle(bot)
    assert bot.slack.calls("assistant.threads.setStatus") == [] and bot.slack.calls("assistant.threads.setTitle") == []
    assert len(bot.slack.calls("reactions.add")) == 1  # the DM's 👀


@pytest.mark.e2e
def test_the_panel_works_over_socket_mode(redis_url, index_dir, tmp_path):
    with FakeSocketMode() as socket, FakeSlackServer(token=BOT_TOKEN, socket_url=socket.url) as slack, \
            FakeLLMServer() as llm:
        llm.script(GOOD)
        env = make_env(redis_url=redis_url, slack_url=slack.url, llm_url=llm.url, index_dir=index_dir,
                       SLACK_APP_TOKEN="xapp-1-A0TEST-1-test", SLACK_SIGNING_SECRET="")
        procs = []
        for name, args in (("web", ["serve", "--port", str(free_port())]),
                           ("worker", ["worker", "--concurrency", "2", "--metrics-port", "0"])):
            with open(tmp_path / f"{name}.log", "w") as log:
                procs.append(subprocess.Popen([sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env=env,
                                              stdout=log, stderr=subprocess.STDOUT))
        try:
            socket.wait_connected(timeout=30)
            thread = new_thread()
            socket.send_event(thread_event("started", thread_ts=thread))
            wait_until(lambda: slack.assistant_thread(DM, thread).get("prompts"), 30, "the greeting's prompts")
            socket.send_event(panel_message(PTO_QUESTION, thread_ts=thread))

            def posted() -> list[dict]:
                return [m for m in slack.messages(DM) if m.get("thread_ts") == thread]

            [greeting, answer] = wait_until(lambda: len(posted()) >= 2 and posted(), 30, "the answer in the thread")
            assert greeting["text"] == message(Key.ASSISTANT_GREETING, "en")
            assert "28 days" in answer["text"] and "[1]" in answer["text"]
            assert slack.assistant_thread(DM, thread)["title"] == PTO_QUESTION
            assert "is checking the answer…" in [c.body["status"] for c in slack.calls("assistant.threads.setStatus")]
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=30)


# ------------------------------------------------------------------ the store, on real Redis


@pytest.fixture
async def threads(redis_url):
    client = connect(redis_url, timeout=1.0)
    yield AssistantThreads(client)
    await client.aclose()


async def test_the_store_keeps_the_newest_context_and_tells_panel_threads_from_others(threads):
    assert await threads.find(channel_id=DM, thread_ts="1.0") is None and not await threads.is_panel_thread(DM, "1.0")
    assert await threads.save_if_newer(channel_id=DM, thread_ts="1.0", context={}, event_ts="100.0")
    assert await threads.is_panel_thread(DM, "1.0") and await threads.find(channel_id=DM, thread_ts="1.0") is None
    assert await threads.save_if_newer(channel_id=DM, thread_ts="1.0", context={"channel_id": "CB"}, event_ts="300.0")
    # A late retry of an older change is dropped.
    assert not await threads.save_if_newer(channel_id=DM, thread_ts="1.0", context={"channel_id": "CA"},
                                           event_ts="200.0")
    found = await threads.find(channel_id=DM, thread_ts="1.0")
    assert found is not None and found.channel_id == "CB"
    # Bolt's own save (no event_ts) is as of now: newer than Slack's timestamps above.
    await threads.save(channel_id=DM, thread_ts="1.0", context={"channel_id": "CC"})
    assert (await threads.find(channel_id=DM, thread_ts="1.0")).channel_id == "CC"
    assert await threads.claim_greeting(DM, "1.0") and not await threads.claim_greeting(DM, "1.0")
    await threads.release_greeting(DM, "1.0")
    assert await threads.claim_greeting(DM, "1.0")


def test_a_panel_beside_a_channel_searches_what_that_channel_may_and_beside_a_dm_what_dms_may():
    channels = ChannelsConfig.model_validate({"default": {"collections": ["handbook"]},
                                              "dm": {"collections": ["handbook", "payroll"]},
                                              "channels": {"CPAYROLL": {"collections": ["payroll"], "language": "de"}}})
    assert panel_policy({"channel_id": "CPAYROLL"}, channels).collections == ("payroll",)
    assert panel_policy({"channel_id": "CPAYROLL"}, channels).language == "de"
    assert panel_policy({"channel_id": "CRANDOM"}, channels).collections == ("handbook",)
    for beside in ({"channel_id": "DFRIEND"}, {}, None):
        assert panel_policy(beside, channels).collections == ("handbook", "payroll")
