"""Fuzzing the verifiers and what gets posted from their verdicts.

Whatever the model writes and whatever the KB blocks hold, verifying never
raises, a verdict says ok only without violations, and the Slack message built
from it carries no control sequence of Slack's that came from the model or the
KB (`<!channel>`, `<@U123>`, `<#C1>`, a link the renderer did not make).

Bounded: few examples, a deadline per example, no example database.
"""

from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings, strategies as st

from bot.answer.assemble import build_answer
from bot.answer.prompt import build_evidence
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.answer.verify.links import missing_links
from bot.models import AnswerMode, Outcome
from bot.slack.replies import answer_message, sources_modal
from kb_index import ChunkResult

FUZZ = settings(
    max_examples=60,
    deadline=2000,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

IDS = ["hb-pto-01", "lb-atz-01", "faq"]
PIECES = [
    "You can carry over up to 5 unused vacation days.", "Employees can never carry over leave.",
    "Altersteilzeit ist ab dem 55. Lebensjahr möglich.", "Das ist nicht möglich.", "no later than 31 March",
    "https://wiki.example.com/hr/form", "https://evil.example/reset", "[form](https://evil.example/x)",
    "<https://evil.example|click>", "<!channel>", "<!here>", "<@U12345>", "<#C12345|general>", "<!subteam^S1>",
    "hr@example.com", "boss@evil.example", "+49 30 1234567", "(555) 010-0199", "1.538,50 €", "2026-01-15",
    '"carry over up to 5"', "„ab dem 55. Lebensjahr“", "&lt;", "&", "<", ">", "*bold*", "**bold**", "## Heading",
    "<think>", "</think >", "<THINK foo='x'>", "The knowledge base does not cover this question.",
    "Dazu enthält die Wissensbasis keine Aussage.", "\n", "\n\n", " ", ". ", "[", "]", "(", ")", "|",
    "\x1b[2J", "\u202e", "\x00", "日本語", "🎉",
]
REFS = [f"[{i}]" for i in IDS] + ["[E1]", "[E2]", "[hb-pto-99]", "hb-pto-01", "[1]", "[Quelle: lb-atz-01]"]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.sampled_from(REFS), st.text(max_size=15)), max_size=14).map(" ".join)
URLS = st.one_of(
    st.none(),
    st.sampled_from(["https://wiki.example.com/pto", "javascript:alert(1)", "https://x.example/a|<!channel>", "https://x.example/<@U1>"]),
)


@st.composite
def chunks(draw) -> list[ChunkResult]:
    out = []
    for n in range(draw(st.integers(1, 3))):
        entry = draw(st.sampled_from(IDS))
        out.append(ChunkResult(
            chunk_id=f"{entry}#{n}", entry_id=entry, section=draw(TEXT) or "S", text=draw(TEXT) or "x",
            title=draw(TEXT) or "T", stand=draw(st.sampled_from([None, "2026-01", "2026-01-15"])),
            url=draw(URLS), legal_bases=tuple(draw(st.lists(TEXT, max_size=2))),
            source_role=draw(st.sampled_from(["primary_answer_source", "noisy_background_source"])),
        ))
    return out


@st.composite
def claims_drafts(draw) -> str:
    claims = draw(st.lists(
        st.fixed_dictionaries({
            "text": TEXT,
            "evidence_ids": st.one_of(st.lists(st.sampled_from(["E1", "E2", "E9", *IDS, ""]), max_size=3), st.text(max_size=5)),
        }),
        max_size=4,
    ))
    draft = json.dumps({"claims": claims}, ensure_ascii=draw(st.booleans()))
    return draw(st.sampled_from([draft, draft[:-3], f"```json\n{draft}\n```", f"<think>{{</think>{draft},"]))


SLACK_TOKEN = re.compile(r"<[^<>]*>")
RENDERER_LINK = re.compile(r"^<https?://[^\s<>|]+\|[^<>|]*>$")


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def assert_no_foreign_control_sequences(payload) -> None:
    for text in strings(payload):
        for token in SLACK_TOKEN.findall(text):
            assert RENDERER_LINK.match(token) or token.startswith("<!date^"), f"unescaped Slack syntax {token!r}"


def check_posting(draft: str, verdict, evidence, mode: AnswerMode, language: str) -> None:
    assert not (verdict.ok and verdict.violations and not verdict.audit_mode), verdict
    answer = build_answer("What about it?", draft, verdict, evidence, mode, language)
    message = answer_message(answer, language=language, ref="ans-1")
    assert_no_foreign_control_sequences(message)
    assert_no_foreign_control_sequences(sources_modal(answer.sources, question=draft, language=language))
    if answer.outcome is Outcome.ANSWERED and mode is AnswerMode.CLAIMS:
        by_pointer = {ev.pointer_id: ev for ev in evidence}
        for claim in (c for c in verdict.claims if c.verified):
            cited = [by_pointer[p].text for p in claim.evidence_ids if p in by_pointer]
            assert missing_links(claim.text, cited) == [], claim


@FUZZ
@given(TEXT, chunks(), st.sampled_from(["en", "de"]))
def test_citations_verifier_never_raises_and_posts_nothing_unescaped(draft, blocks, language):
    evidence = build_evidence(blocks)
    verdict = verify_citations(draft, evidence, language)
    assert verdict.ok == (not verdict.violations) or verdict.refusal
    check_posting(draft, verdict, evidence, AnswerMode.CITATIONS, language)


@FUZZ
@given(st.one_of(claims_drafts(), TEXT), chunks(), st.sampled_from(["en", "de"]))
def test_claims_verifier_never_raises_and_posts_nothing_unescaped(draft, blocks, language):
    evidence = build_evidence(blocks)
    verdict = verify_claims(draft, evidence, language)
    check_posting(draft, verdict, evidence, AnswerMode.CLAIMS, language)


def test_the_escaping_check_sees_a_raw_mention():
    import pytest

    for raw in ("<!channel>", "hi <@U123>", "<javascript:x|y>"):
        with pytest.raises(AssertionError):
            assert_no_foreign_control_sequences({"blocks": [{"text": {"text": raw}}]})
    assert_no_foreign_control_sequences({"text": "&lt;!channel&gt; <https://wiki.example.com/x|Leave>"})
