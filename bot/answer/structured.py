"""The forms in which a request asks a chat server for output that follows a JSON schema.

Every server wants it its own way, and refuses the others:

    OpenAI, LM Studio          response_format {"type": "json_schema", "json_schema": {...}}
    llama.cpp llama-server     json_schema, or json_object with the schema in it
    llama-cpp-python           json_object with the schema only (json_schema: HTTP 500)
    vLLM                       json_schema; `guided_json` before v0.12 (later ones ignore it)
    Ollama                     `format`: the schema; versions before 0.5 only "json"

So a chat backend tries its forms in order and keeps the first one the server
takes (bot.answer.backends). The last form of each list asks for nothing: the
prompt still says to reply with JSON, and the claims verifier's lenient parser
reads what comes back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Body = dict[str, Any]
Schema = dict[str, Any]

# The label OpenAI's json_schema form requires; servers show it in their logs.
SCHEMA_NAME = "answer"


@dataclass(frozen=True)
class StructuredForm:
    name: str  # as logged and as `citebot doctor` shows it
    # The request field a server names when it refuses this form (a 5xx that
    # names it is a refusal too, not an outage); None: the form adds nothing.
    field: str | None
    apply: Callable[[Body, Schema], None]

    @property
    def constrained(self) -> bool:
        """Whether the server is asked to keep to the schema at all."""
        return self.field is not None


def _set(field: str, value: Callable[[Schema], Any]) -> Callable[[Body, Schema], None]:
    def apply(body: Body, schema: Schema) -> None:
        body[field] = value(schema)

    return apply


PROMPT_ONLY = StructuredForm("prompt only", None, lambda body, schema: None)

OPENAI_FORMS = (
    StructuredForm(
        "json_schema",
        "response_format",
        _set("response_format", lambda s: {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": s, "strict": True}}),
    ),
    StructuredForm("json_object+schema", "response_format", _set("response_format", lambda s: {"type": "json_object", "schema": s})),
    StructuredForm("guided_json", "guided_json", _set("guided_json", lambda s: s)),
    PROMPT_ONLY,
)

OLLAMA_FORMS = (
    StructuredForm("format schema", "format", _set("format", lambda s: s)),
    StructuredForm("format json", "format", _set("format", lambda s: "json")),
    PROMPT_ONLY,
)

# HTTP statuses with which a server refuses the body it was sent (a 401, 404
# or 429 says nothing about the body: another form would fare no better).
BODY_REFUSED = frozenset({400, 422})

