"""Redis connections: one way to open a client, one way to name its server in messages.

Every process opens its clients here (the web process's queue, a worker's
consumer and post ledger, the CLI), so that one server, a Sentinel-managed
master and a cluster (citebot_core.redis_target says how each is named), TLS
and ACL users are handled in one place.

What each mode's client does when the server changes under it:

- single: a dropped connection is opened again on the next command; the
  command that hit it fails, and its caller's retry (a job's, Slack's for an
  enqueue) covers it.
- sentinel: every new connection asks the Sentinels where the master is now,
  so after a failover the next command goes to the promoted replica.
- cluster: redis-py's RedisCluster follows MOVED and ASK (a slot migrating)
  itself, and after a connection error re-reads the slot map from the nodes
  still up and tries again, so a replica promoted by the cluster takes over
  without the caller noticing more than a slow command, or one failure.
"""

from __future__ import annotations

from typing import Any, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import Sentinel
from redis.exceptions import ConnectionError as RedisConnectionError, RedisClusterException

from citebot_core.redis_target import RedisMode, RedisTarget, as_target

# A cluster command is tried this many more times after a connection error or
# CLUSTERDOWN, each after the slot map is read again: a failover of a master
# takes the cluster's node timeout plus about a second.
CLUSTER_RETRIES = 5


def redis_location(target: RedisTarget | str) -> str:
    """host:port/db (or the cluster's, the Sentinels' nodes) for messages: never the password a URL may carry."""
    try:
        return as_target(target).location()
    except ValueError:
        return "an unreadable Redis URL"


def connect(target: RedisTarget | str, *, timeout: float | None) -> aioredis.Redis:
    """A client whose connect and every command give up after `timeout` seconds.

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
        return cast(aioredis.Redis, _cluster(target, common, tls))
    if mode is RedisMode.SENTINEL:
        return _sentinel_master(target, common, tls)
    return aioredis.Redis.from_url(target.url, **common, **tls)


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
    """A RedisCluster that outlives a failover in which it lost every node it knew.

    redis-py 5.3 drops a node from its startup list after each connection error
    and replaces the list by the nodes it found, so a failover can leave it with
    none; from then on every command fails with a RedisClusterException, which
    is not a RedisError, for good (a worker was seen to crash of it). Here the
    nodes the URL names are put back, and the error comes out as a
    ConnectionError, which every caller already treats as Redis away for a moment.
    """

    def __init__(self, *, seeds: list[tuple[str, int]], **kwargs: Any):
        super().__init__(**kwargs)
        self._seeds = seeds

    async def initialize(self) -> RedisCluster:
        try:
            return await super().initialize()
        except RedisClusterException as exc:
            raise self._unreachable(exc) from exc

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().execute_command(*args, **kwargs)
        except RedisClusterException as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: RedisClusterException) -> RedisConnectionError:
        startup = self.nodes_manager.startup_nodes
        for host, port in self._seeds:
            node = ClusterNode(host, port, **self.connection_kwargs)
            startup.setdefault(node.name, node)
        self._initialize = True  # read the slot map again on the next command
        return RedisConnectionError(f"Redis Cluster: {exc}")


def _cluster(target: RedisTarget, common: dict[str, Any], tls: dict[str, Any]) -> RedisCluster:
    nodes = [ClusterNode(host, port) for host, port in target.nodes]
    # redis-py declares connection_pool abstract on the commands mixin; a cluster has none.
    return _Cluster(  # type: ignore[abstract]
        seeds=target.nodes,
        startup_nodes=nodes,
        username=target.username,
        password=target.password,
        ssl=target.tls,
        cluster_error_retry_attempts=CLUSTER_RETRIES,
        # Every node's address comes from the cluster itself (CLUSTER SLOTS):
        # a managed cluster's certificate names its endpoint, not each node.
        ssl_check_hostname=False,
        **common,
        **tls,
    )


class _SentinelMaster(aioredis.Redis):
    """The master's client, which also closes the Sentinel connections it asked."""

    sentinel_manager: Sentinel | None = None

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await super().aclose(close_connection_pool)
        if self.sentinel_manager is not None:
            for client in self.sentinel_manager.sentinels:
                await client.aclose()


def _sentinel_master(target: RedisTarget, common: dict[str, Any], tls: dict[str, Any]) -> aioredis.Redis:
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


__all__ = ["connect", "connect_blocking", "redis_location"]
