"""The whole answering pipeline over a real index and a fake LLM server that speaks HTTP."""

from __future__ import annotations

import json

import pytest

from bot.answer.backends import OllamaBackend, OpenAIBackend
from bot.answer.budget import BUDGET_RESERVE_S, within_budget
from bot.answer.extractive import ExtractiveBackend
from bot.answer.judge import LLMJudge
from bot.answer.llm_http import LLMError
from bot.answer.pipeline import NOT_JUDGED_REASON, Pipeline
from bot.answer.verify.policy import JUDGE_UNAVAILABLE
from bot.i18n import Key, message
from bot.models import (
    JUDGE_CONTRADICTS,
    JUDGE_NOT_STATED,
    AnswerMode,
    AuditMode,
    JudgeStatus,
    Outcome,
    Question,
    Support,
)
from kb_index import Retriever, build_index
from tests.fakes import FakeLLMServer, Reply
from tests.kb_fixtures import write_mini_kb

UNCERTAIN_DE = message(Key.UNCERTAIN, "de")
REFUSAL_DE = message(Key.REFUSAL, "de")
ATZ = Question(text="Was ist Altersteilzeit?", language="de")


@pytest.fixture
def retriever(index_dir):
    with Retriever(index_dir) as r:
        yield r


@pytest.fixture
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
async def pipeline(retriever, llm):
    made = []

    def make(backend_cls=OpenAIBackend, *, judged: bool = False, judge_timeout: float | None = None, **kwargs):
        backend = backend_cls(llm.url, "test-model", retries=1, backoff=0)
        made.append(backend)
        judge = LLMJudge(backend, timeout=judge_timeout) if judged else None
        return Pipeline(retriever, backend, judge=judge, **kwargs)

    yield make
    for backend in made:
        await backend.aclose()


async def test_happy_path_is_verified_with_footnotes(pipeline, llm):
    llm.script("Altersteilzeit ist ab dem 55. Lebensjahr möglich [lb-atz-01].", SUPPORTS)
    answer = await pipeline(judged=True).answer(ATZ)
    assert (answer.verified, answer.refused, answer.outcome) == (True, False, Outcome.ANSWERED)
    assert answer.answer == "Altersteilzeit ist ab dem 55. Lebensjahr möglich [1]." and answer.notes == []
    assert answer.citations == ["lb-atz-01"] and answer.unverified_reason is None
    assert (answer.sources[0].id, answer.sources[0].stand, answer.sources[0].n) == ("lb-atz-01", "2026-01", 1)
    assert answer.regenerations == 0 and len(llm.calls) == 2
    assert set(answer.timings_ms) == {"retrieve", "generate", "verify", "judge"}


async def test_prompt_has_numbered_blocks_and_the_question_last(pipeline, llm):
    llm.script("Teilzeit [lb-atz-01].")
    await pipeline().answer(ATZ)
    system, user = llm.calls[0].body["messages"]
    assert system["role"] == "system" and REFUSAL_DE in system["content"]
    assert "Block 1 — [lb-atz-01]" in user["content"] and "Stand: 2026-01" in user["content"]
    assert user["content"].rstrip().endswith("Frage: Was ist Altersteilzeit?")


async def test_hallucinated_id_regenerates_then_gives_the_uncertain_message(pipeline, llm):
    llm.script("ATZ gilt ab 60. Lebensjahr [lb-atz-99].", "ATZ gilt ab 60. Lebensjahr, siehe [lb-atz-99].")
    answer = await pipeline().answer(ATZ)
    assert (answer.verified, answer.refused, answer.outcome) == (False, True, Outcome.UNCERTAIN)
    assert answer.answer == UNCERTAIN_DE
    assert answer.regenerations == 1 and answer.citations == []
    assert "lb-atz-99" in answer.draft
    assert any(v.kind == "UNKNOWN_ID" for v in answer.violations)


async def test_the_retry_carries_the_draft_and_its_violations(pipeline, llm):
    llm.script("ATZ gilt ab 60 [lb-atz-99].", "ATZ ist Teilzeit [lb-atz-01].")
    await pipeline().answer(ATZ)
    retry = llm.calls[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": "ATZ gilt ab 60 [lb-atz-99]."}
    assert retry[-1]["role"] == "user" and "lb-atz-99" in retry[-1]["content"]


async def test_regeneration_can_recover(pipeline, llm):
    llm.script("ATZ gilt ab 60 [lb-atz-99].", "Altersteilzeit halbiert die Arbeitszeit bis zur Rente [lb-atz-01].")
    answer = await pipeline().answer(ATZ)
    assert answer.outcome is Outcome.ANSWERED and answer.regenerations == 1 and answer.citations == ["lb-atz-01"]


async def test_wrong_number_for_a_cited_block_fails(pipeline, llm):
    wrong = "Altersteilzeit gibt es ab dem 60. Lebensjahr [lb-atz-01]."
    llm.script(wrong, wrong)
    answer = await pipeline().answer(ATZ)
    assert answer.outcome is Outcome.UNCERTAIN
    assert [v.kind for v in answer.violations] == ["NUMBER_NOT_IN_SOURCE"]


async def test_nothing_retrieved_refuses_without_calling_the_model(pipeline, llm):
    question = Question(text="Wie hoch ist der Wechselkurs von Bermuda-Dollar?", language="de")
    answer = await pipeline().answer(question)
    assert (answer.refused, answer.verified, answer.answer) == (True, True, REFUSAL_DE)
    assert llm.calls == []


async def test_a_model_refusal_is_kept_as_verified(pipeline, llm):
    llm.script(f"Zu dieser Frage: {REFUSAL_DE}")
    answer = await pipeline().answer(ATZ)
    assert (answer.refused, answer.verified, answer.outcome) == (True, True, Outcome.REFUSED)
    assert len(llm.calls) == 1


async def test_top_k_limits_the_main_blocks(pipeline, llm):
    llm.script("Teilzeit [lb-atz-01].")
    answer = await pipeline(top_k=1).answer(Question(text="Altersteilzeit Lebensjahr Rente", language="de"))
    # one main hit plus its cross-ref expansion
    assert answer.n_context == 2
    assert llm.calls[0].body["messages"][1]["content"].count("Block ") == 2


async def test_citing_a_blocked_source_role_fails(index_dir, tmp_path, llm):
    from tests.kb_fixtures import write_entry

    kb = write_mini_kb(tmp_path / "kb")
    write_entry(kb, "it/faq.md", {"id": "it-faq-01", "title": "Forum dump", "source_role": "noisy_background_source"},
                {"VPN": "Someone said the VPN password rotates every 30 days."})
    build_index(kb, tmp_path / "ix")
    llm.script("The VPN password rotates every 30 days [it-faq-01].", "The VPN password rotates every 30 days [it-faq-01].")
    with Retriever(tmp_path / "ix") as r:
        async with OpenAIBackend(llm.url, "m", retries=0, backoff=0) as backend:
            answer = await Pipeline(r, backend).answer(Question(text="VPN password rotation"))
    assert answer.outcome is Outcome.UNCERTAIN
    assert any(v.kind == "SOURCE_ROLE_BLOCKED" for v in answer.violations)


async def test_claims_mode_strict_answer_sends_the_schema(pipeline, llm):
    claims = {"claims": [{"text": "Altersteilzeit ist ab dem 55. Lebensjahr möglich", "evidence_ids": ["E1"]}]}
    llm.script(json.dumps(claims))
    answer = await pipeline(mode=AnswerMode.CLAIMS).answer(ATZ)
    assert answer.audit_mode is AuditMode.STRICT and answer.outcome is Outcome.ANSWERED
    assert answer.answer == "Altersteilzeit ist ab dem 55. Lebensjahr möglich [1]."
    body = llm.calls[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["claims"]


async def test_a_draft_cut_at_the_output_cap_fails_even_when_what_came_checks_out(retriever, llm):
    # Cut right after a cited sentence: each sentence holds, but the next one might have qualified it.
    llm.set_script([], default="Altersteilzeit ist ab dem 55. Lebensjahr möglich [lb-atz-01]. Es gibt Ausnahmen.")
    async with OpenAIBackend(llm.url, "test-model", retries=0, max_tokens=8) as backend:
        answer = await Pipeline(retriever, backend).answer(ATZ)
    assert answer.outcome is Outcome.UNCERTAIN and answer.drafts_cut == 2
    assert [v.kind for v in answer.violations] == ["CUT_AT_OUTPUT_CAP"]
    # Kept as it came, never completed; and the regeneration is told why the first draft failed.
    assert answer.draft == "Altersteilzeit ist ab dem 55. Lebensjahr möglich [lb-atz-01]."
    assert "CUT_AT_OUTPUT_CAP" in llm.calls[1].body["messages"][-1]["content"]


async def test_claims_json_that_closed_before_the_cap_is_whole(retriever, llm):
    claims = json.dumps({"claims": [{"text": "Altersteilzeit ist ab dem 55. Lebensjahr möglich", "evidence_ids": ["E1"]}]})
    llm.script(claims + " and then the model went on" * 20)
    async with OpenAIBackend(llm.url, "test-model", retries=0, max_tokens=len(claims.split(" ")) + 4) as backend:
        answer = await Pipeline(retriever, backend, mode=AnswerMode.CLAIMS).answer(ATZ)
    assert answer.outcome is Outcome.ANSWERED and answer.audit_mode is AuditMode.STRICT
    assert answer.drafts_cut == 1 and answer.violations == [] and len(llm.calls) == 1


async def test_claims_mode_through_ollama_sends_format(pipeline, llm):
    claims = {"claims": [{"text": "Altersteilzeit ist ab dem 55. Lebensjahr möglich", "evidence_ids": ["E1"]}]}
    llm.script(json.dumps(claims))
    answer = await pipeline(OllamaBackend, mode=AnswerMode.CLAIMS).answer(ATZ)
    assert answer.outcome is Outcome.ANSWERED
    assert llm.calls[0].path == "/api/chat" and llm.calls[0].body["format"]["properties"]["claims"]


async def test_claims_mode_hybrid_posts_only_verified_claims_marked_partial(pipeline, llm):
    hybrid = json.dumps({"claims": [
        {"text": "Altersteilzeit ist ab dem 55. Lebensjahr möglich", "evidence_ids": ["E1"]},
        {"text": "Der Mond ist aus Käse", "evidence_ids": ["E9"]},
    ]})
    llm.script(hybrid, hybrid)
    answer = await pipeline(mode=AnswerMode.CLAIMS).answer(ATZ)
    assert answer.audit_mode is AuditMode.HYBRID and answer.partial
    assert "Käse" not in answer.answer and "55. Lebensjahr" in answer.answer
    assert answer.notes == [message(Key.NOT_JUDGED, "de"), message(Key.PARTIAL, "de")]
    assert answer.regenerations == 1


async def test_claims_mode_ungrounded_twice_is_uncertain(pipeline, llm):
    llm.script("not json {[", '{"claims": [{"text": "ATZ is \\"great\\"", "evidence_ids": ["E1"]}]}')
    answer = await pipeline(mode=AnswerMode.CLAIMS).answer(ATZ)
    assert answer.outcome is Outcome.UNCERTAIN and answer.audit_mode is AuditMode.UNGROUNDED


async def test_llm_down_raises_for_the_caller_to_handle(pipeline, llm):
    llm.set_script([], default=Reply(status=503))
    with pytest.raises(LLMError):
        await pipeline().answer(ATZ)


async def test_thread_history_joins_retrieval(retriever):
    pipe = Pipeline(retriever, ExtractiveBackend())
    alone = pipe.retrieve(Question(text="und wie hoch ist die Aufstockung?", language="de")).hits
    followup = pipe.retrieve(Question(text="und wie hoch ist die Aufstockung?", language="de",
                                      history=["Was ist Altersteilzeit?"])).hits
    assert "lb-atz-02" in [h.entry_id for h in followup]
    assert [h.entry_id for h in followup][:1] != [] and len(followup) >= len(alone)


async def test_extractive_backend_answers_verified_from_the_blocks(retriever):
    answer = await Pipeline(retriever, ExtractiveBackend()).answer(Question(text="How many vacation days can I carry over?"))
    assert answer.verified and not answer.refused and answer.citations[0] == "hb-pto-01"
    assert "[1]" in answer.answer


async def test_collections_limit_what_can_be_cited(retriever):
    answer = await Pipeline(retriever, ExtractiveBackend()).answer(
        Question(text="sick doctor note", collections=["handbook"])
    )
    assert {s.collection for s in answer.sources} == {"handbook"}


async def test_thread_history_stays_inside_the_prompt_budget(retriever, llm):
    # Eight earlier messages of 39k characters each: before, a 238k-character prompt.
    history = [f"Message {i}: " + "Urlaub Resturlaub Übertragung " * 1300 for i in range(8)]
    backend = OpenAIBackend(llm.url, "m", timeout=5.0)
    budget = 24_000
    try:
        await Pipeline(retriever, backend, budget_chars=budget).answer(
            Question(text="und bei Teilzeit?", language="de", history=history)
        )
    finally:
        await backend.aclose()
    body = llm.calls[0].body
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    assert len(user) <= budget + 2_000  # labels and block headers on top of the budgeted text
    assert "Message 7" in user and "Message 0" not in user  # the newest message is the one kept


# ---------------------------------------------------------------- with the entailment judge

ATZ_DRAFT = "Altersteilzeit ist ab dem 55. Lebensjahr möglich [lb-atz-01]."
ATZ_QUOTE = "Altersteilzeit ist ab dem 55. Lebensjahr möglich"


def verdicts(*rows: tuple[str, str]) -> str:
    """The judge's reply: (verdict, quote) per statement, S1 first."""
    return json.dumps({"verdicts": [{"id": f"S{i + 1}", "verdict": v, "quote": q} for i, (v, q) in enumerate(rows)]})


SUPPORTS = verdicts(("supports", ATZ_QUOTE))
CONTRADICTS = verdicts(("contradicts", "ab dem 55. Lebensjahr"))
NOT_STATED = verdicts(("not_stated", ""))


async def test_supported_draft_is_posted_with_the_judgement(pipeline, llm):
    llm.script(ATZ_DRAFT, SUPPORTS)
    answer = await pipeline(judged=True).answer(ATZ)
    assert (answer.verified, answer.outcome, answer.regenerations) == (True, Outcome.ANSWERED, 0)
    judgement = answer.judgement
    assert judgement.status is JudgeStatus.PASSED and judgement.model == "test-model"
    (judged,) = judgement.statements
    assert (judged.support, judged.quote, judged.quote_found, judged.cites) == (
        Support.SUPPORTS, ATZ_QUOTE, True, ["lb-atz-01"]
    )
    assert set(answer.timings_ms) == {"retrieve", "generate", "verify", "judge"}


async def test_a_contradiction_is_regenerated_with_the_judges_feedback_and_can_recover(pipeline, llm):
    llm.script(ATZ_DRAFT, CONTRADICTS, ATZ_DRAFT, SUPPORTS)
    answer = await pipeline(judged=True).answer(ATZ)
    assert answer.verified and answer.regenerations == 1 and len(llm.calls) == 4
    feedback = llm.calls[2].body["messages"][-1]["content"]
    assert f"{JUDGE_CONTRADICTS} (#1)" in feedback and "ab dem 55. Lebensjahr" in feedback
    assert answer.judgement.status is JudgeStatus.PASSED  # the judgement of the draft that was kept


async def test_contradicted_twice_gives_the_uncertain_reply_with_the_draft_for_review(pipeline, llm):
    llm.script(ATZ_DRAFT, CONTRADICTS, ATZ_DRAFT, CONTRADICTS)
    answer = await pipeline(judged=True).answer(ATZ)
    assert (answer.verified, answer.outcome, answer.answer) == (False, Outcome.UNCERTAIN, message(Key.UNCERTAIN, "de"))
    assert answer.draft == ATZ_DRAFT and [v.kind for v in answer.violations] == [JUDGE_CONTRADICTS]
    assert answer.judgement.status is JudgeStatus.FAILED


async def test_a_block_that_omits_the_statement_fails_it(pipeline, llm):
    llm.script(ATZ_DRAFT, NOT_STATED, ATZ_DRAFT, NOT_STATED)
    answer = await pipeline(judged=True).answer(ATZ)
    assert answer.outcome is Outcome.UNCERTAIN and [v.kind for v in answer.violations] == [JUDGE_NOT_STATED]


async def test_supports_with_a_quote_the_block_does_not_hold_fails_as_not_stated(pipeline, llm):
    made_up = verdicts(("supports", "Altersteilzeit ist ab dem 50. Lebensjahr möglich"))
    llm.script(ATZ_DRAFT, made_up, ATZ_DRAFT, made_up)
    answer = await pipeline(judged=True).answer(ATZ)
    assert answer.outcome is Outcome.UNCERTAIN
    (violation,) = answer.violations
    assert violation.kind == JUDGE_NOT_STATED and "50. Lebensjahr" in violation.detail


JUDGE_FAILURES = {
    "down": (Reply(status=503), Reply(status=503)),  # the model is down, the retry too
    "500": (Reply(status=500), Reply(status=500)),
    "junk": ("Looks right to me.",),  # not the judge's schema
    "timeout": (Reply(text=SUPPORTS, delay=5.0),),  # past the judge's time
}


@pytest.mark.parametrize("mode", [AnswerMode.CITATIONS, AnswerMode.CLAIMS])
@pytest.mark.parametrize("failure", list(JUDGE_FAILURES))
async def test_a_judge_that_cannot_judge_lets_nothing_be_posted_as_verified(pipeline, llm, failure, mode):
    draft = ATZ_DRAFT if mode is AnswerMode.CITATIONS else json.dumps(
        {"claims": [{"text": "Altersteilzeit ist ab dem 55. Lebensjahr möglich", "evidence_ids": ["E1"]}]})
    llm.script(draft, *JUDGE_FAILURES[failure])
    answer = await pipeline(judged=True, judge_timeout=1.0, mode=mode).answer(ATZ)
    # "not sure", the draft kept for the review card, no regeneration: an outage is no fault of the draft
    assert (answer.verified, answer.outcome, answer.regenerations) == (False, Outcome.UNCERTAIN, 0)
    assert answer.answer == UNCERTAIN_DE and answer.draft == draft and answer.sources == []
    assert [v.kind for v in answer.violations] == [JUDGE_UNAVAILABLE]
    assert answer.unverified_reason.startswith("the judge could not judge: ")
    assert answer.judgement.status is JudgeStatus.UNAVAILABLE and answer.judgement.error
    assert len(llm.calls) == 1 + len(JUDGE_FAILURES[failure])
    assert answer.model_dump(mode="json")["unverified_reason"] == answer.unverified_reason


async def test_a_judge_hanging_past_the_questions_budget_gives_up_in_time_and_nothing_is_posted(pipeline, llm):
    llm.script(ATZ_DRAFT, Reply(text=SUPPORTS, delay=30.0))
    answer = await within_budget(pipeline(judged=True).answer(ATZ), 4.0)  # no BudgetSpent: the judge gave up first
    assert (answer.verified, answer.outcome, answer.draft) == (False, Outcome.UNCERTAIN, ATZ_DRAFT)
    assert answer.judgement.status is JudgeStatus.UNAVAILABLE and answer.timings_ms["judge"] < 4_000
    # Said as the question's time spent, not as a judge that did not answer in its own time: the worker
    # ends such a question "not sure" at once, as another try would find no time left.
    assert answer.judgement.error.startswith("BudgetSpent: ") and "BudgetSpent" in answer.unverified_reason


async def test_a_regeneration_past_the_questions_budget_keeps_the_first_draft_for_review(pipeline, llm):
    wrong = "Altersteilzeit gibt es ab 55 [lb-atz-99]."  # an id no block has: regenerated
    llm.script(wrong, Reply(text=ATZ_DRAFT, delay=30.0))
    answer = await within_budget(pipeline(judged=True).answer(ATZ), 5.0)  # no BudgetSpent: a draft exists
    assert (answer.verified, answer.outcome, answer.regenerations) == (False, Outcome.UNCERTAIN, 1)
    assert answer.answer == UNCERTAIN_DE and answer.draft == wrong and len(llm.calls) == 2


async def test_a_judge_with_the_questions_budget_spent_is_not_asked_and_nothing_is_posted(pipeline, llm):
    llm.script(ATZ_DRAFT, SUPPORTS)
    # Less than the judge's reserve is left once the draft is in: no judgement can be had in time.
    answer = await within_budget(pipeline(judged=True).answer(ATZ), BUDGET_RESERVE_S * 0.9)
    assert (answer.verified, answer.outcome) == (False, Outcome.UNCERTAIN) and len(llm.calls) == 1
    assert answer.judgement.error.startswith("BudgetSpent: ") and "BudgetSpent" in answer.unverified_reason


async def test_judge_off_makes_no_extra_call_and_says_the_answer_is_not_verified(pipeline, llm):
    llm.script(ATZ_DRAFT)
    answer = await pipeline().answer(ATZ)
    assert answer.judgement is None and len(llm.calls) == 1
    assert (answer.verified, answer.outcome) == (False, Outcome.ANSWERED) and answer.citations == ["lb-atz-01"]
    assert answer.notes == [message(Key.NOT_JUDGED, "de")] and answer.text.endswith(message(Key.NOT_JUDGED, "de"))
    assert answer.unverified_reason == NOT_JUDGED_REASON


async def test_the_extractive_backend_needs_no_judge(retriever):
    answer = await Pipeline(retriever, ExtractiveBackend()).answer(ATZ)
    assert (answer.verified, answer.outcome, answer.notes, answer.unverified_reason) == (
        True, Outcome.ANSWERED, [], None)


async def test_what_a_backend_says_it_can_do_decides_not_its_name(retriever, llm):
    # A model that happens to be called "extractive" writes its own words: with the judge off it is posted
    # as not checked against its sources.
    llm.script(ATZ_DRAFT)
    model = OpenAIBackend(llm.url, "extractive", retries=1, backoff=0)
    try:
        answer = await Pipeline(retriever, model).answer(ATZ)
    finally:
        await model.aclose()
    assert (answer.verified, answer.unverified_reason) == (False, NOT_JUDGED_REASON)


async def test_a_draft_that_fails_the_checks_or_refuses_is_not_judged(pipeline, llm):
    llm.script("ATZ gilt ab 60 [lb-atz-99].", f"Zu dieser Frage: {message(Key.REFUSAL, 'de')}")
    answer = await pipeline(judged=True).answer(ATZ)
    assert answer.refused and answer.verified and len(llm.calls) == 2  # two drafts, no judge call


async def test_claims_mode_drops_the_claim_the_judge_fails_and_posts_the_rest_as_partial(pipeline, llm):
    draft = json.dumps({"claims": [
        {"text": "Altersteilzeit ist ab dem 55. Lebensjahr möglich", "evidence_ids": ["E1"]},
        {"text": "Die Arbeitszeit wird bis zur Rente halbiert", "evidence_ids": ["E1"]},
    ]})
    judged = verdicts(("supports", ATZ_QUOTE), ("contradicts", "halbiert"))
    llm.script(draft, judged, draft, judged)
    answer = await pipeline(judged=True, mode=AnswerMode.CLAIMS).answer(ATZ)
    assert (answer.audit_mode, answer.partial, answer.regenerations) == (AuditMode.HYBRID, True, 1)
    assert "55. Lebensjahr" in answer.answer and "halbiert" not in answer.answer
    assert [(v.kind, v.claim) for v in answer.violations] == [(JUDGE_CONTRADICTS, 1)]
    assert "S2 (zitiert E1): Die Arbeitszeit wird bis zur Rente halbiert" in llm.calls[1].body["messages"][1]["content"]
