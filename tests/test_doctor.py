"""`citebot doctor`: one line per finding about the model, Slack, Redis and the index; exit 1 on what cannot work.
Against the fake servers: model servers of each shape (tests/fakes/llm_shapes.py), the fake Slack API, real Redis."""

from __future__ import annotations

import json
import os

import pytest

from bot.cli import main
from bot.embedder import local_embedder_available
from tests.fakes import FakeLLMServer
from tests.fakes.llm_server import Reply
from tests.fakes.llm_shapes import CONTEXT_TOKENS, SERVED_MODEL
from tests.fakes.minicheck import FakeMiniCheck
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import BOT_TOKEN, free_port
from tests.kb_fixtures import mini_index, write_mini_kb


@pytest.fixture
def doctor(tmp_path, monkeypatch, redis_url):
    """Runs `citebot doctor` with these settings (on the test's Redis, no index yet unless given);
    returns (exit status, {check: [(status, detail)]}, the JSON findings)."""
    monkeypatch.chdir(tmp_path)
    for var in [v for v in os.environ if v.startswith(("CITEBOT_", "SLACK_"))]:
        monkeypatch.delenv(var)

    def run(capsys, **env: str):
        env = {"CITEBOT_REDIS_URL": redis_url, "CITEBOT_INDEX_DIR": str(tmp_path / "no-index"), **env}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        code = main(["doctor"])
        lines = capsys.readouterr().out.splitlines()
        assert main(["doctor", "--json"]) == code
        report = json.loads(capsys.readouterr().out)
        assert report["ok"] == (code == 0)
        found: dict[str, list[tuple[str, str]]] = {}
        for line in lines:
            status, check, detail = line.split(None, 2)
            found.setdefault(check, []).append((status, detail))
        assert [(f["check"], f["status"]) for f in report["findings"]] == [
            (check, status) for check, pairs in found.items() for status, _ in pairs]
        return code, found, report["findings"]

    return run


def openai_server(url: str, **env: str) -> dict[str, str]:
    return {"CITEBOT_LLM": "openai", "CITEBOT_LLM_URL": url, "CITEBOT_LLM_MODEL": SERVED_MODEL, **env}


# ----------------------------------------------------------------- the model


def test_the_embedded_default_works_without_slack_redis_or_an_index(doctor, capsys):
    code, found, _ = doctor(capsys)
    assert code == 0
    assert found["model"] == [("ok", "extractive: no language model; answers quote the knowledge base")]
    # Each check that needs Slack says it was not run, and what serve and the review cards will need.
    assert found["slack"] == [
        ("warn", "SLACK_BOT_TOKEN is not set: `citebot ask` works, serve and worker need it (docs/slack-app.md, "
                 "steps 2 and 3)"),
        ("warn", "SLACK_SIGNING_SECRET is not set either: serve over HTTP needs it (Socket Mode needs SLACK_APP_TOKEN "
                 "instead)"),
        ("warn", "CITEBOT_REVIEW_CHANNEL is not set: rejected drafts would reach no reviewer"),
        ("warn", "CITEBOT_REVIEWERS is empty: nobody could decide a review card; list the reviewers' user IDs (U…)"),
        ("warn", "not checked without a token: the token's scopes for the access checks (users:read, "
                 "usergroups:read, channels:read, groups:read)"),
    ]
    assert found["redis"][0][0] == "ok" and found["redis"][0][1].startswith("Redis ")
    assert found["index"][0][0] == "warn" and "run 'citebot index' first" in found["index"][0][1]


def test_without_a_token_the_review_channel_named_is_said_to_be_unchecked(doctor, capsys):
    _, found, _ = doctor(capsys, CITEBOT_REVIEW_CHANNEL="#citebot-review", CITEBOT_REVIEWERS="U0REVIEW",
                         SLACK_SIGNING_SECRET="secret")
    details = [detail for _, detail in found["slack"]]
    assert "not checked without a token: that the review channel #citebot-review exists and the bot is in it" in details
    assert not any("CITEBOT_REVIEWERS" in d or "SIGNING_SECRET" in d for d in details)


def test_llama_cpp_python_takes_json_object_with_the_schema(doctor, capsys):
    with FakeLLMServer(shape="llama-cpp-python") as llm:
        code, found, findings = doctor(capsys, **openai_server(llm.url, CITEBOT_ANSWER_MODE="claims"))
        # Each run: the prose request, then json_schema (refused with a 500), then json_object + schema.
        assert [c.status for c in llm.probes] == [200, 500, 200] * 2
    assert code == 0
    [(status, line)] = found["model"]
    assert status == "ok" and line.startswith(f"model {SERVED_MODEL} at {llm.url}/v1/chat/completions: answers in ")
    assert "structured output as json_object+schema; context length not reported" in line
    model = findings[0]
    assert (model["structured_output"], model["constrained"], model["context_tokens"]) == ("json_object+schema", True, None)
    assert llm.calls == []


@pytest.mark.parametrize(("shape", "source"), [("vllm", "/v1/models"), ("llama-server", "/props")])
def test_a_context_too_small_for_a_full_prompt_is_a_warning_with_the_budget_that_fits(doctor, capsys, shape, source):
    with FakeLLMServer(shape=shape) as llm:
        code, found, findings = doctor(capsys, **openai_server(llm.url))
        assert code == 0
        (status, line), (warned, advice) = found["model"]
        assert status == "ok" and f"context {CONTEXT_TOKENS} tokens ({source})" in line
        assert warned == "warn" and "CITEBOT_PROMPT_BUDGET_CHARS=24000" in advice
        assert findings[1]["context_tokens"] == CONTEXT_TOKENS and findings[1]["output_cap"] == 512
        # The budget it suggests fits.
        fits = advice.rsplit("about ", 1)[1]
        code, found, _ = doctor(capsys, **openai_server(llm.url, CITEBOT_PROMPT_BUDGET_CHARS=fits))
        assert [status for status, _ in found["model"]] == ["ok"]


def test_ollama_says_its_num_ctx(doctor, capsys):
    with FakeLLMServer(shape="ollama") as llm:
        code, found, _ = doctor(capsys, CITEBOT_LLM="ollama", CITEBOT_LLM_URL=llm.url, CITEBOT_LLM_MODEL=SERVED_MODEL,
                                CITEBOT_PROMPT_BUDGET_CHARS="6000")
    assert code == 0
    assert found["model"] == [("ok", found["model"][0][1])]
    assert "structured output as format schema; context 4096 tokens (/api/show num_ctx)" in found["model"][0][1]


# ----------------------------------------------------------------- the judge


def test_with_a_model_the_judge_off_is_a_warning_and_the_model_judging_is_ok(doctor, capsys):
    with FakeLLMServer() as llm:
        code, found, _ = doctor(capsys, **openai_server(llm.url, CITEBOT_JUDGE="off"))
        assert code == 0
        [(status, line)] = found["judge"]
        assert status == "warn" and line.startswith("CITEBOT_JUDGE=off: the model's answers are posted unverified, marked so")
        code, found, _ = doctor(capsys, **openai_server(llm.url, CITEBOT_JUDGE="auto"))  # the default
        assert found["judge"] == [("ok", "the answering model judges each answer that passes the checks (one more call)")]
    # The extractive backend quotes the KB: no judge, and nothing said of one.
    code, found, _ = doctor(capsys, CITEBOT_LLM="extractive", CITEBOT_JUDGE="off")
    assert code == 0 and "judge" not in found


def test_a_minicheck_judge_is_asked_one_sentence_its_document_states(doctor, capsys):
    with FakeLLMServer() as llm, FakeMiniCheck(lambda document, claim: claim in document) as minicheck:
        env = openai_server(llm.url, CITEBOT_JUDGE="minicheck", CITEBOT_JUDGE_URL=minicheck.url)
        code, found, findings = doctor(capsys, **env)
        assert code == 0
        [(status, line)] = found["judge"]
        assert status == "ok" and line.startswith(f"judge bespoke-minicheck at {minicheck.url}: answers in MiniCheck's protocol")
        assert next(f for f in findings if f["check"] == "judge")["seconds"] >= 0
        # Once per run (text and --json), on Ollama's route, the claim a sentence of the document.
        assert [c.path for c in minicheck.calls] == ["/api/chat"] * 2 and len(minicheck.claims) == 2

        minicheck.supports = lambda document, claim: False  # a model that supports nothing
        _, found, _ = doctor(capsys, **env)
        assert found["judge"][0][0] == "warn" and "says No to a sentence its document states word for word" in found["judge"][0][1]

        minicheck.set_script(["Sure! The claim is supported."] * 2)  # a chat model, not MiniCheck
        _, found, _ = doctor(capsys, **env)
        assert found["judge"][0][0] == "warn" and "replies outside MiniCheck's protocol" in found["judge"][0][1]

        minicheck.set_script([], default=Reply(status=503))
        code, found, _ = doctor(capsys, **env)
        assert code == 0  # the answers still work, posted unverified
        assert found["judge"][0][0] == "warn" and ": no answer (" in found["judge"][0][1]
        assert "the checks alone decide" in found["judge"][0][1]


def test_a_model_that_does_not_answer_fails(doctor, capsys, caplog):
    code, found, findings = doctor(capsys, **openai_server(f"http://127.0.0.1:{free_port()}",
                                                           CITEBOT_QUESTION_BUDGET_S="5"))
    assert code == 1
    [(status, line)] = found["model"]
    assert status == "fail" and ": no answer: " in line and "could not be reached" in line
    assert findings[0]["answers"] is False
    # One try, reported as it is: no in-call retries (and their warnings) before the line.
    assert "retry" not in caplog.text


def test_a_model_name_the_server_does_not_know_fails(doctor, capsys):
    with FakeLLMServer(shape="vllm") as llm:
        code, found, _ = doctor(capsys, **openai_server(llm.url, CITEBOT_LLM_MODEL="qwen-typo"))
    assert code == 1
    assert found["model"][0][0] == "fail" and "HTTP 404" in found["model"][0][1] and "qwen-typo" in found["model"][0][1]


# ----------------------------------------------------------------- Slack


def test_slack_token_socket_mode_or_signing_secret_and_the_review_channel(doctor, capsys):
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        slack_env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "CITEBOT_SLACK_API_URL": slack.url}
        code, found, _ = doctor(capsys, **slack_env, CITEBOT_REVIEW_CHANNEL="#citebot-review")
        assert code == 1  # HTTP mode without a signing secret
        signed_in, mode, review, reviewers = found["slack"]
        assert signed_in[0] == "ok" and signed_in[1].startswith("SLACK_BOT_TOKEN: signed in as @")
        assert mode == ("fail", "SLACK_SIGNING_SECRET: required for serve in HTTP mode (not set); "
                                "or set SLACK_APP_TOKEN to use Socket Mode")
        assert review == ("ok", "review channel CREVIEW")
        # Cards nobody may decide: only CITEBOT_REVIEWERS may.
        assert reviewers[0] == "warn" and "CITEBOT_REVIEWERS is empty" in reviewers[1]
        _, found, _ = doctor(capsys, **slack_env, CITEBOT_REVIEW_CHANNEL="#citebot-review", CITEBOT_REVIEWERS="U1")
        assert [f[0] for f in found["slack"]] == ["ok", "fail", "ok"]

        code, found, _ = doctor(capsys, **slack_env, SLACK_SIGNING_SECRET="s", CITEBOT_REVIEW_CHANNEL="")
        assert code == 0
        assert found["slack"][1:] == [
            ("ok", "HTTP mode: events are checked with SLACK_SIGNING_SECRET"),
            ("warn", "no CITEBOT_REVIEW_CHANNEL: rejected drafts are kept, but no reviewer sees them"),
        ]


def test_a_token_slack_refuses_fails(doctor, capsys):
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        code, found, _ = doctor(capsys, SLACK_BOT_TOKEN="xoxb-revoked", CITEBOT_SLACK_API_URL=slack.url)
    assert code == 1
    assert found["slack"] == [("fail", found["slack"][0][1])]
    assert found["slack"][0][1].startswith("SLACK_BOT_TOKEN: Slack refused it at auth.test: invalid_auth")


# ----------------------------------------------------------------- Redis


def test_redis_that_does_not_answer_fails_only_when_slack_is_set_up(doctor, capsys):
    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    code, found, _ = doctor(capsys, CITEBOT_REDIS_URL=nowhere)
    assert code == 0 and found["redis"][0][0] == "warn" and "cannot reach Redis at 127.0.0.1:" in found["redis"][0][1]
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        code, found, _ = doctor(capsys, CITEBOT_REDIS_URL=nowhere, SLACK_BOT_TOKEN=BOT_TOKEN,
                                CITEBOT_SLACK_API_URL=slack.url, SLACK_SIGNING_SECRET="s")
    assert code == 1 and found["redis"][0][0] == "fail"


# ----------------------------------------------------------------- the index


def test_the_index_its_entries_and_whether_its_vectors_fit_the_embedder(doctor, capsys, tmp_path):
    index = mini_index(tmp_path / "mini")  # built without an embedder: no vectors
    kb = str(tmp_path / "mini" / "kb")
    code, found, findings = doctor(capsys, CITEBOT_INDEX_DIR=str(index), CITEBOT_KB_DIR=kb, CITEBOT_EMBEDDER="none")
    assert code == 0
    [(status, line)] = found["index"]
    assert status == "ok" and "entries, vectors of no model; embedder none (BM25 only)" in line
    [index_finding] = [f for f in findings if f["check"] == "index"]
    assert index_finding["entries"] == len(list((tmp_path / "mini" / "kb").rglob("*.md")))
    # Then who may read each collection: the mini KB names no audience.
    assert found["access"] == [("ok", f"{name}: every full member; guests no; other organizations no")
                               for name in ("handbook", "payroll")]
    other = write_mini_kb(tmp_path / "other-kb")
    code, found, _ = doctor(capsys, CITEBOT_INDEX_DIR=str(index), CITEBOT_KB_DIR=str(other), CITEBOT_EMBEDDER="none")
    assert found["index"][1] == ("warn", f"built from {kb}, not from CITEBOT_KB_DIR ({other})")
    if local_embedder_available():
        code, found, _ = doctor(capsys, CITEBOT_INDEX_DIR=str(index), CITEBOT_KB_DIR=kb, CITEBOT_EMBEDDER="local")
        assert found["index"][1][0] == "warn" and "searches use BM25 alone until `citebot index`" in found["index"][1][1]


def test_the_vector_store_s_size_is_reported(doctor, capsys, tmp_path):
    from kb_index import build_index
    from tests.test_vectors import CountingEmbedder

    kb = write_mini_kb(tmp_path / "kb")
    report = build_index(kb, tmp_path / "ix", embedder=CountingEmbedder())
    code, found, findings = doctor(capsys, CITEBOT_INDEX_DIR=str(tmp_path / "ix"), CITEBOT_KB_DIR=str(kb),
                                   CITEBOT_EMBEDDER="none")
    [(status, line)] = [pair for pair in found["index"] if pair[1].startswith("vector store:")]
    assert status == "ok" and line.startswith(f"vector store: {report.embedded} vectors, ")
    assert line.endswith(f"MB in {tmp_path / 'ix' / 'vectors.sqlite'}")
    [store] = [f for f in findings if f["check"] == "index" and "bytes" in f]
    assert store["vectors"] == report.embedded and store["bytes"] > 0
