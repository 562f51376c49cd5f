"""A running citebot (serve + workers, real Redis, fake Slack, fake LLM) as a pytest fixture.

tests/conftest.py makes the `citebot` and `index_dir` fixtures available to every
test module; `answers_in` and `button_value` are helpers to import.
"""

from __future__ import annotations

import pytest

from kb_index import build_index
from tests.fakes import FakeLLMServer
from tests.fakes.slack_server import FakeSlackServer
from tests.kb_fixtures import write_mini_kb
from tests.slack_harness import BOT_TOKEN, Citebot, free_port, make_env, wait_until


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("flow")
    build_index(write_mini_kb(root / "kb"), root / "index")
    return root / "index"


@pytest.fixture
def citebot(tmp_path, redis_url, index_dir):
    made = []

    def start(*, workers: int = 1, worker_args: tuple[str, ...] = (), **env_extra) -> Citebot:
        slack, llm = FakeSlackServer(token=BOT_TOKEN).start(), FakeLLMServer().start()
        logs = tmp_path / "logs"
        logs.mkdir(exist_ok=True)
        env = make_env(tmp_path, redis_url=redis_url, slack=slack, llm=llm, index_dir=index_dir, **env_extra)
        bot = Citebot(env=env, port=free_port(), slack=slack, llm=llm, logs=logs)
        made.append(bot)
        bot.start_web()
        for _ in range(workers):
            bot.start_worker(*worker_args)
        return bot

    yield start
    for bot in made:
        bot.stop()
        bot.slack.stop()
        bot.llm.stop()


def answers_in(bot: Citebot, channel: str, thread_ts: str | None, count: int = 1, timeout: float = 20.0) -> list[dict]:
    return wait_until(lambda: len(bot.replies(channel, thread_ts)) >= count and bot.replies(channel, thread_ts),
                      timeout, f"{count} post(s) in {channel}/{thread_ts}")


def button_value(message: dict, action_id: str) -> str:
    return next(
        el["value"] for b in message["blocks"] if b["type"] == "actions" for el in b["elements"]
        if el["action_id"] == action_id
    )
