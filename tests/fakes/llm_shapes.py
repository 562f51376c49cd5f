"""How real model servers treat a chat request, for the fake LLM server (`FakeLLMServer(shape=...)`).

One shape per server, each refusing what that server refuses, with its status
and error body, and telling about itself on the routes it has (context length).
Taken from the servers' documentation and issue trackers; llama-cpp-python's
was checked against the real server:

    openai              api.openai.com: json_schema; an unknown field, top-level or in
                        response_format, is HTTP 400 "Unrecognized request argument supplied"
    lmstudio            json_schema; json_object is HTTP 400
    llama-cpp-python    json_object + schema; json_schema is HTTP 500 (a pydantic literal_error
                        on response_format.type); /v1/models without a context length
    llama-server        llama.cpp: json_schema and json_object + schema; a schema and a grammar
                        together are HTTP 400; /props has n_ctx
    vllm                json_schema; guided_json ignored (removed in v0.12, unknown fields pass);
                        a prompt and max_tokens past max_model_len is HTTP 400; an unknown model
                        HTTP 404; /v1/models has max_model_len
    ollama              /api/chat: `format` a schema or "json"; an unknown model HTTP 404;
                        /api/show has num_ctx
    ollama-0.4          before 0.5: `format` must be the string "json" (a schema is HTTP 400)

A shape looks at the request before the scripted reply does: a refused
request gets the shape's error and leaves the script alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
OLLAMA_PATH = "/api/chat"
# The model the shapes that check model names serve (tests/harness.py configures this name).
SERVED_MODEL = "test-model"
CONTEXT_TOKENS = 4096

Refusal = tuple[int, dict[str, Any]]

# The Chat Completions request fields api.openai.com knows.
OPENAI_FIELDS = frozenset(
    "model messages temperature top_p n stream stream_options stop max_tokens max_completion_tokens presence_penalty "
    "frequency_penalty logit_bias logprobs top_logprobs user seed tools tool_choice parallel_tool_calls "
    "response_format service_tier store metadata reasoning_effort modalities audio prediction "
    "web_search_options".split()
)


def _openai_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def _format_type(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format")
    return response_format.get("type") if isinstance(response_format, dict) else None


def _openai(body: dict[str, Any]) -> Refusal | None:
    unknown = sorted(set(body) - OPENAI_FIELDS)
    unknown += [f"response_format.{k}" for k in sorted(set(body.get("response_format") or {}) - {"type", "json_schema"})]
    if unknown:
        return 400, _openai_error(f"Unrecognized request argument supplied: {unknown[0]}")
    if _format_type(body) not in (None, "text", "json_object", "json_schema"):
        return 400, _openai_error(f"Invalid value: '{_format_type(body)}'. Supported values are: 'json_object', 'json_schema', and 'text'.")
    return None


def _lmstudio(body: dict[str, Any]) -> Refusal | None:
    if _format_type(body) not in (None, "text", "json_schema"):
        return 400, {"error": "'response_format.type' must be 'json_schema' or 'text'"}
    return None


def _llama_cpp_python(body: dict[str, Any]) -> Refusal | None:
    kind = _format_type(body)
    if kind not in (None, "text", "json_object"):
        detail = (
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            f"'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}', "
            "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", "
            "in create_chat_completion\n    POST /v1/chat/completions"
        )
        return 500, {"error": {"message": detail, "type": "internal_server_error", "param": None, "code": None}}
    return None


def _llama_server(body: dict[str, Any]) -> Refusal | None:
    kind = _format_type(body)
    if kind not in (None, "text", "json_object", "json_schema"):
        return 400, {"error": {"code": 400, "type": "invalid_request_error",
                               "message": f'response_format type must be one of "text" or "json_object", but got: {kind}'}}
    schema = kind == "json_schema" or (kind == "json_object" and "schema" in body["response_format"])
    if schema and "grammar" in body:
        return 400, {"error": {"code": 400, "type": "invalid_request_error",
                               "message": 'Either "json_schema" or "grammar" can be specified, but not both'}}
    return None


def _vllm(body: dict[str, Any]) -> Refusal | None:
    if body.get("model") != SERVED_MODEL:
        return 404, {"object": "error", "message": f"The model `{body.get('model')}` does not exist.",
                     "type": "NotFoundError", "param": None, "code": 404}
    if _format_type(body) not in (None, "text", "json_object", "json_schema", "structural_tag"):
        return 400, {"object": "error", "message": "Invalid response_format type", "type": "BadRequestError",
                     "param": None, "code": 400}
    prompt = prompt_tokens(body.get("messages"))
    wanted = body.get("max_tokens") or body.get("max_completion_tokens") or 0
    if prompt + wanted > CONTEXT_TOKENS:
        message = (f"This model's maximum context length is {CONTEXT_TOKENS} tokens. However, you requested {wanted} "
                   f"output tokens and your prompt contains at least {prompt} input tokens, for a total of at least "
                   f"{prompt + wanted} tokens.")
        return 400, {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}
    return None


def _ollama(body: dict[str, Any]) -> Refusal | None:
    if body.get("model") != SERVED_MODEL:
        return 404, {"error": f'model "{body.get("model")}" not found, try pulling it first'}
    form = body.get("format")
    if form is not None and form != "json" and not isinstance(form, dict):
        return 400, {"error": 'invalid format: expected "json" or a valid JSON schema'}
    return None


def _ollama_before_schemas(body: dict[str, Any]) -> Refusal | None:
    if isinstance(body.get("format"), dict):
        return 400, {"error": "json: cannot unmarshal object into Go struct field ChatRequest.format of type string"}
    return _ollama(body)


def prompt_tokens(messages: Any) -> int:
    """A rough token count of a prompt, as a server would make it: about four characters a token."""
    return len(json.dumps(messages)) // 4


@dataclass(frozen=True)
class Shape:
    name: str
    path: str  # the chat route the server has; the other one is a 404 there
    refuse: Callable[[dict[str, Any]], Refusal | None]
    # What the server says about itself: (method, path) -> JSON document.
    info: dict[tuple[str, str], Any] = field(default_factory=dict)

    def check(self, path: str, body: Any) -> Refusal | None:
        """The server's error for this request, or None if it would answer it."""
        if path != self.path:
            return 404, {"detail": "Not Found"}
        if not isinstance(body, dict):
            return 400, {"error": "request body is not a JSON object"}
        return self.refuse(body)


SHAPES = {
    shape.name: shape
    for shape in (
        Shape("openai", OPENAI_PATH, _openai),
        Shape("lmstudio", OPENAI_PATH, _lmstudio),
        Shape("llama-cpp-python", OPENAI_PATH, _llama_cpp_python, {
            ("GET", "/v1/models"): {"object": "list", "data": [
                {"id": "gemma-3-270m-q4_k_m.gguf", "object": "model", "owned_by": "me", "permissions": []}]},
        }),
        Shape("llama-server", OPENAI_PATH, _llama_server, {
            ("GET", "/props"): {"default_generation_settings": {"n_ctx": CONTEXT_TOKENS}, "total_slots": 1},
        }),
        Shape("vllm", OPENAI_PATH, _vllm, {
            ("GET", "/v1/models"): {"object": "list", "data": [
                {"id": SERVED_MODEL, "object": "model", "owned_by": "vllm", "max_model_len": CONTEXT_TOKENS}]},
        }),
        Shape("ollama", OLLAMA_PATH, _ollama, {
            ("POST", "/api/show"): {"parameters": f"num_ctx {CONTEXT_TOKENS}\nstop \"<|im_end|>\"",
                                    "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}},
        }),
        Shape("ollama-0.4", OLLAMA_PATH, _ollama_before_schemas, {
            ("POST", "/api/show"): {"parameters": "", "model_info": {"llama.context_length": 8192}},
        }),
    )
}
