"""Prompt building: evidence ids, block headers, rules, claims schema, retry feedback, budget."""

from __future__ import annotations

import hashlib

from bot.answer.prompt import (
    CLAIMS_JSON_SCHEMA,
    MIN_BLOCKS,
    build_evidence,
    build_messages,
    build_request,
    build_user_content,
    regeneration_feedback,
    retry_messages,
    system_rules,
    trim_to_budget,
)
from bot.i18n import message
from bot.models import AnswerMode, Question, Violation
from kb_index import ChunkResult


def chunk(n: int, text: str = "Altersteilzeit ist Teilzeit mit Lohnausgleich.", **kw) -> ChunkResult:
    fields = dict(
        chunk_id=f"lb-min-{n:02d}#0",
        entry_id=f"lb-min-{n:02d}",
        section="Zusammenfassung",
        text=text,
        title=f"Titel {n}",
        stand="2026-01",
        legal_bases=("AltTZG § 2",),
    )
    fields.update(kw)
    return ChunkResult(**fields)


# ------------------------------------------------------------------ evidence


def test_evidence_gets_pointer_ids_in_prompt_order():
    evidence = build_evidence([chunk(1), chunk(2), chunk(3)])
    assert [e.pointer_id for e in evidence] == ["E1", "E2", "E3"]
    assert [e.block for e in evidence] == [1, 2, 3]
    assert [e.entry_id for e in evidence] == ["lb-min-01", "lb-min-02", "lb-min-03"]


def test_evidence_id_is_a_short_sha256_of_entry_section_and_text():
    c = chunk(1)
    (ev,) = build_evidence([c])
    full = hashlib.sha256("\x1f".join([c.entry_id, c.section, c.text]).encode()).hexdigest()
    assert ev.evidence_id == full[: len(ev.evidence_id)]
    assert 8 <= len(ev.evidence_id) < len(full)


def test_evidence_id_is_stable_across_prompts_and_changes_with_content():
    a = build_evidence([chunk(1), chunk(2)])[1]
    b = build_evidence([chunk(2)])[0]
    assert a.pointer_id != b.pointer_id and a.evidence_id == b.evidence_id
    changed = build_evidence([chunk(2, text="Anderer Text.")])[0]
    assert changed.evidence_id != b.evidence_id


def test_the_same_chunk_twice_becomes_one_block():
    evidence = build_evidence([chunk(1), chunk(2), chunk(1, expanded=True)])
    assert [e.entry_id for e in evidence] == ["lb-min-01", "lb-min-02"]


# ------------------------------------------------------------------ blocks and question


def test_blocks_contain_metadata_header():
    content = build_user_content("Was ist ATZ?", build_evidence([chunk(1)]), AnswerMode.CITATIONS, "de")
    assert "Block 1 — [lb-min-01]" in content
    assert "Titel: Titel 1" in content
    assert "Abschnitt: Zusammenfassung" in content
    assert "Stand: 2026-01" in content
    assert "Rechtsgrundlagen: AltTZG § 2" in content
    assert "Frage: Was ist ATZ?" in content


def test_question_comes_last_after_all_blocks_in_rank_order():
    content = build_user_content("What is ATZ?", build_evidence([chunk(1), chunk(2)]), language="en")
    assert content.rstrip().endswith("Question: What is ATZ?")
    assert content.index("Block 1 — [lb-min-01]") < content.index("Block 2 — [lb-min-02]")
    assert "Title: Titel 2" in content and "Section: Zusammenfassung" in content


def test_block_without_stand_or_legal_bases_has_no_empty_lines_for_them():
    content = build_user_content("q", build_evidence([chunk(1, stand=None, legal_bases=())]))
    assert "Stand:" not in content and "Legal bases" not in content


def test_block_without_a_section_name_has_no_section_line():
    content = build_user_content("q", build_evidence([chunk(1, section="")]))
    assert "Title: Titel 1" in content and "Section" not in content


def test_cross_reference_expansion_is_marked():
    content = build_user_content("q", build_evidence([chunk(1), chunk(2, expanded=True)]))
    assert "Block 2 — [lb-min-02] (cross-reference)" in content
    assert "Block 1 — [lb-min-01]\n" in content


def test_thread_history_goes_before_the_question():
    content = build_user_content("Und ab wann?", build_evidence([chunk(1)]), language="de", history=["Was ist ATZ?"])
    assert content.index("- Was ist ATZ?") < content.index("Frage: Und ab wann?")


def test_claims_mode_blocks_show_the_pointer_id():
    content = build_user_content("q", build_evidence([chunk(1)]), AnswerMode.CLAIMS)
    assert "Block 1 — E1 — [lb-min-01]" in content


# ------------------------------------------------------------------ rules


def test_citation_rules_ask_for_the_exact_refusal_sentence_in_each_language():
    for lang in ("en", "de"):
        rules = system_rules(AnswerMode.CITATIONS, lang)
        assert message("refusal", lang) in rules


def test_citation_rules_require_kb_id_in_brackets_verbatim_quotes_and_stand():
    en = system_rules(AnswerMode.CITATIONS, "en")
    assert "square brackets" in en and "word for word" in en and "Stand" in en
    de = system_rules(AnswerMode.CITATIONS, "de")
    assert "eckigen Klammern" in de and "wörtlich" in de and "Stand" in de


def test_claims_rules_describe_the_json_and_the_empty_refusal():
    rules = system_rules(AnswerMode.CLAIMS, "en")
    assert '{"claims": [{"text": "...", "evidence_ids": ["E1"]}]}' in rules
    assert '{"claims": []}' in rules
    assert "At most 12 claims" in rules


def test_messages_are_system_then_user():
    msgs = build_messages("Was ist ATZ?", build_evidence([chunk(1)]), AnswerMode.CITATIONS, "de")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == system_rules(AnswerMode.CITATIONS, "de")
    assert msgs[1]["content"].endswith("Frage: Was ist ATZ?")


# ------------------------------------------------------------------ claims schema (guided_json)


def test_claims_request_carries_the_json_schema_a_backend_sends_as_guided_json():
    request = build_request(Question(text="Who?", language="en"), build_evidence([chunk(1)]), AnswerMode.CLAIMS)
    assert request.json_schema == CLAIMS_JSON_SCHEMA
    item = request.json_schema["properties"]["claims"]["items"]
    assert set(item["required"]) == {"text", "evidence_ids"}
    assert request.json_schema["required"] == ["claims"]
    assert request.mode is AnswerMode.CLAIMS and request.evidence[0].pointer_id == "E1"


def test_claims_schema_does_not_cap_the_number_of_claims():
    # A cap in the decoder would truncate silently; the verifier flags runaways instead.
    assert "maxItems" not in CLAIMS_JSON_SCHEMA["properties"]["claims"]


def test_citations_request_has_no_schema():
    request = build_request(Question(text="Was?", language="de"), build_evidence([chunk(1)]), AnswerMode.CITATIONS)
    assert request.json_schema is None
    assert request.language == "de" and request.question == "Was?"


# ------------------------------------------------------------------ regeneration feedback


def test_regeneration_feedback_lists_each_violation():
    violations = [
        Violation(kind="UNKNOWN_ID", detail="[lb-atz-99] is not the KB-ID of any context block", claim=0),
        Violation(kind="NO_CITATION", detail="the answer cites no KB-ID"),
    ]
    text = regeneration_feedback(violations, "en")
    assert "UNKNOWN_ID (#1): [lb-atz-99]" in text
    assert "NO_CITATION: the answer cites no KB-ID" in text
    assert regeneration_feedback(violations, "de").startswith("Deine Antwort")


def test_retry_messages_append_the_draft_and_the_feedback():
    base = build_messages("q", build_evidence([chunk(1)]))
    v = [Violation(kind="NO_CITATION", detail="none")]
    msgs = retry_messages(base, "Draft.", v, "en")
    assert msgs[:2] == base
    assert msgs[2] == {"role": "assistant", "content": "Draft."}
    assert msgs[3]["role"] == "user" and "NO_CITATION" in msgs[3]["content"]


# ------------------------------------------------------------------ budget


def blk(n: int, chars: int) -> ChunkResult:
    return chunk(n, text="x" * chars, title=f"Titel {n}", legal_bases=())


def test_trim_drops_tail_under_budget_seed_case():
    blocks = [blk(i, 30_000) for i in range(1, 6)]
    assert len(trim_to_budget(blocks, 90_000)) == 5  # fewer than six blocks: all stay
    blocks = [blk(i, 8_000) for i in range(1, 15)]
    trimmed = trim_to_budget(blocks, 90_000)
    assert 6 <= len(trimmed) < 14
    assert trimmed[0].entry_id == "lb-min-01"
    assert sum(len(b.text) for b in trimmed) + len(trimmed) * 64 <= 90_000 + 8_000


def test_trim_without_budget_returns_the_input_object():
    blocks = [blk(i, 10) for i in range(1, 4)]
    assert trim_to_budget(blocks, None) is blocks


def test_trim_keeps_a_prefix_and_never_cuts_a_block():
    blocks = [blk(i, 5_000) for i in range(1, 12)]
    trimmed = trim_to_budget(blocks, 40_000)
    assert trimmed == blocks[: len(trimmed)]
    assert all(len(b.text) == 5_000 for b in trimmed)
    assert len(trimmed) == 7  # 7 blocks with headers fit in 40,000, 8 do not


def test_trim_keeps_at_least_six_blocks_even_over_budget():
    blocks = [blk(i, 50_000) for i in range(1, 10)]
    assert len(trim_to_budget(blocks, 1_000)) == MIN_BLOCKS == 6


def test_trim_keeps_everything_that_fits():
    blocks = [blk(i, 100) for i in range(1, 10)]
    assert trim_to_budget(blocks, 100_000) == blocks
