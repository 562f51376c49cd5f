"""Structured logs: one JSON object per line, carrying the question id from ack to post.

The web process sets the question id when it parses an event, the worker when
it takes the job; every log line written while handling that question carries
it, so `grep '"question_id": "C1:1700000000.000100"'` over both processes'
logs shows the whole story of one question.
"""

from __future__ import annotations

import contextvars
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bot.terminal import json_text

question_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("question_id", default=None)

# Attributes every LogRecord has; anything else was passed with `extra=` and is logged as a field.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def __init__(self, process_role: str):
        super().__init__()
        self.role = process_role

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "role": self.role,
            "logger": record.name,
            "message": record.getMessage(),
        }
        qid = question_id.get()
        if qid:
            entry["question_id"] = qid
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        # Log lines carry questions and model output: no raw escape sequence reaches a terminal tailing them.
        return json_text(entry, default=str)


def setup(role: str, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(role))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Per-request access lines and client chatter drown the events that matter.
    for noisy in ("aiohttp.access", "slack_bolt", "slack_sdk", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@contextmanager
def about_question(qid: str | None) -> Iterator[None]:
    token = question_id.set(qid)
    try:
        yield
    finally:
        question_id.reset(token)
