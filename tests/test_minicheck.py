"""CITEBOT_JUDGE=minicheck: a dedicated grounding model, one sentence at a time, in MiniCheck's protocol,
against a fake that speaks it; `citebot ask` end to end with the draft from a fake chat model."""

from __future__ import annotations

import json
import os

import pytest

from bot.answer.minicheck import MiniCheckJudge, document, prompt, read_answer
from bot.answer.verify.judgement import JudgeReplyInvalid, Statement
from bot.cli import main
from bot.i18n import Key, message
from bot.models import JUDGE_NOT_STATED, AnswerMode, JudgeStatus, Support
from tests.fakes import FakeLLMServer, Reply
from tests.fakes.minicheck import FakeMiniCheck, asked
from tests.test_judge import EVIDENCE

QUESTION = "How many vacation days can I carry over?"
DRAFT = "You can carry over up to 5 unused days of annual leave. They must be taken by 31 March [hb-pto-01]."


def test_the_prompt_is_minichecks_document_and_claim():
    text = prompt(document((EVIDENCE[0],)), "Altersteilzeit gibt es ab 55.")
    assert text.startswith("Document: Altersteilzeit — Zusammenfassung\nAltersteilzeit ist ab dem 55.")
    assert text.endswith("\nClaim: Altersteilzeit gibt es ab 55.")
    assert asked({"messages": [{"role": "user", "content": text}]}) == (
        text.split("\nClaim: ")[0].removeprefix("Document: "), "Altersteilzeit gibt es ab 55.")


@pytest.mark.parametrize("reply, supported", [("Yes", True), ("yes.", True), (" No", False), ("No, it does not.", False)])
def test_the_reply_is_yes_or_no(reply, supported):
    assert read_answer(reply) is supported


@pytest.mark.parametrize("reply", ["", "Maybe", "The document supports it", "Yesterday"])
def test_any_other_reply_is_no_judgement(reply):
    with pytest.raises(JudgeReplyInvalid):
        read_answer(reply)


async def test_each_sentence_of_a_statement_is_asked_on_its_own():
    with FakeMiniCheck(lambda doc, claim: "55" in claim) as server:
        from bot.answer.backends import OllamaBackend

        judge = MiniCheckJudge(OllamaBackend(server.url, "bespoke-minicheck"))
        two = Statement(0, "Altersteilzeit gibt es ab 55. Die Arbeitszeit wird halbiert.", ("lb-atz-01",), (EVIDENCE[0],))
        judgement = await judge.judge([two], AnswerMode.CITATIONS, "de")
        await judge.aclose()
    # Asked concurrently: the order they arrive in is the scheduler's.
    assert sorted(server.claims) == ["Altersteilzeit gibt es ab 55.", "Die Arbeitszeit wird halbiert."]
    assert judgement.status is JudgeStatus.FAILED and judgement.statements[0].support is Support.NOT_STATED


# ------------------------------------------------------------------ `citebot ask`, end to end


@pytest.fixture
def servers():
    with FakeLLMServer() as llm, FakeMiniCheck(lambda doc, claim: "31 March" not in claim or "31 March" in doc) as mc:
        yield llm, mc


@pytest.fixture
def ask(tmp_path, monkeypatch, servers):
    llm, minicheck = servers
    monkeypatch.chdir(tmp_path)
    for var in [v for v in os.environ if v.startswith("CITEBOT_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("CITEBOT_LLM", "openai")
    monkeypatch.setenv("CITEBOT_LLM_URL", llm.url)
    monkeypatch.setenv("CITEBOT_LLM_MODEL", "m")
    monkeypatch.setenv("CITEBOT_JUDGE", "minicheck")
    monkeypatch.setenv("CITEBOT_JUDGE_URL", minicheck.url)

    def run(capsys, *args: str) -> dict:
        assert main(["ask", QUESTION, "--json", *args]) == 0
        return json.loads(capsys.readouterr().out)

    return run


def test_ask_posts_what_minicheck_supports_sentence_by_sentence(ask, servers, capsys):
    llm, minicheck = servers
    llm.script(DRAFT)
    answer = ask(capsys)
    assert answer["verified"] and answer["citations"] == ["hb-pto-01"] and len(llm.calls) == 1
    assert sorted(minicheck.claims) == ["They must be taken by 31 March.", "You can carry over up to 5 unused days of annual leave."]
    assert all(c.path == "/api/chat" and c.body["model"] == "bespoke-minicheck" for c in minicheck.calls)
    document_sent = minicheck.calls[0].body["messages"][0]["content"]
    assert "carry over up to 5 unused days" in document_sent  # the cited block is the document


def test_ask_is_not_sure_when_minicheck_says_no_twice(ask, servers, capsys):
    llm, minicheck = servers
    minicheck.supports = lambda doc, claim: "5 unused days" not in claim
    llm.script(DRAFT, DRAFT)
    answer = ask(capsys)
    assert not answer["verified"] and answer["answer"] == message(Key.UNCERTAIN, "en")
    assert [v["kind"] for v in answer["violations"]] == [JUDGE_NOT_STATED] and answer["regenerations"] == 1


def test_ask_with_minicheck_down_is_not_sure(ask, servers, capsys):
    llm, minicheck = servers
    minicheck.set_script([], default=Reply(status=503))
    llm.script(DRAFT)
    answer = ask(capsys)
    assert not answer["verified"] and len(llm.calls) == 1  # no regeneration: the judge is out, not the draft
    assert answer["draft"] == DRAFT and answer["unverified_reason"].startswith("the judge could not judge: ")
