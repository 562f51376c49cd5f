"""Redis connections: one way to open a client, one way to name its server in messages.

Every process opens its clients here (the web process's queue, a worker's
consumer and post ledger, the CLI), so that the cluster and TLS options a
deployment needs are added in one place.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import redis.asyncio as aioredis


def redis_location(redis_url: str) -> str:
    """host:port/db for messages: never the password a URL may carry."""
    parts = urlsplit(redis_url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}{parts.path or '/0'}"


def connect(redis_url: str, *, timeout: float | None) -> aioredis.Redis:
    """A client whose connect and every command give up after `timeout` seconds."""
    return aioredis.Redis.from_url(
        redis_url,
        decode_responses=True,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
    )


__all__ = ["connect", "redis_location"]
