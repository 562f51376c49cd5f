"""A running citebot (serve + workers, real Redis, fake Slack, fake LLM) as a pytest fixture.

tests/conftest.py makes the `citebot` and `index_dir` fixtures available to every
test module; `answers_in` and `button_value` are helpers to import.
"""

from __future__ import annotations

import pytest

from tests.harness import Citebot, start_citebot
from tests.kb_fixtures import mini_index
from tests.polling import wait_until


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    """The mini KB's index, built once per test module."""
    return mini_index(tmp_path_factory.mktemp("mini"))


@pytest.fixture
def citebot(tmp_path, redis_url, index_dir):
    """`citebot(workers=1, worker_args=(), **env)`: a started citebot on the test's Redis DB, stopped after the test."""
    made: list[Citebot] = []

    def start(*, workers: int = 1, worker_args: tuple[str, ...] = (), **env_extra) -> Citebot:
        bot = start_citebot(tmp_path / f"logs{len(made)}", redis_url=redis_url, index_dir=index_dir, workers=workers,
                            worker_args=worker_args, **env_extra)
        made.append(bot)
        return bot

    yield start
    for bot in made:
        bot.stop()


def answers_in(bot: Citebot, channel: str, thread_ts: str | None, count: int = 1, timeout: float = 20.0) -> list[dict]:
    return wait_until(lambda: len(bot.replies(channel, thread_ts)) >= count and bot.replies(channel, thread_ts),
                      timeout, f"{count} post(s) in {channel}/{thread_ts}")


def button_value(message: dict, action_id: str) -> str:
    return next(
        el["value"] for b in message["blocks"] if b["type"] == "actions" for el in b["elements"]
        if el["action_id"] == action_id
    )
