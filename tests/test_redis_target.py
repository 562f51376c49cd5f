"""CITEBOT_REDIS_URL and CITEBOT_REDIS_MODE read into a RedisTarget: the mode, the nodes,
the Sentinel master, what messages may show (never the password), what is refused; and how
long a cluster's or Sentinel master's client keeps trying while no master answers."""

from __future__ import annotations

import socket
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError, TimeoutError as RedisTimeoutError

from bot.config import ConfigError, load_settings
from bot.store.connection import FAILOVER_BACKOFF_CAP_S, connect, redis_location
from bot.store.redis_target import BadRedisUrl, RedisMode, RedisTarget
from citebot_core.deadline import deadline_in


@pytest.mark.parametrize(
    ("url", "mode", "nodes"),
    [
        ("redis://localhost:6379/0", RedisMode.SINGLE, [("localhost", 6379)]),
        ("rediss://u:p@cache.example:6380/2", RedisMode.SINGLE, [("cache.example", 6380)]),
        ("redis://h1:7000,h2:7001,h3", RedisMode.CLUSTER, [("h1", 7000), ("h2", 7001), ("h3", 6379)]),
        ("redis+sentinel://s1,s2:26380/mymaster/3", RedisMode.SENTINEL, [("s1", 26379), ("s2", 26380)]),
        ("redis://[::1]:7000,[::1]:7001", RedisMode.CLUSTER, [("::1", 7000), ("::1", 7001)]),
    ],
)
def test_the_mode_follows_from_the_url(url: str, mode: RedisMode, nodes: list) -> None:
    target = RedisTarget(url).check()
    assert (target.resolved_mode, target.nodes) == (mode, nodes)


def test_one_endpoint_is_a_cluster_when_the_mode_says_so() -> None:
    target = RedisTarget("rediss://citebot:pw@clustercfg.example:6379", mode=RedisMode.CLUSTER).check()
    assert target.resolved_mode is RedisMode.CLUSTER and target.tls
    assert (target.username, target.password) == ("citebot", "pw")


def test_sentinel_master_and_db() -> None:
    target = RedisTarget("rediss+sentinel://:s%40cret@s1:26379/mymaster/4")
    assert target.sentinel_master == ("mymaster", 4) and target.db == 4 and target.tls
    assert target.password == "s@cret"


def test_messages_never_hold_the_password() -> None:
    for url in ("redis://:hunter2@h:1/0", "rediss://u:hunter2@h1:1,h2:2", "redis+sentinel://u:hunter2@s:26379/m/0"):
        where = redis_location(url)
        assert "hunter2" not in where and where


@pytest.mark.parametrize(
    ("target", "why"),
    [
        (RedisTarget("redis+sentinel://s1:26379"), "names the master"),
        (RedisTarget("redis://h1:7000,h2:7001/3"), "only database 0"),
        (RedisTarget("redis://h1:1,h2:2", mode=RedisMode.SINGLE), "names 2 hosts"),
        (RedisTarget("redis://h:x/0"), "not a number"),
        (RedisTarget("rediss://h:1/0", cert_file="c.pem"), "both CITEBOT_REDIS_CERT_FILE"),
        (RedisTarget("http://h:1"), "must be a redis"),
    ],
)
def test_what_cannot_work_is_refused_with_the_reason(target: RedisTarget, why: str) -> None:
    with pytest.raises(BadRedisUrl, match=why):
        target.check()


def test_settings_refuse_a_bad_url_in_one_line_without_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CITEBOT_REDIS_URL", "redis+sentinel://:hunter2@s1:26379")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "CITEBOT_REDIS_URL" in str(caught.value) and "hunter2" not in str(caught.value)
    monkeypatch.setenv("CITEBOT_REDIS_URL", "redis://h1:7000,h2:7001")
    monkeypatch.setenv("CITEBOT_REDIS_MODE", "Cluster")
    assert load_settings().redis.resolved_mode is RedisMode.CLUSTER


# ------------------------------------------------------------ a failover's wait, bounded


def _closed_ports(count: int) -> list[int]:
    """Ports nothing listens on: a connection to them is refused at once, as to a killed master."""
    ports = []
    for _ in range(count):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    return ports


@pytest.mark.parametrize("mode", ["cluster", "sentinel"])
async def test_a_command_keeps_trying_through_a_failover_until_its_wait_or_the_deadline(mode: str) -> None:
    ports = _closed_ports(2)
    nodes = ",".join(f"127.0.0.1:{p}" for p in ports)
    url = f"redis://{nodes}" if mode == "cluster" else f"redis+sentinel://{nodes}/mymaster/0"

    client = connect(url, timeout=1.0, failover_wait=0.6)
    started = time.monotonic()
    with pytest.raises(RedisConnectionError):
        await client.ping()
    took = time.monotonic() - started
    await client.aclose()
    # Tried again with backoff for its wait (the old client gave up on the first refusal), not
    # longer: a try whose backoff would end past the wait is not started.
    assert 0.6 - FAILOVER_BACKOFF_CAP_S <= took < 1.2, took

    client = connect(url, timeout=1.0, failover_wait=30.0)
    started = time.monotonic()
    # The last try may be cut off by the deadline itself (a timeout) rather than refused.
    with deadline_in(0.5), pytest.raises((RedisConnectionError, RedisTimeoutError)):
        await client.ping()
    took = time.monotonic() - started
    await client.aclose()
    assert 0.5 - FAILOVER_BACKOFF_CAP_S <= took < 0.9, f"a Slack request's deadline bounds the wait: {took}"


@pytest.mark.parametrize("mode", ["cluster", "sentinel"])
async def test_a_node_that_never_answers_is_given_up_at_the_deadline(mode: str) -> None:
    """A node that accepts the connection and says nothing (a paused or cut-off master): each try
    would wait for its socket timeout; a Slack request's deadline cuts it short."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # connections complete in the backlog; nobody reads them
        node = f"127.0.0.1:{silent.getsockname()[1]}"
        url = f"redis://{node},{node}" if mode == "cluster" else f"redis+sentinel://{node}/mymaster/0"
        client = connect(url, timeout=5.0)
        started = time.monotonic()
        with deadline_in(0.5), pytest.raises(RedisTimeoutError):
            await client.ping()
        took = time.monotonic() - started
        await client.aclose()
    assert took < 1.0, took
