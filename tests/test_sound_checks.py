"""The sound checks as a whole: what each finding does (the policy table), numbers held for the judge,
what the judge is asked, and the sentences that say what the knowledge base does not cover."""

from __future__ import annotations

import json

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


# ------------------------------------------------------------------ what the property tests found
# tests/test_sound_check_properties.py, shrunk: each counterexample as it was found, in a block with the
# header those tests give (title and section words, Stand 2026-01). The first part are restatements that were
# held back, the second changed facts that went through.


def shrunk(text: str, entry_id: str = "A-0") -> ChunkResult:
    return ChunkResult(chunk_id=f"{entry_id}#0", entry_id=entry_id, section="the", text=text, title="the",
                       stand="2026-01", language="de")


def claims_draft(*texts: str) -> str:
    return json.dumps({"claims": [{"text": t, "evidence_ids": ["E1"]} for t in texts]}, ensure_ascii=False)


HOTLINE = block("it-sd-01", "The Service Desk hotline (+49 421 555 0199) is staffed 24/7.", "en")


def test_a_phone_number_before_a_comma_is_the_whole_number():
    # The issue: "(?![\w,]…)" took "+49 421 555" for the number, which no block states.
    verdict = check("Call the Service Desk (hotline +49 421 555 0199, staffed 24/7) [it-sd-01].", HOTLINE, language="en")
    assert verdict.ok, verdict.violations
    changed = check("Call the Service Desk (hotline +49 421 555 0198, staffed 24/7) [it-sd-01].", HOTLINE, language="en")
    assert "LINK_NOT_IN_SOURCE" in kinds(changed)


@pytest.mark.parametrize("text, draft", [
    ("0:00. _0:01_.", "0:00. 0:01 [A-0]."),  # "_" of the emphasis glued to a number
    ("_1.\nJanuar\n1990_.", "the 1. Januar 1990 [A-0]."),
    ("<@U00000000>. <@U00000000>. _0:00_.", "<@U00000000>. <@U00000000>. 0:00 [A-0]."),
    ("_https://0.com/0_.", "https://0.com/0 [A-0]."),  # "_" of the emphasis glued to a link
    ("_0@0.com_.", "0@0.com [A-0]."),
    ("010/10\n00.", "010/10 00 [A-0]."),  # a phone number across a hard-wrapped line
    ("010/10\n00. 01/10-00-0.", "010/10 00. 01/10-00-0 [A-0]."),  # a wrapped line opening "00. " is no list
    ("(200)\n200-0000. (200)\n200-0000.", "(200) 200-0000. (200) 200-0000 [A-0]."),  # no number across ". "
    ("(200)\n200-0000. (200)\n201-0000,.", "(200) 200-0000. (200) 201-0000 [A-0]."),  # one before a comma
    ("**1\n000\n€**\nthe.", "„1 000 € the.“ [A-0]."),  # a quotation as the reader sees it, no emphasis
    ("https://0.com/0.", "„https://0.com/0.“ [A-0]."),  # the closing quotation mark is no part of the link
    ("[1990-01-01].", "„[1990-01-01].“ [A-0]."),  # a bracket inside a quotation is the quotation's
    ("13. 0:00.", "03. 0:00 [A-0]."),  # a line opening with "03. " is an item of a numbered list
    ("**0\n€**. 0:00.", "„**1“ [A-0]."),  # a quotation "1", emphasis aside, is in the Stand "2026-01"
])
def test_a_restatement_the_property_tests_found_held_back_passes(text, draft):
    verdict = check(draft, shrunk(text))
    assert verdict.ok, verdict.violations


@pytest.mark.parametrize("text, claims", [
    ("010/10\n00. 0:00.", ["010/10 00"]),
    ("010/10\n00,.", ["010/10 00"]),
    ("0@0.com. _1@0.com_.", ["0@0.com", "1@0.com"]),
    ("19/01/1990. 01/09/1990.", ["09/01/1990"]),  # 9 January or 1 September, as "01/09/1990" in the block
])
def test_a_claim_restating_what_the_property_tests_found_held_back_passes(text, claims):
    verdict = verify_claims(claims_draft(*claims), build_evidence([shrunk(text)]), "de")
    assert verdict.ok, verdict.violations


@pytest.mark.parametrize("text, draft, kind", [
    ("1\n€.", "_0 €_ [A-0].", "NUMBER_NOT_IN_SOURCE"),
    ("1.\nJanuar.", "0. Januar [A-0].", "NUMBER_NOT_IN_SOURCE"),  # "0." opening a line is a date's day here
    ("1.\nJanuar\n1990.", "0. Januar 1990 [A-0].", "NUMBER_NOT_IN_SOURCE"),
    ("1.\nJanuar\n1990.", "- 0. Januar 1990 [A-0].", "NUMBER_NOT_IN_SOURCE"),
    ("1.\nJanuar. 0\n€.", "0. Januar [A-0].", "NUMBER_NOT_IN_SOURCE"),  # no day 0: not the number 0 either
    ("(200)\n200-0000.", "(000) 200-0000 [A-0].", "LINK_NOT_IN_SOURCE"),  # leading zeros are digits
    ("0@0.com.", "_1@0.com_ [A-0].", "LINK_NOT_IN_SOURCE"),
    ("b-0@0.com.", "a-0@0.com [A-0].", "LINK_NOT_IN_SOURCE"),  # the KB-ID inside an address cites nothing
    ("[1990-01-01]. 0:00.", "„[0990-01-01].“ [A-0].", "QUOTE_NOT_IN_SOURCE"),
])
def test_a_change_the_property_tests_found_going_through_is_flagged(text, draft, kind):
    assert kind in kinds(check(draft, shrunk(text)))


def test_an_address_holding_the_shape_of_a_kb_id_is_no_citation():
    verdict = check("a-0@0.com [A-00].", shrunk("b-0@0.com.", "A-00"))
    assert kinds(verdict) == {"LINK_NOT_IN_SOURCE"}


@pytest.mark.parametrize("text, claims", [
    ("https://0.com/0.", ["_https://1.com/0_"]),
    ("0100/1000.", ["1100/1000"]),  # a phone number, not a range of years
    ("01/10-00-0. 200-200-0000.", ["01/10-00-0", "000-200-0000,"]),  # before a comma
    ("010/10\n00. the\n200-200-0000.", ["010/10 00", "000-200-0000,"]),
])
def test_a_changed_link_in_a_claim_the_property_tests_found_going_through_is_flagged(text, claims):
    verdict = verify_claims(claims_draft(*claims), build_evidence([shrunk(text)]), "de")
    assert [v.claim for v in verdict.violations if v.kind == "LINK_NOT_IN_SOURCE"] == [len(claims) - 1]


def test_a_date_in_slashes_is_a_date_not_a_phone_number():
    verdict = verify_claims(claims_draft("08/01/1990"), build_evidence([shrunk("19/01/1990. 01/09/1990.")]), "de")
    assert kinds(verdict) == {"NUMBER_NOT_IN_SOURCE"}  # 1 August or 8 January: neither is stated


def test_a_berlin_number_in_groups_of_three_is_a_phone_number_not_an_amount():
    assert "LINK_NOT_IN_SOURCE" in kinds(check("Tel. 030 555 018 [A-0].", shrunk("Tel. 030 555 019.")))
    assert check("Tel. 030 555 019 [A-0].", shrunk("Tel. 030 555 019.")).ok


def test_a_blocks_line_opening_with_1_and_a_full_stop_is_an_item_of_a_list():
    # A wrap the property tests once made inside a phone number: Markdown reads "1. 0:00." as a list's first item,
    # so the block states "+1 1 10 00", and a draft with "+1 1 10 00 1" a number it does not.
    verdict = verify_claims(claims_draft("+1 1 10 00 1"), build_evidence([shrunk("+1\n1\n10\n00\n1. 0:00.")]), "de")
    assert "LINK_NOT_IN_SOURCE" in kinds(verdict)
