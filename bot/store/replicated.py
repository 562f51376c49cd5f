"""A write that returns once a replica has it too: WAIT on the connection that wrote.

Replication in Redis is asynchronous: a master that dies right after a write
may take it along, and the replica promoted in its place never saw it
(docs/DESIGN.md, "Replicas and failover", lists what that means for each key).
For the two writes whose loss Slack cannot make up for, the enqueue that
Slack's ack stands for and the record of a post, citebot waits until one
replica acknowledges the write (WAIT 1), for at most REPLICA_WAIT_MS.

WAIT counts the writes of its own connection, so it goes in one pipeline with
the write: on one server over one connection, in a cluster to the node that
holds the key (a cluster pipeline sends each node's commands over one
connection). One Redis without replicas skips it: WAIT there would only ever
time out.

Through a failover the write and its WAIT are tried again as one step
(bot.store.connection `through_failover`), the WAIT then on the master found
anew. `Replicated.tries` says whether it was: a try after one whose reply was
lost may find what that try wrote, which no WAIT of its connection confirms
(bot.jobs.queue does not ack such an enqueue).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError, NoScriptError, RedisClusterException
from redis.typing import EncodableT

from bot.store.connection import through_failover
from bot.store.redis_target import RedisMode, RedisTarget, as_target

# Replicas acknowledge within a millisecond or two on a healthy link; past
# this the replica is down or far behind, and waiting longer helps nobody.
REPLICA_WAIT_MS = 500


# A client of one server (or of a Sentinel's master) or of a cluster: both run the same scripts.
RedisClient = aioredis.Redis | RedisCluster


def has_replicas(target: RedisTarget | str) -> bool:
    """Sentinel and cluster deployments have replicas by design; one server has none to wait for."""
    return as_target(target).resolved_mode in (RedisMode.SENTINEL, RedisMode.CLUSTER)


@dataclass(frozen=True)
class Replicated:
    reply: Any  # the script's
    replicas: int  # replicas that acknowledged the connection's writes (WAIT's reply)
    tries: int = 1  # more than one: a failover made the step run again


async def run_replicated(
    redis: RedisClient, script: AsyncScript, keys: list[str], args: list[EncodableT], *,
    wait_ms: int = REPLICA_WAIT_MS,
) -> Replicated:
    """Runs `script`, then WAIT 1 on the same connection."""
    tries = 0

    async def step() -> Replicated:
        nonlocal tries
        tries += 1
        for attempt in (1, 2):
            try:
                reply, replicas = await _script_and_wait(redis, script, keys, args, wait_ms)
                return Replicated(reply, replicas, tries)
            except NoScriptError:
                # A fresh node (a promoted replica, a restart) has no scripts cached.
                if attempt == 2:
                    raise
                script.sha = await redis.script_load(script.script)
        raise AssertionError("unreachable")

    return await through_failover(redis, step)


async def _script_and_wait(redis: RedisClient, script: AsyncScript, keys: list[str], args: list[EncodableT],
                           wait_ms: int) -> tuple[Any, int]:
    if isinstance(redis, RedisCluster):
        await redis.initialize()  # the slot map, read once per client (a no-op after)
        node = redis.get_node_from_key(keys[0])
        pipe = redis.pipeline()
        # execute_command: the cluster pipeline refuses its evalsha() method (a
        # script's keys could span nodes); these keys share one slot by design.
        pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        pipe.execute_command("WAIT", 1, wait_ms, target_nodes=node)
    else:
        pipe = redis.pipeline(transaction=False)
        pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        pipe.execute_command("WAIT", 1, wait_ms)
    try:
        reply, replicas = await pipe.execute()
    except RedisClusterException as exc:
        # Not a RedisError: the slot's node is gone mid-failover. Callers retry a ConnectionError.
        raise RedisConnectionError(f"Redis Cluster: {exc}") from exc
    return reply, int(replicas)


__all__ = ["REPLICA_WAIT_MS", "Replicated", "has_replicas", "run_replicated"]
