"""A review whose card Slack refused, decided on the reviewer's Home tab: signed events and
clicks into a running `citebot serve` and `citebot worker`, real Redis, the fake Slack and LLM."""

from __future__ import annotations

import json
from itertools import count

import pytest
from slack_sdk.models.views import View

from bot.store.keys import review_decision_key
from tests.citebot_fixtures import answers_in
from tests.harness import REVIEWER, dm_event, envelope, mention_event, view_submission
from tests.polling import wait_until

pytestmark = pytest.mark.e2e

PTO_QUESTION = "How many days of annual leave do I get?"
WRONG = "You get 45 days of leave [hb-pto-01]."
_n = count(1)


def home_opened(user: str) -> dict:
    n = next(_n)
    event = {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home",
             "event_ts": f"1700009{n:03d}.0001"}
    return envelope(event, f"EvTRIAGE{n:06d}", 1700009000 + n)


def home_action(view: dict, action_id: str, value: str, *, user: str = REVIEWER) -> dict:
    """A button clicked on a Home tab: Slack sends the view it is in, and no channel."""
    n = next(_n)
    return {"type": "block_actions", "team": {"id": "T0FAKE"}, "user": {"id": user}, "api_app_id": "A0FAKE",
            "trigger_id": f"trigger-home-{n}", "container": {"type": "view", "view_id": "VHOME"}, "view": {**view, "id": "VHOME"},
            "actions": [{"action_id": action_id, "block_id": "b", "type": "button", "value": value, "action_ts": "1"}]}


def published(bot, user: str, n: int) -> dict:
    """The `n`-th Home tab published for `user`, checked as slack_sdk reads it."""
    def views():
        found = [c.body["view"] for c in bot.slack.calls("views.publish") if c.ok and c.body["user_id"] == user]
        return found if len(found) >= n else None

    view = wait_until(views, 20, f"{n} Home tab(s) for {user}")[n - 1]
    assert len(view["blocks"]) <= 100
    View(**{k: view[k] for k in ("type", "blocks")}).validate_json()
    return view


def open_home(bot, user: str) -> dict:
    before = len([c for c in bot.slack.calls("views.publish") if c.body["user_id"] == user])
    assert bot.send_event(home_opened(user)).status_code == 200
    return published(bot, user, before + 1)


def buttons(view: dict) -> dict[str, str]:
    return {el["action_id"]: el["value"] for b in view["blocks"] if b["type"] == "actions" for el in b["elements"]}


def ask_without_a_card(bot, event: dict) -> None:
    """`event` asked, its draft failing twice, and its card refused by Slack (the bot is not in the review channel)."""
    bot.slack.fail(error="not_in_channel", method="chat.postMessage")
    bot.llm.script(WRONG, WRONG)
    bot.send_event(event)
    channel, ts = event["event"]["channel"], event["event"]["ts"]
    answers_in(bot, channel, None if channel.startswith("D") else ts)


def settle(bot) -> None:
    wait_until(bot.queue_idle, 20, "the queue to empty")


def test_a_review_without_a_card_is_approved_once_from_the_home_tab_which_then_shows_it_decided(citebot):
    bot = citebot()
    event = mention_event(PTO_QUESTION)
    thread = event["event"]["ts"]
    ask_without_a_card(bot, event)
    view = open_home(bot, REVIEWER)
    text = json.dumps(view["blocks"])
    assert "no card: `not_in_channel`" in text and "decide it here" in text
    assert "45 days" in text  # the draft Approve would post
    actions = buttons(view)
    assert set(actions) == {"citebot_review_approve", "citebot_review_answer", "citebot_review_dismiss"}
    review_id = actions["citebot_review_approve"]
    # Someone not in CITEBOT_REVIEWERS sees no reviews, and a click forged with the review's id does nothing.
    other = open_home(bot, "UOTHER")
    assert buttons(other) == {} and "45 days" not in json.dumps(other["blocks"])
    bot.send_action(home_action(other, "citebot_review_approve", review_id, user="UOTHER"))
    settle(bot)
    assert bot.redis().get(review_decision_key(review_id)) is None
    # The reviewer clicks Approve twice on their tab: one answer in the asker's thread.
    click = home_action(view, "citebot_review_approve", review_id)
    assert [bot.send_action(click).status_code, bot.send_action(click).status_code] == [200, 200]
    posts = answers_in(bot, "CGENERAL", thread, count=2)
    assert "45 days" in posts[1]["text"] and REVIEWER in json.dumps(posts[1]["blocks"])
    # The worker publishes the reviewer's tab again: the review is gone, and with it its buttons.
    after = published(bot, REVIEWER, 2)
    assert "No open reviews." in json.dumps(after["blocks"]) and buttons(after) == {}
    settle(bot)
    assert len(bot.replies("CGENERAL", thread)) == 2
    assert bot.slack.calls("chat.update") == []  # no card to update


def test_a_dms_review_without_a_card_is_answered_from_the_home_tab_and_its_text_stays_off_it(citebot):
    bot = citebot()
    event = dm_event(PTO_QUESTION, user="USECRET", channel="DSECRET")
    ask_without_a_card(bot, event)
    view = open_home(bot, REVIEWER)
    text = json.dumps(view["blocks"])
    assert "asked in a direct message" in text and "annual leave" not in text and "45 days" not in text
    review_id = buttons(view)["citebot_review_answer"]
    # Write answer opens the card's modal (where the reviewer reads the question), then the answer goes to the DM.
    bot.send_action(home_action(view, "citebot_review_answer", review_id))
    [opened] = bot.slack.wait_for("views.open", 1)
    assert "annual leave" in json.dumps(opened.body["view"])
    values = {"citebot_review_answer": {"answer": {"type": "plain_text_input", "value": "Ask payroll directly."}}}
    assert bot.send_action(view_submission(opened.body["view"], user=REVIEWER, values=values)).status_code == 200
    posts = answers_in(bot, "DSECRET", None, count=2)
    assert "Ask payroll directly." in posts[1]["text"]
    after = published(bot, REVIEWER, 2)
    assert "No open reviews." in json.dumps(after["blocks"])


def test_a_decision_from_the_home_tab_that_slack_refuses_shows_why_there_and_can_be_taken_again(citebot):
    bot = citebot()
    event = mention_event(PTO_QUESTION)
    thread = event["event"]["ts"]
    ask_without_a_card(bot, event)
    view = open_home(bot, REVIEWER)
    review_id = buttons(view)["citebot_review_approve"]
    bot.slack.fail(error="is_archived", method="chat.postMessage")  # the reviewed answer's post
    bot.send_action(home_action(view, "citebot_review_approve", review_id))
    # Undone: the tab is published again with the reason and the buttons, and the review is free to decide.
    after = published(bot, REVIEWER, 2)
    text = json.dumps(after["blocks"])
    assert "Your decision was not posted" in text and "`is_archived`" in text
    assert buttons(after)["citebot_review_approve"] == review_id
    settle(bot)
    assert bot.redis().get(review_decision_key(review_id)) is None
    assert len(bot.replies("CGENERAL", thread)) == 1
    bot.send_action(home_action(after, "citebot_review_approve", review_id))
    posts = answers_in(bot, "CGENERAL", thread, count=2)
    assert "45 days" in posts[1]["text"]
    assert "No open reviews." in json.dumps(published(bot, REVIEWER, 3)["blocks"])
