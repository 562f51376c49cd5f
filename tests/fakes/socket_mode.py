"""A fake Slack Socket Mode endpoint: a real WebSocket on 127.0.0.1, served from a thread.

Slack's side of Socket Mode, as far as citebot uses it: `apps.connections.open`
(answered by the fake Web API, which hands out `url`) returns a wss URL; the
client connects, Slack sends `{"type": "hello"}`, then events as envelopes
`{"envelope_id", "type": "events_api", "payload"}` that the client acks by
sending back `{"envelope_id"}`.

    with FakeSocketMode() as socket:
        slack = FakeSlackServer(socket_url=socket.url)
        ...
        socket.wait_connected()
        socket.drop()          # close every connection and refuse new ones
        socket.restore()       # accept connections again
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from typing import Any, Self

from aiohttp import WSMsgType, web


class FakeSocketMode:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-socket-mode", daemon=True)
        self._sockets: set[web.WebSocketResponse] = set()
        self._refusing = False
        self._lock = threading.Lock()
        self.acks: list[str] = []
        self.connections = 0  # accepted over the fake's life
        self._port = 0

    @property
    def url(self) -> str:
        return f"ws://{self._host}:{self._port}/link"

    def start(self) -> Self:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def connected(self) -> int:
        with self._lock:
            return sum(1 for ws in self._sockets if not ws.closed)

    def wait_connected(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while self.connected == 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no Socket Mode client connected within {timeout} s")
            time.sleep(0.05)

    def drop(self) -> None:
        """Slack goes away: open connections are closed, new ones refused with 503."""
        self._refusing = True
        asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(timeout=10)

    def restore(self) -> None:
        self._refusing = False

    def send_event(self, payload: dict[str, Any]) -> str:
        """An Events API body (as it would be POSTed in HTTP mode) to every connected client."""
        envelope_id = str(uuid.uuid4())
        envelope = {"envelope_id": envelope_id, "type": "events_api", "accepts_response_payload": False,
                    "payload": payload}
        asyncio.run_coroutine_threadsafe(self._broadcast(envelope), self._loop).result(timeout=10)
        return envelope_id

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _link(self, request: web.Request) -> web.StreamResponse:
        if self._refusing:
            return web.Response(status=503, text="service unavailable")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._lock:
            self._sockets.add(ws)
            self.connections += 1
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}}))
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                envelope_id = json.loads(message.data).get("envelope_id")
                if envelope_id:
                    self.acks.append(envelope_id)
        with self._lock:
            self._sockets.discard(ws)
        return ws

    async def _broadcast(self, envelope: dict[str, Any]) -> None:
        with self._lock:
            sockets = [ws for ws in self._sockets if not ws.closed]
        for ws in sockets:
            await ws.send_str(json.dumps(envelope))

    async def _close_all(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for ws in sockets:
            await ws.close()

    async def _shutdown(self) -> None:
        await self._close_all()
        await self._runner.cleanup()
