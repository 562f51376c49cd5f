"""Socket Mode: the WebSocket to Slack, and whether it is up.

slack_sdk's client reconnects by itself, for ever, and says so only at INFO in
its own logger: with a revoked token or Slack unreachable, `serve` looked
healthy while no event could arrive. `SocketModeWatch` asks the client every
few seconds whether it is connected, logs each change once (a warning when the
connection is lost), sets `citebot_socket_mode_connected`, and tells /healthz
to fail (503) once the connection has been down longer than a grace period:
long enough for a normal reconnect, short enough for Kubernetes to notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from bot import metrics

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 2.0


class SocketModeWatch:
    def __init__(self, is_connected: Callable[[], Awaitable[bool]], *, grace_s: float,
                 clock: Callable[[], float] = time.monotonic):
        self._is_connected = is_connected
        self._grace_s = grace_s
        self._clock = clock
        self._connected = False
        self._down_since: float | None = clock()  # not connected yet: the grace starts at start-up
        self._said_unhealthy = False
        self._task: asyncio.Task[None] | None = None

    async def check(self) -> None:
        """Asks the client once; logs and counts a change."""
        try:
            connected = await self._is_connected()
        except Exception:  # noqa: BLE001 - a client that cannot say is not connected
            connected = False
        if connected and not self._connected:
            if self._down_since is not None and self._clock() - self._down_since > self._grace_s:
                log.warning("Socket Mode: connected to Slack again")
            else:
                log.info("Socket Mode: connected to Slack")
            self._down_since = None
            self._said_unhealthy = False
        elif not connected and self._connected:
            self._down_since = self._clock()
            log.warning("Socket Mode: connection to Slack lost; events cannot arrive until it is back")
        self._connected = connected
        if not connected and not self._said_unhealthy and not self.report()["ok"]:
            self._said_unhealthy = True
            log.error("Socket Mode: not connected to Slack for over %.0f s; /healthz reports 503", self._grace_s)
        metrics.SOCKET_MODE_CONNECTED.set(1 if connected else 0)

    def report(self) -> dict[str, object]:
        """For /healthz: ok is False once the connection has been down past the grace period."""
        if self._connected:
            return {"ok": True, "socket_mode": "connected"}
        down_for = self._clock() - (self._down_since or self._clock())
        return {
            "ok": down_for <= self._grace_s,
            "socket_mode": f"not connected for {down_for:.0f} s",
        }

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="socket-mode-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(CHECK_INTERVAL_S)
