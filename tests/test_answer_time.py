"""How long an asker can be kept waiting by the model: the Retry-After cap, the question's time
budget, a refused request that is not retried, and what the worker finds out about the model at
start (end to end: serve, worker, real Redis, fake Slack, fake LLM)."""

from __future__ import annotations

import json

import pytest

from bot.i18n import Key, message
from tests.citebot_fixtures import answers_in
from tests.fakes import Reply
from tests.harness import mention_event
from tests.polling import wait_until

pytestmark = pytest.mark.e2e

PTO_QUESTION = "How many days of annual leave do I get?"
FAST_RETRIES = ("--max-tries", "2", "--backoff-base", "0.1")


def reply_when_the_model_answers(bot, model: Reply, *, timeout: float) -> dict:
    """What the asker of one question gets when every model request gets `model`."""
    bot.llm.set_script([], default=model)
    event = mention_event(PTO_QUESTION)
    bot.send_event(event)
    [post] = answers_in(bot, "CGENERAL", event["event"]["ts"], timeout=timeout)
    return post


def test_a_retry_after_longer_than_the_bot_waits_gives_up_the_try(citebot):
    bot = citebot(worker_args=FAST_RETRIES)
    post = reply_when_the_model_answers(bot, Reply(status=429, retry_after=3600), timeout=20)
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
    post = reply_when_the_model_answers(bot, Reply(delay=30), timeout=60)
    assert post["text"] == message(Key.LLM_DOWN, "en")
    assert len(bot.llm.calls) <= 7


def test_a_request_the_model_server_refuses_is_not_retried_as_an_outage(citebot):
    # A wrong model name or API key is the operator's to fix: the asker hears back at once,
    # and not that the model is not responding.
    bot = citebot(worker_args=("--max-tries", "3", "--backoff-base", "0.1"))
    post = reply_when_the_model_answers(bot, Reply(status=404), timeout=30)
    assert post["text"] == message(Key.FAILED, "en")
    assert len(bot.llm.calls) == 1


def test_the_worker_says_at_start_what_the_model_can_do(citebot):
    bot = citebot()
    lines = wait_until(lambda: [line for line in bot.worker_logs().splitlines() if "model test-model at" in line],
                       20, "the worker's line about the model")
    assert len(lines) == 1
    assert "answers in" in lines[0] and "structured output as json_schema" in lines[0]
    # The probe's requests are its own: no question's scripted reply went to them.
    assert bot.llm.calls == [] and len(bot.llm.probes) == 2


@pytest.mark.parametrize("judge", ["off", "auto"])
def test_the_worker_warns_at_start_when_nothing_judges_the_models_answers(citebot, judge):
    bot = citebot(CITEBOT_JUDGE=judge)
    wait_until(lambda: "model test-model at" in bot.worker_logs(), 20, "the worker's line about the model")
    said = [json.loads(line) for line in bot.worker_logs().splitlines() if line.startswith("{")]
    [started] = [s["message"] for s in said if s["message"].startswith("worker started")]
    warnings = [s["message"] for s in said if s["level"] == "warning" and "CITEBOT_JUDGE" in s["message"]]
    if judge == "off":
        assert "LLM test-model, judge off," in started
        [warning] = warnings
        assert warning.startswith("CITEBOT_JUDGE=off: the model's answers are posted unverified, marked so")
    else:  # the default: the model judges its own answers, and there is nothing to warn about
        assert "LLM test-model, judge llm," in started and warnings == []
