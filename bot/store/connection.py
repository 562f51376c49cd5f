"""Redis connections: one way to open a client, one way to name its server in messages.

Every process opens its clients here (the web process's queue, a worker's
consumer and post ledger, the CLI), so that one server, a Sentinel-managed
master and a cluster (bot.store.redis_target says how each is named), TLS
and ACL users are handled in one place.

What each mode's client does when the server changes under it:

- single: a dropped connection is opened again on the next command; the
  command that hit it fails, and its caller's retry (a job's, Slack's for an
  enqueue) covers it.
- sentinel: every new connection asks the Sentinels where the master is now,
  so after a failover the next command goes to the promoted replica.
- cluster: redis-py's RedisCluster follows MOVED and ASK (a slot migrating)
  itself, and after a connection error reads the slot map again from the nodes
  still up.

Through a failover (sentinel and cluster): a command that fails because its
master is gone (a connection error, a timeout, CLUSTERDOWN, TRYAGAIN, the old
master now read-only) is tried again, after a short backoff and with the
topology found anew (the slot map read again, the Sentinels asked again), until
it succeeds or `failover_wait` seconds have passed since it was first sent.
Never past the current deadline (citebot_core.deadline): the web process gives
each Slack request one (bot.inbound.web), so every Redis command of the request,
retries included, ends in time for Slack's ack; each try is cut off at the
deadline too. `through_failover` runs a step of several commands (a pipeline)
the same way; commands inside a step that is being retried are tried once, so
the waits do not multiply.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import Sentinel
from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    ClusterDownError,
    ConnectionError as RedisConnectionError,
    ReadOnlyError,
    RedisClusterException,
    TimeoutError as RedisTimeoutError,
    TryAgainError,
)

from bot.store.redis_target import RedisMode, RedisTarget, as_target
from citebot_core.deadline import time_left
from citebot_core.retry import backoff_delay

T = TypeVar("T")
log = logging.getLogger(__name__)

# redis-py's own tries of a cluster command after a connection error or
# CLUSTERDOWN, each after reading the slot map again. They follow one another
# at once; the waiting for a failover is done by `through_failover`, with backoff.
CLUSTER_RETRIES = 1
# How long a command of a cluster or Sentinel client keeps trying through a
# failover when no deadline is shorter: a master's failover takes the cluster's
# node timeout (Sentinel's down-after time) plus about a second. Longer
# failovers reach the caller as the error (a worker's loop pauses and reads on).
FAILOVER_WAIT_S = 5.0
# The backoff between tries: 50 ms doubling to 400 ms, each between half and
# all of that, so that the clients a failover hit together do not all come back at once.
FAILOVER_BACKOFF_S = 0.05
FAILOVER_BACKOFF_CAP_S = 0.4

# What a failover looks like from the client: the old master refuses or does not
# answer, the cluster is down for its slots or a slot is moving, the old master
# came back as a replica. A wrong password is no failover.
_FAILOVER_ERRORS = (RedisConnectionError, RedisTimeoutError, ClusterDownError, TryAgainError, ReadOnlyError)
_NOT_FAILOVER = (AuthenticationError, AuthorizationError)
# Set while a step is being tried through a failover: the commands inside it are tried once each.
_retrying: ContextVar[bool] = ContextVar("citebot_redis_failover_retry", default=False)


def redis_location(target: RedisTarget | str) -> str:
    """host:port/db (or the cluster's, the Sentinels' nodes) for messages: never the password a URL may carry."""
    try:
        return as_target(target).location()
    except ValueError:
        return "an unreadable Redis URL"


def connect(target: RedisTarget | str, *, timeout: float | None,
            failover_wait: float = FAILOVER_WAIT_S) -> aioredis.Redis:
    """A client whose connect and every command give up after `timeout` seconds.

    In sentinel and cluster mode a command is tried through a failover for up
    to `failover_wait` seconds (never past the current deadline): see the module.

    A cluster client is returned typed as a Redis: it offers the same command
    methods citebot calls (a test runs the queue, the ledger and the consumer
    on both), and every multi-key command or script of citebot's touches keys
    of one hash slot (bot.store.keys).
    """
    target = as_target(target)
    mode = target.resolved_mode
    common: dict[str, Any] = {
        "decode_responses": True,
        "socket_connect_timeout": timeout,
        "socket_timeout": timeout,
    }
    tls = _tls_options(target)
    if mode is RedisMode.CLUSTER:
        return cast(aioredis.Redis, _cluster(target, common, tls, failover_wait))
    if mode is RedisMode.SENTINEL:
        return _sentinel_master(target, common, tls, failover_wait)
    return aioredis.Redis.from_url(target.url, **common, **tls)


async def through_failover(client: Any, step: Callable[[], Awaitable[T]]) -> T:
    """`step()` (a few commands of `client`'s, such as a pipeline), tried through a failover
    as one command of the client is; with one server, once."""
    retry = getattr(client, "failover_retry", None)
    if isinstance(retry, _Failover):
        return await retry.run(step)
    return await step()


class _Failover:
    """Tries a command, or a step of several, again while its master is being failed over;
    `rediscover` before each new try makes the client find the master anew."""

    def __init__(self, wait: float, rediscover: Callable[[], Awaitable[None]]):
        self.wait = wait
        self._rediscover = rediscover

    async def run(self, step: Callable[[], Awaitable[T]]) -> T:
        if _retrying.get():
            return await step()  # the step around this command is tried again as a whole
        token = _retrying.set(True)
        try:
            return await self._tries(step)
        finally:
            _retrying.reset(token)

    async def _tries(self, step: Callable[[], Awaitable[T]]) -> T:
        started = time.monotonic()
        retry = 0
        while True:
            try:
                result = await _before_deadline(step)
            except _NOT_FAILOVER:
                raise
            except _FAILOVER_ERRORS as exc:
                delay = backoff_delay(retry, base=FAILOVER_BACKOFF_S, cap=FAILOVER_BACKOFF_CAP_S, jitter=-0.5)
                end = started + self.wait
                if (left := time_left()) is not None:
                    end = min(end, time.monotonic() + left)
                if time.monotonic() + delay >= end:
                    raise
                if not retry:
                    log.info("Redis: %s: %s; trying again for up to %.1fs (a failover?)", type(exc).__name__, exc,
                             end - time.monotonic())
                retry += 1
                await self._rediscover()
                await asyncio.sleep(delay)
            else:
                if retry:
                    log.info("Redis answered on try %d, %.2fs after the first", retry + 1, time.monotonic() - started)
                return result


async def _before_deadline(step: Callable[[], Awaitable[T]]) -> T:
    left = time_left()
    if left is None:
        return await step()
    if left <= 0:
        raise RedisTimeoutError("no time left for a Redis command")
    try:
        async with asyncio.timeout(left) as scope:
            return await step()
    except TimeoutError as exc:
        if not scope.expired():
            raise
        # The deadline's: as a RedisError, which every caller of a Redis command handles.
        raise RedisTimeoutError(f"Redis did not answer within the {left:.2f}s left") from exc


def _tls_options(target: RedisTarget) -> dict[str, Any]:
    if not target.tls:
        return {}
    options: dict[str, Any] = {"ssl_cert_reqs": "required"}
    if target.ca_file:
        options["ssl_ca_certs"] = target.ca_file
    if target.cert_file:
        options["ssl_certfile"] = target.cert_file
        options["ssl_keyfile"] = target.key_file
    return options


class _Cluster(RedisCluster):
    """A RedisCluster that waits out a failover and outlives one in which it lost every node it knew.

    Every command goes through `through_failover`. redis-py 5.3 retries a
    command only when the command itself failed: when reading the slot map
    again failed (it still named the dead master, whose COMMAND table it asks
    for), the error reached the caller at once: the 500 a Slack event got from
    the first command after a failover.

    redis-py 5.3 also drops a node from its startup list after each connection
    error and replaces the list by the nodes it found, so a failover can leave
    it with none; from then on every command fails with a RedisClusterException,
    which is not a RedisError, for good (a worker was seen to crash of it). Here
    the nodes the URL names are put back, and the error comes out as a
    ConnectionError, which every caller already treats as Redis away for a moment.
    """

    def __init__(self, *, seeds: list[tuple[str, int]], failover_wait: float, **kwargs: Any):
        super().__init__(**kwargs)
        self._seeds = seeds
        self.failover_retry = _Failover(failover_wait, self._rediscover)

    async def initialize(self) -> RedisCluster:
        try:
            return await super().initialize()
        except RedisClusterException as exc:
            raise self._unreachable(exc) from exc

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        return await self.failover_retry.run(lambda: self._execute_once(*args, **kwargs))

    async def _execute_once(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().execute_command(*args, **kwargs)
        except RedisClusterException as exc:
            raise self._unreachable(exc) from exc

    async def _rediscover(self) -> None:
        self._put_seeds_back()
        self._initialize = True

    def _unreachable(self, exc: RedisClusterException) -> RedisConnectionError:
        self._put_seeds_back()
        self._initialize = True  # read the slot map again on the next command
        return RedisConnectionError(f"Redis Cluster: {exc}")

    def _put_seeds_back(self) -> None:
        startup = self.nodes_manager.startup_nodes
        for host, port in self._seeds:
            node = ClusterNode(host, port, **self.connection_kwargs)
            startup.setdefault(node.name, node)


def _cluster(target: RedisTarget, common: dict[str, Any], tls: dict[str, Any], failover_wait: float) -> RedisCluster:
    nodes = [ClusterNode(host, port) for host, port in target.nodes]
    # redis-py declares connection_pool abstract on the commands mixin; a cluster has none.
    return _Cluster(  # type: ignore[abstract]
        seeds=target.nodes,
        failover_wait=failover_wait,
        startup_nodes=nodes,
        username=target.username,
        password=target.password,
        ssl=target.tls,
        cluster_error_retry_attempts=CLUSTER_RETRIES,
        # A dead node refuses at once: no tries of the same address with backoff
        # (redis-py's default), `through_failover` waits and asks the cluster anew.
        connection_error_retry_attempts=0,
        # Every node's address comes from the cluster itself (CLUSTER SLOTS):
        # a managed cluster's certificate names its endpoint, not each node.
        ssl_check_hostname=False,
        **common,
        **tls,
    )


class _SentinelMaster(aioredis.Redis):
    """The master's client, which waits out a failover and also closes the Sentinel connections it asked."""

    sentinel_manager: Sentinel | None = None
    failover_retry: _Failover | None = None

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        once = super().execute_command
        if self.failover_retry is None:
            return await once(*args, **options)
        return await self.failover_retry.run(lambda: once(*args, **options))

    async def _rediscover(self) -> None:
        # Connections to the old master are of no use: each new one asks the Sentinels.
        await self.connection_pool.disconnect(inuse_connections=False)

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        if self.sentinel_manager is not None:
            for client in self.sentinel_manager.sentinels:
                await client.aclose()


def _sentinel_master(target: RedisTarget, common: dict[str, Any], tls: dict[str, Any],
                     failover_wait: float) -> aioredis.Redis:
    name, db = target.sentinel_master
    # Sentinels speak TLS when the master does (rediss+sentinel://), and need
    # no password of the master's: Sentinel's own auth is set apart (requirepass in sentinel.conf).
    sentinel_options = {k: v for k, v in common.items() if k.startswith("socket_")}
    sentinel_options |= {"ssl": True, **tls} if target.tls else {}
    sentinel = Sentinel(target.nodes, sentinel_kwargs=sentinel_options)
    client = sentinel.master_for(
        name,
        redis_class=_SentinelMaster,
        db=db,
        username=target.username,
        password=target.password,
        ssl=target.tls,
        **common,
        **tls,
    )
    client.sentinel_manager = sentinel
    client.failover_retry = _Failover(failover_wait, client._rediscover)
    return client


def connect_blocking(target: RedisTarget | str, *, timeout: float) -> Any:
    """A blocking client in the same mode, for the container health check (a short-lived process
    that looks for one heartbeat and has no event loop)."""
    import redis
    from redis.cluster import ClusterNode as BlockingNode, RedisCluster as BlockingCluster
    from redis.sentinel import Sentinel as BlockingSentinel

    target = as_target(target)
    common: dict[str, Any] = {"socket_connect_timeout": timeout, "socket_timeout": timeout}
    tls = _tls_options(target)
    mode = target.resolved_mode
    if mode is RedisMode.CLUSTER:
        return BlockingCluster(
            startup_nodes=[BlockingNode(h, p) for h, p in target.nodes], username=target.username,
            password=target.password, ssl=target.tls, ssl_check_hostname=False, **common, **tls,
        )
    if mode is RedisMode.SENTINEL:
        name, db = target.sentinel_master
        sentinel_options = dict(common) | ({"ssl": True, **tls} if target.tls else {})
        return BlockingSentinel(target.nodes, sentinel_kwargs=sentinel_options).master_for(
            name, db=db, username=target.username, password=target.password, ssl=target.tls, **common, **tls
        )
    return redis.Redis.from_url(target.url, **common, **tls)


__all__ = ["FAILOVER_WAIT_S", "connect", "connect_blocking", "redis_location", "through_failover"]
