"""A server program a test starts as a process of its own: up once its URL answers, stopped after."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.polling import wait_until


@contextmanager
def server_process(command: list[str], *, ready_url: str, log: Path, timeout: float, what: str) -> Iterator[None]:
    """Runs `command` (its output to `log`) until the block ends; ready once GET `ready_url` is a 200.

    A server that exits while starting fails the test with its log; on the way
    out it gets SIGTERM, and SIGKILL if it does not stop within ten seconds."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def ready() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            return httpx.get(ready_url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(ready, timeout, f"{what} to answer {ready_url}")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
