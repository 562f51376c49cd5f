"""Fault drills: 100 questions through web + 2 workers + Redis + fake Slack + fake LLM,
every one a real process, with one kind of trouble injected per scenario. The
scenarios that leave Redis itself alone run on one Redis, a Sentinel set and a
cluster (conftest.fault_store); Redis's own failures are drilled here (one Redis,
killed and restarted) and in test_redis_ha_faults.py (failovers, resharding).

Each scenario reports sent / answered / duplicated / lost / apologised and
asserts that nothing was lost or posted twice. An apology (the LLM-down
message) is accepted only for a question for which every LLM request failed:
the model was down past all retries; anywhere else it counts as a failure.

"Redis restarted mid-run" means a crash and restart of a Redis that persists
its data (append-only file, fsync always), which is how the queue must run in
production. A Redis without persistence forgets the queue, the dedupe keys and
the post records on a restart; questions in flight then are lost or answered
twice by design, so that is an unsupported configuration (see RedisServer).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from tests.faults.conftest import DRILL_REDIS, LLM_TIMEOUT_S
from tests.faults.drill import (
    GOOD,
    Sender,
    llm_calls_per_question,
    ref,
    settle,
    tally,
)
from tests.harness import Citebot

pytestmark = [pytest.mark.faults, pytest.mark.timeout(150)]

QUESTIONS = 100
RATE = 10.0  # questions per second: the sending takes 10 s
SETTLE_S = 60.0  # after the last question, how long a question may take before it counts as lost


class Timeline:
    """Runs `(at_seconds, action)` pairs in a thread, measured from `start()`."""

    def __init__(self, *steps: tuple[float, Callable[[], None]]):
        self.steps = sorted(steps, key=lambda s: s[0])
        self.errors: list[BaseException] = []
        self.log: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._run, name="fault-timeline", daemon=True)

    def start(self) -> Timeline:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        for at, action in self.steps:
            time.sleep(max(0.0, self._t0 + at - time.monotonic()))
            try:
                action()
                self.log.append((round(time.monotonic() - self._t0, 1), getattr(action, "__name__", "step")))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread by join()
                self.errors.append(exc)
                return

    def join(self) -> None:
        self._thread.join()
        if self.errors:
            raise self.errors[0]


def drill(bot: Citebot, name: str, report, *, timeline: Timeline | None = None, duplicate: bool = False,
          notes: str = "", llm_may_fail: bool = False):
    mode = DRILL_REDIS.get(bot.url, "single")
    if mode != "single":
        name = f"{mode}: {name}"
    started = time.monotonic()
    sender = Sender(bot.url, duplicate=duplicate)
    try:
        if timeline:
            timeline.start()
        deliveries = sender.run(QUESTIONS, rate=RATE, run=re.sub(r"\W+", "-", name))
        if timeline:
            timeline.join()
    finally:
        sender.close()
    posts = settle(bot, QUESTIONS, timeout=SETTLE_S)
    refused = sum(1 for d in deliveries if any(a != 200 for a in d.attempts))
    if refused:
        notes = f"{notes}; {refused} events refused, then retried by the sender as Slack does"
    result = tally(name, posts, llm_calls=bot.llm.calls, llm_timeout=LLM_TIMEOUT_S,
                   seconds=time.monotonic() - started, notes=notes)
    report(result)
    unaccepted = [d.n for d in deliveries if not d.accepted]
    assert unaccepted == [], f"events Slack would have given up on: {unaccepted}"
    assert (result.lost, result.duplicated) == (0, 0), _explain(bot, result)
    assert result.answered == QUESTIONS
    assert result.wrongly_apologised == [], f"apologised although the LLM answered: {result.wrongly_apologised}"
    if not llm_may_fail:
        assert result.apologised == 0, "an apology although the LLM was up"
        # Where the LLM is up, no job may take the dead-letter path at all: when
        # Redis is down too the apology fails, which hides the wrong turn.
        given_up = [line for line in bot.worker_logs().splitlines() if "failed for good" in line]
        assert given_up == [], "\n".join(line[:400] for line in given_up[:5])
    return result, deliveries


def _explain(bot: Citebot, result) -> str:
    tail = "\n".join(f"--- {n} ---\n{bot.log(n)[-3000:]}" for n in ("web", "worker0", "worker1"))
    return f"{result.row()}\n{tail}"


def test_redis_crashes_and_restarts_mid_run(single_cluster, fault_redis, fault_report):
    bot = single_cluster()
    bot.llm.set_script([], default={"text": GOOD, "delay": 1.0})
    down_s = 3.0

    def redis_crash():
        fault_redis.kill()

    def redis_back():
        fault_redis.start()

    timeline = Timeline((3.0, redis_crash), (3.0 + down_s, redis_back))
    _, deliveries = drill(bot, "redis killed + restarted", fault_report, timeline=timeline,
                          notes=f"SIGKILL at 3 s, down {down_s:g} s, AOF fsync always")
    refused = [d for d in deliveries if any(a != 200 for a in d.attempts)]
    assert refused, "no event hit the outage: the drill did not test anything"
    # Everything reconnected by itself: the web process answers health checks,
    # both workers beat again, and a question asked now is answered.
    assert httpx.get(f"{bot.url}/healthz", timeout=2).status_code == 200
    bot.wait_workers(2, timeout=10)
    assert all(w.poll() is None for w in bot.workers) and bot.web.poll() is None


def test_a_worker_sigkilled_three_times(cluster, fault_report):
    bot = cluster()
    # Answers take a while, so every kill catches jobs in flight.
    bot.llm.set_script([], default={"text": GOOD, "delay": 0.8})
    kills: list[int] = []

    def slow_posts():
        # Slack takes 2 s over the next posts and makes them anyway: a kill in
        # that time leaves a job that posted but never recorded it (in doubt).
        bot.slack.script({"delay": 2.0, "method": "chat.postMessage", "times": 6})

    def kill_one():
        victim = bot.workers[0]
        kills.append(victim.pid)
        bot.kill_worker(victim)
        bot.start_worker()

    timeline = Timeline(*((at - 1.0, slow_posts) for at in (2.0, 5.0, 8.0)),
                        (2.0, kill_one), (5.0, kill_one), (8.0, kill_one))
    drill(bot, "worker SIGKILLed x3", fault_report, timeline=timeline,
          notes="kills at 2, 5, 8 s, posts in flight; restarted at once")
    assert len(kills) == 3
    taken_over = bot.worker_logs().count("took over entry")
    assert taken_over > 0, "no job was in flight at a kill: the drill did not test anything"
    # The in-doubt path ran: a worker looked for its predecessor's post in the thread.
    assert bot.slack.calls("conversations.replies"), "no kill caught a post in flight"


def test_llm_answers_500_for_a_while(cluster, fault_report):
    # Three tries: with the LLM's own retries, a job gives up about 5 s into an
    # outage, so the 10 s outage has questions that get the apology and others
    # that wait it out (7 s left a busy machine's cluster run with none apologised).
    bot = cluster(worker_args=("--max-tries", "3"))
    bot.llm.set_script([], default={"text": GOOD, "delay": 0.2})

    def llm_500():
        bot.llm.set_script([], default={"status": 500})

    def llm_back():
        bot.llm.set_script([], default={"text": GOOD, "delay": 0.2})

    timeline = Timeline((2.0, llm_500), (12.0, llm_back))
    result, _ = drill(bot, "LLM 500 for 10 s", fault_report, timeline=timeline, llm_may_fail=True,
                      notes="max 3 tries; apology only after all failed")
    assert result.apologised > 0, "no question outlasted the retries: the apology path was not tested"
    # Past all retries: three tries of the job, each with the LLM client's three requests.
    calls = llm_calls_per_question(bot.llm.calls)
    assert {calls.get(ref(n)) for n in result.apologised_ids} == {3 * 3}


def test_llm_hangs_past_its_timeout_for_a_while(cluster, fault_report):
    bot = cluster(worker_args=("--max-tries", "3"))
    bot.llm.set_script([], default={"text": GOOD, "delay": 0.2})

    def llm_hangs():
        bot.llm.set_script([], default={"text": GOOD, "delay": LLM_TIMEOUT_S + 3})

    def llm_back():
        bot.llm.set_script([], default={"text": GOOD, "delay": 0.2})

    timeline = Timeline((2.0, llm_hangs), (8.0, llm_back))
    drill(bot, "LLM hangs > timeout for 6 s", fault_report, timeline=timeline, llm_may_fail=True,
          notes=f"replies after {LLM_TIMEOUT_S + 3:g} s, timeout {LLM_TIMEOUT_S:g} s")
    hung = [c for c in bot.llm.calls if c.delay > LLM_TIMEOUT_S]
    assert hung, "no LLM request hit the hang"


def test_slack_answers_429_in_bursts(cluster, fault_report):
    bot = cluster()
    bot.llm.set_script([], default={"text": GOOD, "delay": 0.2})

    def burst():
        bot.slack.rate_limit(times=30, retry_after=1)

    timeline = Timeline((1.0, burst), (4.0, burst), (7.0, burst))
    drill(bot, "Slack 429 bursts", fault_report, timeline=timeline, notes="3 bursts of 30 x 429, Retry-After 1")
    limited = [c for c in bot.slack.calls() if c.status == 429]
    assert len(limited) == 90
    # Retry-After is honoured: the next try of a refused post comes a second later or more.
    posts = bot.slack.calls("chat.postMessage")
    refused = [c for c in posts if c.status == 429]
    assert refused, "no answer post hit a burst"
    for call in refused:
        thread = call.body.get("thread_ts")
        later = [c.at for c in posts if c.body.get("thread_ts") == thread and c.at > call.at]
        assert later, f"the post in {thread} was never tried again after a 429"
        assert min(later) - call.at >= 0.9, f"post in {thread} retried {min(later) - call.at:.2f}s after a 429"


def test_every_event_delivered_twice(cluster, fault_report):
    bot = cluster()
    bot.llm.set_script([], default={"text": GOOD, "delay": 0.2})
    _, deliveries = drill(bot, "every event twice", fault_report, duplicate=True,
                          notes="half after the ack, half at the same time")
    assert all(len(d.attempts) == 2 for d in deliveries)
    assert len(bot.llm.calls) == QUESTIONS, "an event delivered twice made a second job"

