"""Fault drills on replicated Redis: 100 questions through web + 2 workers, every part a
real process (tests/faults/test_faults.py's drill), while

- the Sentinel-managed master is SIGKILLed with answers in flight, and the replica takes over;
- a cluster master is SIGKILLed during the burst, and its replica takes over;
- a queue shard's slot is migrated to another master while jobs flow (ASK, TRYAGAIN, MOVED).

Each counts lost and duplicated answers: both must be 0. These servers keep nothing on
disk: what survives a failover is what the replica had (docs/DESIGN.md, "Replicas and
failover"), and citebot waits for the replica before it acks Slack or a post.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.conftest import LLM_TIMEOUT_S, WORKER_ARGS
from tests.faults.drill import GOOD
from tests.faults.test_faults import Timeline, drill
from tests.harness import Citebot, start_citebot
from tests.redis_ha import RedisClusterServers, SentinelSet

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]


@pytest.fixture
def ha_citebot(index_dir, tmp_path) -> Iterator:
    made: list[Citebot] = []

    def start(redis_url: str) -> Citebot:
        bot = start_citebot(
            tmp_path / "logs", redis_url=redis_url, index_dir=index_dir, workers=2,
            worker_args=WORKER_ARGS, fakes_as_processes=True, CITEBOT_LLM_TIMEOUT=LLM_TIMEOUT_S,
        )
        made.append(bot)
        # Answers take a second, so a fault at 3 s finds jobs in flight.
        bot.llm.set_script([], default={"text": GOOD, "delay": 1.0})
        return bot

    yield start
    for bot in made:
        bot.stop()


@pytest.fixture
def fresh_cluster(tmp_path) -> Iterator[RedisClusterServers]:
    """A cluster of its own: a drill kills a master or moves a slot. A master is failed
    over after 1 s without an answer, so the outage fits in the drill's scaled-down
    Slack retries (1, 2, 4 s; Slack's own are 1 and 5 minutes)."""
    servers = RedisClusterServers(tmp_path / "cluster", node_timeout_ms=1000)
    try:
        yield servers.start()
    finally:
        servers.stop()


def test_sentinel_master_killed_mid_answer(sentinel_set: SentinelSet, ha_citebot, fault_report) -> None:
    bot = ha_citebot(sentinel_set.url())
    old = sentinel_set.current_master_port()

    def kill_master() -> None:
        sentinel_set.node(old).kill()

    drill(bot, "sentinel: master SIGKILLed", fault_report, timeline=Timeline((3.0, kill_master)),
          notes="at 3 s, answers in flight; the replica promoted")
    assert sentinel_set.current_master_port() == sentinel_set.replica.port
    assert "Redis" in bot.worker_logs(), "no worker saw the failover: the drill tested nothing"


def test_cluster_master_killed_mid_burst(fresh_cluster: RedisClusterServers, ha_citebot, fault_report) -> None:
    bot = ha_citebot(fresh_cluster.url)
    victim = fresh_cluster.masters()[0]

    def kill_master() -> None:
        victim.kill()

    drill(bot, "cluster: a master SIGKILLed", fault_report, timeline=Timeline((3.0, kill_master)),
          notes="at 3 s, a third of the shards on it; its replica promoted")
    assert victim.port not in {m.port for m in fresh_cluster.masters()}
    assert fresh_cluster.healthy()


def test_cluster_slot_resharded_while_jobs_flow(fresh_cluster: RedisClusterServers, ha_citebot, fault_report) -> None:
    from redis.crc import key_slot

    from bot.jobs.queue import shards_of

    bot = ha_citebot(fresh_cluster.url)
    # The busiest slots there are: two shards' streams with their dedupe keys.
    shards = shards_of(fresh_cluster.url)[:2]
    moved: list[int] = []

    def reshard() -> None:
        for shard in shards:
            slot = key_slot(shard.stream.encode())
            source = fresh_cluster.master_of(shard.stream)
            target = next(m for m in fresh_cluster.masters() if m.port != source.port)
            moved.append(fresh_cluster.migrate_slot(slot, target))

    drill(bot, "cluster: 2 slots resharded", fault_report, timeline=Timeline((3.0, reshard)),
          notes="queue shards' slots migrated key by key mid-run")
    assert len(moved) == 2 and all(moved), f"keys moved per slot: {moved}"
    for shard in shards:
        assert fresh_cluster.master_of(shard.stream).port != 0
