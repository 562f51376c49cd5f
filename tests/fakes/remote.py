"""The fakes as processes of their own (`python -m tests.fakes.<module> --port 0`),
driven over their control routes with the methods the in-process fakes have.

A load or fault drill runs them apart from the test process, so its sender
threads do not slow Slack down (the GIL) and a fake can be told apart in `ps`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx

from tests.fakes import llm_server, slack_server

ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT_S = 10.0


class FakeProcess:
    """Starts the fake; its URL is the first line it prints."""

    def __init__(self, module: str, logs: Path, *extra: str):
        self.name = module.rsplit(".", 1)[-1]
        self.log_path = logs / f"{self.name}.log"
        with open(self.log_path, "w") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, "--port", "0", *extra],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        line = self.proc.stdout.readline().strip() if self.proc.stdout else ""
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError(f"{module} did not start: {line!r}\n{self.log_path.read_text()}")
        self.url = line.removeprefix("listening on ")
        self.http = httpx.Client(base_url=self.url.removesuffix(slack_server.API_PREFIX), timeout=30)

    def stop(self) -> None:
        self.http.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.proc.stdout:
            self.proc.stdout.close()


class SlackProcess(slack_server.Scripting, FakeProcess):
    """FakeSlackServer's `calls`, `script`, `fail` and `rate_limit`, in another process."""

    def __init__(self, logs: Path, token: str | None = None):
        super().__init__("tests.fakes.slack_server", logs, *(["--token", token] if token else []))

    def calls(self, method: str | None = None) -> list[slack_server.Call]:
        params = {"method": method} if method else {}
        return [slack_server.Call(**c) for c in self.http.get("/_calls", params=params).json()["calls"]]

    def script(self, *failures: slack_server.Failure | dict[str, Any]) -> None:
        sent = [asdict(slack_server.Failure.parse(f)) for f in failures]
        self.http.post("/_script", json={"failures": sent}).raise_for_status()


class LLMProcess(FakeProcess):
    """FakeLLMServer's `calls` and `set_script`, in another process."""

    def __init__(self, logs: Path):
        super().__init__("tests.fakes.llm_server", logs)

    @property
    def calls(self) -> list[llm_server.Call]:
        return [llm_server.Call(**c) for c in self.http.get("/_calls").json()]

    def set_script(self, replies: list[Any], default: llm_server.Reply | str | dict[str, Any] | None = None) -> None:
        """Replaces the script (and the default reply, if given)."""
        body: dict[str, Any] = {"replies": [asdict(llm_server.Reply.parse(r)) for r in replies]}
        if default is not None:
            body["default"] = asdict(llm_server.Reply.parse(default))
        self.http.post("/_script", json=body).raise_for_status()
