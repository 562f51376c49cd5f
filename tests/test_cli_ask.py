"""`citebot ask` as a new user runs it: no configuration, the bundled KB, the extractive backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from bot.cli import main
from bot.i18n import Key, message
from tests.fakes import FakeLLMServer, Reply

CONTRACT_KEYS = {
    "question", "answer", "verified", "refused", "citations", "sources", "mode", "audit_mode",
    "violations", "regenerations", "attempts", "n_context", "draft", "timings_ms", "answerability", "not_covered",
        "unverified_reason",
}


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in [v for v in os.environ if v.startswith("CITEBOT_")]:
        monkeypatch.delenv(var)
    return tmp_path


def ask_json(capsys, *args) -> tuple[int, dict]:
    code = main(["ask", *args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_first_ask_indexes_the_sample_kb_and_answers_verified(fresh, capsys):
    code, answer = ask_json(capsys, "How many vacation days can I carry over?")
    assert code == 0
    assert set(answer) == CONTRACT_KEYS
    assert answer["verified"] and not answer["refused"]
    assert answer["citations"][0] == "hb-pto-01"
    assert answer["sources"][0]["n"] == 1 and answer["sources"][0]["stand"]
    assert "[1]" in answer["answer"]
    assert (fresh / ".citebot" / "index" / "CURRENT").exists()


def test_off_topic_question_is_refused(fresh, capsys):
    code, answer = ask_json(capsys, "What is the capital of Mongolia?")
    assert code == 0 and answer["refused"] and answer["verified"]
    assert answer["answer"] == message(Key.REFUSAL, "en")
    assert answer["sources"] == [] and answer["n_context"] == 0


def test_an_off_topic_question_near_the_threshold_gets_marked_passages_never_an_answer(fresh, capsys):
    # Retrieval refuses it a little under its threshold (near): the extractive backend shows what comes
    # nearest under the line that the knowledge base may not answer it, and the gaps report gets it.
    question = "Wie hoch ist der Wechselkurs von Bermuda-Dollar heute?"
    code, answer = ask_json(capsys, question)
    assert code == 0 and not answer["answerability"]["answerable"] and answer["answerability"]["near"]
    assert answer["answer"].startswith(message(Key.EXTRACTIVE_NEAR, "de") + "\n\n")
    assert answer["not_covered"] == [question]


def test_claims_mode_answer(fresh, capsys):
    code, answer = ask_json(capsys, "Wie lange wird der Lohn bei Krankheit fortgezahlt?", "--mode", "claims")
    assert answer["mode"] == "claims" and answer["audit_mode"] == "STRICT" and answer["verified"]
    assert "lb-efz-01" in answer["citations"]


def test_text_output_has_footnotes_and_sources(fresh, capsys):
    assert main(["ask", "Ab wann kann ich in Altersteilzeit gehen?"]) == 0
    out = capsys.readouterr().out
    assert "[1]" in out and "Quellen:" in out and "Stand 2026-01" in out


def test_llm_down_apologises_and_exits_one(fresh, capsys, monkeypatch):
    with FakeLLMServer(default=Reply(status=503)) as llm:
        monkeypatch.setenv("CITEBOT_LLM", "openai")
        monkeypatch.setenv("CITEBOT_LLM_URL", llm.url)
        monkeypatch.setenv("CITEBOT_LLM_MODEL", "m")
        code = main(["ask", "How many vacation days can I carry over?", "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert json.loads(out)["answer"] == message(Key.LLM_DOWN, "en")
    assert "503" in err


def test_ask_keeps_to_the_question_budget_over_all_tries(fresh, capsys, monkeypatch):
    # Three tries of 30 s each would take a minute and a half; the budget of 3 s ends the question.
    with FakeLLMServer(default=Reply(text="too late", delay=60)) as llm:
        for name, value in {"CITEBOT_LLM": "openai", "CITEBOT_LLM_URL": llm.url, "CITEBOT_LLM_MODEL": "m",
                            "CITEBOT_LLM_TIMEOUT": "30", "CITEBOT_QUESTION_BUDGET_S": "3"}.items():
            monkeypatch.setenv(name, value)
        started = time.monotonic()
        code = main(["ask", "How many vacation days can I carry over?", "--json"])
        elapsed = time.monotonic() - started
        assert len(llm.calls) <= 1
    out, err = capsys.readouterr()
    assert code == 1 and elapsed < 30
    assert json.loads(out)["answer"] == message(Key.LLM_DOWN, "en")
    assert "citebot: no answer within CITEBOT_QUESTION_BUDGET_S=3s" in err


def test_empty_question_is_a_usage_error(fresh, capsys):
    assert main(["ask", "   "]) == 2
    assert "empty" in capsys.readouterr().err


def test_missing_model_for_ollama_names_the_variable(fresh, capsys, monkeypatch):
    monkeypatch.setenv("CITEBOT_LLM", "ollama")
    assert main(["ask", "x"]) == 2
    assert "CITEBOT_LLM_MODEL" in capsys.readouterr().err


def test_console_script_runs_the_readme_command(fresh):
    exe = os.path.join(os.path.dirname(sys.executable), "citebot")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEBOT_")}
    done = subprocess.run([exe, "ask", "Ab wann kann ich in Altersteilzeit gehen?"], cwd=fresh, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[1]" in done.stdout and "lb-atz" not in done.stdout.split("Quellen:")[0]


def test_ask_points_out_an_index_of_another_kb_folder_and_citebot_index_fixes_it(fresh, capsys, monkeypatch):
    from tests.kb_fixtures import write_mini_kb

    ask_json(capsys, "How many vacation days can I carry over?")  # indexes the bundled sample KB
    kb = write_mini_kb(fresh / "my-kb")
    monkeypatch.setenv("CITEBOT_KB_DIR", str(kb))
    code = main(["ask", "Is there free coffee in the café?", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "was built from" in err and "run 'citebot index'" in err
    assert "hb-cafe-01" not in json.loads(out)["citations"]  # the old index is left alone
    assert main(["index", "-q"]) == 0
    capsys.readouterr()
    code = main(["ask", "Is there free coffee in the café?", "--json"])
    out, err = capsys.readouterr()
    assert json.loads(out)["citations"] == ["hb-cafe-01"] and "was built from" not in err
