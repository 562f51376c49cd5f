"""What the fakes share: a real HTTP server on 127.0.0.1, served from a thread."""

from __future__ import annotations

import argparse
import signal
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler hanging on a scripted delay must not block exit
    # The stdlib default backlog of 5 makes a burst of concurrent clients wait
    # a second for SYN retries.
    request_queue_size = 128


class ThreadedFake:
    """Start/stop and the address of a fake; subclasses add their routes and script."""

    thread_name = "fake"

    def _bind(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        # Set on stop, so handlers hanging on a scripted delay let go at once.
        self._stopping = threading.Event()
        self._httpd = _HTTPServer((host, port), handler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def root(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}"

    def start(self) -> Self:
        self._thread = threading.Thread(
            # A short poll interval: stop() waits up to one interval, once per test.
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class QuietHandler(BaseHTTPRequestHandler):
    """The request handler a fake's routes extend: keep-alive, no access log."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: with Nagle's algorithm on, the body waits for the client's
        # delayed ACK of the headers (about 40 ms a call on a keep-alive connection).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass  # test output stays readable; the calls are recorded instead


def server_arguments(prog: str, description: str) -> argparse.ArgumentParser:
    """The command line of `python -m tests.fakes.…`: --host and --port; the caller adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed at start)")
    return parser


def send_body(handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up waiting (a timeout test): nothing to tell it


def serve_until_signalled(server: ThreadedFake, url: str) -> None:
    """For `python -m tests.fakes.…`: serve until SIGTERM or SIGINT."""
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with server:
        print(f"listening on {url}", flush=True)
        done.wait()
