"""Help channels end to end: signed Slack events into a real `serve` and `worker`, real Redis, the fake
Slack Web API. One citebot for the module (a help channel, a capped one, DMs with a hand-over); each test
asks in channels and threads of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from bot.i18n import Key, message
from bot.store import keys
from tests.citebot_fixtures import answers_in, button_value
from tests.fakes.slack_server import BOT_ID, BOT_USER_ID
from tests.harness import (
    REVIEW_CHANNEL,
    REVIEWER,
    ROOT,
    block_action,
    dm_event,
    envelope,
    mention_event,
    start_citebot,
    view_submission,
)
from tests.polling import wait_until
from tests.redis_fixtures import TEST_REDIS_URL, flush, require_redis

pytestmark = pytest.mark.e2e

GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
QUESTION = "How many days of annual leave do I get?"
HELP, CAPPED = "CHELP", "CHELPCAP"
CHANNELS = f"""
dm:
  escalate_to: [S0HRTEAM]
channels:
  {HELP}:
    answer: questions
    escalate_to: [S0ITSUPPORT, U0ONCALL]
  {CAPPED}:
    answer: questions
    max_per_hour: 2
"""

_n = iter(range(1, 1_000_000))


def channel_message(text: str, *, channel: str = HELP, user: str | None = "UASKER", thread_ts: str | None = None,
                    **fields) -> dict:
    """A `message` event as Slack sends it for message.channels."""
    n = next(_n)
    ts = f"1700100{n:03d}.000300"
    event = {"type": "message", "channel_type": "channel", "channel": channel, "text": text, "ts": ts,
             "event_ts": ts, **fields}
    if user:
        event["user"] = user
    if thread_ts:
        event["thread_ts"] = thread_ts
    return envelope(event, f"EvHelp{n:06d}", 1700100000 + n)


@pytest.fixture(scope="module")
def bot(tmp_path_factory, index_dir):
    require_redis(TEST_REDIS_URL)
    flush(TEST_REDIS_URL)
    root = tmp_path_factory.mktemp("help")
    channels = root / "channels.yml"
    channels.write_text(CHANNELS)
    started = start_citebot(root / "logs", redis_url=TEST_REDIS_URL, index_dir=index_dir,
                            CITEBOT_CHANNELS_FILE=channels, CITEBOT_DRAFTS_DIR=root / "drafts")
    started.llm.set_script([], default=GOOD)
    yield started
    started.stop()
    flush(TEST_REDIS_URL)


def quiet(bot) -> None:
    """Until every job the web process queued is done: a reply that is not there by then never comes."""
    wait_until(bot.queue_idle, 20, "the queue to empty")


def ts_of(payload: dict) -> str:
    return payload["event"]["ts"]


def action_ids(post: dict) -> list[str]:
    return [el["action_id"] for b in post.get("blocks", []) if b["type"] == "actions" for el in b["elements"]]


def in_review_channel(bot, needle: str) -> dict:
    """The first post of the review channel whose text or blocks hold `needle`, once it is there."""
    def found():
        return next((p for p in bot.replies(REVIEW_CHANNEL, None) if needle in p["text"] + json.dumps(p["blocks"])),
                    None)
    return wait_until(found, 20, f"a post with {needle!r} in the review channel")


def cli(bot, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env=bot.env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_question_is_answered_in_its_thread_and_a_non_question_left_alone(bot):
    thanks = channel_message("Thanks a lot, that worked! :raised_hands:")
    asked = channel_message(f"Hi all, quick question: {QUESTION}")
    assert bot.send_event(thanks).status_code == 200 and bot.send_event(asked).status_code == 200
    [post] = answers_in(bot, HELP, ts_of(asked))
    assert "28 days" in post["text"] and "[1]" in post["text"]
    assert action_ids(post)[-1] == "citebot_handover" and "citebot_feedback_up" in action_ids(post)
    quiet(bot)
    assert bot.replies(HELP, ts_of(thanks)) == []


def test_a_mention_only_channel_answers_mentions_alone(bot):
    unasked = channel_message(QUESTION, channel="CGENERAL")
    bot.send_event(unasked)
    mentioned = mention_event(QUESTION, channel="CGENERAL")
    bot.send_event(mentioned)
    [post] = answers_in(bot, "CGENERAL", ts_of(mentioned))
    assert "citebot_handover" not in action_ids(post)  # nobody to hand over to there
    quiet(bot)
    assert bot.replies("CGENERAL", ts_of(unasked)) == []


def test_edits_bot_posts_joins_and_thread_replies_are_no_new_questions(bot):
    asked = channel_message("Where do I find the parental leave form?")
    edit = channel_message("", user=None, subtype="message_changed",
                           message={"type": "message", "user": "UASKER", "text": QUESTION, "ts": ts_of(asked)})
    from_bot = channel_message(QUESTION, user="UOTHERBOT", bot_id="BOTHER", subtype="bot_message")
    own = channel_message(QUESTION, user=BOT_USER_ID, bot_id=BOT_ID)
    join = channel_message("<@UNEW> has joined the channel", user="UNEW", subtype="channel_join")
    reply = channel_message("And how many can I carry over?", thread_ts=ts_of(asked))
    for event in (edit, from_bot, own, join, reply):
        assert bot.send_event(event).status_code == 200
    # A reply that mentions citebot is a follow-up, as anywhere: it comes as a message and as app_mention.
    follow_text = f"<@{BOT_USER_ID}> {QUESTION}"
    follow = channel_message(follow_text, thread_ts=ts_of(asked))
    follow_mention = {**follow, "event_id": "EvHelpFollowMention",
                      "event": {**follow["event"], "type": "app_mention"}}
    bot.send_event(follow)
    bot.send_event(follow_mention)
    answers_in(bot, HELP, ts_of(asked))
    quiet(bot)
    # One reply in the thread: the follow-up's (thread replies go to the thread); nothing for the rest.
    assert len(bot.replies(HELP, ts_of(asked))) == 1
    for event in (edit, from_bot, own, join):
        assert bot.replies(HELP, ts_of(event)) == []


def test_a_redelivered_message_is_answered_once(bot):
    asked = channel_message(QUESTION)
    codes = [bot.send_event(asked).status_code, bot.send_event(asked, retry_num=1).status_code,
             bot.send_event(asked, retry_num=2).status_code]
    assert codes == [200, 200, 200]
    answers_in(bot, HELP, ts_of(asked))
    quiet(bot)
    assert len(bot.replies(HELP, ts_of(asked))) == 1


def test_the_hourly_cap_leaves_further_questions_alone(bot):
    asked = [channel_message(f"{QUESTION} ({i})", channel=CAPPED) for i in range(3)]
    for event in asked:
        bot.send_event(event)
    bot.send_event(asked[0], retry_num=1)  # a retry of a counted message is not counted again
    for event in asked[:2]:
        [post] = answers_in(bot, CAPPED, ts_of(event))
        assert "citebot_handover" not in action_ids(post)  # no escalate_to there
    quiet(bot)
    assert bot.replies(CAPPED, ts_of(asked[2])) == []
    # A mention is never capped.
    mentioned = mention_event(QUESTION, channel=CAPPED)
    bot.send_event(mentioned)
    answers_in(bot, CAPPED, ts_of(mentioned))


def test_still_need_help_hands_over_once_and_a_persons_answer_becomes_a_draft(bot):
    asked = channel_message("How many days of annual leave do I get? I work four days a week.")
    thread = ts_of(asked)
    bot.send_event(asked)
    [post] = answers_in(bot, HELP, thread)
    question_id = button_value(post, "citebot_handover")
    # Someone else's click hands nothing over: it is the asker's question.
    bot.send_action(block_action("citebot_handover", question_id, channel=HELP, user="UBYSTANDER"))
    quiet(bot)
    assert len(bot.replies(HELP, thread)) == 1
    for _ in range(2):
        assert bot.send_action(block_action("citebot_handover", question_id, channel=HELP, user="UASKER")).status_code == 200
    posts = answers_in(bot, HELP, thread, count=2)
    handed = posts[1]["text"]
    assert "<!subteam^S0ITSUPPORT>" in handed and "<@U0ONCALL>" in handed and "<@UASKER>" in handed
    bot.slack.wait_for("reactions.add", 1)
    assert any(c.body.get("name") == "sos" and c.body.get("timestamp") == thread for c in bot.slack.calls("reactions.add"))
    quiet(bot)
    assert len(bot.replies(HELP, thread)) == 2  # the second click did nothing
    with redis.Redis.from_url(TEST_REDIS_URL, decode_responses=True) as r:
        record = json.loads(r.get(keys.escalation_key(question_id)))
    assert record["status"] == "handed over" and record["escalate_to"] == ["S0ITSUPPORT", "U0ONCALL"]
    assert record["collections"] == ["handbook"] and record["outcome"] == "answered"
    listed = cli(bot, "review", "list")
    assert question_id in listed and "S0ITSUPPORT" in listed and "waiting for a person" in listed
    assert "escalated" in cli(bot, "audit", "show", question_id)

    # A person answers in the thread (the asker's thanks is no answer): a review card, then a KB draft.
    bot.send_event(channel_message("Thanks, waiting!", thread_ts=thread))
    answer = "Part-timers get leave pro rata: 4 of 5 days, so 22.4 days. Ask HR to round it."
    bot.send_event(channel_message(answer, user="UHELPER", thread_ts=thread))
    card = in_review_channel(bot, "22.4 days")
    assert "Thanks, waiting" not in json.dumps(card["blocks"]) and "<@UHELPER>" in json.dumps(card["blocks"])
    bot.send_action(block_action("citebot_review_approve", button_value(card, "citebot_review_approve"),
                                 channel=REVIEW_CHANNEL, user=REVIEWER))
    drafts = Path(bot.env["CITEBOT_DRAFTS_DIR"])
    [draft] = wait_until(lambda: list(drafts.glob("*.md")), 20, "the draft KB entry")
    text = draft.read_text()
    assert "22.4 days" in text and "draft: true" in text and "four days a week" in text
    quiet(bot)
    assert len(bot.replies(HELP, thread)) == 2  # nothing more posted to the asker
    assert "by collection: handbook 1" in cli(bot, "review", "gaps")


def test_in_a_dm_the_hand_over_goes_to_the_review_channel_and_the_asker_is_told(bot):
    event = dm_event(QUESTION, channel="DHELPASKER", user="UDMASKER")
    bot.send_event(event)
    [post] = answers_in(bot, "DHELPASKER", None)
    question_id = button_value(post, "citebot_handover")
    bot.send_action(block_action("citebot_handover", question_id, channel="DHELPASKER", user="UDMASKER"))
    told = answers_in(bot, "DHELPASKER", None, count=2)[1]
    assert told["text"] == message(Key.HANDED_OVER_DM, "en", people="<!subteam^S0HRTEAM>")
    request = in_review_channel(bot, "S0HRTEAM")
    assert "<@UDMASKER>" in request["text"] and "annual leave" in request["text"]


def test_in_the_assistant_panel_the_asker_is_told_in_the_panels_thread(bot):
    from tests.test_assistant_panel import DM, new_thread, panel_message, thread_event, thread_root

    thread = new_thread()
    bot.slack.set_replies(DM, thread, [thread_root(thread)])
    bot.send_event(thread_event("started", thread_ts=thread, beside=HELP))
    answers_in(bot, DM, thread)  # the greeting
    bot.send_event(panel_message(QUESTION, thread_ts=thread))
    answer = answers_in(bot, DM, thread, count=2)[1]
    # The panel is a DM: its hand-over is the dm policy's, not that of the channel beside it.
    bot.send_action(block_action("citebot_handover", button_value(answer, "citebot_handover"), channel=DM,
                                 user="UASKER"))
    told = answers_in(bot, DM, thread, count=3)[2]
    assert "<!subteam^S0HRTEAM>" in told["text"] and "S0ITSUPPORT" not in told["text"]
    escalated = json.loads(cli(bot, "review", "escalations", "--json"))
    [panel] = [e for e in escalated["escalations"] if e["thread_ts"] == thread]
    assert panel["is_dm"] and panel["handover_channel"] == REVIEW_CHANNEL and panel["status"] == "handed over"
    assert escalated["by_collection"]["handbook"] >= 1


def test_a_hand_over_slack_refuses_is_released_and_the_next_click_makes_it(bot):
    asked = channel_message("Can I carry over unused vacation days?")
    thread = ts_of(asked)
    bot.send_event(asked)
    [post] = answers_in(bot, HELP, thread)
    quiet(bot)
    question_id = button_value(post, "citebot_handover")
    bot.slack.fail(error="not_in_channel", method="chat.postMessage")
    bot.send_action(block_action("citebot_handover", question_id, channel=HELP, user="UASKER"))
    wait_until(lambda: any(c.error == "not_in_channel" for c in bot.slack.calls("chat.postMessage")), 20,
               "the refused hand-over")
    quiet(bot)
    wait_until(lambda: redis.Redis.from_url(TEST_REDIS_URL).get(keys.escalation_key(question_id)) is None, 10,
               "the hand-over to be released")
    bot.send_action(block_action("citebot_handover", question_id, channel=HELP, user="UASKER"))
    handed = answers_in(bot, HELP, thread, count=2)[1]
    assert "<!subteam^S0ITSUPPORT>" in handed["text"]
    # A follow-up's reply in the same thread has the button too; the thread is handed over already.
    follow = mention_event("And until when can I use them?", channel=HELP, thread_ts=thread)
    bot.send_event(follow)
    reply = answers_in(bot, HELP, thread, count=3)[2]
    bot.send_action(block_action("citebot_handover", button_value(reply, "citebot_handover"), channel=HELP,
                                 user="UASKER"))
    quiet(bot)
    assert len(bot.replies(HELP, thread)) == 3


def test_a_reviewer_may_edit_a_persons_answer_before_it_is_saved(bot):
    asked = channel_message("Is the per diem for Munich different from Berlin?")
    thread = ts_of(asked)
    bot.send_event(asked)
    [post] = answers_in(bot, HELP, thread)
    bot.send_action(block_action("citebot_handover", button_value(post, "citebot_handover"), channel=HELP,
                                 user="UASKER"))
    answers_in(bot, HELP, thread, count=2)
    bot.send_event(channel_message("Same rate everywhere in Germany: 28 EUR a full day.", user="UHELPER2",
                                   thread_ts=thread))
    card = in_review_channel(bot, "28 EUR")
    opened = len(bot.slack.calls("views.open"))
    bot.send_action(block_action("citebot_review_answer", button_value(card, "citebot_review_answer"),
                                 channel=REVIEW_CHANNEL, user=REVIEWER))
    modal = bot.slack.wait_for("views.open", opened + 1)[-1].body["view"]
    edited = "The per diem is the same in Munich and Berlin: 28 EUR for a full day of travel."
    values = {"citebot_review_answer": {"answer": {"type": "plain_text_input", "value": edited}},
              "citebot_review_save_draft": {"save_draft": {"type": "checkboxes",
                                                           "selected_options": [{"value": "draft"}]}}}
    assert bot.send_action(view_submission(modal, user=REVIEWER, values=values)).status_code == 200
    drafts = Path(bot.env["CITEBOT_DRAFTS_DIR"])
    [draft] = wait_until(lambda: [d for d in drafts.glob("*.md") if "Munich" in d.read_text()], 20, "the edited draft")
    assert edited in draft.read_text() and "Same rate everywhere" not in draft.read_text()
    # The card says who decided, without buttons; the asker's thread got nothing more.
    [updated] = wait_until(lambda: [c for c in bot.slack.calls("chat.update") if "28 EUR" in json.dumps(c.body)], 20,
                           "the decided card")
    assert REVIEWER in json.dumps(updated.body["blocks"]) and "citebot_review_approve" not in json.dumps(updated.body)
    quiet(bot)
    assert len(bot.replies(HELP, thread)) == 2
