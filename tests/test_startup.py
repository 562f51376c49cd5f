"""Start-up with Slack: a wrong token or review channel stops the process at start with
one line; the review channel is resolved to its ID; Socket Mode's state is in /healthz."""

from __future__ import annotations

import logging
import subprocess
import sys

import httpx
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.inbound.socket_mode import SocketModeWatch
from bot.slack.startup import BotIdentity, StartupError, check_bot_token, resolve_review_channel
from tests.fakes.slack_server import FakeSlackServer
from tests.fakes.socket_mode import FakeSocketMode
from tests.harness import BOT_TOKEN, ROOT, free_port, make_env, mention_event
from tests.polling import wait_until

BOT = BotIdentity(user_id="UBOT", team="Fake Team", bot_name="citebot")
APP_TOKEN = "xapp-1-A0TEST-1-test"


def client(slack: FakeSlackServer, token: str = BOT_TOKEN) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=slack.url, retry_handlers=[])


# ------------------------------------------------------------------ in-process


async def test_auth_test_failure_names_the_token_and_what_slack_said():
    with FakeSlackServer(token=BOT_TOKEN) as slack, pytest.raises(StartupError) as info:
        await check_bot_token(client(slack, "xoxb-revoked"))
    assert str(info.value).startswith("SLACK_BOT_TOKEN: Slack refused it at auth.test: invalid_auth: ")
    assert "xoxb-revoked" not in str(info.value)


async def test_an_unreachable_slack_at_start_is_not_blamed_on_the_token():
    with pytest.raises(StartupError, match=r"^cannot reach Slack at start"):
        await check_bot_token(AsyncWebClient(token=BOT_TOKEN, base_url=f"http://127.0.0.1:{free_port()}/api/",
                                             retry_handlers=[]))


async def test_a_review_channel_name_is_resolved_to_its_id_across_pages():
    channels = {f"C{n:09d}": {"name": f"team-{n}", "is_member": False} for n in range(2500)}
    channels["CREVIEW99"] = {"name": "citebot-review", "is_member": True}
    with FakeSlackServer(token=BOT_TOKEN, channels=channels) as slack:
        assert await resolve_review_channel(client(slack), "#citebot-review", BOT) == "CREVIEW99"
        assert len(slack.calls("conversations.list")) == 3  # 1000 per page


async def test_an_unknown_review_channel_stops_the_start_with_what_to_do():
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        with pytest.raises(StartupError, match=r"^CITEBOT_REVIEW_CHANNEL: no channel named #nope .*give the channel's ID"):
            await resolve_review_channel(client(slack), "#nope", BOT)
        with pytest.raises(StartupError, match=r"^CITEBOT_REVIEW_CHANNEL: no channel CNOPE123 that the bot can see"):
            await resolve_review_channel(client(slack), "CNOPE123", BOT)


async def test_a_review_channel_without_the_bot_is_a_warning_that_says_how_to_invite_it(caplog):
    outside = {"CREV0001": {"name": "review", "is_member": False}}
    with FakeSlackServer(token=BOT_TOKEN, channels=outside) as slack, caplog.at_level(logging.WARNING):
        assert await resolve_review_channel(client(slack), "CREV0001", BOT) == "CREV0001"
    assert "invite it with `/invite @citebot`" in caplog.text


async def test_the_socket_mode_watch_turns_unhealthy_only_past_the_grace_period():
    now = [0.0]
    up = [False]

    async def is_connected() -> bool:
        return up[0]

    watch = SocketModeWatch(is_connected, grace_s=30, clock=lambda: now[0])
    await watch.check()
    assert watch.report()["ok"] is True  # still starting
    up[0] = True
    await watch.check()
    assert watch.report() == {"ok": True, "socket_mode": "connected"}
    up[0], now[0] = False, 100.0
    await watch.check()
    now[0] = 129.0
    assert watch.report()["ok"] is True  # a reconnect takes seconds
    now[0] = 131.0
    assert watch.report() == {"ok": False, "socket_mode": "not connected for 31 s"}
    up[0] = True
    await watch.check()
    assert watch.report()["ok"] is True


# ------------------------------------------------------------------ processes


def run_serve(env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "serve", "--port", str(free_port())], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def env_for(slack: FakeSlackServer, redis_url: str, index_dir, **extra: str) -> dict[str, str]:
    return make_env(redis_url=redis_url, slack_url=slack.url, llm_url="http://127.0.0.1:9", index_dir=index_dir,
                    CITEBOT_LLM="extractive", **extra)


@pytest.mark.e2e
def test_serve_with_a_revoked_bot_token_fails_at_start_in_one_line(redis_url, index_dir):
    with FakeSlackServer(token="xoxb-the-real-one") as slack:
        done = run_serve(env_for(slack, redis_url, index_dir))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("citebot: SLACK_BOT_TOKEN: Slack refused it at auth.test: invalid_auth")
    assert "Traceback" not in done.stderr


@pytest.mark.e2e
def test_an_app_token_given_as_the_bot_token_is_refused_before_slack_is_asked(redis_url, index_dir):
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        done = run_serve(env_for(slack, redis_url, index_dir, SLACK_BOT_TOKEN=APP_TOKEN))
        assert slack.calls() == []
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "citebot: configuration error: SLACK_BOT_TOKEN: must start with xoxb- (this is an app-level token; "
        "the right one is under OAuth & Permissions → Bot User OAuth Token)"
    )


@pytest.mark.e2e
def test_socket_mode_with_a_refused_app_token_fails_at_start(redis_url, index_dir):
    with FakeSocketMode() as socket, \
            FakeSlackServer(token=BOT_TOKEN, app_token="xapp-1-other", socket_url=socket.url) as slack:
        done = run_serve(env_for(slack, redis_url, index_dir, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET=""))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(
        "citebot: SLACK_APP_TOKEN: Slack refused to open a Socket Mode connection: invalid_auth"
    )


@pytest.mark.e2e
def test_healthz_turns_503_when_the_socket_mode_connection_is_lost_and_200_when_it_is_back(
    redis_url, index_dir, tmp_path
):
    port = free_port()
    with FakeSocketMode() as socket, FakeSlackServer(token=BOT_TOKEN, socket_url=socket.url) as slack:
        # Socket Mode needs no signing secret: none is given.
        env = env_for(slack, redis_url, index_dir, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET="",
                      CITEBOT_SOCKET_MODE_GRACE_S="2", CITEBOT_REVIEW_CHANNEL="#citebot-review")
        log_path = tmp_path / "web.log"
        with open(log_path, "w") as log:
            web = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], cwd=ROOT,
                                   env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            def health() -> tuple[int, dict]:
                assert web.poll() is None, log_path.read_text()
                try:
                    r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                except httpx.HTTPError:
                    return 0, {}
                return r.status_code, r.json()

            wait_until(lambda: health()[1].get("socket_mode") == "connected", 30, "Socket Mode to connect")
            assert health()[0] == 200
            # Events arrive over the socket and are acked (enqueued) there.
            envelope = socket.send_event(mention_event("How many days of annual leave do I get?"))
            wait_until(lambda: envelope in socket.acks, 10, "the event to be acked over the socket")
            # No HTTP events route in Socket Mode: nothing could check a signature.
            assert httpx.post(f"http://127.0.0.1:{port}/slack/events", content="{}", timeout=2).status_code == 404

            socket.drop()
            wait_until(lambda: health()[0] == 503, 30, "/healthz to report the lost connection")
            assert health()[1]["socket_mode"].startswith("not connected for ")
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
            assert "citebot_socket_mode_connected 0.0" in metrics

            socket.restore()
            wait_until(lambda: health()[0] == 200, 60, "/healthz to recover after the reconnect")
        finally:
            web.terminate()
            web.wait(timeout=30)
    logged = log_path.read_text()
    assert "review channel: #citebot-review (CREVIEW)" in logged
    assert "Socket Mode: connection to Slack lost" in logged
    assert "Socket Mode: connected to Slack again" in logged
