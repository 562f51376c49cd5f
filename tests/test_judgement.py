"""The entailment judge's reply, read and checked against the blocks, and applied to a verdict (no model)."""

from __future__ import annotations

import json

import pytest

from bot.answer.prompt import build_evidence
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.answer.verify.judgement import (
    JudgeReplyInvalid,
    apply_judgement,
    read_judgement,
    statements,
    unavailable,
    wants_judgement,
)
from bot.answer.verify.policy import JUDGE_UNAVAILABLE
from bot.models import (
    JUDGE_CONTRADICTS,
    JUDGE_NOT_STATED,
    AnswerMode,
    AuditMode,
    JudgeStatus,
    Support,
    Verdict,
)
from kb_index import ChunkResult

PTO = "Every employee gets 28 days of paid annual leave per calendar year."
CARRY = "You can carry over up to 5 unused vacation days until 31 March of the next year."
SICK = "Tell your manager before 10:00 on the first day you are sick; from day 4 a doctor’s note is needed."

EVIDENCE = build_evidence([
    ChunkResult(chunk_id="hb-pto-01#0", entry_id="hb-pto-01", section="Entitlement", text=PTO, title="Annual leave"),
    ChunkResult(chunk_id="hb-sick-01#0", entry_id="hb-sick-01", section="Reporting", text=SICK, title="Sick leave"),
    ChunkResult(chunk_id="hb-pto-01#1", entry_id="hb-pto-01", section="Carry-over", text=CARRY, title="Annual leave"),
])

DRAFT = "You get 28 days of paid leave a year [hb-pto-01]. Tell your manager on the first day you are sick [hb-sick-01]."


def reply(*rows: tuple[str, str, str]) -> str:
    return json.dumps({"verdicts": [{"id": i, "verdict": v, "quote": q} for i, v, q in rows]})


def asked(draft: str = DRAFT):
    verdict = verify_citations(draft, EVIDENCE)
    assert verdict.ok, verdict.violations
    return verdict, statements(draft, verdict, EVIDENCE, AnswerMode.CITATIONS, "en")


def claims_verdict(*texts: str) -> Verdict:
    draft = json.dumps({"claims": [{"text": t, "evidence_ids": ["E1"]} for t in texts]})
    return verify_claims(draft, EVIDENCE)


# ------------------------------------------------------------------ what is asked


def test_citations_mode_asks_about_every_cited_sentence_with_all_blocks_of_its_entry():
    _, asked_ = asked("You get 28 days a year. You can carry over 5 days [hb-pto-01].\n\nSick? Tell your manager [hb-sick-01].")
    assert [(s.item, s.text, s.cites) for s in asked_] == [
        (0, "You get 28 days a year.", ("hb-pto-01",)),  # inherits the next sentence's citation
        (1, "You can carry over 5 days.", ("hb-pto-01",)),
        (2, "Sick?", ("hb-sick-01",)),  # every sentence that would be posted is asked
        (3, "Tell your manager.", ("hb-sick-01",)),
    ]
    assert asked_[0].pointers == ["E1", "E3"] and asked_[2].pointers == ["E2"]


def test_the_refusal_sentence_beside_an_answer_is_not_asked_about():
    draft = "You get 28 days a year [hb-pto-01]. The knowledge base does not cover this question."
    _, asked_ = asked(draft)
    assert [s.text for s in asked_] == ["You get 28 days a year."]


def test_claims_mode_asks_about_the_verified_claims_only():
    draft = json.dumps({"claims": [
        {"text": "Every employee gets 28 days of paid annual leave", "evidence_ids": ["E1"]},
        {"text": "The moon is made of cheese", "evidence_ids": ["E9"]},
    ]})
    verdict = verify_claims(draft, EVIDENCE)
    assert verdict.audit_mode is AuditMode.HYBRID
    asked_ = statements(draft, verdict, EVIDENCE, AnswerMode.CLAIMS, "en")
    assert [(s.item, s.cites, s.pointers) for s in asked_] == [(0, ("E1",), ["E1"])]


def test_only_a_draft_that_would_be_posted_is_judged():
    assert wants_judgement(Verdict(ok=True))
    assert wants_judgement(Verdict(ok=False, audit_mode=AuditMode.HYBRID))
    assert not wants_judgement(Verdict(ok=True, refusal=True))
    assert not wants_judgement(Verdict(ok=False))
    assert not wants_judgement(Verdict(ok=False, audit_mode=AuditMode.UNGROUNDED))


# ------------------------------------------------------------------ reading the reply


def test_supports_with_a_verbatim_quote_passes():
    _, asked_ = asked()
    judgement = read_judgement(reply(("S1", "supports", "28 days of paid annual leave"),
                                     ("S2", "supports", "Tell your manager before 10:00")), asked_, "en", "m")
    assert judgement.status is JudgeStatus.PASSED and judgement.model == "m"
    assert [(s.support, s.quote_found) for s in judgement.statements] == [(Support.SUPPORTS, True)] * 2


def test_a_quote_is_found_whatever_the_copy_did_to_spaces_apostrophes_quotes_and_case():
    _, asked_ = asked()
    quote = "from  day 4 a DOCTOR'S\nnote is needed"
    judgement = read_judgement(reply(("S1", "supports", "every employee gets 28 days"), ("S2", "supports", quote)),
                               asked_, "en")
    assert judgement.status is JudgeStatus.PASSED


def test_an_ellipsis_in_the_quote_stands_for_an_omission():
    _, asked_ = asked()
    judgement = read_judgement(reply(("S1", "supports", "Every employee gets 28 days … per calendar year"),
                                     ("S2", "supports", "Tell your manager")), asked_, "en")
    assert judgement.status is JudgeStatus.PASSED


@pytest.mark.parametrize("quote", [
    "Tell your manager after 10:00",  # not what the block says
    "Every employee gets 28 days",  # in the context, but not in a block the sentence cites
    "on the",  # verbatim, and says nothing
    "",
])
def test_supports_without_a_quote_from_a_cited_block_counts_as_not_stated(quote):
    _, asked_ = asked("Tell your manager when you are sick [hb-sick-01].")
    judgement = read_judgement(reply(("S1", "supports", quote)), asked_, "en")
    (judged,) = judgement.statements
    assert judgement.status is JudgeStatus.FAILED
    assert (judged.said, judged.support, judged.quote_found) == ("supports", Support.NOT_STATED, False)


def test_contradicts_and_not_stated_count_as_said():
    _, asked_ = asked()
    judgement = read_judgement(reply(("S1", "contradicts", "28 days"), ("S2", "not_stated", "")), asked_, "en")
    assert [s.support for s in judgement.statements] == [Support.CONTRADICTS, Support.NOT_STATED]
    assert judgement.status is JudgeStatus.FAILED


def test_a_statement_without_a_verdict_or_with_an_unknown_word_is_not_stated():
    _, asked_ = asked()
    judgement = read_judgement(reply(("S2", "probably", "Tell your manager")), asked_, "en")
    assert [(s.said, s.support) for s in judgement.statements] == [
        ("", Support.NOT_STATED), ("probably", Support.NOT_STATED)
    ]


def test_ids_are_read_leniently_and_the_first_verdict_for_a_statement_counts():
    _, asked_ = asked()
    text = json.dumps({"verdicts": [
        {"id": 1, "verdict": "Supports", "quote": "28 days"},
        {"id": "s2", "verdict": "supports", "quote": "Tell your manager"},
        {"id": "S2", "verdict": "contradicts", "quote": ""},
        {"id": "S9", "verdict": "contradicts", "quote": ""},
        "not an object",
    ]})
    judgement = read_judgement(f"```json\n{text}\n```", asked_, "en")
    assert judgement.status is JudgeStatus.PASSED


@pytest.mark.parametrize("text", ["I think it is fine.", '{"verdict": "supports"}', '{"verdicts": "all good"}', "[]"])
def test_a_reply_that_is_not_the_schema_is_no_judgement(text):
    _, asked_ = asked()
    with pytest.raises(JudgeReplyInvalid):
        read_judgement(text, asked_, "en")


# ------------------------------------------------------------------ applying it


def test_citations_mode_a_failed_statement_fails_the_draft():
    verdict, asked_ = asked()
    judgement = read_judgement(reply(("S1", "contradicts", "28 days"), ("S2", "not_stated", "")), asked_, "en")
    judged = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CITATIONS)
    assert not judged.ok and judged.judgement == judgement
    assert [(v.kind, v.claim) for v in judged.violations] == [(JUDGE_CONTRADICTS, 0), (JUDGE_NOT_STATED, 1)]
    assert "say otherwise: '28 days'" in judged.violations[0].detail
    assert judged.violations[1].detail.endswith("Tell your manager on the first day you are sick.")


def test_a_made_up_quote_is_named_in_the_violation():
    verdict, asked_ = asked("You get 28 days of paid leave a year [hb-pto-01].")
    judgement = read_judgement(reply(("S1", "supports", "30 days")), asked_, "en")
    (violation,) = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CITATIONS).violations
    assert violation.kind == JUDGE_NOT_STATED and "quote '30 days' is not in" in violation.detail


def test_a_passed_judgement_is_recorded_and_changes_nothing_else():
    verdict, asked_ = asked()
    judgement = read_judgement(reply(("S1", "supports", "28 days"), ("S2", "supports", "Tell your manager")),
                               asked_, "en")
    judged = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CITATIONS)
    assert judged == verdict.model_copy(update={"judgement": judgement})


def test_an_unavailable_judge_fails_the_verdict():
    verdict, asked_ = asked()
    assert verdict.ok
    judgement = unavailable(asked_, "LLMUnavailable: HTTP 503", "m")
    judged = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CITATIONS)
    assert not judged.ok and judged.judgement.status is JudgeStatus.UNAVAILABLE
    (down,) = judged.violations
    assert down.kind == JUDGE_UNAVAILABLE and down.detail.endswith("LLMUnavailable: HTTP 503")
    assert [(s.said, s.support) for s in judged.judgement.statements] == [("", Support.NOT_STATED)] * 2


def test_claims_mode_a_failed_claim_is_dropped_and_the_answer_becomes_partial():
    verdict = claims_verdict("Every employee gets 28 days of paid annual leave", "Employees get paid annual leave")
    assert verdict.audit_mode is AuditMode.STRICT and verdict.citations == ["hb-pto-01"]
    asked_ = statements("", verdict, EVIDENCE, AnswerMode.CLAIMS, "en")
    judgement = read_judgement(reply(("S1", "supports", "gets 28 days"), ("S2", "not_stated", "")), asked_, "en")
    judged = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CLAIMS)
    assert (judged.ok, judged.audit_mode) == (False, AuditMode.HYBRID)
    assert [c.verified for c in judged.claims] == [True, False] and judged.citations == ["hb-pto-01"]
    assert [(v.kind, v.claim) for v in judged.violations] == [(JUDGE_NOT_STATED, 1)]


def test_claims_mode_nothing_left_is_ungrounded():
    verdict = claims_verdict("Every employee gets 28 days of paid annual leave")
    asked_ = statements("", verdict, EVIDENCE, AnswerMode.CLAIMS, "en")
    judgement = read_judgement(reply(("S1", "contradicts", "")), asked_, "en")
    judged = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CLAIMS)
    assert (judged.ok, judged.audit_mode, judged.citations) == (False, AuditMode.UNGROUNDED, [])


# ------------------------------------------------------------------ a sentence nothing cites


UNCITED = "**In short:** you can carry over 5 days until 31 March.\n\nYou get 28 days of paid leave a year [hb-pto-01]."


def test_an_uncited_sentence_with_numbers_is_asked_about_with_every_block_the_answer_cites():
    verdict = verify_citations(UNCITED, EVIDENCE)
    assert [(v.kind, v.soft) for v in verdict.violations] == [("UNCITED_NUMBER", True)]
    asked_ = statements(UNCITED, verdict, EVIDENCE, AnswerMode.CITATIONS, "en")
    assert [(s.item, s.cites, s.pointers) for s in asked_] == [
        (0, ("hb-pto-01",), ["E1", "E3"]), (1, ("hb-pto-01",), ["E1", "E3"])]
    supported = read_judgement(reply(("S1", "supports", "carry over up to 5 unused vacation days until 31 March"),
                                     ("S2", "supports", "28 days")), asked_, "en")
    assert apply_judgement(verdict, supported, EVIDENCE, AnswerMode.CITATIONS).ok
    not_stated = read_judgement(reply(("S1", "not_stated", ""), ("S2", "supports", "28 days")), asked_, "en")
    judged = apply_judgement(verdict, not_stated, EVIDENCE, AnswerMode.CITATIONS)
    assert not judged.ok and {v.kind for v in judged.violations} == {"UNCITED_NUMBER", JUDGE_NOT_STATED}


def test_an_uncited_sentence_without_numbers_is_asked_about_too_so_a_flipped_yes_or_no_is_caught():
    # The answer's verdict often stands alone ahead of the cited details: posted, so it is asked.
    draft = "No, a doctor's note is never needed.\n\nTell your manager on the first day you are sick [hb-sick-01]."
    verdict, asked_ = asked(draft)
    assert [(s.item, s.text, s.cites) for s in asked_] == [
        (0, "No, a doctor's note is never needed.", ("hb-sick-01",)),
        (1, "Tell your manager on the first day you are sick.", ("hb-sick-01",)),
    ]
    judgement = read_judgement(reply(("S1", "contradicts", "from day 4 a doctor’s note is needed"),
                                     ("S2", "supports", "Tell your manager before 10:00")), asked_, "en")
    judged = apply_judgement(verdict, judgement, EVIDENCE, AnswerMode.CITATIONS)
    assert not judged.ok and [v.kind for v in judged.violations] == [JUDGE_CONTRADICTS]


def test_an_uncited_heading_of_the_answers_layout_is_not_asked_about():
    _, asked_ = asked("**Sick leave**\n\nTell your manager on the first day you are sick [hb-sick-01].")
    assert [s.text for s in asked_] == ["Tell your manager on the first day you are sick."]


def test_an_uncited_quotation_or_link_is_no_judges_question():
    for draft in ('**In short:** "carry over up to 5 unused vacation days".\n\nYou get 28 days a year [hb-pto-01].',
                  "**In short:** see https://leave.example.com.\n\nYou get 28 days a year [hb-pto-01]."):
        verdict = verify_citations(draft, EVIDENCE)
        assert [(v.kind, v.soft) for v in verdict.violations] == [("UNCITED_SENTENCE", False)], draft
        assert not wants_judgement(verdict)
