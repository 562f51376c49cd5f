"""The sound checks as a whole: what each finding does (the policy table), numbers held for the judge,
what the judge is asked, and the sentences that say what the knowledge base does not cover."""

from __future__ import annotations

import pytest

from bot.answer.prompt import build_evidence
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.answer.verify.judgement import statements, wants_judgement
from bot.answer.verify.not_covered import says_not_covered
from bot.answer.verify.policy import JUDGE_UNAVAILABLE, POLICY, Action, claim_local, finding, held_for_judge, rule
from bot.models import JUDGE_CONTRADICTS, JUDGE_NOT_STATED, AnswerMode, AuditMode
from kb_index import ChunkResult


def block(entry_id: str, text: str, language: str = "de") -> ChunkResult:
    return ChunkResult(chunk_id=f"{entry_id}#0", entry_id=entry_id, section="Details", text=text, title=entry_id,
                       stand="2026-01", language=language)


EFZ = block("lb-efz-01", "Der Anspruch auf Entgeltfortzahlung entsteht erst nach vier Wochen ununterbrochener Dauer "
                         "des Arbeitsverhältnisses. Die Entgeltfortzahlung dauert bis zu sechs Wochen.")
PF = block("lb-pf-01", "Bestimmte Bezüge sind ganz oder teilweise unpfändbar, zum Beispiel die Hälfte der Vergütung für "
                       "Überstunden.")
SB = block("lb-sb-02", "Für einen Dienstwagen werden nach der 1-%-Regelung monatlich 1 % des Bruttolistenpreises "
                       "angesetzt.")
TRAVEL = block("hb-travel-02", "Hotels in Paris are reimbursed up to 200 EUR per night.", "en")


def check(text: str, *blocks: ChunkResult, language: str = "de", question: str = ""):
    return verify_citations(text, build_evidence(list(blocks)), language, question=question)


def kinds(verdict) -> set[str]:
    return {v.kind for v in verdict.violations}


# ------------------------------------------------------------------ the policy table


def test_every_finding_kind_has_one_consequence_and_an_unknown_one_regenerates():
    assert rule("NUMBER_NOT_IN_SOURCE").action is Action.JUDGE and rule("UNCITED_NUMBER").action is Action.JUDGE
    assert rule(JUDGE_UNAVAILABLE).action is Action.FAIL
    for kind in ("UNKNOWN_ID", "NO_CITATION", "QUOTE_NOT_IN_SOURCE", "LINK_NOT_IN_SOURCE", "SCHEMA_INVALID",
                 "MANUAL_QUOTE_VIOLATION", "SOURCE_ROLE_BLOCKED", JUDGE_CONTRADICTS, JUDGE_NOT_STATED):
        assert rule(kind).action is Action.REGENERATE, kind
    assert rule("A_CHECK_WITHOUT_A_ROW").action is Action.REGENERATE
    assert {k for k, r in POLICY.items() if r.claim_local} == {
        "UNKNOWN_EVIDENCE_ID", "UNSUPPORTED_CLAIM", "TOO_MANY_CLAIMS", "LINK_NOT_IN_SOURCE", "NUMBER_NOT_IN_SOURCE",
        JUDGE_CONTRADICTS, JUDGE_NOT_STATED}
    held = finding("NUMBER_NOT_IN_SOURCE", "'7'", 0)
    assert held.soft and held_for_judge(held) and claim_local(held)
    assert not finding(JUDGE_UNAVAILABLE, "down").soft


# ------------------------------------------------------------------ numbers


def test_a_number_no_cited_block_states_is_held_for_the_judge():
    verdict = check("Die Entgeltfortzahlung dauert bis zu sieben Wochen [lb-efz-01].", EFZ)
    assert not verdict.ok and kinds(verdict) == {"NUMBER_NOT_IN_SOURCE"}
    assert all(held_for_judge(v) for v in verdict.violations) and wants_judgement(verdict)
    assert check("Die Entgeltfortzahlung dauert bis zu 6 Wochen [lb-efz-01].", EFZ).ok  # "sechs" is 6


def test_a_number_the_question_gives_may_be_repeated_and_one_worked_out_from_it_is_the_judges():
    question = "Ich bekomme einen Firmenwagen mit 50.000 Euro Listenpreis. Was muss ich versteuern?"
    assert check("Bei 50.000 Euro Listenpreis setzt man monatlich 1 % an [lb-sb-02].", SB, question=question).ok
    worked = check("Bei 50.000 Euro Listenpreis sind das monatlich 500 Euro [lb-sb-02].", SB, question=question)
    assert [v.detail for v in worked.violations] == ["[lb-sb-02]: '500' is not stated in the cited blocks"]
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check("Bei 50.000 Euro setzt man 1 % an [lb-sb-02].", SB))


def test_a_claims_number_no_cited_evidence_states_drops_the_claim_until_the_judge_clears_it():
    draft = ('{"claims": [{"text": "Die Entgeltfortzahlung dauert bis zu sechs Wochen.", "evidence_ids": ["E1"]}, '
             '{"text": "Der Anspruch entsteht nach fünf Wochen.", "evidence_ids": ["E1"]}]}')
    verdict = verify_claims(draft, build_evidence([EFZ]), "de")
    assert verdict.audit_mode is AuditMode.HYBRID and [c.verified for c in verdict.claims] == [True, False]
    asked = statements(draft, verdict, build_evidence([EFZ]), AnswerMode.CLAIMS, "de")
    assert [s.item for s in asked] == [0, 1]  # the held claim is asked too


def test_a_short_answer_ahead_of_its_details_rests_on_what_the_details_cite():
    draft = ("**Short answer:** up to 200 EUR a night.\n\n"
             "Hotels in Paris are reimbursed up to 200 EUR per night [hb-travel-02].")
    assert check(draft, TRAVEL, language="en").ok
    made_up = check(draft.replace("up to 200 EUR a night", "up to 230 EUR a night"), TRAVEL, language="en")
    assert kinds(made_up) == {"UNCITED_NUMBER"} and all(held_for_judge(v) for v in made_up.violations)


def test_a_stand_line_after_a_cited_paragraph_is_checked_but_not_judged():
    draft = "Die Entgeltfortzahlung dauert bis zu sechs Wochen [lb-efz-01].\n\nStand: 2026-01"
    evidence = build_evidence([EFZ])
    verdict = verify_citations(draft, evidence, "de")
    assert verdict.ok, verdict.violations
    assert [s.text for s in statements(draft, verdict, evidence, AnswerMode.CITATIONS, "de")] == [
        "Die Entgeltfortzahlung dauert bis zu sechs Wochen."]
    assert not verify_citations(draft.replace("2026-01", "2024-03"), evidence, "de").ok


# ------------------------------------------------------------------ what the judge is asked


def test_every_sentence_that_would_be_posted_is_asked_short_answers_and_arithmetic_too():
    # A lead-in that only introduces the next line ("Für dich heißt das:") states nothing a block could hold;
    # one with a number of its own does.
    draft = ("Kurz gesagt: ja. Die Entgeltfortzahlung dauert bis zu sechs Wochen [lb-efz-01]. Für dich heißt das:\n\n"
             "- 6 × 7 = 42 Tage\n\nFür 2026 heißt das:\n\n- 42 Tage [lb-efz-01]\n")
    evidence = build_evidence([EFZ])
    verdict = verify_citations(draft, evidence, "de")
    asked = [s.text for s in statements(draft, verdict, evidence, AnswerMode.CITATIONS, "de")]
    assert asked == ["Kurz gesagt: ja.", "Die Entgeltfortzahlung dauert bis zu sechs Wochen.", "6 × 7 = 42 Tage",
                     "Für 2026 heißt das:", "42 Tage"]


# ------------------------------------------------------------------ what the KB does not cover


def test_a_sentence_on_what_the_kb_does_not_cover_is_a_partial_refusal_and_never_judged():
    draft = ("Bestimmte Bezüge sind ganz oder teilweise unpfändbar [lb-pf-01]. "
             "Zur Pfändung Ihres Kontos enthält die Wissensbasis keine Angaben.")
    evidence = build_evidence([PF])
    verdict = verify_citations(draft, evidence, "de")
    assert verdict.ok and not verdict.refusal
    assert verdict.not_covered == ["Zur Pfändung Ihres Kontos enthält die Wissensbasis keine Angaben."]
    asked = statements(draft, verdict, evidence, AnswerMode.CITATIONS, "de")
    assert [s.text for s in asked] == ["Bestimmte Bezüge sind ganz oder teilweise unpfändbar."]


def test_a_partial_refusal_may_name_the_numbers_of_what_is_missing_but_not_a_link():
    draft = ("Bestimmte Bezüge sind ganz oder teilweise unpfändbar [lb-pf-01]. "
             "Ob der 26. Dezember dazu zählt und wer die 700 € Differenz trägt, sagt die Wissensbasis nicht.")
    verdict = check(draft, PF)
    assert verdict.ok, verdict.violations
    with_link = draft.replace("sagt die Wissensbasis nicht.", "sagt die Wissensbasis nicht, siehe https://example.org/x.")
    assert "LINK_NOT_IN_SOURCE" in kinds(check(with_link, PF))


def test_a_claim_on_what_the_kb_does_not_cover_is_not_checked_as_a_claim():
    draft = ('{"claims": [{"text": "Bestimmte Bezüge sind ganz oder teilweise unpfändbar.", "evidence_ids": ["E1"]}, '
             '{"text": "Ob auch das Konto gepfändet werden kann, sagt die Wissensbasis nicht.", "evidence_ids": ["E1"]}]}')
    verdict = verify_claims(draft, build_evidence([PF]), "de")
    assert verdict.ok and verdict.not_covered == ["Ob auch das Konto gepfändet werden kann, sagt die Wissensbasis nicht."]


@pytest.mark.parametrize("text, gap", [
    ("Wie hoch die Freigrenze ab dem 1. Juli 2026 ist, sagt die Wissensbasis nicht.", True),
    ("The knowledge base does not say whether a claim after 30 but within 90 days counts.", True),
    ("The knowledge base does not say it, but you get 30 days.", False),
    ("Die Wissensbasis nennt keine Frist; allerdings gelten 30 Tage.", False),
])
def test_a_clause_that_goes_on_to_state_something_is_a_statement(text, gap):
    assert says_not_covered(text) is gap


def test_a_link_of_another_block_the_answer_cites_is_no_made_up_link():
    travel = block("hb-travel-03", "All business trips need your manager's approval before anything is booked.", "en")
    portal = block("hb-travel-04", "Book trains and hotels through the travel portal at https://travel.example.com.",
                   "en")
    draft = ("Get your manager's approval first, then book at https://travel.example.com [hb-travel-03]. "
             "Trains and hotels are booked through the travel portal [hb-travel-04].")
    assert check(draft, travel, portal, language="en").ok
    made_up = draft.replace("travel.example.com", "trips.example.com")
    assert "LINK_NOT_IN_SOURCE" in kinds(check(made_up, travel, portal, language="en"))
