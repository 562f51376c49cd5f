"""A fake LLM server: real HTTP on 127.0.0.1, scripted replies, every request recorded.

Speaks the OpenAI route (POST /v1/chat/completions) and the Ollama route
(POST /api/chat). Each request takes the next reply from the script; an empty
script gives the default reply. A reply is one of:

    "text"                                   a normal answer with this content
    {"text": "...", "delay": 2.5}            answer only after hanging 2.5 s
    {"status": 429, "retry_after": 1}        an error status (+ Retry-After)
    {"body": "not json"}                     this raw body instead of a chat reply

A reply longer than the request's output cap (max_tokens, Ollama's
options.num_predict; a word counts as a token) is cut there and marked as cut
(finish_reason / done_reason "length"), as a real server does.

`shape` makes it check each request the way one real server does before the
script is asked (tests/fakes/llm_shapes.py): FakeLLMServer(shape="vllm").
Requests of the capability probe (bot.answer.probe) are answered at once and
kept in `probes`, apart from `calls` and the script, which stay the questions'.

`judge=True` (`--judge`) makes it answer the entailment judge's requests itself, in
the judge's reply form (bot.answer.verify.judgement), without taking a reply from
the script: a statement is "supports", quoting the sentence of the blocks that
holds at least 3/4 of its words and all of its numbers, else "not_stated". So a
draft that restates its source passes with the judge on, as CITEBOT_JUDGE=auto
has it wherever a model answers. Those calls are in `calls`, with what was answered.

In-process:

    with FakeLLMServer() as server:
        server.script("first answer", Reply(status=500), "after the retry")
        backend = OpenAIBackend(server.url, "m")
        ...
        server.calls[0].body["messages"]

From another process: `python -m tests.fakes.llm_server --port 0 --script s.json [--judge]`
prints `listening on http://127.0.0.1:PORT`, then serves until SIGTERM/SIGINT.
Control routes: POST /_script {"replies": [...], "default": ...} (or a bare
list) replaces the script, GET /_calls lists the recorded requests
(tests/fakes/remote.py is their client).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from bot.answer.probe import PROBE_MARK
from bot.answer.verify.judgement import item_label
from tests.fakes.base import QuietHandler, ThreadedFake, send_body, serve_until_signalled, server_arguments
from tests.fakes.llm_shapes import SHAPES

OPENAI_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"
DEFAULT_TEXT = "The knowledge base does not cover this question."



@dataclass(frozen=True)
class Reply:
    text: str = DEFAULT_TEXT
    status: int = 200
    retry_after: float | str | None = None
    delay: float = 0.0  # seconds to hang before answering
    body: str | None = None  # raw body, sent instead of a chat reply

    @classmethod
    def parse(cls, item: Reply | str | dict[str, Any]) -> Reply:
        if isinstance(item, Reply):
            return item
        if isinstance(item, str):
            return cls(text=item)
        if isinstance(item, dict):
            return cls(**item)
        raise TypeError(f"a scripted reply is a string or an object, got {item!r}")


@dataclass(frozen=True)
class Call:
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text if it was not JSON
    at: float = field(default_factory=time.time)
    # The scripted reply this call got: its status and how long it hung first.
    status: int = 200
    delay: float = 0.0
    reply: str | None = None  # what the fake answered of its own accord (the judge's verdicts)


class FakeLLMServer(ThreadedFake):
    thread_name = "fake-llm"

    def __init__(self, replies=(), default: Reply | str | dict = DEFAULT_TEXT, host: str = "127.0.0.1", port: int = 0,
                 shape: str | None = None, judge: bool = False):
        self._lock = threading.Condition()
        self._script: deque[Reply] = deque(Reply.parse(r) for r in replies)
        self._default = Reply.parse(default)
        self._calls: list[Call] = []
        self._probes: list[Call] = []
        self.shape = SHAPES[shape] if shape else None
        self.judge = judge
        self._bind(host, port, _handler_for(self))

    @property
    def url(self) -> str:
        return self.root

    # -- script

    def script(self, *replies: Reply | str | dict) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(Reply.parse(r) for r in replies)

    def set_script(self, replies, default: Reply | str | dict | None = None) -> None:
        """Replace the script (and the default reply, if given)."""
        parsed = [Reply.parse(r) for r in replies]
        with self._lock:
            self._script = deque(parsed)
            if default is not None:
                self._default = Reply.parse(default)

    # -- calls

    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    @property
    def probes(self) -> list[Call]:
        with self._lock:
            return list(self._probes)

    def wait_for_calls(self, n: int, timeout: float = 5.0) -> list[Call]:
        """The calls, once there are at least `n`; AssertionError after `timeout`."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._calls) >= n, timeout):
                raise AssertionError(f"expected {n} LLM calls within {timeout}s, got {len(self._calls)}")
            return list(self._calls)

    def _take(self, call: Call) -> Reply:
        """Record a call and pop its reply, as one step so concurrent calls keep their order."""
        with self._lock:
            reply = self._script.popleft() if self._script else self._default
            self._calls.append(replace(call, status=reply.status, delay=reply.delay))
            self._lock.notify_all()
            return reply

    def _record(self, call: Call, *, probe: bool) -> None:
        """Record a call answered without the script: refused by the shape, or the probe's."""
        with self._lock:
            (self._probes if probe else self._calls).append(call)
            self._lock.notify_all()

    def _hang(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def chat_reply(path: str, text: str, cut: bool = False, model: str = "") -> dict[str, Any]:
    if path == OLLAMA_PATH:
        return {"model": model, "message": {"role": "assistant", "content": text}, "done": True,
                "done_reason": "length" if cut else "stop"}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "length" if cut else "stop"}],
    }


def capped(text: str, body: Any) -> tuple[str, bool]:
    """The reply as far as the request's output cap lets it go, and whether it was cut."""
    cap = body.get("max_tokens") or (body.get("options") or {}).get("num_predict") if isinstance(body, dict) else None
    words = text.split(" ")
    if not isinstance(cap, int) or len(words) <= cap:
        return text, False
    return " ".join(words[:cap]), True


def probe_text(body: Any) -> str | None:
    """The capability probe's question, None for any other request."""
    messages = body.get("messages") if isinstance(body, dict) else None
    asked = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict)) if isinstance(messages, list) else ""
    return asked if PROBE_MARK in asked else None


def probe_reply(asked: str) -> str:
    """What the probe asks for: an empty claims object, or the word ok."""
    return '{"claims": []}' if '{"claims": []}' in asked else "ok"


# The judge's instructions end with an example of its reply (bot.answer.judge); its statements are
# listed one a line as `S1 (cites ...): text`.
JUDGE_MARK = '{"verdicts": [{"id": "' + item_label(0) + '"'
_STATEMENT = re.compile(r"^(S\d+) \([^)\n]*\): (.+)$", re.M)


def judge_text(body: Any) -> str | None:
    """The user's part of an entailment judge's request, None for any other request."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not any(JUDGE_MARK in str(m.get("content", "")) for m in messages
                                                 if isinstance(m, dict)):
        return None
    return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict) and m.get("role") == "user")


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def judge_reply(asked: str) -> str:
    """Verdicts on the statements in `asked`: supported by the sentence of the blocks with the most of their
    words, when it has 3/4 of them and every number; else not stated."""
    source = _STATEMENT.sub("", asked)
    sentences = [s for line in source.splitlines() for s in re.split(r"(?<=[.!?])\s+", line.strip()) if s]
    verdicts = []
    for match in _STATEMENT.finditer(asked):
        words = _words(match.group(2))
        best = max(sentences, key=lambda sentence: len(words & _words(sentence)), default="")
        shared = words & _words(best)
        found = bool(words) and len(shared) >= 0.75 * len(words) and {w for w in words if w.isdigit()} <= shared
        verdicts.append({"id": match.group(1), "verdict": "supports" if found else "not_stated",
                         "quote": best if found else ""})
    return json.dumps({"verdicts": verdicts})


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if self.path == "/_calls":
                self._send(200, json.dumps([asdict(c) for c in server.calls]))
            else:
                self._info("GET")

        def _info(self, method: str) -> None:
            """What the shape's server says about itself on this route, else a 404."""
            info = server.shape.info.get((method, self.path)) if server.shape else None
            self._send(200, json.dumps(info)) if info is not None else self._send(404, '{"error": "not found"}')

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
            if self.path in (OPENAI_PATH, OLLAMA_PATH):
                self._chat(raw)
            elif self.path == "/_script":
                self._set_script(raw)
            else:
                self._info("POST")

        def _chat(self, raw: str) -> None:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            call = Call(self.path, dict(self.headers.items()), body)
            refusal = server.shape.check(self.path, body) if server.shape else None
            probe = probe_text(body)
            if refusal is not None or probe is not None:
                status, payload = refusal or (200, chat_reply(self.path, *capped(probe_reply(probe or ""), body)))
                server._record(replace(call, status=status), probe=probe is not None)
                self._send(status, json.dumps(payload))
                return
            if server.judge and (asked := judge_text(body)) is not None:
                verdicts = judge_reply(asked)
                server._record(replace(call, reply=verdicts), probe=False)
                self._send(200, json.dumps(chat_reply(self.path, verdicts, model=body.get("model", ""))))
                return
            reply = server._take(call)
            if reply.delay:
                server._hang(reply.delay)
            if reply.body is not None:
                payload = reply.body
            elif reply.status >= 400:
                payload = json.dumps({"error": f"scripted HTTP {reply.status}"})
            else:
                model = body.get("model", "") if isinstance(body, dict) else ""
                payload = json.dumps(chat_reply(self.path, *capped(reply.text, body), model=model))
            headers = {"Retry-After": str(reply.retry_after)} if reply.retry_after is not None else {}
            self._send(reply.status, payload, headers)

        def _set_script(self, raw: str) -> None:
            try:
                data = json.loads(raw)
                if isinstance(data, list):
                    data = {"replies": data}
                server.set_script(data.get("replies", []), data.get("default"))
            except (ValueError, TypeError, AttributeError) as exc:
                self._send(400, json.dumps({"error": str(exc)}))
                return
            self._send(200, '{"ok": true}')

        def _send(self, status: int, payload: str, headers: dict[str, str] | None = None) -> None:
            send_body(self, status, payload.encode(), "application/json", headers)

    return Handler


def load_script(path: str | None) -> dict[str, Any]:
    if not path:
        return {"replies": []}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {"replies": data} if isinstance(data, list) else data


def main(argv: list[str] | None = None) -> None:
    parser = server_arguments("python -m tests.fakes.llm_server", __doc__.split("\n")[0])
    parser.add_argument("--script", help="JSON file: a list of replies, or {replies, default}")
    parser.add_argument("--shape", choices=sorted(SHAPES), help="check requests the way this server does")
    parser.add_argument("--judge", action="store_true", help="answer the entailment judge's requests itself")
    args = parser.parse_args(argv)
    script = load_script(args.script)
    server = FakeLLMServer(script.get("replies", []), script.get("default", DEFAULT_TEXT), args.host, args.port,
                           shape=args.shape, judge=args.judge)
    serve_until_signalled(server, server.url)
    sys.exit(0)


if __name__ == "__main__":
    main()
