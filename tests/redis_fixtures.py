"""Real Redis for tests: a database of its own, flushed before and after each test.

tests/conftest.py makes the `redis_url` fixture available to every test module.

`redis_url` points at CITEBOT_TEST_REDIS_URL (default redis://127.0.0.1:6379/15).
When no Redis answers, the test is skipped with a message saying how to start
one; under CI (env CI set) it fails instead, because CI always has a Redis and
a silent skip there would hide a broken setup.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit

import pytest
import redis
import redis.asyncio as aioredis

TEST_REDIS_URL = os.environ.get("CITEBOT_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PING_TIMEOUT_S = 1.0  # a local Redis answers in microseconds; this only bounds a dead port


def _db_number(url: str) -> int:
    path = urlsplit(url).path.strip("/")
    return int(path) if path else 0


def redis_problem(url: str = TEST_REDIS_URL) -> str | None:
    """None when Redis answers PING at `url`, else why not."""
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=PING_TIMEOUT_S, socket_timeout=PING_TIMEOUT_S) as client:
            client.ping()
    except (redis.RedisError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def require_redis(url: str = TEST_REDIS_URL) -> None:
    """Skips the test without Redis, or fails it under CI."""
    problem = redis_problem(url)
    if problem is None:
        return
    message = f"no Redis at {url} ({problem}); start one with `redis-server` or `.ci/run`"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def flush(url: str) -> None:
    # DB 0 is where a developer's real bot keeps its queue.
    if _db_number(url) == 0:
        raise RuntimeError(f"refusing to flush Redis DB 0 ({url}); point CITEBOT_TEST_REDIS_URL at another DB")
    with redis.Redis.from_url(url, socket_connect_timeout=PING_TIMEOUT_S, socket_timeout=PING_TIMEOUT_S) as client:
        client.flushdb()


@pytest.fixture
def redis_url() -> Iterator[str]:
    require_redis(TEST_REDIS_URL)
    flush(TEST_REDIS_URL)
    yield TEST_REDIS_URL
    flush(TEST_REDIS_URL)


@pytest.fixture(name="redis")
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A redis.asyncio client on the test's own Redis DB (`redis_url`, flushed around each test)."""
    client = aioredis.Redis.from_url(redis_url, socket_connect_timeout=5.0, socket_timeout=5.0)
    yield client
    await client.aclose()
