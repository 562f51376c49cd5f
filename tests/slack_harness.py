"""Runs citebot as it runs in production: `citebot serve` and `citebot worker` as real
processes, against real Redis, a fake Slack Web API and a fake LLM that speak HTTP.

Inbound traffic is what Slack sends: signed HTTP requests to /slack/events.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import httpx

from tests.fakes import FakeLLMServer
from tests.fakes.slack_server import BOT_USER_ID, FakeSlackServer

ROOT = Path(__file__).resolve().parents[1]
SIGNING_SECRET = "test-signing-secret"
BOT_TOKEN = "xoxb-test-token"
REVIEW_CHANNEL = "CREVIEW"
START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def signed_headers(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


_counter = iter(range(1, 1_000_000))


def mention_event(text: str, *, channel: str = "CGENERAL", user: str = "UASKER", thread_ts: str | None = None) -> dict:
    n = next(_counter)
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER_ID}> {text}",
        "ts": f"1700000{n:03d}.000100",
        "channel": channel,
        "event_ts": f"1700000{n:03d}.000100",
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return _envelope(event, n)


def dm_event(text: str, *, channel: str = "DASKER", user: str = "UASKER") -> dict:
    n = next(_counter)
    event = {
        "type": "message",
        "channel_type": "im",
        "user": user,
        "text": text,
        "ts": f"1700001{n:03d}.000200",
        "channel": channel,
        "event_ts": f"1700001{n:03d}.000200",
    }
    return _envelope(event, n)


def _envelope(event: dict, n: int) -> dict:
    return {
        "token": "legacy",
        "team_id": "T0FAKE",
        "api_app_id": "A0FAKE",
        "type": "event_callback",
        "event_id": f"Ev{n:08d}",
        "event_time": 1700000000 + n,
        "event": event,
        # Who the event is for: Slack names the bot user it was delivered to.
        "authorizations": [{"team_id": "T0FAKE", "user_id": BOT_USER_ID, "is_bot": True, "is_enterprise_install": False}],
    }


def block_action(action_id: str, value: str, *, channel: str, user: str = "UREVIEWER") -> dict:
    return {
        "type": "block_actions",
        "team": {"id": "T0FAKE"},
        "user": {"id": user},
        "api_app_id": "A0FAKE",
        "trigger_id": f"trigger-{next(_counter)}",
        "channel": {"id": channel},
        "container": {"type": "message", "channel_id": channel, "message_ts": "1700000000.000001"},
        "actions": [{"action_id": action_id, "block_id": "b", "type": "button", "value": value, "action_ts": "1"}],
    }


def view_submission(view: dict, *, user: str, values: dict) -> dict:
    """The submission of a modal the bot opened (`view` as sent to views.open), with the inputs' `values`."""
    return {
        "type": "view_submission",
        "team": {"id": "T0FAKE"},
        "user": {"id": user},
        "api_app_id": "A0FAKE",
        "trigger_id": f"trigger-{next(_counter)}",
        "view": {**view, "id": f"V{next(_counter)}", "state": {"values": values}},
    }


@dataclass
class Citebot:
    """A running serve + worker(s) with their fakes."""

    env: dict[str, str]
    port: int
    slack: FakeSlackServer
    llm: FakeLLMServer
    logs: Path
    web: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- processes

    def start_web(self) -> None:
        self.web = self._spawn(["serve", "--port", str(self.port), "--host", "127.0.0.1"], "web")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.web.poll() is not None:
                raise RuntimeError(f"citebot serve exited:\n{(self.logs / 'web.log').read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"citebot serve did not become healthy:\n{(self.logs / 'web.log').read_text()}")

    def start_worker(self, *extra: str) -> subprocess.Popen:
        # Several workers on one machine: no metrics port each.
        proc = self._spawn(["worker", "--concurrency", "4", "--metrics-port", "0", *extra], f"worker{len(self.workers)}")
        self.workers.append(proc)
        return proc

    def kill_worker(self, proc: subprocess.Popen) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen:
        # The child keeps its own copy of the file descriptor.
        with open(self.logs / f"{name}.log", "w") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )

    def stop(self) -> None:
        for proc in [self.web, *self.workers]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in [self.web, *self.workers]:
            if proc is not None:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text()

    # -- traffic

    def send_event(self, payload: dict, *, retry_num: int | None = None, headers: dict | None = None) -> httpx.Response:
        body = json.dumps(payload)
        h = {"Content-Type": "application/json", **signed_headers(body), **(headers or {})}
        if retry_num is not None:
            h.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"})
        return httpx.post(f"{self.url}/slack/events", content=body, headers=h, timeout=10)

    def send_action(self, payload: dict) -> httpx.Response:
        body = urlencode({"payload": json.dumps(payload)})
        h = {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)}
        return httpx.post(f"{self.url}/slack/events", content=body, headers=h, timeout=10)

    def replies(self, channel: str, thread_ts: str | None) -> list[dict]:
        """Messages the bot posted into a thread (or top-level in a channel for None)."""
        return [
            c.body for c in self.slack.calls("chat.postMessage")
            if c.ok and c.body.get("channel") == channel and c.body.get("thread_ts") == thread_ts
        ]


def make_env(tmp_path: Path, *, redis_url: str, slack: FakeSlackServer, llm: FakeLLMServer, index_dir: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    env.update(
        SLACK_BOT_TOKEN=BOT_TOKEN,
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        CITEBOT_SLACK_API_URL=slack.url,
        CITEBOT_REDIS_URL=redis_url,
        CITEBOT_INDEX_DIR=str(index_dir),
        CITEBOT_LLM="openai",
        CITEBOT_LLM_URL=llm.url,
        CITEBOT_LLM_MODEL="test-model",
        CITEBOT_LLM_TIMEOUT="5",
        CITEBOT_REVIEW_CHANNEL=REVIEW_CHANNEL,
        PYTHONUNBUFFERED="1",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_until(predicate, timeout: float = 15.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
