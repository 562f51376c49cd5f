"""End to end: /citebot and the "Ask citebot" message shortcut, as signed HTTP requests into a
running `citebot serve`, a `citebot worker`, real Redis, the fake Slack (with its response
URLs) and the fake LLM."""

from __future__ import annotations

import json
import time

import pytest
from slack_sdk.models.blocks import Block

from bot.jobs.job import share_dedupe_id
from bot.store.keys import asked_key, dedupe_key
from tests.citebot_fixtures import answers_in, button_value
from tests.harness import REVIEW_CHANNEL, block_action, message_shortcut, slash_command
from tests.polling import wait_until

pytestmark = pytest.mark.e2e

GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
PTO_QUESTION = "How many days of annual leave do I get?"


def valid_blocks(blocks: list[dict]) -> list[dict]:
    """Each block as slack_sdk reads it, checked against Slack's limits (raises when invalid)."""
    for raw in blocks:
        block = Block.parse(raw)
        assert block is not None, raw
        block.validate_json()
    return blocks


def responses(bot, url: str, count: int = 1, timeout: float = 20.0) -> list[dict]:
    """What the worker sent to the response URL `url`, once there are `count`."""
    path = url.split("127.0.0.1", 1)[1].split("/", 1)[1]

    def sent():
        found = [c.body for c in bot.slack.calls("response_url") if c.ok and c.path == f"/{path}"]
        return found if len(found) >= count else None

    return wait_until(sent, timeout, f"{count} message(s) to the response URL")


def answered_with_slash(citebot) -> tuple[object, dict]:
    """A running citebot and the answer /citebot gave the asker alone (the PTO question, a good draft)."""
    bot = citebot()
    bot.llm.script(GOOD)
    url = bot.slack.response_url()
    bot.send_command(slash_command(PTO_QUESTION, response_url=url))
    [reply] = responses(bot, url)
    return bot, reply


def settle(bot) -> None:
    """Until the queue is empty, and a moment more for anything a worker would still post."""
    wait_until(bot.queue_idle, 20, "the queue to empty")
    time.sleep(0.5)


def test_a_slash_command_is_acked_at_once_and_answered_to_the_asker_alone(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    url = bot.slack.response_url()
    started = time.monotonic()
    ack = bot.send_command(slash_command(PTO_QUESTION, response_url=url))
    assert ack.status_code == 200 and time.monotonic() - started < 3.0
    assert ack.json()["response_type"] == "ephemeral" and "only you" in ack.json()["text"]
    [reply] = responses(bot, url)
    assert reply["response_type"] == "ephemeral" and reply["replace_original"] is False
    assert "28 days" in reply["text"] and "[1]" in reply["text"]
    blocks = json.dumps(valid_blocks(reply["blocks"]))
    assert "Annual leave" in blocks and "Stand 2026-02" in blocks
    assert "citebot_sources" in blocks and "citebot_post_in_channel" in blocks
    settle(bot)
    # Nobody else saw anything: no post, no 👀 on a message that does not exist.
    assert bot.slack.calls("chat.postMessage") == [] and bot.slack.calls("reactions.add") == []
    assert len(bot.llm.calls) == 1
    # The asker's Home tab lists it like a mention or a DM.
    asked = bot.redis().zrange(asked_key("UASKER"), 0, -1)
    assert len(asked) == 1 and PTO_QUESTION in asked[0].decode()


def test_an_empty_slash_command_shows_how_to_ask_and_queues_nothing(citebot):
    bot = citebot()
    url = bot.slack.response_url()
    ack = bot.send_command(slash_command("   ", response_url=url))
    assert ack.status_code == 200
    body = ack.json()
    assert body["response_type"] == "ephemeral" and "/citebot How many vacation days" in body["text"]
    valid_blocks(body["blocks"])
    settle(bot)
    assert bot.slack.calls("response_url") == [] and bot.llm.calls == []


def test_post_in_channel_posts_the_verified_answer_once_however_often_it_is_clicked(citebot):
    bot, reply = answered_with_slash(citebot)
    answer_id = button_value(reply, "citebot_post_in_channel")
    click = block_action("citebot_post_in_channel", answer_id, channel="CGENERAL", user="UASKER")
    assert [bot.send_action(click).status_code, bot.send_action(click).status_code] == [200, 200]
    [post] = answers_in(bot, "CGENERAL", None)
    settle(bot)
    assert len(bot.replies("CGENERAL", None)) == 1
    assert len(bot.llm.calls) == 1  # the stored answer, not a new one
    assert post["text"] == reply["text"]
    blocks = json.dumps(valid_blocks(post["blocks"]))
    assert "Stand 2026-02" in blocks and "citebot_sources" in blocks
    assert "citebot_post_in_channel" not in blocks and "<@UASKER>" in blocks
    # Its Sources button works where it now is.
    bot.send_action(block_action("citebot_sources", button_value(post, "citebot_sources"), channel="CGENERAL"))
    [opened] = bot.slack.wait_for("views.open", 1)
    assert "28 days of paid annual leave" in json.dumps(opened.body["view"])


def test_a_slash_command_in_a_dm_stays_private(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    url = bot.slack.response_url()
    bot.send_command(slash_command(PTO_QUESTION, response_url=url, channel="DASKER", channel_name="directmessage"))
    [reply] = responses(bot, url)
    assert "28 days" in reply["text"] and "citebot_post_in_channel" not in json.dumps(reply["blocks"])
    # A click forged from the answer's id posts nothing either.
    bot.send_action(block_action("citebot_post_in_channel", button_value(reply, "citebot_sources"), channel="DASKER",
                                 user="UASKER"))
    settle(bot)
    assert bot.slack.calls("chat.postMessage") == []


def test_the_shortcut_answers_in_the_messages_thread(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    message = {"type": "message", "user": "UCOLLEAGUE", "ts": "1700005001.000100", "text": PTO_QUESTION}
    url = bot.slack.response_url("app")
    assert bot.send_action(message_shortcut(message, response_url=url, user="UASKER")).status_code == 200
    [post] = answers_in(bot, "CGENERAL", message["ts"])
    assert "28 days" in post["text"] and "[1]" in post["text"]
    valid_blocks(post["blocks"])
    # Twice on the same message: one answer.
    bot.send_action(message_shortcut(message, response_url=bot.slack.response_url("app"), user="UOTHER"))
    settle(bot)
    assert len(bot.replies("CGENERAL", message["ts"])) == 1 and len(bot.llm.calls) == 1
    assert bot.slack.calls("response_url") == []


def test_the_shortcut_in_a_dm_answers_in_the_dm_to_the_asker_alone(citebot):
    bot = citebot()
    bot.llm.script(GOOD)
    message = {"type": "message", "user": "UFRIEND", "ts": "1700005002.000100", "text": PTO_QUESTION}
    url = bot.slack.response_url("app")
    bot.send_action(message_shortcut(message, response_url=url, channel="DFRIEND", channel_name="directmessage"))
    [reply] = responses(bot, url)
    assert "28 days" in reply["text"] and reply["response_type"] == "ephemeral"
    assert "citebot_post_in_channel" not in json.dumps(valid_blocks(reply["blocks"]))
    settle(bot)
    # The DM's text went nowhere else: no post, in the DM or anywhere.
    assert bot.slack.calls("chat.postMessage") == []


def test_a_reviewers_answer_to_a_slash_command_goes_to_the_asker_alone(citebot):
    bot = citebot()
    draft = "You get 45 days of leave [hb-pto-01]."
    bot.llm.script(draft, draft)
    url = bot.slack.response_url()
    bot.send_command(slash_command(PTO_QUESTION, response_url=url))
    [unsure] = responses(bot, url)
    assert "citebot_post_in_channel" not in json.dumps(unsure["blocks"])  # only a verified answer is shared
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    review_id = button_value(card, "citebot_review_approve")
    bot.send_action(block_action("citebot_review_approve", review_id, channel=REVIEW_CHANNEL, user="UREVIEWER"))
    [told] = bot.slack.wait_for("chat.postEphemeral", 1, timeout=20)
    assert (told.body["channel"], told.body["user"]) == ("CGENERAL", "UASKER") and "45 days" in told.body["text"]
    bot.slack.wait_for("chat.update", 1)
    settle(bot)
    assert bot.replies("CGENERAL", None) == []  # the channel never saw the question nor its answer


def test_after_post_in_channel_the_askers_copy_says_so_and_a_later_click_posts_nothing(citebot):
    bot = citebot()
    bot.slack.workspace_url = "https://northwind.slack.com/"
    bot.llm.script(GOOD)
    url = bot.slack.response_url()
    bot.send_command(slash_command(PTO_QUESTION, response_url=url))
    [reply] = responses(bot, url)
    answer_id = button_value(reply, "citebot_post_in_channel")

    def click() -> tuple[dict, str]:
        """A click on the asker's ephemeral copy: Slack sends a response_url for that copy."""
        payload = block_action("citebot_post_in_channel", answer_id, channel="CGENERAL", user="UASKER")
        payload["container"]["is_ephemeral"] = True
        payload["response_url"] = bot.slack.response_url("actions")
        return payload, payload["response_url"]

    first, copy_url = click()
    assert bot.send_action(first).status_code == 200
    [post] = answers_in(bot, "CGENERAL", None)
    [replaced] = responses(bot, copy_url)
    # The copy is replaced in place: the same answer, its Sources button, no Post in channel, and where it went.
    assert replaced["replace_original"] is True and replaced["response_type"] == "ephemeral"
    assert replaced["text"] == reply["text"]
    blocks = json.dumps(valid_blocks(replaced["blocks"]))
    assert "citebot_post_in_channel" not in blocks and "citebot_sources" in blocks
    ts = bot.slack.messages("CGENERAL")[0]["ts"].replace(".", "")
    assert "Posted in <#CGENERAL> for everyone." in blocks
    assert f"<https://northwind.slack.com/archives/CGENERAL/p{ts}|open the post>" in blocks
    settle(bot)
    # A click on the copy as it was (a client that had not redrawn it), after the queue's dedupe has
    # long forgotten the first one: the ledger still has the post, so nothing is posted again.
    bot.redis().delete(dedupe_key(share_dedupe_id(answer_id, "UASKER")))
    again, again_url = click()
    bot.send_action(again)
    responses(bot, again_url)
    settle(bot)
    assert len(bot.replies("CGENERAL", None)) == 1 and post["text"] == reply["text"]


def test_a_click_by_someone_who_did_not_ask_is_refused_privately_and_never_blocks_the_askers_own(citebot):
    bot, reply = answered_with_slash(citebot)
    answer_id = button_value(reply, "citebot_post_in_channel")
    # The answer's id in a click forged by someone else, twice: refused, and they alone hear why, once a click.
    forged = block_action("citebot_post_in_channel", answer_id, channel="CGENERAL", user="UCOLLEAGUE")
    forged["response_url"] = forged_url = bot.slack.response_url("actions")
    bot.send_action(forged)
    [told] = responses(bot, forged_url)
    assert told["response_type"] == "ephemeral" and told["replace_original"] is False
    assert "only the person who asked the question can post its answer" in told["text"]
    assert "28 days" not in json.dumps(told)
    settle(bot)
    assert bot.replies("CGENERAL", None) == []
    # The asker's own click is a job of its own: posted.
    mine = block_action("citebot_post_in_channel", answer_id, channel="CGENERAL", user="UASKER")
    bot.send_action(mine)
    [post] = answers_in(bot, "CGENERAL", None)
    assert post["text"] == reply["text"]


def test_post_in_channel_that_slack_refuses_tells_the_asker_why_and_leaves_their_copy(citebot):
    bot, reply = answered_with_slash(citebot)
    bot.slack.fail(error="not_in_channel", method="chat.postMessage")
    click = block_action("citebot_post_in_channel", button_value(reply, "citebot_post_in_channel"), channel="CGENERAL",
                         user="UASKER")
    click["response_url"] = copy_url = bot.slack.response_url("actions")
    bot.send_action(click)
    [told] = responses(bot, copy_url)
    assert told["replace_original"] is False and told["response_type"] == "ephemeral"
    assert "not posted in <#CGENERAL>" in told["text"] and "`not_in_channel`" in told["text"] and "/invite" in told["text"]
    settle(bot)
    assert bot.replies("CGENERAL", None) == [] and len(responses(bot, copy_url)) == 1
