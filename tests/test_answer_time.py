"""How long an asker can be kept waiting by the model: the Retry-After cap and the
question's time budget (end to end: serve, worker, real Redis, fake Slack, fake LLM)."""

from __future__ import annotations

import pytest

from bot.i18n import Key, message
from tests.citebot_fixtures import answers_in
from tests.fakes import Reply
from tests.harness import mention_event

pytestmark = pytest.mark.e2e

PTO_QUESTION = "How many days of annual leave do I get?"
FAST_RETRIES = ("--max-tries", "2", "--backoff-base", "0.1")


def test_a_retry_after_longer_than_the_bot_waits_gives_up_the_try(citebot):
    bot = citebot(worker_args=FAST_RETRIES)
    bot.llm.set_script([], default=Reply(status=429, retry_after=3600))
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"], timeout=20)
    assert post["text"] == message(Key.LLM_DOWN, "en")
    # One request per try: the hour was waited out neither in the client nor between tries.
    assert len(bot.llm.calls) == 2


def test_a_hanging_model_is_cut_off_by_the_question_budget_over_all_tries(citebot):
    # Each try alone (three 1 s requests and the client's backoff, about 4.5 s)
    # stays under a budget of 5 s; five of them would make fifteen requests.
    # Every request hangs until its 1 s timeout, so the budget leaves room for
    # about six, however slow the machine: counting them cannot flake, timing could.
    bot = citebot(worker_args=("--max-tries", "5", "--backoff-base", "0.1"),
                  CITEBOT_LLM_TIMEOUT="1", CITEBOT_QUESTION_BUDGET_S="5")
    bot.llm.set_script([], default=Reply(delay=30))
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"], timeout=60)
    assert post["text"] == message(Key.LLM_DOWN, "en")
    assert len(bot.llm.calls) <= 7
