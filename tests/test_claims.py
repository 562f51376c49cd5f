"""Claims mode: lenient JSON, per-claim rules, audit modes."""

from __future__ import annotations

import json

import pytest

from bot.answer.prompt import build_evidence
from bot.answer.verify.claims import DEFAULT_ALLOWED_ROLES, MAX_CLAIMS, verify_claims
from bot.answer.verify.lenient_json import parse_lenient_json
from bot.i18n import message
from bot.models import AuditMode, Evidence
from kb_index import ChunkResult

# ------------------------------------------------------------------ seed: lenient parser


def test_lenient_strict_passes_through():
    assert parse_lenient_json('{"a": 1}') == ({"a": 1}, [])


@pytest.mark.parametrize("raw", ['```json\n{"claims": []}\n```', '```\n{"claims": []}\n```'])
def test_lenient_strips_markdown_fence_labelled_or_not(raw):
    obj, fixups = parse_lenient_json(raw)
    assert obj == {"claims": []} and "fence" in fixups


def test_lenient_trims_preamble_and_suffix():
    obj, fixups = parse_lenient_json('Here is the JSON:\n{"claims": []}\nLet me know if you need more.')
    assert obj == {"claims": []} and "prose_trim" in fixups


def test_lenient_normalizes_curly_quotes():
    obj, fixups = parse_lenient_json("{“claims”: []}")
    assert obj == {"claims": []} and "curly_quotes" in fixups


def test_lenient_fixes_trailing_comma():
    obj, fixups = parse_lenient_json('{"claims": [],}')
    assert obj == {"claims": []} and "trailing_comma" in fixups


def test_lenient_combines_multiple_fixups():
    obj, fixups = parse_lenient_json("```json\nHere:\n{“claims”: [],}\n```")
    assert obj == {"claims": []}
    assert "fence" in fixups
    assert {"curly_quotes", "trailing_comma", "prose_trim"} <= set(fixups)


def test_lenient_raises_on_truly_broken():
    with pytest.raises(json.JSONDecodeError):
        parse_lenient_json("not json at all { ] [")


def test_lenient_keeps_typographic_quotes_inside_valid_strings():
    obj, fixups = parse_lenient_json('{"claims": [{"text": "Die „Regel“ gilt", "evidence_ids": ["E1"]},]}')
    assert obj["claims"][0]["text"] == "Die „Regel“ gilt"
    assert fixups == ["trailing_comma"]


# ------------------------------------------------------------------ evidence helpers


def ev(pointer: str, span: str, role: str = "primary_answer_source", entry: str | None = None) -> Evidence:
    """Evidence with an explicit pointer id, as the prompt would number it."""
    n = int(pointer[1:])
    c = ChunkResult(
        chunk_id=f"{pointer}#0", entry_id=entry or f"doc-{n}", section="Body", text=span,
        title="Test Doc", source_role=role,
    )
    return Evidence(block=n, pointer_id=pointer, evidence_id=f"{pointer}f8e4c2a{n:04x}", chunk=c)


def claims_json(*claims: tuple[str, list[str]]) -> str:
    return json.dumps({"claims": [{"text": t, "evidence_ids": ids} for t, ids in claims]})


BRACHIO = "Brachiosaurus appears in the Jurassic Park film as a herbivore."
RAPTOR = "Velociraptor is featured prominently throughout Jurassic Park."


def kinds(verdict) -> list[str]:
    return [v.kind for v in verdict.violations]


# ------------------------------------------------------------------ seed: JSON verifier


def test_strict_when_all_claims_resolve():
    evidence = [ev("E1", BRACHIO), ev("E2", RAPTOR)]
    v = verify_claims(
        claims_json(("Brachiosaurus appears in the film", ["E1"]), ("Velociraptor is featured", ["E2"])), evidence
    )
    assert v.audit_mode is AuditMode.STRICT and v.ok
    assert sum(c.verified for c in v.claims) == 2
    assert v.violations == []
    assert v.citations == ["doc-1", "doc-2"]


def test_hybrid_when_some_evidence_id_is_unknown():
    v = verify_claims(
        claims_json(("Brachiosaurus appears in the film", ["E1"]), ("Made-up claim", ["E99"])), [ev("E1", BRACHIO)]
    )
    assert v.audit_mode is AuditMode.HYBRID and not v.ok
    assert "UNKNOWN_EVIDENCE_ID" in kinds(v)
    assert [c.verified for c in v.claims] == [True, False]
    assert v.citations == ["doc-1"]


def test_ungrounded_on_schema_invalid():
    v = verify_claims("not json {[", [])
    assert v.audit_mode is AuditMode.UNGROUNDED
    assert kinds(v) == ["SCHEMA_INVALID"]


def test_recovers_from_markdown_fence_and_reports_it():
    raw = '```json\n{"claims": [{"text": "Brachiosaurus appears in the film", "evidence_ids": ["E1"]}]}\n```'
    v = verify_claims(raw, [ev("E1", BRACHIO)])
    assert v.audit_mode is AuditMode.STRICT
    assert "fence" in v.json_fixups


def test_manual_quote_violation_is_ungrounded():
    v = verify_claims(claims_json(('Brachiosaurus is "a herbivore" appears in the film', ["E1"])), [ev("E1", BRACHIO)])
    assert "MANUAL_QUOTE_VIOLATION" in kinds(v)
    assert v.audit_mode is AuditMode.UNGROUNDED


def test_blocks_disallowed_source_role():
    evidence = [ev("E1", "Brachiosaurus appears in this content.", role="noisy_background_source")]
    v = verify_claims(claims_json(("Brachiosaurus appears", ["E1"])), evidence)
    assert "SOURCE_ROLE_BLOCKED" in kinds(v)
    assert v.audit_mode is AuditMode.UNGROUNDED


def york(n: int, template: str) -> tuple[list[Evidence], str]:
    evidence, claims = [], []
    for i in range(1, n + 1):
        text = template.format(i=i)
        evidence.append(ev(f"E{i}", text))
        claims.append((text, [f"E{i}"]))
    return evidence, claims_json(*claims)


def test_too_many_claims_demotes_to_hybrid_without_truncating():
    evidence, raw = york(13, "York fact number {i} is described in this span.")
    v = verify_claims(raw, evidence)
    assert v.audit_mode is AuditMode.HYBRID
    assert "TOO_MANY_CLAIMS" in kinds(v)
    assert len(v.claims) == 13 and sum(c.verified for c in v.claims) == 13


def test_at_cap_can_still_be_strict():
    evidence, raw = york(MAX_CLAIMS, "York fact number {i} appears in span.")
    v = verify_claims(raw, evidence)
    assert v.audit_mode is AuditMode.STRICT
    assert "TOO_MANY_CLAIMS" not in kinds(v)


# ------------------------------------------------------------------ per-claim rules


def test_claim_citing_no_evidence_is_unsupported():
    v = verify_claims(claims_json(("Brachiosaurus appears in the film", [])), [ev("E1", BRACHIO)])
    assert kinds(v) == ["UNSUPPORTED_CLAIM"]
    assert v.audit_mode is AuditMode.UNGROUNDED  # nothing verified


def test_claim_with_a_number_the_evidence_does_not_state():
    evidence = [ev("E1", "Partial retirement is possible from the age of 55 onwards.")]
    ok = verify_claims(claims_json(("Partial retirement is possible from the age of 55", ["E1"])), evidence)
    assert ok.audit_mode is AuditMode.STRICT
    v = verify_claims(claims_json(("Partial retirement is possible from the age of 60", ["E1"])), evidence)
    assert kinds(v) == ["NUMBER_NOT_IN_SOURCE"]
    assert v.audit_mode is AuditMode.UNGROUNDED


def test_number_spellings_are_normalised_in_claims():
    evidence = [ev("E1", "Der Zuschuss beträgt 1.538,50 € im Monat.")]
    v = verify_claims(claims_json(("Der Zuschuss beträgt 1538.50 Euro im Monat", ["E1"])), evidence, "de")
    assert v.ok


def test_any_double_quote_style_in_a_claim_is_a_quote_violation():
    for text in ("Brachiosaurus is a „herbivore“ in the film", "Brachiosaurus is a “herbivore” in the film"):
        assert "MANUAL_QUOTE_VIOLATION" in kinds(verify_claims(claims_json((text, ["E1"])), [ev("E1", BRACHIO)]))


def test_roles_can_be_configured():
    evidence = [ev("E1", BRACHIO, role="noisy_background_source")]
    raw = claims_json(("Brachiosaurus appears in the film", ["E1"]))
    assert verify_claims(raw, evidence, allowed_roles={"noisy_background_source"}).ok
    assert "primary_answer_source" in DEFAULT_ALLOWED_ROLES
    assert "noisy_background_source" not in DEFAULT_ALLOWED_ROLES


def test_pointer_ids_match_regardless_of_case_and_brackets():
    v = verify_claims(claims_json(("Brachiosaurus appears in the film", ["e1"]), ("Velociraptor is featured", ["[E2]"])),
                      [ev("E1", BRACHIO), ev("E2", RAPTOR)])
    assert v.ok and [c.evidence_ids for c in v.claims] == [["E1"], ["E2"]]


def test_content_addressed_evidence_id_and_entry_id_are_accepted():
    evidence = build_evidence([
        ChunkResult(chunk_id="a#0", entry_id="kb-dino-01", section="A", text=BRACHIO, title="Dinos"),
        ChunkResult(chunk_id="b#0", entry_id="kb-dino-02", section="B", text=RAPTOR, title="Dinos"),
    ])
    raw = claims_json(
        ("Brachiosaurus appears in the film", [evidence[0].evidence_id]),
        ("Velociraptor is featured", ["kb-dino-02"]),
    )
    v = verify_claims(raw, evidence)
    assert v.ok
    assert [c.evidence_ids for c in v.claims] == [["E1"], ["E2"]]
    assert v.citations == ["kb-dino-01", "kb-dino-02"]


def test_citations_list_only_verified_claims_in_first_use_order():
    evidence = [ev("E1", BRACHIO), ev("E2", RAPTOR)]
    v = verify_claims(
        claims_json(("Velociraptor is featured", ["E2"]), ("Unrelated words entirely", ["E1"]),
                    ("Brachiosaurus appears in the film", ["E1", "E2"])),
        evidence,
    )
    assert v.citations == ["doc-2", "doc-1"]


def test_schema_violations():
    evidence = [ev("E1", BRACHIO)]
    for raw in ('{"answer": "x"}', '{"claims": {"text": "x"}}', '{"claims": [{"evidence_ids": ["E1"]}]}',
                '{"claims": [{"text": "x", "evidence_ids": [1]}]}', '[{"text": "x", "evidence_ids": ["E1"]}]',
                # Punctuation alone states nothing (a small model's claims JSON once posted " [1].").
                '{"claims": [{"text": ".", "evidence_ids": ["E1"]}]}', '{"claims": [{"text": " … ", "evidence_ids": ["E1"]}]}'):
        v = verify_claims(raw, evidence)
        assert kinds(v) == ["SCHEMA_INVALID"], raw
        assert v.audit_mode is AuditMode.UNGROUNDED


def test_nothing_verified_is_ungrounded_even_with_only_claim_local_violations():
    v = verify_claims(claims_json(("Made-up claim", ["E99"])), [ev("E1", BRACHIO)])
    assert kinds(v) == ["UNKNOWN_EVIDENCE_ID"]
    assert v.audit_mode is AuditMode.UNGROUNDED and v.citations == []


def test_reasoning_block_is_stripped_before_parsing():
    raw = "<think>Let me list {claims}</think>" + claims_json(("Brachiosaurus appears in the film", ["E1"]))
    assert verify_claims(raw, [ev("E1", BRACHIO)]).ok


# ------------------------------------------------------------------ refusals


def test_empty_claim_list_is_a_refusal():
    v = verify_claims('{"claims": []}', [ev("E1", BRACHIO)])
    assert v.ok and v.refusal and v.citations == []


def test_refusal_sentence_as_plain_text_or_as_only_claim_is_a_refusal():
    assert verify_claims(message("refusal", "de"), [], "de").refusal
    assert verify_claims(claims_json((message("refusal", "en"), [])), []).refusal


def test_refusal_followed_by_a_cited_statement_in_plain_text_is_not_a_refusal():
    draft = f"{message('refusal', 'en')} However, you get 30 days [E1]."
    v = verify_claims(draft, [ev("E1", "Every employee gets 28 days of paid leave.")])
    assert not v.refusal and not v.ok and kinds(v) == ["SCHEMA_INVALID"]


def test_refusal_claim_that_goes_on_to_state_something_is_checked_as_a_claim():
    draft = claims_json((f"{message('refusal', 'en')} However, you get thirty days of leave.", []))
    v = verify_claims(draft, [ev("E1", "Every employee gets 28 days of paid leave.")])
    assert not v.refusal and not v.ok and "UNSUPPORTED_CLAIM" in kinds(v)


def test_refusal_claim_next_to_a_cited_claim_is_an_answer():
    draft = claims_json((message("refusal", "en"), []), ("Employees get 30 days of paid leave", ["E1"]))
    v = verify_claims(draft, [ev("E1", "Every employee gets 28 days of paid leave.")])
    assert not v.refusal and not v.ok


# ------------------------------------------------------------------ SciFact-shaped cases

GOLD = (
    "Vitamin B12 deficiency is common in elderly patients. "
    "In a cohort of 412 adults, low vitamin B12 status was associated with elevated plasma homocysteine "
    "concentrations. Supplementation lowered homocysteine by 17% within 8 weeks."
)
RELATED = (
    "Plasma homocysteine is a marker of cardiovascular risk. Folate intake was measured in 300 adults. "
    "Elevated concentrations were associated with smoking and age, and vitamin supplements were common."
)
CLAIM = "Low vitamin B12 status is associated with elevated plasma homocysteine."


def test_claim_is_supported_by_its_gold_passage():
    assert verify_claims(claims_json((CLAIM, ["E1"])), [ev("E1", GOLD)]).ok


def test_changed_number_in_the_gold_passage_is_caught():
    claim = "Supplementation lowered homocysteine by 17% within 8 weeks."
    assert verify_claims(claims_json((claim, ["E1"])), [ev("E1", GOLD)]).ok
    changed = GOLD.replace("17%", "19%")
    v = verify_claims(claims_json((claim, ["E1"])), [ev("E1", changed)])
    assert kinds(v) == ["NUMBER_NOT_IN_SOURCE"] and "17" in v.violations[0].detail


# ------------------------------------------------------------------ links and negations

PTO_SPAN = (
    "You can carry over up to 5 unused vacation days until 31 March of the next year. "
    "Requests go to hr@example.com; the form is at https://wiki.example.com/hr/leave-form."
)


@pytest.mark.parametrize(
    "claim",
    [
        "Reset your password at https://evil.example/reset before carrying over unused vacation days",
        "Send carry-over requests for unused vacation days to <https://evil.example/form|the form>",
        "Send carry-over requests for unused vacation days to payroll@evil.example",
        "Call +1 (555) 010-0199 to carry over unused vacation days",
    ],
)
def test_a_claim_with_a_link_the_evidence_lacks_fails(claim):
    v = verify_claims(claims_json((claim, ["E1"])), [ev("E1", PTO_SPAN)])
    assert not v.ok and "LINK_NOT_IN_SOURCE" in kinds(v)


def test_a_claim_with_the_evidence_link_passes():
    claim = "Requests to carry over unused vacation days go to hr@example.com via https://wiki.example.com/hr/leave-form"
    assert verify_claims(claims_json((claim, ["E1"])), [ev("E1", PTO_SPAN)]).ok


def test_link_and_number_violations_are_local_to_their_claim():
    v = verify_claims(
        claims_json(
            ("You can carry over up to 5 unused vacation days", ["E1"]),
            ("You can carry over up to 7 unused vacation days", ["E1"]),
            ("Reset your password at https://evil.example/reset to carry over unused vacation days", ["E1"]),
        ),
        [ev("E1", PTO_SPAN)],
    )
    assert v.audit_mode is AuditMode.HYBRID
    assert [c.verified for c in v.claims] == [True, False, False]
