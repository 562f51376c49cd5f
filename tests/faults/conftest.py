"""Fixtures of the fault suite: a private, persistent Redis; a citebot factory
(tests/harness.py, every part its own process); and the report table, printed at
the end of the run."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.drill import GOOD, TABLE_HEAD, Tally
from tests.harness import Citebot, RedisServer, start_citebot

REPORT_KEY = pytest.StashKey[list[Tally]]()
REPORT_FILE_KEY = pytest.StashKey[Path]()

# Short timings, so each scenario takes seconds: a dead worker's job is taken
# over after 5 s, queue retries start at 0.2 s, an LLM request gives up after 2 s.
WORKER_ARGS = ("--concurrency", "16", "--visibility-timeout", "5", "--backoff-base", "0.2")
LLM_TIMEOUT_S = 2.0


@pytest.fixture(scope="session")
def fault_redis(tmp_path_factory) -> Iterator[RedisServer]:
    """Not the machine's Redis on 6379: this one gets killed and restarted."""
    if shutil.which("redis-server") is None:
        message = "the fault suite starts its own redis-server, and none is installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    server = RedisServer(tmp_path_factory.mktemp("fault-redis"), persistent=True).start()
    yield server
    server.stop()


@dataclass
class FaultStore:
    """The Redis a drill runs on: its URL, how to empty it, and its name in the report."""

    mode: str
    url: str
    flush: Callable[[], None]


# The drills that do not take Redis itself down run on every kind of Redis citebot
# supports (docs/DESIGN.md, "Redis modes"); Redis's own failures have their drills
# in test_redis_ha_faults.py and test_redis_crashes_and_restarts_mid_run.
@pytest.fixture(params=["single", "sentinel", "cluster"])
def fault_store(request, fault_redis) -> FaultStore:
    if request.param == "single":
        return FaultStore("single", fault_redis.url, fault_redis.flush)
    if request.param == "sentinel":
        servers = request.getfixturevalue("sentinel_set")
        return FaultStore("sentinel", servers.url(), servers.flush)
    servers = request.getfixturevalue("redis_cluster")
    return FaultStore("cluster", servers.url, servers.flush)


@pytest.fixture
def single_store(fault_redis) -> FaultStore:
    return FaultStore("single", fault_redis.url, fault_redis.flush)


@pytest.fixture
def cluster(fault_store, index_dir, tmp_path) -> Iterator:
    """`cluster(worker_args=...)`: serve + two workers on the drill's Redis, fakes as processes."""
    yield from _citebot_on(fault_store, index_dir, tmp_path)


@pytest.fixture
def single_cluster(single_store, index_dir, tmp_path) -> Iterator:
    """`cluster` on the fault Redis alone: for the drill that kills it."""
    yield from _citebot_on(single_store, index_dir, tmp_path)


def _citebot_on(store: FaultStore, index_dir, tmp_path) -> Iterator:
    made: list[Citebot] = []

    def start(*, worker_args: tuple[str, ...] = ()) -> Citebot:
        store.flush()
        bot = start_citebot(
            tmp_path / "logs",
            redis_url=store.url,
            index_dir=index_dir,
            workers=2,
            worker_args=(*WORKER_ARGS, *worker_args),
            fakes_as_processes=True,
            CITEBOT_LLM_TIMEOUT=LLM_TIMEOUT_S,
        )
        made.append(bot)
        bot.llm.set_script([], default=GOOD)
        DRILL_REDIS[bot.url] = store.mode
        return bot

    yield start
    for bot in made:
        bot.stop()
    store.flush()


# The Redis mode of each running citebot (by its URL), for the drill's row in the report.
DRILL_REDIS: dict[str, str] = {}


@pytest.fixture(scope="session")
def fault_report(request, tmp_path_factory):
    """`add(tally)`: one row of the table, written to a file under the pytest tmp dir at once."""
    rows: list[Tally] = []
    path = tmp_path_factory.getbasetemp() / "fault_table.txt"
    request.config.stash[REPORT_KEY] = rows
    request.config.stash[REPORT_FILE_KEY] = path

    def add(tally: Tally) -> None:
        rows.append(tally)
        path.write_text(render(rows))
        print(f"\n{TABLE_HEAD}\n{tally.row()}")

    return add


def render(rows: list[Tally]) -> str:
    return "\n".join([TABLE_HEAD, *(r.row() for r in rows)]) + "\n"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    rows = config.stash.get(REPORT_KEY, None)
    if not rows:
        return
    terminalreporter.section("fault suite")
    terminalreporter.write(render(rows))
    terminalreporter.write_line(f"(also in {config.stash[REPORT_FILE_KEY]})")
    terminalreporter.write_line(
        "Redis runs with appendonly yes + appendfsync always; a Redis without persistence forgets "
        "queued jobs, dedupe keys and post records on a restart: unsupported."
    )
