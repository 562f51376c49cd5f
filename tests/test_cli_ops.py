"""`citebot serve` and `citebot worker` refuse to start with one clear line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.fakes.slack_server import FakeSlackServer
from tests.harness import ROOT


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=60)


def test_worker_without_slack_settings_names_the_variable(tmp_path):
    done = run_cli("worker", CITEBOT_INDEX_DIR=str(tmp_path / "ix"))
    assert done.returncode == 2
    assert done.stderr.strip() == "citebot: configuration error: SLACK_BOT_TOKEN: required for serve and worker (not set)"


def test_worker_without_redis_says_so_in_one_line(tmp_path):
    with FakeSlackServer() as slack:  # the start-up's Slack checks pass; Redis is what is missing
        done = run_cli("worker", "--metrics-port", "0", SLACK_BOT_TOKEN="xoxb-x", CITEBOT_SLACK_API_URL=slack.url,
                       CITEBOT_REDIS_URL="redis://127.0.0.1:1/0", CITEBOT_INDEX_DIR=str(tmp_path / "ix"))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("citebot: worker cannot start: Redis at 127.0.0.1:1/0")
    assert "Traceback" not in done.stderr
