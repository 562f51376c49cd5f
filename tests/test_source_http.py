"""The connectors' HTTP client (kb_index/sources/http.py) against a real local server: the wait a server asks
for, the tries, and a download cut off as soon as it is over its cap."""

from __future__ import annotations

import contextlib

import pytest

from kb_index.sources.http import HTTPFailed, SourceHTTP, SourceUnavailable
from tests.fakes.base import QuietHandler, ThreadedFake


class Script(ThreadedFake):
    """Answers each path from a list of (status, headers, body) in turn, the last one for good."""

    def __init__(self, routes: dict[str, list[tuple[int, dict[str, str], bytes]]]):
        self.routes = routes
        self.sent: dict[str, int] = {}  # path -> bytes written
        script = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                steps = script.routes[self.path]
                status, headers, body = steps.pop(0) if len(steps) > 1 else steps[0]
                self.send_response(status)
                chunked = headers.pop("chunked", None) is not None
                for key, value in headers.items():
                    self.send_header(key, value)
                if chunked:
                    self._chunked(body)
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)  # the client may stop reading: what the cap is for
                script.sent[self.path] = len(body)

            def _chunked(self, body: bytes) -> None:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                sent = 0
                try:
                    for start in range(0, len(body), 64 * 1024):
                        part = body[start:start + 64 * 1024]
                        self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                        sent += len(part)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                script.sent[self.path] = sent

        self._bind("127.0.0.1", 0, Handler)


@pytest.fixture
def waits() -> list[float]:
    return []


def test_429_and_5xx_are_retried_after_the_wait_the_server_asks_for(waits):
    script = Script({"/page": [(429, {"Retry-After": "7"}, b""), (503, {}, b""), (200, {}, b'{"ok": 1}')]})
    with script as server, SourceHTTP(server.root, sleep=waits.append) as client:
        assert client.get_json("/page", kind="page") == {"ok": 1}
    assert waits == [7.0, 14.0]  # the server's seven seconds, then doubled as no Retry-After came
    assert client.calls.counts == {"page": 3}


def test_a_server_that_keeps_failing_is_unavailable_and_a_404_is_not_retried(waits):
    script = Script({"/down": [(502, {}, b"")], "/gone": [(404, {}, b"no such page")]})
    with script as server, SourceHTTP(server.root, sleep=waits.append, attempts=3, max_wait_s=2) as client:
        with pytest.raises(SourceUnavailable, match="HTTP 502 after 3 tries"):
            client.get_json("/down", kind="page")
        assert waits == [1.0, 2.0]
        with pytest.raises(HTTPFailed) as failed:
            client.get_json("/gone", kind="page")
    assert failed.value.status == 404 and "no such page" in str(failed.value)


def test_a_download_over_its_cap_is_refused_before_it_is_read_whole():
    big = b"%PDF" + b"x" * (8 * 1024 * 1024)
    routes = {"/declared": [(200, {}, big)], "/streamed": [(200, {"chunked": "1"}, big)],
              "/small": [(200, {"chunked": "1"}, b"%PDF-1.7 small")]}
    with Script(routes) as server, SourceHTTP(server.root) as client:
        for path in ("/declared", "/streamed"):
            with pytest.raises(HTTPFailed) as refused:
                client.get_bytes(path, kind="download", max_bytes=1024 * 1024)
            assert refused.value.status == 413
        assert client.get_bytes("/small", kind="download", max_bytes=1024 * 1024) == b"%PDF-1.7 small"
    # The chunked one was cut off: far less than the whole file was taken from the server.
    assert server.sent["/streamed"] < len(big)
