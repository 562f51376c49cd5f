"""The entailment judge's call against a fake model, and `citebot ask` with the judge end to end
(the pipeline with the judge, in-process: tests/test_pipeline.py)."""

from __future__ import annotations

import json
import os

import pytest

from bot import metrics
from bot.answer.backends import OpenAIBackend
from bot.answer.judge import LLMJudge, judge_messages, make_judge
from bot.answer.llm_http import DEFAULT_RETRIES
from bot.answer.prompt import build_evidence
from bot.answer.verify.judgement import JUDGE_JSON_SCHEMA, Statement
from bot.answer.verify.policy import JUDGE_UNAVAILABLE
from bot.cli import main
from bot.config import load_settings
from bot.i18n import Key, message
from bot.models import JUDGE_CONTRADICTS, JUDGE_NOT_STATED, AnswerMode, AuditMode, JudgeStatus, Support
from kb_index import ChunkResult
from tests.fakes import FakeLLMServer, Reply

ATZ = "Altersteilzeit ist ab dem 55. Lebensjahr möglich. Die Arbeitszeit wird bis zur Rente halbiert."
EVIDENCE = build_evidence([
    ChunkResult(chunk_id=f"c{i}", entry_id=entry, section=section, text=text, title="Altersteilzeit", stand="2026-01")
    for i, (entry, section, text) in enumerate([
        ("lb-atz-01", "Zusammenfassung", ATZ),
        ("lb-atz-02", "Aufstockung", "Der Arbeitgeber stockt das Entgelt um 20 Prozent auf."),
        ("lb-atz-01", "Voraussetzungen", "Beschäftigte müssen 1.080 Kalendertage versicherungspflichtig gewesen sein."),
    ])
])
FIRST = Statement(0, "Altersteilzeit gibt es ab 55.", ("lb-atz-01",), (EVIDENCE[2], EVIDENCE[0]))
SECOND = Statement(2, "Die Arbeitszeit wird halbiert.", ("lb-atz-01",), (EVIDENCE[0],))


def verdicts(*rows: tuple[str, str]) -> str:
    """The judge's reply: (verdict, quote) per statement, S1 first."""
    return json.dumps({"verdicts": [{"id": f"S{i + 1}", "verdict": v, "quote": q} for i, (v, q) in enumerate(rows)]})


def judge_calls(status: str) -> float:
    return metrics.REGISTRY.get_sample_value("citebot_judge_calls_total", {"status": status}) or 0.0


@pytest.fixture
def llm():
    with FakeLLMServer() as server:
        yield server


# ------------------------------------------------------------------ the call


async def test_the_judge_is_one_structured_call_in_the_answers_language(llm):
    llm.script(verdicts(("supports", "ab dem 55. Lebensjahr möglich"), ("not_stated", "")))
    before = judge_calls("failed")
    async with OpenAIBackend(llm.url, "judge-model", retries=0) as backend:
        judgement = await LLMJudge(backend).judge([FIRST, SECOND], AnswerMode.CITATIONS, "de")
    assert judgement.status is JudgeStatus.FAILED and judgement.model == "judge-model"
    assert judge_calls("failed") == before + 1
    assert [(s.item, s.support) for s in judgement.statements] == [(0, Support.SUPPORTS), (2, Support.NOT_STATED)]
    (call,) = llm.calls
    assert call.body["response_format"]["json_schema"]["schema"] == JUDGE_JSON_SCHEMA
    system, user = call.body["messages"]
    assert system["content"].startswith("Du prüfst Aussagen anhand von Blöcken aus der Wissensbasis.")
    assert system["content"].endswith('{"verdicts": [{"id": "S1", "verdict": "supports", "quote": "..."}]}')
    assert user["content"].startswith(message(Key.PROMPT_BLOCKS, "de") + "\n\nBlock 1 — E1 — [lb-atz-01]")


def test_each_block_is_shown_once_in_prompt_order_and_each_statement_with_what_it_cites():
    user = judge_messages([FIRST, SECOND], "en")[1]["content"]
    assert user.count("Block 1 — E1 — [lb-atz-01]") == 1 and "Block 2 —" not in user
    assert user.index("Block 1 — E1") < user.index("Block 3 — E3") and "Stand: 2026-01" in user
    assert user.endswith("Statements to check:\nS1 (cites E3, E1): Altersteilzeit gibt es ab 55.\n"
                         "S2 (cites E1): Die Arbeitszeit wird halbiert.")


async def test_the_judge_sees_the_askers_question_whose_facts_the_answer_applies(llm):
    # "You submitted 44 days after the expense, so …" is judged against the rule and the asker's own dates:
    # without the question, a judge can only call it not stated.
    question = "I paid on 2 March and submitted on 15 April: too late?"
    llm.script(verdicts(("supports", "ab dem 55. Lebensjahr möglich"), ("supports", "")))
    async with OpenAIBackend(llm.url, "judge-model", retries=0) as backend:
        await LLMJudge(backend).judge([FIRST, SECOND], AnswerMode.CITATIONS, "en", question)
    system, user = llm.calls[0].body["messages"]
    assert user["content"].startswith(message(Key.JUDGE_QUESTION, "en") + "\n" + question + "\n\n")
    assert "facts the asker gives in the question" in system["content"]
    assert message(Key.JUDGE_QUESTION, "en") not in judge_messages([FIRST], "en")[1]["content"]


async def test_a_judge_that_cannot_judge_says_why_and_is_counted(llm):
    llm.script(Reply(status=503), "no JSON here")
    before = judge_calls("unavailable")
    async with OpenAIBackend(llm.url, "m", retries=0) as backend:
        down = await LLMJudge(backend).judge([FIRST], AnswerMode.CITATIONS, "en")
        garbled = await LLMJudge(backend).judge([FIRST], AnswerMode.CITATIONS, "en")
    assert (down.status, garbled.status) == (JudgeStatus.UNAVAILABLE, JudgeStatus.UNAVAILABLE)
    assert judge_calls("unavailable") == before + 2
    assert down.error.startswith("LLMUnavailable: ") and "503" in down.error
    assert garbled.error == "JudgeReplyInvalid: not JSON: Expecting value"
    assert [s.text for s in down.statements] == ["Altersteilzeit gibt es ab 55."]


async def test_the_fake_model_judges_on_its_own_when_told(llm):
    # What deploy/smoke.sh's fake model does with the judge on: a statement its blocks hold is supported,
    # quoting them; one with another number, or words the blocks lack, is not stated. The script is not used.
    changed = Statement(1, "Die Arbeitszeit wird ab 60 halbiert.", ("lb-atz-01",), (EVIDENCE[0],))
    unrelated = Statement(3, "Der Arbeitgeber zahlt eine Abfindung.", ("lb-atz-02",), (EVIDENCE[1],))
    with FakeLLMServer(default="no JSON here", judge=True) as server:
        async with OpenAIBackend(server.url, "m", retries=0) as backend:
            judgement = await LLMJudge(backend).judge([SECOND, changed, unrelated], AnswerMode.CITATIONS, "de")
        (call,) = server.calls
    assert [(s.item, s.support) for s in judgement.statements] == [
        (2, Support.SUPPORTS), (1, Support.NOT_STATED), (3, Support.NOT_STATED)]
    assert judgement.statements[0].quote == "Die Arbeitszeit wird bis zur Rente halbiert."
    assert judgement.statements[0].quote_found and judgement.status is JudgeStatus.FAILED
    assert json.loads(call.reply)["verdicts"][0]["verdict"] == "supports"
    # Off (the default), the judge's request takes the script's reply like any other.
    async with OpenAIBackend(llm.url, "m", retries=0) as backend:
        garbled = await LLMJudge(backend).judge([SECOND], AnswerMode.CITATIONS, "de")
    assert garbled.status is JudgeStatus.UNAVAILABLE and llm.calls[0].reply is None


def test_the_judge_follows_the_setting(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    backend = OpenAIBackend("http://127.0.0.1:9", "m")
    assert make_judge(load_settings(env_file=None), backend) is None
    on = load_settings(env_file=None, llm="openai", llm_url="http://127.0.0.1:9", llm_model="m", judge="llm",
                       llm_timeout=7)
    judge = make_judge(on, backend)
    assert isinstance(judge, LLMJudge) and judge.backend is backend and judge.timeout == 7


# ------------------------------------------------------------------ `citebot ask`, end to end


# The bundled sample KB, which `citebot ask` indexes on first use.
PTO_QUESTION = "How many vacation days can I carry over?"
PTO_DRAFT = "You can carry over up to 5 unused days of annual leave; they must be taken by 31 March [hb-pto-01]."
PTO_QUOTE = "can carry over up to 5 unused days of annual leave"


@pytest.fixture
def ask(tmp_path, monkeypatch, llm):
    monkeypatch.chdir(tmp_path)
    for var in [v for v in os.environ if v.startswith("CITEBOT_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("CITEBOT_LLM", "openai")
    monkeypatch.setenv("CITEBOT_LLM_URL", llm.url)
    monkeypatch.setenv("CITEBOT_LLM_MODEL", "m")

    def run(capsys, *args: str, judge: str | None = "llm") -> tuple[int, dict]:
        if judge:
            monkeypatch.setenv("CITEBOT_JUDGE", judge)
        code = main(["ask", PTO_QUESTION, "--json", *args])
        return code, json.loads(capsys.readouterr().out)

    return run


def test_ask_posts_what_the_judge_supports(ask, llm, capsys):
    llm.script(PTO_DRAFT, verdicts(("supports", PTO_QUOTE)))
    code, answer = ask(capsys)
    assert code == 0 and answer["verified"] and answer["citations"] == ["hb-pto-01"]
    assert len(llm.calls) == 2 and llm.calls[1].body["response_format"]["json_schema"]["schema"] == JUDGE_JSON_SCHEMA
    assert "judge" in answer["timings_ms"] and "judgement" not in answer  # the --json contract is unchanged


def test_ask_refuses_to_post_what_the_judge_contradicts(ask, llm, capsys):
    contradicted = verdicts(("contradicts", "forfeited"))
    llm.script(PTO_DRAFT, contradicted, PTO_DRAFT, contradicted)
    code, answer = ask(capsys)
    assert code == 0 and not answer["verified"] and answer["draft"] == PTO_DRAFT
    assert answer["answer"] == message(Key.UNCERTAIN, "en")
    assert [v["kind"] for v in answer["violations"]] == [JUDGE_CONTRADICTS] and answer["regenerations"] == 1


def test_ask_json_shows_every_try_with_its_findings_verdicts_and_model_calls(ask, llm, capsys):
    # The first draft cites an entry that does not exist: held back, then the regeneration passes.
    first = PTO_DRAFT.replace("hb-pto-01", "hb-pto-99")
    llm.script(first, PTO_DRAFT, verdicts(("supports", PTO_QUOTE)))
    code, answer = ask(capsys)
    assert code == 0 and answer["verified"] and answer["violations"] == [] and answer["regenerations"] == 1
    one, two = answer["attempts"]
    # The finding that cost the regeneration is kept in the output, not only the kept try's.
    assert (one["n"], one["draft"], one["ok"], one["kept"]) == (1, first, False, False)
    assert [v["kind"] for v in one["violations"]] == ["UNKNOWN_ID"] and "hb-pto-99" in one["violations"][0]["detail"]
    assert [c["what"] for c in one["calls"]] == ["generate"] and one["judgement"] is None
    assert (two["n"], two["draft"], two["ok"], two["kept"], two["violations"]) == (2, PTO_DRAFT, True, True, [])
    assert [c["what"] for c in two["calls"]] == ["generate", "judge"]
    assert all(c["model"] == "m" and c["ms"] >= 0 for c in two["calls"])
    [statement] = two["judgement"]["statements"]
    assert statement["support"] == "supports" and statement["quote"] == PTO_QUOTE and statement["quote_found"]


def test_ask_claims_mode_with_a_claim_the_blocks_omit(ask, llm, capsys):
    draft = json.dumps({"claims": [{"text": "You can carry over up to 5 unused days of annual leave",
                                    "evidence_ids": ["E1"]}]})
    llm.script(draft, verdicts(("not_stated", "")), draft, verdicts(("not_stated", "")))
    code, answer = ask(capsys, "--mode", "claims")
    assert code == 0 and not answer["verified"] and answer["audit_mode"] == AuditMode.UNGROUNDED
    assert [v["kind"] for v in answer["violations"]] == [JUDGE_NOT_STATED]


# A result worked out in more steps than the checks follow: stated nowhere, so the judge's to recompute.
WORKED = PTO_DRAFT + " Of 14 days left at the end of the year, 9 would therefore be forfeited [hb-pto-01]."


# The same result in a sentence that introduces what follows: a lead-in, which the judge is not asked about
# unless the checks held it back, as they do its number.
WORKED_LEAD_IN = PTO_DRAFT + " Of 14 days left at the end of the year, 9 would therefore be forfeited, as follows:"


@pytest.mark.parametrize("draft", [WORKED, WORKED_LEAD_IN], ids=["statement", "lead-in"])
def test_a_number_the_checks_cannot_back_is_judged_and_posted_when_the_judge_supports_it(ask, llm, capsys, draft):
    llm.script(draft, verdicts(("supports", PTO_QUOTE), ("supports", PTO_QUOTE)))
    code, answer = ask(capsys)
    assert code == 0 and answer["verified"] and len(llm.calls) == 2 and answer["violations"] == []
    assert "): Of 14 days left at the end of the year" in llm.calls[1].body["messages"][1]["content"]


def test_a_number_the_checks_cannot_back_is_not_posted_when_the_judge_cannot_judge(ask, llm, capsys):
    llm.script(WORKED, "no JSON here")
    code, answer = ask(capsys)
    assert code == 0 and not answer["verified"] and answer["answer"] == message(Key.UNCERTAIN, "en")
    assert {v["kind"] for v in answer["violations"]} == {"NUMBER_NOT_IN_SOURCE", JUDGE_UNAVAILABLE}


def test_the_judge_is_on_by_default_wherever_a_model_answers(ask, llm, capsys):
    llm.script(PTO_DRAFT, verdicts(("supports", PTO_QUOTE)))
    code, answer = ask(capsys, judge=None)  # CITEBOT_JUDGE unset: auto
    assert code == 0 and answer["verified"] and len(llm.calls) == 2 and "judge" in answer["timings_ms"]


@pytest.mark.parametrize("failure", [Reply(status=503), Reply(status=500), Reply(text="no JSON here")],
                         ids=["down", "500", "junk"])
def test_ask_with_a_judge_that_cannot_judge_is_not_sure_and_says_why(ask, llm, capsys, failure):
    llm.set_script([PTO_DRAFT], default=failure)
    code, answer = ask(capsys)
    assert code == 0 and not answer["verified"] and answer["answer"] == message(Key.UNCERTAIN, "en")
    assert answer["draft"] == PTO_DRAFT and answer["regenerations"] == 0 and answer["sources"] == []
    assert [v["kind"] for v in answer["violations"]] == [JUDGE_UNAVAILABLE]
    assert answer["unverified_reason"].startswith("the judge could not judge: ")
    tries = 1 if failure.status == 200 else 1 + DEFAULT_RETRIES
    assert [c.status for c in llm.calls] == [200] + [failure.status] * tries  # the draft, the judge's tries


def test_ask_with_a_judge_past_its_time_is_not_sure(ask, llm, capsys, monkeypatch):
    monkeypatch.setenv("CITEBOT_LLM_TIMEOUT", "1")
    llm.set_script([PTO_DRAFT], default=Reply(text=verdicts(("supports", PTO_QUOTE)), delay=3.0))
    code, answer = ask(capsys)
    assert code == 0 and not answer["verified"] and answer["answer"] == message(Key.UNCERTAIN, "en")
    assert "no reply within 1s" in answer["unverified_reason"]


def test_ask_with_the_questions_time_spent_while_the_judge_is_asked_is_not_sure_and_says_so(ask, llm, capsys,
                                                                                            monkeypatch):
    # A budget with room for retrieval and the draft on a busy machine, and far less than the judge's own time.
    monkeypatch.setenv("CITEBOT_LLM_TIMEOUT", "60")
    monkeypatch.setenv("CITEBOT_QUESTION_BUDGET_S", "8")
    llm.set_script([PTO_DRAFT], default=Reply(text=verdicts(("supports", PTO_QUOTE)), delay=30.0))
    code, answer = ask(capsys)
    assert code == 0 and not answer["verified"] and answer["answer"] == message(Key.UNCERTAIN, "en")
    assert answer["draft"] == PTO_DRAFT and [v["kind"] for v in answer["violations"]] == [JUDGE_UNAVAILABLE]
    assert answer["unverified_reason"].startswith("the judge could not judge: BudgetSpent: ")


def test_ask_with_the_judge_off_makes_one_call_and_says_the_answer_is_not_verified(ask, llm, capsys):
    llm.script(PTO_DRAFT)
    code, answer = ask(capsys, judge="off")
    assert code == 0 and len(llm.calls) == 1 and "judge" not in answer["timings_ms"]
    assert not answer["verified"] and answer["citations"] == ["hb-pto-01"] and answer["unverified_reason"]
    assert answer["answer"].endswith("\n\n" + message(Key.NOT_JUDGED, "en"))
