"""A fake MiniCheck server: Bespoke-MiniCheck's protocol over real HTTP (Ollama and OpenAI routes).

The model is asked one sentence at a time, in one user message

    Document: {document}
    Claim: {claim}

and answers "Yes" when the document supports the claim, else "No" (its documentation,
docs.bespokelabs.ai/minicheck). The fake answers by `supports(document, claim)`, a
function the test gives; a request in any other form gets a reply outside the protocol
("I cannot help with that."), as a chat model would give, so a judge that sends the wrong
form is seen as unavailable, not as a judgement. Every request is recorded (`calls`, and
`claims`: the claims asked, in order).

    with FakeMiniCheck(lambda doc, claim: "5 days" in claim) as minicheck:
        ... CITEBOT_JUDGE=minicheck CITEBOT_JUDGE_URL=minicheck.url ...
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tests.fakes.llm_server import Call, FakeLLMServer, Reply

_PROTOCOL = re.compile(r"\ADocument: (?P<document>.*)\nClaim: (?P<claim>[^\n]*)\Z", re.S)
OUTSIDE_PROTOCOL = "I cannot help with that."


def asked(body: Any) -> tuple[str, str] | None:
    """(document, claim) of a request in MiniCheck's form, else None."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or len(messages) != 1 or messages[0].get("role") != "user":
        return None
    match = _PROTOCOL.match(str(messages[0].get("content", "")))
    return (match["document"], match["claim"]) if match else None


class FakeMiniCheck(FakeLLMServer):
    thread_name = "fake-minicheck"

    def __init__(self, supports: Callable[[str, str], bool], **kwargs: Any):
        super().__init__(**kwargs)
        self.supports = supports

    @property
    def claims(self) -> list[str]:
        return [pair[1] for c in self.calls if (pair := asked(c.body)) is not None]

    def _take(self, call: Call) -> Reply:
        with self._lock:
            # An outage a test scripts: a reply in the script, or an error status as the default.
            scripted = self._script.popleft() if self._script else (self._default if self._default.status >= 400 else None)
        pair = asked(call.body)
        if scripted is not None:
            reply = scripted
        elif pair is None:
            reply = Reply(text=OUTSIDE_PROTOCOL)
        else:
            reply = Reply(text="Yes" if self.supports(*pair) else "No")
        with self._lock:
            self._calls.append(replace(call, status=reply.status, delay=reply.delay))
            self._lock.notify_all()
        return reply
