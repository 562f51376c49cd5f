"""From verified drafts to Answers: footnote markers, sources, partial, refusal, uncertain."""

from __future__ import annotations

import json

from bot.answer.assemble import (
    build_answer,
    error_answer,
    footnote,
    format_text_answer,
    refusal_answer,
    render_citations_text,
    render_claims_text,
    uncertain_answer,
)
from bot.answer.prompt import build_evidence, regeneration_feedback
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.i18n import message
from bot.models import AnswerMode, AuditMode, Claim, Outcome, Question
from bot.slack.footnotes import source_line
from kb_index import ChunkResult

UNCERTAIN_DE = message("uncertain", "de")
REFUSAL_DE = message("refusal", "de")


def chunk(entry_id: str, text: str, section: str = "Zusammenfassung", **kw) -> ChunkResult:
    fields = dict(
        chunk_id=f"{entry_id}#{section}", entry_id=entry_id, section=section, text=text,
        title=f"Titel {entry_id}", stand="2026-01", collection="hr", content_hash=f"h-{entry_id}-{section}",
    )
    fields.update(kw)
    return ChunkResult(**fields)


MIN1 = chunk("lb-min-01", "Altersteilzeit ist eine Teilzeit mit Lohnausgleich.", url="https://wiki.example.com/atz")
MIN2 = chunk("lb-min-02", "Urlaub: 30 Tage im Jahr.")
MIN1_DETAILS = chunk("lb-min-01", "Die ATZ beginnt frühestens mit 55 Jahren.", section="Details")
EVIDENCE = build_evidence([MIN1, MIN2, MIN1_DETAILS])


def answer_for(draft: str, question="Was ist Altersteilzeit?", evidence=EVIDENCE, mode=AnswerMode.CITATIONS):
    verify = verify_citations if mode is AnswerMode.CITATIONS else verify_claims
    verdict = verify(draft, evidence, "de")
    return build_answer(question, draft, verdict, evidence, mode, "de")


# ------------------------------------------------------------------ markers and sources


def test_kb_ids_become_numbered_markers_in_order_of_first_use():
    text, sources, citations = render_citations_text("Urlaub [lb-min-02]. ATZ [lb-min-01]. Wieder [lb-min-02].", EVIDENCE)
    assert text == "Urlaub [1]. ATZ [2]. Wieder [1]."
    assert [s.n for s in sources] == [1, 2]
    assert [s.id for s in sources] == citations == ["lb-min-02", "lb-min-01"]


def test_a_citation_after_the_full_stop_moves_inside_its_sentence():
    text, _, _ = render_citations_text("Urlaub gibt es. [lb-min-02] ATZ ab 55. [lb-min-01][lb-min-02]", EVIDENCE)
    assert text == "Urlaub gibt es [1]. ATZ ab 55 [2][1]."


def test_several_ids_in_one_bracket_become_adjacent_markers():
    text, _, _ = render_citations_text("Beides [lb-min-01, lb-min-02].", EVIDENCE)
    assert text == "Beides [1][2]."


def test_bare_mention_keeps_the_id_and_gets_a_marker():
    text, sources, _ = render_citations_text("Siehe lb-min-02 für Details.", EVIDENCE)
    assert text == "Siehe lb-min-02 [1] für Details."
    assert sources[0].id == "lb-min-02"


def test_reasoning_is_not_shown():
    text, _, _ = render_citations_text("<think>[lb-min-02]?</think>ATZ [lb-min-01].", EVIDENCE)
    assert text == "ATZ [1]."


def test_source_carries_every_field_of_its_block():
    _, (source,), _ = render_citations_text("ATZ [lb-min-01].", EVIDENCE)
    assert source.model_dump() == {
        "n": 1, "id": "lb-min-01", "title": "Titel lb-min-01", "section": "Zusammenfassung",
        "stand": "2026-01", "url": "https://wiki.example.com/atz", "page": None,
    }
    assert source.passage == MIN1.text
    assert source.collection == "hr"
    assert source.content_hash == "h-lb-min-01-Zusammenfassung"


def test_entry_with_several_blocks_is_sourced_by_its_best_ranked_block():
    _, (source,), _ = render_citations_text("ATZ [lb-min-01].", build_evidence([MIN1_DETAILS, MIN1]))
    assert source.section == "Details"


def test_claims_mode_renders_verified_claims_as_sentences_with_markers():
    claims = [
        Claim(text="Altersteilzeit ist eine Teilzeit mit Lohnausgleich", evidence_ids=["E1"], verified=True),
        Claim(text="Erfunden", evidence_ids=["E2"], verified=False),
        Claim(text="Die ATZ beginnt frühestens mit 55 Jahren.", evidence_ids=["E3", "E2"], verified=True),
    ]
    text, sources, citations = render_claims_text(claims, EVIDENCE)
    assert text == (
        "Altersteilzeit ist eine Teilzeit mit Lohnausgleich [1]. Die ATZ beginnt frühestens mit 55 Jahren [1][2]."
    )
    assert citations == ["lb-min-01", "lb-min-02"]
    assert sources[0].section == "Zusammenfassung"  # the block the first claim citing lb-min-01 used


def test_claims_mode_source_is_the_first_cited_block_of_the_entry():
    claims = [Claim(text="Die ATZ beginnt frühestens mit 55 Jahren", evidence_ids=["E3"], verified=True)]
    _, (source,), _ = render_claims_text(claims, EVIDENCE)
    assert source.section == "Details" and source.passage == MIN1_DETAILS.text


# ------------------------------------------------------------------ seed: answer outcomes


def test_happy_path_verified():
    answer = answer_for("Altersteilzeit ist eine Teilzeit mit Lohnausgleich [lb-min-01]. (Stand 2026-01)")
    assert answer.verified is True and answer.refused is False
    assert answer.citations == ["lb-min-01"]
    assert answer.sources[0].id == "lb-min-01" and answer.sources[0].stand == "2026-01"
    assert answer.answer == "Altersteilzeit ist eine Teilzeit mit Lohnausgleich [1]. (Stand 2026-01)"
    assert answer.outcome is Outcome.ANSWERED and answer.draft is None


def test_hallucinated_id_twice_gives_the_uncertain_answer_with_the_draft():
    first = "ATZ gilt ab 60. Lebensjahr [lb-atz-99]."
    second = "ATZ gilt ab 60. Lebensjahr, siehe [lb-atz-99]."
    assert not verify_citations(first, EVIDENCE, "de").ok
    verdict = verify_citations(second, EVIDENCE, "de")
    answer = build_answer("Was ist Altersteilzeit?", second, verdict, EVIDENCE, AnswerMode.CITATIONS, "de")
    assert answer.refused is True and answer.verified is False
    assert answer.answer == UNCERTAIN_DE
    assert answer.citations == [] and answer.sources == []
    assert answer.draft is not None and "lb-atz-99" in answer.draft
    assert [v.kind for v in answer.violations] == ["UNKNOWN_ID"]
    assert answer.outcome is Outcome.UNCERTAIN


def test_regeneration_can_recover():
    first = "ATZ gilt ab 60 [lb-atz-99]."
    feedback = regeneration_feedback(verify_citations(first, EVIDENCE, "de").violations, "de")
    assert "lb-atz-99" in feedback
    answer = answer_for("ATZ ist Teilzeit mit Lohnausgleich [lb-min-01].")
    assert answer.verified is True and answer.citations == ["lb-min-01"]


def test_empty_retrieval_refuses_deterministically():
    answer = refusal_answer("Wie hoch ist der Wechselkurs von Bermuda-Dollar?", "de")
    assert answer.refused is True and answer.verified is True
    assert answer.answer == REFUSAL_DE
    assert answer.n_context == 0 and answer.sources == [] and answer.outcome is Outcome.REFUSED


def test_model_refusal_is_kept_as_verified_refusal():
    answer = answer_for(f"Zu dieser Frage: {REFUSAL_DE}")
    assert answer.refused is True and answer.verified is True
    assert answer.answer == REFUSAL_DE and answer.citations == []


def test_n_context_counts_the_blocks_the_model_saw():
    answer = answer_for("ATZ ist Teilzeit [lb-min-01].", evidence=EVIDENCE[:1])
    assert answer.n_context == 1 and len(answer.sources) <= answer.n_context


# ------------------------------------------------------------------ claims mode outcomes


def test_hybrid_answer_posts_only_verified_claims_marked_partial():
    draft = json.dumps({"claims": [
        {"text": "Altersteilzeit ist eine Teilzeit mit Lohnausgleich", "evidence_ids": ["E1"]},
        {"text": "Erfundene Aussage", "evidence_ids": ["E9"]},
    ]})
    answer = answer_for(draft, mode=AnswerMode.CLAIMS)
    assert answer.audit_mode is AuditMode.HYBRID and answer.partial is True
    assert answer.verified is True and answer.refused is False
    assert answer.answer == "Altersteilzeit ist eine Teilzeit mit Lohnausgleich [1]."
    assert answer.notes == [message("partial", "de")]
    assert [v.kind for v in answer.violations] == ["UNKNOWN_EVIDENCE_ID"]


def test_strict_claims_answer_is_not_partial():
    draft = json.dumps({"claims": [{"text": "Urlaub: 30 Tage im Jahr", "evidence_ids": ["E2"]}]})
    answer = answer_for(draft, mode=AnswerMode.CLAIMS)
    assert answer.audit_mode is AuditMode.STRICT and not answer.partial
    assert answer.answer == "Urlaub: 30 Tage im Jahr [1]." and answer.citations == ["lb-min-02"]


def test_ungrounded_claims_answer_is_uncertain():
    draft = json.dumps({"claims": [{"text": 'ATZ ist "Teilzeit"', "evidence_ids": ["E1"]}]})
    answer = answer_for(draft, mode=AnswerMode.CLAIMS)
    assert answer.outcome is Outcome.UNCERTAIN and answer.audit_mode is AuditMode.UNGROUNDED
    assert answer.answer == UNCERTAIN_DE and answer.draft == draft


# ------------------------------------------------------------------ other answers


def test_uncertain_answer_keeps_the_rejected_draft_for_review():
    verdict = verify_citations("Nichts belegt.", EVIDENCE, "en")
    answer = uncertain_answer("q", "Nichts belegt.", verdict, "en", n_context=3)
    assert answer.answer == message("uncertain", "en")
    assert answer.draft == "Nichts belegt." and answer.n_context == 3
    assert [v.kind for v in answer.violations] == ["NO_CITATION"]


def test_error_answer_apologises():
    answer = error_answer("q", "de")
    assert answer.answer == message("llm_down", "de")
    assert answer.outcome is Outcome.ERROR and not answer.verified and not answer.refused


def test_truncated_question_gets_a_note():
    question = Question(text="x" * 40, language="en", truncated=True)
    verdict = verify_citations("ATZ [lb-min-01].", EVIDENCE, "en")
    answer = build_answer(question, "ATZ [lb-min-01].", verdict, EVIDENCE, AnswerMode.CITATIONS, "en")
    assert answer.answer == "ATZ [1]." and answer.notes == [message("truncated", "en", limit=40)]
    assert answer.question == "x" * 40
    assert "40 characters" in answer.notes[0]


def test_the_json_answer_carries_the_notes_as_trailing_paragraphs():
    question = Question(text="x" * 40, language="en", truncated=True)
    verdict = verify_citations("ATZ [lb-min-01].", EVIDENCE, "en")
    answer = build_answer(question, "ATZ [lb-min-01].", verdict, EVIDENCE, AnswerMode.CITATIONS, "en")
    assert answer.model_dump(mode="json")["answer"] == "ATZ [1].\n\n" + message("truncated", "en", limit=40)
    assert answer.model_dump(mode="json")["answer"] == answer.text


def test_answer_json_has_the_documented_keys_only():
    answer = answer_for("ATZ [lb-min-01].")
    dumped = answer.model_dump(mode="json")
    assert set(dumped) == {
        "question", "answer", "verified", "refused", "citations", "sources", "mode", "audit_mode",
        "violations", "regenerations", "attempts", "n_context", "draft", "timings_ms", "answerability", "not_covered",
        "unverified_reason",
    }
    assert dumped["sources"][0] == {
        "n": 1, "id": "lb-min-01", "title": "Titel lb-min-01", "section": "Zusammenfassung",
        "stand": "2026-01", "url": "https://wiki.example.com/atz", "page": None,
    }


# ------------------------------------------------------------------ terminal format


def test_format_text_answer():
    answer = answer_for("ATZ ist Teilzeit [lb-min-01]. Urlaub: 30 Tage [lb-min-02].")
    assert format_text_answer(answer) == (
        "ATZ ist Teilzeit [1]. Urlaub: 30 Tage [2].\n"
        "\n"
        "Sources:\n"
        "[1] Titel lb-min-01 · Zusammenfassung · Stand 2026-01 · https://wiki.example.com/atz\n"
        "[2] Titel lb-min-02 · Zusammenfassung · Stand 2026-01"
    )


def test_a_footnote_without_a_title_shows_its_kb_id_in_the_terminal_and_in_slack():
    source = answer_for("ATZ [lb-min-01].").sources[0].model_copy(update={"title": "", "url": None})
    assert footnote(source) == "[1] lb-min-01 · Zusammenfassung · Stand 2026-01"
    assert source_line(source) == footnote(source)


def test_format_text_answer_in_german_and_without_sources():
    answer = answer_for("ATZ [lb-min-01].")
    assert "\nQuellen:\n" in format_text_answer(answer, "de")
    assert format_text_answer(refusal_answer("q", "de")) == REFUSAL_DE
