"""Only CITEBOT_REVIEWERS decide reviews: signed clicks into a running `citebot serve` and
`citebot worker`, real Redis, the fake Slack and the fake LLM."""

from __future__ import annotations

import json

import pytest

from bot.store.keys import review_decision_key
from tests.citebot_fixtures import answers_in, button_value
from tests.harness import REVIEW_CHANNEL, REVIEWER, block_action, mention_event, view_submission
from tests.polling import wait_until

pytestmark = pytest.mark.e2e

PTO_QUESTION = "How many days of annual leave do I get?"
WRONG = "You get 45 days of leave [hb-pto-01]."


def review_card_for(bot, event: dict) -> dict:
    bot.llm.script(WRONG, WRONG)
    bot.send_event(event)
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    return card


def settle(bot) -> None:
    wait_until(bot.queue_idle, 20, "the queue to empty")


def answer_submission(bot, review_id: str, user: str) -> dict:
    """The write-answer modal as a reviewer would have it, submitted by `user`."""
    bot.send_action(block_action("citebot_review_answer", review_id, channel=REVIEW_CHANNEL))
    [opened] = bot.slack.wait_for("views.open", 1)
    values = {"citebot_review_answer": {"answer": {"type": "plain_text_input", "value": "Ask HR."}}}
    return view_submission(opened.body["view"], user=user, values=values)


def test_a_click_by_anyone_not_in_citebot_reviewers_is_refused(citebot):
    bot = citebot()
    event = mention_event(PTO_QUESTION)
    card = review_card_for(bot, event)
    review_id = button_value(card, "citebot_review_approve")
    # A member of the review channel who is not listed, clicking each button, or
    # submitting a forged write-answer form with the review's id.
    for action in ("citebot_review_approve", "citebot_review_dismiss", "citebot_review_answer"):
        assert bot.send_action(block_action(action, review_id, channel=REVIEW_CHANNEL, user="UMEMBER")).status_code == 200
    assert bot.send_action(answer_submission(bot, review_id, user="UMEMBER")).status_code == 200
    settle(bot)
    assert len(bot.slack.calls("views.open")) == 1  # the reviewer's own, for the forged form
    assert bot.redis().get(review_decision_key(review_id)) is None
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 1 and bot.slack.calls("chat.update") == []
    # The listed reviewer's click is the one that counts.
    bot.send_action(block_action("citebot_review_approve", review_id, channel=REVIEW_CHANNEL, user=REVIEWER))
    posts = answers_in(bot, "CGENERAL", event["event"]["ts"], count=2)
    assert "45 days" in posts[1]["text"] and REVIEWER in json.dumps(posts[1]["blocks"])


def test_without_citebot_reviewers_nobody_decides_and_the_log_says_so(citebot):
    bot = citebot(CITEBOT_REVIEWERS="")
    assert "CITEBOT_REVIEWERS is empty" in bot.log("web")
    event = mention_event(PTO_QUESTION)
    review_id = button_value(review_card_for(bot, event), "citebot_review_approve")
    bot.send_action(block_action("citebot_review_approve", review_id, channel=REVIEW_CHANNEL, user=REVIEWER))
    settle(bot)
    assert bot.redis().get(review_decision_key(review_id)) is None
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 1
