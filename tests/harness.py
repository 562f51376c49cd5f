"""citebot as it runs in production: `citebot serve` and `citebot worker` as real
processes, against Redis, a fake Slack Web API and a fake LLM that speak HTTP.

The one process harness of the e2e tests (tests/citebot_fixtures.py), the fault
suite (tests/faults) and the benches. `start_citebot` chooses:

- Redis: any URL, a database of the machine's Redis or a `RedisServer` of the
  test's own, which the fault suite kills and restarts;
- the fakes: in this process (threads, inspected directly) or, with
  `fakes_as_processes`, each its own process (tests/fakes/remote.py, the same
  methods), so a drill's sender threads cannot slow Slack down;
- the workers: `start_worker` and `kill_worker` (SIGKILL) at any time.

Inbound traffic is what Slack sends: signed HTTP requests to /slack/events.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import redis

from bot.jobs.queue import shards_of
from bot.store.keys import HEARTBEAT_PREFIX
from tests.fakes import FakeLLMServer
from tests.fakes.remote import LLMProcess, SlackProcess
from tests.fakes.slack_server import BOT_USER_ID, FakeSlackServer
from tests.polling import wait_until
from tests.redis_ha import sync_client

ROOT = Path(__file__).resolve().parents[1]
SIGNING_SECRET = "test-signing-secret"
BOT_TOKEN = "xoxb-test-token"
REVIEW_CHANNEL = "CREVIEW"
# The one user CITEBOT_REVIEWERS names in the harness: review clicks by anyone else are refused.
REVIEWER = "UREVIEWER"
START_TIMEOUT_S = 30.0
# A worker finishing its jobs in flight after SIGTERM; past this it is killed.
STOP_TIMEOUT_S = 25.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ what Slack sends


def signed_headers(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


_counter = iter(range(1, 1_000_000))


def mention_event(text: str, *, channel: str = "CGENERAL", user: str = "UASKER", thread_ts: str | None = None) -> dict:
    n = next(_counter)
    ts = f"1700000{n:03d}.000100"
    event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER_ID}> {text}", "ts": ts, "channel": channel,
             "event_ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return envelope(event, f"Ev{n:08d}", 1700000000 + n)


def dm_event(text: str, *, channel: str = "DASKER", user: str = "UASKER") -> dict:
    n = next(_counter)
    ts = f"1700001{n:03d}.000200"
    event = {"type": "message", "channel_type": "im", "user": user, "text": text, "ts": ts, "channel": channel,
             "event_ts": ts}
    return envelope(event, f"Ev{n:08d}", 1700000000 + n)


def envelope(event: dict, event_id: str, event_time: int) -> dict:
    """An Events API callback around `event`."""
    return {
        "token": "legacy",
        "team_id": "T0FAKE",
        "api_app_id": "A0FAKE",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "event": event,
        # Who the event is for: Slack names the bot user it was delivered to.
        "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID, "is_bot": True, "is_enterprise_install": False}],
    }


def _interaction(kind: str, user: str, **fields: Any) -> dict:
    return {"type": kind, "team": {"id": "T0FAKE"}, "user": {"id": user}, "api_app_id": "A0FAKE",
            "trigger_id": f"trigger-{next(_counter)}", **fields}


def block_action(action_id: str, value: str, *, channel: str, user: str = REVIEWER) -> dict:
    return _interaction(
        "block_actions", user,
        channel={"id": channel},
        container={"type": "message", "channel_id": channel, "message_ts": "1700000000.000001"},
        actions=[{"action_id": action_id, "block_id": "b", "type": "button", "value": value, "action_ts": "1"}],
    )


def slash_command(text: str, *, response_url: str, channel: str = "CGENERAL", channel_name: str = "general",
                  user: str = "UASKER") -> dict[str, str]:
    """The form fields Slack posts for `/citebot text` (Slack's slash command payload)."""
    n = next(_counter)
    return {"token": "legacy", "team_id": "T0FAKE", "team_domain": "fake", "channel_id": channel,
            "channel_name": channel_name, "user_id": user, "user_name": "asker", "command": "/citebot", "text": text,
            "api_app_id": "A0FAKE", "is_enterprise_install": "false", "response_url": response_url,
            "trigger_id": f"{n}.{n}.trigger{n}"}


def message_shortcut(message: dict, *, response_url: str, channel: str = "CGENERAL", channel_name: str = "general",
                     user: str = "UASKER", callback_id: str = "citebot_ask") -> dict:
    """The interaction Slack posts when `user` picks a message shortcut on `message` (a message as Slack lists it)."""
    return _interaction("message_action", user, callback_id=callback_id, channel={"id": channel, "name": channel_name},
                        message=message, message_ts=message["ts"], response_url=response_url,
                        action_ts=f"{time.time():.6f}")


def view_submission(view: dict, *, user: str, values: dict) -> dict:
    """The submission of a modal the bot opened (`view` as sent to views.open), with the inputs' `values`."""
    return _interaction("view_submission", user, view={**view, "id": f"V{next(_counter)}", "state": {"values": values}})


# ------------------------------------------------------------------ Redis of the test's own


class RedisServer:
    """A redis-server on a free port, so that it can be killed and restarted.

    `persistent=True` is how a queue must run in production: append-only file,
    fsync on every write, so a restart (even after SIGKILL) loses no job, no
    dedupe key and no post record. Without persistence a restart empties the
    queue by design: that configuration is not supported (docs/operations.md, Redis).
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
            proc = self.proc = subprocess.Popen(self.args(), stdout=log, stderr=subprocess.STDOUT)

        def answers() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"redis-server exited:\n{(self.workdir / 'redis.log').read_text()}")
            try:
                with self.client() as client:
                    return bool(client.ping())  # while loading the AOF it answers LOADING: not up yet
            except (redis.RedisError, OSError):
                return False

        wait_until(answers, START_TIMEOUT_S, "redis-server to answer PING")
        return self

    def kill(self) -> None:
        """A crash: SIGKILL, no chance to write anything more."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None:
            _stop([self.proc], timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_connect_timeout=1, socket_timeout=2, decode_responses=True)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()


# ------------------------------------------------------------------ citebot


def make_env(*, redis_url: str, slack_url: str, llm_url: str, index_dir: Path, **extra: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        CITEBOT_SLACK_API_URL=slack_url,
        CITEBOT_REDIS_URL=redis_url,
        CITEBOT_INDEX_DIR=str(index_dir),
        CITEBOT_LLM="openai",
        CITEBOT_LLM_URL=llm_url,
        CITEBOT_LLM_MODEL="test-model",
        CITEBOT_LLM_TIMEOUT="5",
        # The harness counts one model call per question (the fault suite's "answered once"); a test
        # of the entailment judge turns it on (CITEBOT_JUDGE=llm in `extra`).
        CITEBOT_JUDGE="off",
        CITEBOT_REVIEW_CHANNEL=REVIEW_CHANNEL,
        CITEBOT_REVIEWERS=REVIEWER,
        PYTHONUNBUFFERED="1",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


@dataclass
class Citebot:
    """A running serve and workers with their fakes (`slack`, `llm`), as processes."""

    env: dict[str, str]
    slack: Any  # FakeSlackServer or SlackProcess: calls, script, fail, rate_limit
    llm: Any  # FakeLLMServer or LLMProcess: calls, set_script
    logs: Path
    worker_args: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    web: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)  # the live ones
    spawned: int = 0  # workers started, killed ones included
    names: dict[int, str] = field(default_factory=dict)  # pid -> "web", "worker<N>" (N counts starts): its log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- processes

    def start_web(self) -> None:
        self.web = self._spawn(["serve", "--port", str(self.port), "--host", "127.0.0.1"], "web")

    def start_worker(self, *extra: str) -> subprocess.Popen:
        # No metrics port: several workers on one machine would all want 9100.
        args = ["worker", "--concurrency", "4", "--metrics-port", "0", *self.worker_args, *extra]
        proc = self._spawn(args, f"worker{self.spawned}")
        self.spawned += 1
        self.workers.append(proc)
        return proc

    def kill_worker(self, proc: subprocess.Popen) -> None:
        """A crash: SIGKILL, the jobs it holds left for another worker to take over."""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        self.workers.remove(proc)

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Until /healthz answers 200 (if serve runs) and every worker beats; a process that exits fails it."""

        def ready() -> bool:
            for proc in self._procs():
                if proc.poll() is not None:
                    name = self.names[proc.pid]
                    raise RuntimeError(f"{name} exited:\n{self.log(name)}")
            return self._healthy() and self.live_workers() >= len(self.workers)

        wait_until(ready, timeout, "citebot to become ready")

    def wait_workers(self, count: int, timeout: float = START_TIMEOUT_S) -> None:
        wait_until(lambda: self.live_workers() >= count, timeout, f"{count} workers beating")

    def stop(self) -> None:
        _stop(self._procs(), timeout=STOP_TIMEOUT_S)
        self.slack.stop()
        self.llm.stop()

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen:
        with open(self.logs / f"{name}.log", "w") as log:  # the child keeps its own copy
            proc = subprocess.Popen(
                [sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        self.names[proc.pid] = name
        return proc

    def _procs(self) -> list[subprocess.Popen]:
        return [p for p in [self.web, *self.workers] if p is not None]

    def _healthy(self) -> bool:
        if self.web is None:
            return True
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    # -- what the processes did

    def pids(self) -> dict[str, int]:
        """The live processes by name ("web", "worker0", …)."""
        return {self.names[p.pid]: p.pid for p in self._procs()}

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def worker_logs(self) -> str:
        """The logs of every worker started, killed ones included."""
        return "".join(self.log(f"worker{i}") for i in range(self.spawned))

    def redis(self) -> redis.Redis:
        # One server, a cluster or a Sentinel-managed master: whatever the processes were given.
        return sync_client(self.env["CITEBOT_REDIS_URL"])

    def live_workers(self) -> int:
        try:
            with self.redis() as client:
                return len(list(client.scan_iter(match=HEARTBEAT_PREFIX + "*")))
        except (redis.RedisError, OSError):
            return 0

    def queue_idle(self) -> bool:
        """No job waiting, in flight or waiting out a backoff."""
        try:
            with self.redis() as client:
                return all(
                    client.xlen(shard.stream) == 0 and client.zcard(shard.delayed) == 0
                    for shard in shards_of(self.env["CITEBOT_REDIS_URL"])
                )
        except (redis.RedisError, OSError):
            return False

    def replies(self, channel: str, thread_ts: str | None) -> list[dict]:
        """Messages the bot posted into a thread (or top-level in a channel for None)."""
        return [
            c.body for c in self.slack.calls("chat.postMessage")
            if c.ok and c.body.get("channel") == channel and c.body.get("thread_ts") == thread_ts
        ]

    # -- traffic

    def send_event(self, payload: dict, *, retry_num: int | None = None, headers: dict | None = None) -> httpx.Response:
        body = json.dumps(payload)
        h = {"Content-Type": "application/json", **signed_headers(body), **(headers or {})}
        if retry_num is not None:
            h.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"})
        return httpx.post(f"{self.url}/slack/events", content=body, headers=h, timeout=10)

    def send_command(self, fields: dict[str, str]) -> httpx.Response:
        """A slash command: Slack posts its fields as a plain form (no `payload`)."""
        body = urlencode(fields)
        h = {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)}
        return httpx.post(f"{self.url}/slack/events", content=body, headers=h, timeout=10)

    def send_action(self, payload: dict) -> httpx.Response:
        body = urlencode({"payload": json.dumps(payload)})
        h = {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)}
        return httpx.post(f"{self.url}/slack/events", content=body, headers=h, timeout=10)


def start_citebot(
    logs: Path,
    *,
    redis_url: str,
    index_dir: Path,
    web: bool = True,
    workers: int = 1,
    worker_args: tuple[str, ...] = (),
    fakes_as_processes: bool = False,
    **env_extra: Any,
) -> Citebot:
    """Fakes, serve (unless `web=False`) and `workers` workers, ready: healthy and beating.

    `env_extra` sets environment variables (CITEBOT_LLM_TIMEOUT="2"); `worker_args`
    go to every worker's command line, after the harness's own (so they win).
    """
    logs.mkdir(parents=True, exist_ok=True)
    if fakes_as_processes:
        slack: Any = SlackProcess(logs, token=BOT_TOKEN)
        llm: Any = LLMProcess(logs)
    else:
        slack, llm = FakeSlackServer(token=BOT_TOKEN).start(), FakeLLMServer().start()
    env = make_env(redis_url=redis_url, slack_url=slack.url, llm_url=llm.url, index_dir=index_dir, **env_extra)
    bot = Citebot(env=env, slack=slack, llm=llm, logs=logs, worker_args=worker_args)
    try:
        if web:
            bot.start_web()
        for _ in range(workers):
            bot.start_worker()
        bot.wait_ready()
    except BaseException:
        bot.stop()  # a half-started citebot must not outlive the caller
        raise
    return bot


def _stop(procs: list[subprocess.Popen], *, timeout: float) -> None:
    """SIGTERM to all, then wait for each; one that outlasts `timeout` is killed."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
