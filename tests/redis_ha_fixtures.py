"""Fixtures for the cluster and Sentinel tests (tests/conftest.py makes them available).

  redis_cluster   a 3-master, 3-replica cluster for the whole session (tests/redis_ha.py)
  cluster_url     its URL, every master flushed before and after the test
  sentinel_set    one master, one replica, three Sentinels; a fresh set per test,
                  because the tests fail its master over (a few seconds to start)

Without redis-server the tests are skipped, under CI (env CI set) they fail, as
with `redis_url`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.redis_ha import RedisClusterServers, SentinelSet


def _require_redis_server() -> None:
    if shutil.which("redis-server") and shutil.which("redis-cli"):
        return
    message = "cluster and Sentinel tests start their own redis-server and redis-cli (apt-get install redis-server)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory) -> Iterator[RedisClusterServers]:
    _require_redis_server()
    servers = RedisClusterServers(tmp_path_factory.mktemp("redis-cluster"))
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()


@pytest.fixture
def cluster_url(redis_cluster: RedisClusterServers) -> Iterator[str]:
    redis_cluster.flush()
    yield redis_cluster.url
    redis_cluster.flush()


@pytest.fixture
def sentinel_set(tmp_path_factory) -> Iterator[SentinelSet]:
    _require_redis_server()
    servers = SentinelSet(tmp_path_factory.mktemp("redis-sentinel"))
    try:
        servers.start()
        yield servers
    finally:
        servers.stop()
