"""A fault drill's traffic and tally: events sent the way Slack's Events API sends
them (retries, duplicates), and what ended up in the fake Slack per question.

The citebot under drill is tests/harness.py's, every part its own process.
Used by the fault suite (tests/faults) and the load bench (bench/load.py).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bot.i18n import Key, message
from tests.fakes.llm_server import Call as LLMCall
from tests.fakes.slack_server import Call
from tests.harness import Citebot, envelope, signed_headers
from tests.polling import WaitTimeout, wait_until

CHANNEL = "CFAULTS"
# What the fake LLM answers by default: backed by hb-pto-01 of the mini KB.
GOOD = "Every employee gets 28 days of paid annual leave per calendar year [hb-pto-01]."
# Every question asks the same (so every answer is the verified GOOD one) and
# carries its number, so the LLM calls made for it can be told apart.
QUESTION = "How many days of annual leave do I get? (ref Q{n:04d})"
APOLOGY = message(Key.LLM_DOWN, "en")
# Slack retries an unacknowledged event three times (immediately, after 1 min,
# after 5 min); scaled down so a drill takes seconds.
SLACK_RETRY_DELAYS_S = (1.0, 2.0, 4.0)
# Slack counts an event as not acknowledged after 3 seconds.
SLACK_ACK_TIMEOUT_S = 3.0


def ref(n: int) -> str:
    return f"Q{n:04d}"


# ------------------------------------------------------------------ Slack's side: events in, posts out


def question_thread(n: int) -> str:
    """The ts of question `n`: the thread its answer goes to."""
    return f"{1_800_000_000 + n}.000100"


def question_event(n: int, *, run: str) -> dict[str, Any]:
    ts = question_thread(n)
    event = {"type": "app_mention", "user": "UASKER", "text": f"<@UBOT0001> {QUESTION.format(n=n)}", "ts": ts,
             "channel": CHANNEL, "event_ts": ts}
    return envelope(event, f"Ev{run}{n:05d}", 1_800_000_000 + n)


@dataclass
class Delivery:
    n: int
    sent_at: float = 0.0  # wall clock of the first attempt, comparable with the fakes' `at`
    attempts: list[int | str] = field(default_factory=list)  # status code, or the error
    accepted: bool = False  # one attempt got a 200


class Sender:
    """Sends signed events the way Slack's Events API does.

    An attempt that does not get a 2xx within 3 seconds is retried with the
    same event id and X-Slack-Retry-Num, up to three retries; `duplicate`
    sends every event a second time as a retry although the first was acked
    (Slack does that when the ack arrives late), half of them at the same time.
    """

    # Threads sleep through retry delays: enough of them that a refused batch
    # does not hold up the events due after it.
    def __init__(self, url: str, *, threads: int = 64, duplicate: bool = False,
                 retry_delays: tuple[float, ...] = SLACK_RETRY_DELAYS_S):
        self.url = f"{url}/slack/events"
        self.duplicate = duplicate
        self.retry_delays = retry_delays
        self.http = httpx.Client(timeout=SLACK_ACK_TIMEOUT_S, limits=httpx.Limits(max_connections=threads * 2))
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="slack-sender")
        self.deliveries: dict[int, Delivery] = {}
        self._lock = threading.Lock()

    def run(self, count: int, *, rate: float, run: str, on_tick: Callable[[float], None] | None = None) -> list[Delivery]:
        """`count` events at `rate` per second; `on_tick(elapsed)` is called between sends (fault injection)."""
        start = time.monotonic()
        futures = []
        for n in range(count):
            due = start + n / rate
            while (now := time.monotonic()) < due:
                time.sleep(min(0.02, due - now))
            if on_tick:
                on_tick(time.monotonic() - start)
            futures.append(self.pool.submit(self._deliver, n, question_event(n, run=run)))
        for future in futures:
            future.result()
        return [self.deliveries[n] for n in range(count)]

    def _deliver(self, n: int, event: dict[str, Any]) -> None:
        delivery = Delivery(n=n, sent_at=time.time())
        with self._lock:
            self.deliveries[n] = delivery
        body = json.dumps(event)
        if self.duplicate and n % 2:
            # The retry races the first delivery.
            twin = self.pool.submit(self._attempt, body, 1)
            delivery.attempts.append(self._attempt(body, None))
            delivery.attempts.append(twin.result())
            delivery.accepted = 200 in delivery.attempts
            return
        for retry, delay in enumerate((0.0, *self.retry_delays)):
            if delay:
                time.sleep(delay)
            status = self._attempt(body, retry or None)
            delivery.attempts.append(status)
            if status == 200:
                delivery.accepted = True
                break
        if self.duplicate and delivery.accepted:
            delivery.attempts.append(self._attempt(body, len(delivery.attempts)))

    def _attempt(self, body: str, retry_num: int | None) -> int | str:
        headers = {"Content-Type": "application/json", **signed_headers(body)}
        if retry_num:
            headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_error"})
        try:
            return self.http.post(self.url, content=body, headers=headers).status_code
        except httpx.HTTPError as exc:
            return type(exc).__name__

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.http.close()


# ------------------------------------------------------------------ the tally


@dataclass
class Tally:
    scenario: str
    sent: int
    answered: int  # exactly one post in the question's thread
    duplicated: int  # more than one
    lost: int  # none by the deadline
    apologised: int  # the one post is the LLM-down apology
    apologised_ids: list[int] = field(default_factory=list)
    wrongly_apologised: list[int] = field(default_factory=list)  # an LLM reply was there to be had
    seconds: float = 0.0
    notes: str = ""

    def row(self) -> str:
        return (f"| {self.scenario:<38} | {self.sent:>4} | {self.answered:>8} | {self.duplicated:>10} | "
                f"{self.lost:>4} | {self.apologised:>10} | {self.seconds:>5.1f}s | {self.notes}")


TABLE_HEAD = (
    "| scenario                               | sent | answered | duplicated | lost | apologised |   time | notes\n"
    "|----------------------------------------|------|----------|------------|------|------------|--------|------"
)


def posts_by_question(bot: Citebot, count: int) -> dict[int, list[Call]]:
    """The bot's accepted chat.postMessage calls in each question's thread."""
    threads = {question_thread(n): n for n in range(count)}
    found: dict[int, list[Call]] = {n: [] for n in range(count)}
    for call in bot.slack.calls("chat.postMessage"):
        if call.ok and call.body.get("channel") == CHANNEL:
            n = threads.get(call.body.get("thread_ts"))
            if n is not None:
                found[n].append(call)
    return found


def settle(bot: Citebot, count: int, *, timeout: float, quiet: float = 1.5) -> dict[int, list[Call]]:
    """Waits until every question has a post and the queue is idle (then `quiet` seconds more,
    for late duplicates), or until `timeout`; returns the posts per question."""

    def settled() -> bool:
        if not (all(posts_by_question(bot, count).values()) and bot.queue_idle()):
            return False
        time.sleep(quiet)
        return bot.queue_idle()

    with contextlib.suppress(WaitTimeout):  # what is missing by then, the tally counts as lost
        wait_until(settled, timeout, "every question answered", interval=0.25)
    return posts_by_question(bot, count)


def tally(scenario: str, posts: dict[int, list[Call]], *, llm_calls: list[LLMCall],
          llm_timeout: float, seconds: float, notes: str = "") -> Tally:
    good_reply_for: set[str] = set()
    for call in llm_calls:
        if call.status == 200 and call.delay < llm_timeout:
            good_reply_for.update(_refs_in(call.body))
    counts = {n: len(p) for n, p in posts.items()}
    apologised = [n for n, p in posts.items() if len(p) == 1 and p[0].body.get("text") == APOLOGY]
    return Tally(
        scenario=scenario,
        sent=len(posts),
        answered=sum(1 for c in counts.values() if c == 1),
        duplicated=sum(1 for c in counts.values() if c > 1),
        lost=sum(1 for c in counts.values() if c == 0),
        apologised=len(apologised),
        apologised_ids=apologised,
        # An apology is right only where every LLM request for the question failed.
        wrongly_apologised=[n for n in apologised if ref(n) in good_reply_for],
        seconds=seconds,
        notes=notes,
    )


def llm_calls_per_question(llm_calls: list[LLMCall]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in llm_calls:
        for r in _refs_in(call.body):
            counts[r] = counts.get(r, 0) + 1
    return counts


def _refs_in(body: Any) -> set[str]:
    text = json.dumps(body) if not isinstance(body, str) else body
    found, start = set(), 0
    while (i := text.find("(ref Q", start)) >= 0:
        found.add(text[i + 5 : i + 10])
        start = i + 1
    return found


def peak_memory_mb(pid: int) -> float | None:
    """VmHWM: the process's peak resident set, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
