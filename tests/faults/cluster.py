"""citebot as it runs in production, every part its own process: a private Redis,
the fake Slack and the fake LLM (`python -m tests.fakes.*`), `citebot serve` and
two `citebot worker`s. Plus a sender that behaves like Slack's Events API and a
tally of what ended up in the fake Slack.

Used by the fault suite (tests/faults) and the load bench (bench/load.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from bot.i18n import Key, message
from bot.store.keys import DELAYED_ZSET, HEARTBEAT_PREFIX, JOBS_STREAM
from tests.slack_harness import BOT_TOKEN, ROOT, free_port, make_env, signed_headers

START_TIMEOUT_S = 30.0
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


# ------------------------------------------------------------------ Redis


class RedisServer:
    """A redis-server of our own on a free port, so that it can be killed and restarted.

    `persistent=True` is how a queue must run in production: append-only file,
    fsync on every write, so a restart (even after SIGKILL) loses no job, no
    dedupe key and no post record. Without persistence a restart empties the
    queue by design: that configuration is not supported (README: operations).
    """

    def __init__(self, workdir: Path, *, persistent: bool = True, port: int | None = None):
        self.workdir = workdir
        self.persistent = persistent
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def args(self) -> list[str]:
        binary = shutil.which("redis-server") or "redis-server"
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir), "--save", ""]
        if self.persistent:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        return args

    def start(self) -> RedisServer:
        with open(self.workdir / "redis.log", "a") as log:
            self.proc = subprocess.Popen(self.args(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited:\n{(self.workdir / 'redis.log').read_text()}")
            try:
                with self.client() as client:
                    # Loading the AOF answers LOADING: not up yet.
                    client.ping()
                    return self
            except (redis.RedisError, OSError):
                time.sleep(0.05)
        raise RuntimeError("redis-server did not answer PING")

    def kill(self) -> None:
        """A crash: SIGKILL, no chance to write anything more."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=2, decode_responses=True)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()

    def queue_idle(self) -> bool:
        """No job waiting, in flight or waiting out a backoff."""
        try:
            with self.client() as client:
                return client.xlen(JOBS_STREAM) == 0 and client.zcard(DELAYED_ZSET) == 0
        except (redis.RedisError, OSError):
            return False

    def live_workers(self) -> int:
        with self.client() as client:
            return len(list(client.scan_iter(match=HEARTBEAT_PREFIX + "*")))


# ------------------------------------------------------------------ the fakes as processes


class FakeProcess:
    """`python -m tests.fakes.<module> --port 0`; its URL is what it prints first."""

    def __init__(self, module: str, logs: Path, *extra: str):
        self.name = module.rsplit(".", 1)[-1]
        self.log_path = logs / f"{self.name}.log"
        with open(self.log_path, "w") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, "--port", "0", *extra],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError(f"{module} did not start: {line!r}\n{self.log_path.read_text()}")
        self.url = line.removeprefix("listening on ")
        self.root = self.url.removesuffix("/api/").rstrip("/")
        self.http = httpx.Client(base_url=self.root, timeout=30)

    def stop(self) -> None:
        self.http.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.stdout.close()


class SlackProcess(FakeProcess):
    def __init__(self, logs: Path):
        super().__init__("tests.fakes.slack_server", logs, "--token", BOT_TOKEN)

    def calls(self, method: str | None = None) -> list[dict[str, Any]]:
        params = {"method": method} if method else {}
        return self.http.get("/_calls", params=params).json()["calls"]

    def script(self, *failures: dict[str, Any]) -> None:
        self.http.post("/_script", json={"failures": list(failures)}).raise_for_status()

    def rate_limit(self, *, times: int, retry_after: int = 1, method: str | None = None) -> None:
        self.script({"status": 429, "error": "ratelimited", "retry_after": retry_after, "times": times, "method": method})


class LLMProcess(FakeProcess):
    def __init__(self, logs: Path):
        super().__init__("tests.fakes.llm_server", logs)

    def default(self, reply: str | dict[str, Any]) -> None:
        """Every request from now on gets `reply` (see tests.fakes.llm_server)."""
        self.http.post("/_script", json={"replies": [], "default": reply}).raise_for_status()

    def calls(self) -> list[dict[str, Any]]:
        return self.http.get("/_calls").json()


# ------------------------------------------------------------------ citebot


@dataclass
class Cluster:
    """serve + workers against `redis` and the two fakes; all separate processes."""

    redis: RedisServer
    index_dir: Path
    logs: Path
    workers_n: int = 2
    worker_args: tuple[str, ...] = ()
    env_extra: dict[str, str] = field(default_factory=dict)
    slack: SlackProcess | None = None
    llm: LLMProcess | None = None
    web: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)
    port: int = 0
    _spawned: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Cluster:
        try:
            return self._start()
        except BaseException:
            self.stop()  # a half-started cluster must not outlive the caller
            raise

    def _start(self) -> Cluster:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.slack = SlackProcess(self.logs)
        self.llm = LLMProcess(self.logs)
        self.llm.default(GOOD)
        self.env = make_env(
            self.logs, redis_url=self.redis.url, slack=self.slack, llm=self.llm, index_dir=self.index_dir, **self.env_extra
        )
        self.port = free_port()
        self.web = self._spawn(["serve", "--port", str(self.port), "--host", "127.0.0.1"], "web")
        for _ in range(self.workers_n):
            self.start_worker()
        self._wait_ready()
        return self

    def start_worker(self) -> subprocess.Popen:
        # No metrics port: two workers on one machine would both want 9100.
        proc = self._spawn(["worker", "--metrics-port", "0", *self.worker_args], f"worker{self._spawned}")
        self._spawned += 1
        self.workers.append(proc)
        return proc

    def kill_worker(self, proc: subprocess.Popen) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        self.workers.remove(proc)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, proc in [("web", self.web), *((f"worker{i}", w) for i, w in enumerate(self.workers))]:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited:\n{self.log(name)}")
            try:
                healthy = httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                healthy = False
            if healthy and self.redis.live_workers() >= len(self.workers):
                return
            time.sleep(0.1)
        raise RuntimeError(f"citebot did not become ready:\n{self.log('web')}")

    def wait_workers(self, count: int, timeout: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while self.redis.live_workers() < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {count} workers came up")
            time.sleep(0.1)

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen:
        with open(self.logs / f"{name}.log", "w") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def worker_logs(self) -> str:
        """The logs of every worker started, killed ones included."""
        return "".join(self.log(f"worker{i}") for i in range(self._spawned))

    def pids(self) -> dict[str, int]:
        found = {"web": self.web.pid} if self.web else {}
        found.update({f"worker{i}": w.pid for i, w in enumerate(self.workers)})
        return found

    def stop(self) -> None:
        procs = [p for p in [self.web, *self.workers] if p is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for fake in (self.slack, self.llm):
            if fake is not None:
                fake.stop()


# ------------------------------------------------------------------ Slack's side: events in, posts out


def question_event(n: int, *, run: str) -> dict[str, Any]:
    ts = f"{1_800_000_000 + n}.000100"
    return {
        "token": "legacy",
        "team_id": "T0FAKE",
        "api_app_id": "A0FAKE",
        "type": "event_callback",
        "event_id": f"Ev{run}{n:05d}",
        "event_time": 1_800_000_000 + n,
        "event": {
            "type": "app_mention",
            "user": "UASKER",
            "text": f"<@UBOT0001> {QUESTION.format(n=n)}",
            "ts": ts,
            "channel": CHANNEL,
            "event_ts": ts,
        },
    }


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
        return (f"| {self.scenario:<28} | {self.sent:>4} | {self.answered:>8} | {self.duplicated:>10} | "
                f"{self.lost:>4} | {self.apologised:>10} | {self.seconds:>5.1f}s | {self.notes}")


TABLE_HEAD = (
    "| scenario                     | sent | answered | duplicated | lost | apologised |   time | notes\n"
    "|------------------------------|------|----------|------------|------|------------|--------|------"
)


def posts_by_question(slack: SlackProcess, count: int) -> dict[int, list[dict[str, Any]]]:
    """The bot's accepted chat.postMessage calls in each question's thread."""
    threads = {question_event(n, run="")["event"]["ts"]: n for n in range(count)}
    found: dict[int, list[dict[str, Any]]] = {n: [] for n in range(count)}
    for call in slack.calls("chat.postMessage"):
        body = call["body"]
        if call["status"] == 200 and call["error"] is None and body.get("channel") == CHANNEL:
            n = threads.get(body.get("thread_ts"))
            if n is not None:
                found[n].append(call)
    return found


def settle(cluster: Cluster, count: int, *, timeout: float, quiet: float = 1.5) -> dict[int, list[dict[str, Any]]]:
    """Waits until every question has a post and the queue is idle (then `quiet` seconds more,
    for late duplicates), or until `timeout`; returns the posts per question."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        posts = posts_by_question(cluster.slack, count)
        if all(posts.values()) and cluster.redis.queue_idle():
            time.sleep(quiet)
            if cluster.redis.queue_idle():
                return posts_by_question(cluster.slack, count)
        time.sleep(0.25)
    return posts_by_question(cluster.slack, count)


def tally(scenario: str, posts: dict[int, list[dict[str, Any]]], *, llm_calls: list[dict[str, Any]],
          llm_timeout: float, seconds: float, notes: str = "") -> Tally:
    good_reply_for: set[str] = set()
    for call in llm_calls:
        if call.get("status", 200) == 200 and call.get("delay", 0.0) < llm_timeout:
            good_reply_for.update(_refs_in(call.get("body")))
    counts = {n: len(p) for n, p in posts.items()}
    apologised = [n for n, p in posts.items() if len(p) == 1 and p[0]["body"].get("text") == APOLOGY]
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


def llm_calls_per_question(llm_calls: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in llm_calls:
        for r in _refs_in(call.get("body")):
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
