"""Fixtures for tests of the chat backends (tests/conftest.py makes them everyone's):

  sleeps     stands in for asyncio.sleep, recording the delays a backend asked for
  backends   backends(cls, url, model="test-model", **kwargs): a backend with instant retries
             (its delays go to `sleeps`), closed after the test

and `chat_request`, a request as the pipeline makes one.
"""

from __future__ import annotations

import pytest

from bot.answer.prompt import CLAIMS_JSON_SCHEMA
from bot.models import AnswerMode, GenerationRequest

MESSAGES = [
    {"role": "system", "content": "Answer only from the blocks."},
    {"role": "user", "content": "Block 1 — [hr-vac]\n...\nQuestion: How many vacation days?"},
]


def chat_request(claims: bool = False, **fields) -> GenerationRequest:
    """Citations mode, or claims mode with the claims schema; `fields` set the rest (max_tokens=20)."""
    return GenerationRequest(
        messages=MESSAGES,
        mode=AnswerMode.CLAIMS if claims else AnswerMode.CITATIONS,
        question="How many vacation days?",
        evidence=[],
        json_schema=CLAIMS_JSON_SCHEMA if claims else None,
        **fields,
    )


class SleepRecorder:
    """Stands in for asyncio.sleep: the delays the backend asked for, without waiting them out."""

    def __init__(self):
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps():
    return SleepRecorder()


@pytest.fixture
async def backends(sleeps):
    made = []

    def make(cls, url, model="test-model", **kwargs):
        kwargs.setdefault("backoff", 0)
        kwargs.setdefault("sleep", sleeps)
        backend = cls(url, model, **kwargs)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()
