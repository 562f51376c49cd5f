"""A fake OpenAI-compatible embedding server: real HTTP on 127.0.0.1, each vector from its text's hash.

POST /v1/embeddings with {"model": ..., "input": ["text", ...]} (or a single
string) answers as OpenAI does:

    {"object": "list", "model": ..., "data": [{"object": "embedding", "index": 0, "embedding": [...]}, ...],
     "usage": {"prompt_tokens": n, "total_tokens": n}}

A text's vector depends on the text alone: sha256(text) seeds numpy's
default_rng, whose standard_normal(dim) draw is L2-normalised (as the
HashEmbedder of bench/sync.py), so the same text gets the same vector in every
run and every process. `"encoding_format": "base64"` gets little-endian
float32 as base64 text, as OpenAI sends it. A body that is not such a request
gets a 400 with OpenAI's error shape.

Embedding costs almost nothing here: what a test or benchmark counts is how
many texts were embedded (`texts`) in how many requests (`requests`), also
served as GET /stats {"texts": n, "requests": m}. `delay_s` makes each request
wait that long before its reply (stop() cuts the wait short).

In-process:

    with FakeEmbeddings(dim=64, delay_s=0.02) as server:
        embedder = OpenAIEmbedder(server.root, "bench-hash-64")
        embedder.embed_passages(["a", "b"])
        server.texts, server.requests  # 2, 1

From another process: `python -m tests.fakes.embed_server [--port 0] [--dim 64] [--delay 0.0]`
prints `listening on http://127.0.0.1:PORT`, then serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np

from tests.fakes.base import QuietHandler, ThreadedFake, send_body, serve_until_signalled, server_arguments

EMBEDDINGS_PATH = "/v1/embeddings"
STATS_PATH = "/stats"


def hash_vector(text: str, dim: int) -> np.ndarray:
    """The text's unit vector: a standard normal draw seeded from sha256(text), L2-normalised."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


class BadRequest(ValueError):
    """What is wrong with a request body, in OpenAI's words where it has them."""


def request_texts(body: Any) -> list[str]:
    """The texts of an embeddings request; BadRequest if it is not one this fake (and OpenAI) takes."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("you must provide a model parameter")
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts:
        raise BadRequest("'input' must be a string or a non-empty list of strings")
    if not all(isinstance(text, str) for text in texts):
        raise BadRequest("'input' items must be strings (token arrays are not supported here)")
    return texts


class FakeEmbeddings(ThreadedFake):
    thread_name = "fake-embeddings"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, dim: int = 64, delay_s: float = 0.0):
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        self.dim = dim
        self.delay_s = delay_s
        self._lock = threading.Lock()
        self._texts = 0
        self._requests = 0
        self._bind(host, port, _handler_for(self))

    @property
    def url(self) -> str:
        return self.root

    @property
    def texts(self) -> int:
        """Texts embedded so far (each request's inputs, counted once it is answered)."""
        with self._lock:
            return self._texts

    @property
    def requests(self) -> int:
        """Embedding requests answered so far (400s are not counted)."""
        with self._lock:
            return self._requests

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"texts": self._texts, "requests": self._requests}

    def embed(self, body: Any) -> dict[str, Any]:
        """The reply to one embeddings request body (BadRequest if it is not one); counted when it returns."""
        texts = request_texts(body)
        base64_out = body.get("encoding_format") == "base64"
        if self.delay_s:
            self._stopping.wait(self.delay_s)
        data = []
        for index, text in enumerate(texts):
            vector = hash_vector(text, self.dim)
            embedding: Any = (base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii") if base64_out
                              else vector.tolist())
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(text.split()) for text in texts)
        with self._lock:
            self._texts += len(texts)
            self._requests += 1
        return {"object": "list", "model": body["model"], "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _error(message: str, kind: str = "invalid_request_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()


def _handler_for(server: FakeEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def handle(self) -> None:
            # A client that went away mid-request (a build killed on purpose) is nothing to report.
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                super().handle()

        def do_GET(self) -> None:
            if self.path == STATS_PATH:
                send_body(self, 200, json.dumps(server.stats()).encode(), "application/json")
            else:
                send_body(self, 404, _error(f"no route GET {self.path}", "not_found"), "application/json")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != EMBEDDINGS_PATH:
                send_body(self, 404, _error(f"no route POST {self.path}", "not_found"), "application/json")
                return
            try:
                reply = server.embed(json.loads(raw))
            except (ValueError, UnicodeDecodeError) as exc:  # BadRequest, or a body that is not JSON
                message = str(exc) if isinstance(exc, BadRequest) else f"the body is not JSON: {exc}"
                send_body(self, 400, _error(message), "application/json")
                return
            send_body(self, 200, json.dumps(reply).encode(), "application/json")

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = server_arguments("python -m tests.fakes.embed_server", (__doc__ or "").split("\n")[0])
    parser.add_argument("--dim", type=int, default=64, help="vector length (default 64)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds each request waits before its reply")
    args = parser.parse_args(argv)
    server = FakeEmbeddings(args.host, args.port, dim=args.dim, delay_s=args.delay)
    serve_until_signalled(server, server.url)
    sys.exit(0)


if __name__ == "__main__":
    main()
