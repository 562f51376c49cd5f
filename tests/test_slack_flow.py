"""End to end: signed Slack requests into a running `citebot serve`, a `citebot worker`,
real Redis, the fake Slack Web API and the fake LLM."""

from __future__ import annotations

import json

import pytest

from bot.i18n import Key, message
from kb_index import build_index
from tests.citebot_fixtures import answers_in, button_value
from tests.fakes import Reply
from tests.fakes.slack_server import BOT_USER_ID
from tests.harness import (
    REVIEW_CHANNEL,
    block_action,
    dm_event,
    free_port,
    mention_event,
    signed_headers,
    view_submission,
)
from tests.kb_fixtures import write_mini_kb
from tests.polling import wait_until

pytestmark = pytest.mark.e2e

GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
PTO_QUESTION = "How many days of annual leave do I get?"


def test_mention_gets_one_threaded_answer_with_footnotes_and_sources(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    event = mention_event(PTO_QUESTION)
    assert bot.send_event(event).status_code == 200
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"])
    assert "28 days" in post["text"] and "[1]" in post["text"]
    blocks = json.dumps(post["blocks"])
    assert "Annual leave" in blocks and "Stand 2026-02" in blocks
    assert "citebot_sources" in blocks and "citebot_feedback_up" in blocks
    # The Sources button opens a modal with the passage behind footnote 1.
    value = next(
        el["value"] for b in post["blocks"] if b["type"] == "actions" for el in b["elements"]
        if el["action_id"] == "citebot_sources"
    )
    assert bot.send_action(block_action("citebot_sources", value, channel="CGENERAL", user="UASKER")).status_code == 200
    [opened] = bot.slack.wait_for("views.open", 1)
    assert "28 days of paid annual leave" in json.dumps(opened.body["view"])
    # Exactly one answer, also after the worker had time for more.
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 1


def test_dm_is_answered_in_the_dm(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    event = dm_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "DASKER", None)
    assert "28 days" in post["text"]
    assert all(c.body.get("channel") == "DASKER" for c in bot.slack.calls("chat.postMessage"))


def test_the_same_event_delivered_three_times_is_answered_once(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    event = mention_event(PTO_QUESTION)
    codes = [bot.send_event(event).status_code, bot.send_event(event, retry_num=1).status_code,
             bot.send_event(event, retry_num=2).status_code]
    assert codes == [200, 200, 200]
    answers_in(bot, "CGENERAL", event["event"]["ts"])
    bot.slack.wait_for("reactions.remove", 1)
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 1
    assert len(bot.llm.calls) == 1


def test_bad_requests_are_refused_and_enqueue_nothing(citebot):
    bot = citebot()
    event = mention_event(PTO_QUESTION)
    body = json.dumps(event)
    import httpx

    forged = httpx.post(f"{bot.url}/slack/events", content=body,
                        headers={"Content-Type": "application/json", **signed_headers(body, secret="wrong")})
    stale = httpx.post(f"{bot.url}/slack/events", content=body,
                       headers={"Content-Type": "application/json", **signed_headers(body, timestamp=1_600_000_000)})
    garbage = "{not json"
    malformed = httpx.post(f"{bot.url}/slack/events", content=garbage,
                           headers={"Content-Type": "application/json", **signed_headers(garbage)})
    assert (forged.status_code, stale.status_code, malformed.status_code) == (401, 401, 400)
    # A real question afterwards is answered, and nothing else ever was.
    bot.llm.script(GOOD)
    ok = mention_event("How many days of leave?")
    bot.send_event(ok)
    answers_in(bot, "CGENERAL", ok["event"]["ts"])
    assert bot.replies("CGENERAL", event["event"]["ts"]) == []
    assert len(bot.llm.calls) == 1


def test_empty_mention_gets_help(citebot):
    bot = citebot()
    event = mention_event("")
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"])
    assert post["text"].startswith(message(Key.HELP, "en")[:20])
    assert bot.llm.calls == []


def test_worker_killed_while_waiting_on_the_llm_still_answers_exactly_once(citebot):
    bot = citebot(worker_args=("--visibility-timeout", "3"))
    bot.llm.script(Reply(text=GOOD, delay=30), GOOD)
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    bot.llm.wait_for_calls(1, timeout=15)  # the first worker is now waiting on the LLM
    bot.kill_worker(bot.workers[0])
    bot.start_worker("--visibility-timeout", "3")
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"], timeout=30)
    assert "28 days" in post["text"]
    bot.slack.wait_for("reactions.remove", 1, timeout=10)
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 1


def rejected(bot, draft: str, event: dict) -> dict:
    """Asks `event` with `draft` failing both tries: the asker is told the bot is unsure; returns the review card."""
    bot.llm.script(draft, draft)
    bot.send_event(event)
    [uncertain] = answers_in(bot, "CGENERAL", event["event"]["ts"])
    assert uncertain["text"].startswith(message(Key.UNCERTAIN, "en")[:30])
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    return card


def test_hallucination_goes_to_review_and_approve_answers_the_asker(citebot):
    bot = citebot()
    event = mention_event(PTO_QUESTION)
    thread = event["event"]["ts"]
    card = rejected(bot, "You get 45 days of leave [hb-pto-01].", event)
    assert "45 days" in json.dumps(card["blocks"]) and "NUMBER_NOT_IN_SOURCE" in json.dumps(card["blocks"])
    review_id = button_value(card, "citebot_review_approve")
    # A click from another channel changes nothing.
    bot.send_action(block_action("citebot_review_approve", review_id, channel="CGENERAL"))
    bot.send_action(block_action("citebot_review_approve", review_id, channel=REVIEW_CHANNEL, user="UREVIEWER"))
    posts = answers_in(bot, "CGENERAL", thread, count=2)
    assert len(posts) == 2 and "45 days" in posts[1]["text"] and "UREVIEWER" in json.dumps(posts[1]["blocks"])
    updated = bot.slack.wait_for("chat.update", 1)[0]
    assert "UREVIEWER" in json.dumps(updated.body)


def test_a_thumbs_down_card_tells_asker_from_flagger_and_approve_reposts_with_footnotes(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    event = mention_event(PTO_QUESTION, user="UASKER")
    thread = event["event"]["ts"]
    bot.send_event(event)
    [posted] = answers_in(bot, "CGENERAL", thread)
    bot.send_action(block_action("citebot_feedback_down", button_value(posted, "citebot_feedback_down"),
                                 channel="CGENERAL", user="UFLAGGER"))
    [opened] = bot.slack.wait_for("views.open", 1)
    reason = {"citebot_feedback_reason": {"reason": {"type": "plain_text_input", "value": "Part-timers get fewer."}}}
    assert bot.send_action(view_submission(opened.body["view"], user="UFLAGGER", values=reason)).status_code == 200
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    header = json.dumps(card["blocks"])
    assert "Asked by <@UASKER>" in header and "flagged by <@UFLAGGER>" in header
    bot.send_action(block_action("citebot_review_approve", button_value(card, "citebot_review_approve"),
                                 channel=REVIEW_CHANNEL, user="UREVIEWER"))
    reposted = answers_in(bot, "CGENERAL", thread, count=2)[1]
    blocks = json.dumps(reposted["blocks"])
    # As it was posted: markers, the footnote list, the Sources button; marked as reviewed.
    assert "28 days" in reposted["text"] and "[1]" in reposted["text"] and "[1]" in blocks
    assert "Annual leave" in blocks and "Stand 2026-02" in blocks and "citebot_sources" in blocks
    assert "UREVIEWER" in blocks


def test_llm_down_gives_an_apology_after_the_retries(citebot):
    bot = citebot(worker_args=("--max-tries", "2", "--backoff-base", "0.1"))
    bot.llm.set_script([], default=Reply(status=503))
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"], timeout=40)
    assert post["text"] == message(Key.LLM_DOWN, "en")
    assert len(bot.llm.calls) >= 2


def not_sure_with_the_draft_on_the_card(bot, *on_card: str) -> None:
    """The question is asked; the asker hears "not sure" (and nothing of the draft), once; the review card
    has the draft and each of `on_card`."""
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"], timeout=40)
    assert post["text"].startswith(message(Key.UNCERTAIN, "en")[:30]) and "28 days" not in post["text"]
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    blocks = json.dumps(card["blocks"])
    assert "28 days" in blocks and all(mark in blocks for mark in on_card), blocks
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 1


def test_a_judge_that_cannot_judge_is_retried_then_the_asker_hears_not_sure_and_the_card_has_the_draft(citebot):
    bot = citebot(worker_args=("--max-tries", "2", "--backoff-base", "0.1"), CITEBOT_JUDGE="llm")
    bot.llm.script(GOOD, "no JSON here", GOOD, "no JSON here")  # each try: the draft, an unreadable judgement
    not_sure_with_the_draft_on_the_card(bot, "JUDGE_UNAVAILABLE")
    assert len(bot.llm.calls) == 4  # two tries, no regeneration in either


def test_a_judge_slower_than_the_questions_budget_ends_not_sure_with_the_draft_on_the_card(citebot):
    # The judge's own time (CITEBOT_LLM_TIMEOUT) is far longer than the question's: the budget runs out while
    # it is asked. Another try would find no time left, so the asker hears "not sure" at once, never the apology.
    bot = citebot(worker_args=("--max-tries", "3", "--backoff-base", "0.1"), CITEBOT_JUDGE="llm",
                  CITEBOT_LLM_TIMEOUT="60", CITEBOT_QUESTION_BUDGET_S="6")
    supports = json.dumps({"verdicts": [{"id": "S1", "verdict": "supports", "quote": "28 days of paid annual leave"}]})
    bot.llm.set_script([GOOD], default=Reply(text=supports, delay=30))
    not_sure_with_the_draft_on_the_card(bot, "JUDGE_UNAVAILABLE", "BudgetSpent")
    assert len(bot.llm.calls) == 2  # the draft and the judge: no try after the time was spent


def test_a_try_that_finds_the_time_spent_after_a_judge_outage_ends_not_sure_with_that_draft(citebot):
    # The first try's judge replies with junk; the retry waits longer than the question's budget.
    bot = citebot(worker_args=("--max-tries", "2", "--backoff-base", "8"), CITEBOT_JUDGE="llm",
                  CITEBOT_QUESTION_BUDGET_S="3")
    bot.llm.script(GOOD, "no JSON here")
    not_sure_with_the_draft_on_the_card(bot, "JUDGE_UNAVAILABLE")
    assert len(bot.llm.calls) == 2  # the second try made no model call: its time was spent


def test_a_last_try_that_fails_on_the_model_after_a_judge_outage_ends_not_sure_with_the_earlier_draft(citebot):
    bot = citebot(worker_args=("--max-tries", "2", "--backoff-base", "0.1"), CITEBOT_JUDGE="llm")
    bot.llm.set_script([GOOD, "no JSON here"], default=Reply(status=503))  # then the model is down
    not_sure_with_the_draft_on_the_card(bot)


def test_slack_429_is_honoured_and_the_answer_goes_through(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    bot.slack.rate_limit(times=1, retry_after=1, method="chat.postMessage")
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"])
    limited = [c for c in bot.slack.calls("chat.postMessage") if c.status == 429]
    assert len(limited) == 1 and "28 days" in post["text"]


def test_channel_broadcast_in_model_output_is_escaped(citebot):
    # The verifier rejects Slack syntax no cited block states (LINK_NOT_IN_SOURCE),
    # so the draft reaches Slack only on the review card: escaped there too.
    bot = citebot()
    broadcast = "<!channel> Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
    card = rejected(bot, broadcast, mention_event(PTO_QUESTION))
    assert "&lt;!channel&gt;" in json.dumps(card) and "LINK_NOT_IN_SOURCE" in json.dumps(card)
    assert all("<!channel>" not in json.dumps(c.body) for c in bot.slack.calls("chat.postMessage"))


def test_a_channel_limited_to_one_collection_never_cites_another(citebot, tmp_path):
    channels = tmp_path / "channels.yml"
    channels.write_text("channels:\n  CHANDBOOK:\n    collections: [handbook]\n")
    bot = citebot(CITEBOT_CHANNELS_FILE=channels)
    bot.llm.script("Sick pay lasts six weeks [lb-efz-01].", "Sick pay lasts six weeks [lb-efz-01].")
    event = mention_event("sick doctor note Krankheit", channel="CHANDBOOK")
    bot.send_event(event)
    [post] = answers_in(bot, "CHANDBOOK", event["event"]["ts"])
    prompt = json.dumps(bot.llm.calls[0].body["messages"])
    assert "lb-efz-01" not in prompt and "hb-sick-01" in prompt
    assert "lb-efz-01" not in json.dumps(post)


def test_edits_bot_posts_and_channel_messages_are_not_questions(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    ignored = [dm_event("edited text"), dm_event("from a bot"), dm_event("from me"), dm_event("in a channel")]
    ignored[0]["event"]["subtype"] = "message_changed"
    ignored[1]["event"]["bot_id"] = "B0OTHER"
    ignored[2]["event"]["user"] = bot.slack.bot_user_id
    ignored[3]["event"]["channel_type"] = "channel"
    for event in ignored:
        assert bot.send_event(event).status_code == 200
    real = dm_event(PTO_QUESTION)
    bot.send_event(real)
    answers_in(bot, "DASKER", None)
    assert len([c for c in bot.slack.calls("chat.postMessage") if c.ok]) == 1
    assert len(bot.llm.calls) == 1


def test_a_follow_up_in_a_thread_takes_the_earlier_question_along(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    first_ts = "1699999999.000100"
    bot.slack.set_replies("CGENERAL", first_ts, [
        {"type": "message", "user": "UASKER", "text": f"<@{BOT_USER_ID}> How much annual leave do I get?", "ts": first_ts},
        {"type": "message", "bot_id": "B0CITEBOT", "text": "28 days [1]", "ts": "1699999999.000200"},
    ])
    event = mention_event("and can I carry some over?", thread_ts=first_ts)
    bot.send_event(event)
    answers_in(bot, "CGENERAL", first_ts)
    prompt = bot.llm.calls[0].body["messages"][1]["content"]
    assert "How much annual leave do I get?" in prompt
    assert "28 days [1]" not in prompt  # the bot's own answers are not taken as questions


def test_a_private_question_reaches_review_without_its_asker(citebot):
    bot = citebot()
    hallucinated = "You get 45 days of leave [hb-pto-01]."
    bot.llm.script(hallucinated, hallucinated)
    bot.send_event(dm_event(PTO_QUESTION, user="USECRET", channel="DSECRET"))
    answers_in(bot, "DSECRET", None)
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    text = json.dumps(card)
    assert "USECRET" not in text and "DSECRET" not in text
    assert all(c.body.get("channel") in ("DSECRET", REVIEW_CHANNEL) for c in bot.slack.calls("chat.postMessage"))


def test_a_reviewer_writes_the_answer_or_dismisses(citebot):
    bot = citebot()
    hallucinated = "You get 45 days of leave [hb-pto-01]."
    bot.llm.script(hallucinated, hallucinated, hallucinated, hallucinated)
    first, second = mention_event(PTO_QUESTION), mention_event("How many leave days again?")
    bot.send_event(first)
    bot.send_event(second)
    cards = answers_in(bot, REVIEW_CHANNEL, None, count=2)
    ids = [button_value(c, "citebot_review_answer") for c in cards]
    by_question = dict(zip([PTO_QUESTION if PTO_QUESTION in json.dumps(c) else "other" for c in cards], ids, strict=True))
    # Write an answer: the button opens the modal, the submission posts the reviewer's text.
    bot.send_action(block_action("citebot_review_answer", by_question[PTO_QUESTION], channel=REVIEW_CHANNEL))
    [opened] = bot.slack.wait_for("views.open", 1)
    submission = {
        "type": "view_submission",
        "team": {"id": "T0FAKE"},
        "user": {"id": "UREVIEWER"},
        "api_app_id": "A0FAKE",
        "view": {
            **opened.body["view"],
            "id": "V1",
            "state": {"values": {"citebot_review_answer": {"answer": {"type": "plain_text_input",
                                                                      "value": "Ask HR: it depends on your contract."}}}},
        },
    }
    # An empty submission keeps the modal open with the reason, in the question's language.
    empty = json.loads(json.dumps(submission))
    empty["view"]["state"]["values"]["citebot_review_answer"]["answer"]["value"] = "  "
    refused = bot.send_action(empty)
    assert refused.json() == {"response_action": "errors",
                              "errors": {"citebot_review_answer": message(Key.ANSWER_REQUIRED, "en")}}
    assert bot.send_action(submission).status_code == 200
    posts = answers_in(bot, "CGENERAL", first["event"]["ts"], count=2)
    assert "it depends on your contract" in posts[1]["text"]
    # Dismiss: the asker is told, the card says who dismissed it.
    bot.send_action(block_action("citebot_review_dismiss", by_question["other"], channel=REVIEW_CHANNEL))
    posts = answers_in(bot, "CGENERAL", second["event"]["ts"], count=2)
    assert posts[1]["text"] == message(Key.REVIEW_DISMISSED, "en")
    wait_until(lambda: len(bot.slack.calls("chat.update")) >= 2, 10, "both cards updated")


def test_metrics_and_json_logs_follow_a_question_from_ack_to_post(citebot):
    import httpx

    bot = citebot(workers=0)
    metrics_port = free_port()
    bot.start_worker("--metrics-port", str(metrics_port))
    bot.llm.script(GOOD)
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    answers_in(bot, "CGENERAL", event["event"]["ts"])
    web_metrics = httpx.get(f"{bot.url}/metrics").text
    assert 'citebot_events_total{result="enqueued"} 1.0' in web_metrics
    assert "citebot_queue_jobs" in web_metrics and "citebot_workers_alive 1.0" in web_metrics
    worker_metrics = wait_until(
        lambda: (t := httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text)
        and 'citebot_questions_total{outcome="answered"} 1.0' in t and t,
        10, "the worker's metrics",
    )
    assert 'citebot_stage_seconds_count{stage="generate"} 1.0' in worker_metrics
    qid = f"CGENERAL:{event['event']['ts']}"
    web_lines = [json.loads(line) for line in bot.log("web").splitlines() if line.startswith("{")]
    worker_lines = wait_until(lambda: [json.loads(line) for line in bot.log("worker0").splitlines() if line.startswith("{")
                                  and qid in line and "answered" in line], 10, "the worker's log line")
    assert any(entry.get("question_id") == qid for entry in web_lines)
    assert worker_lines[0]["question_id"] == qid and worker_lines[0]["citations"] == ["hb-pto-01"]


def test_a_rebuilt_index_is_used_by_the_next_question_without_restart(citebot, tmp_path):
    from tests.kb_fixtures import write_entry

    kb, index = write_mini_kb(tmp_path / "kb2"), tmp_path / "index2"
    build_index(kb, index)
    bot = citebot(CITEBOT_INDEX_DIR=index)
    before = mention_event("What is the gym subsidy?")
    bot.send_event(before)
    [refusal] = answers_in(bot, "CGENERAL", before["event"]["ts"])
    assert refusal["text"].startswith(message(Key.REFUSAL, "en")) and bot.llm.calls == []

    write_entry(kb, "handbook/gym-01.md", {"id": "hb-gym-01", "title": "Gym", "stand": "2026-03"},
                {"Gym": "The gym subsidy is 30 EUR per month."})
    build_index(kb, index)
    bot.llm.script("The gym subsidy is 30 EUR per month [hb-gym-01].")
    after = mention_event("What is the gym subsidy?")
    bot.send_event(after)
    [post] = answers_in(bot, "CGENERAL", after["event"]["ts"])
    assert "30 EUR" in post["text"] and "Gym" in json.dumps(post["blocks"])
    assert "hb-gym-01" in bot.llm.calls[0].body["messages"][1]["content"]


def test_a_second_worker_on_the_same_metrics_port_still_answers(citebot):
    bot = citebot(workers=0)
    port = str(free_port())
    first, second = bot.start_worker("--metrics-port", port), bot.start_worker("--metrics-port", port)
    bot.llm.script(GOOD)
    wait_until(lambda: "without /metrics" in bot.log("worker1") or "without /metrics" in bot.log("worker0"), 20,
               "the second worker's warning")
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    answers_in(bot, "CGENERAL", event["event"]["ts"])
    assert first.poll() is None and second.poll() is None
