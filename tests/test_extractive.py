"""The extractive backend: passage choice, verbatim quoting, citations, the line before the passages,
near-topic questions, refusal (its sentences: test_sentences.py).

The first tests run it without an embedder (words alone, as with CITEBOT_EMBEDDER=none); the last
ones run the whole pipeline on a real index with the in-process embedder, as `citebot ask` does."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bot.answer.extractive import (
    MAX_PASSAGES,
    ExtractiveBackend,
    Vectors,
    candidates,
    prose_units,
    sibling_word,
)
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.i18n import Key, message
from bot.models import AnswerMode, AuditMode, Draft, Evidence, GenerationRequest, Outcome
from kb_index import ChunkResult
from kb_index.calibration import MULTILINGUAL_E5_SMALL, UNCALIBRATED, for_embedder

TRAVEL = """## Details
Stand: 2026-01

Business trips must be booked through the travel portal.
Train is preferred over plane for trips under 500 km."""

VACATION = """## Summary
**Scope:** all employees

Full-time employees get 30 vacation days per year.
Part-time employees get a pro-rata share of the 30 days.
Unused days expire on 31.03. of the following year."""

MEAL = """## Details
Der Verpflegungsmehraufwand beträgt 14 EUR bei mehr als 8 Stunden Abwesenheit.
Bei einer Abwesenheit von 24 Stunden beträgt er 28 EUR, z. B. bei mehrtägigen Reisen.
Der Sachbezugswert für ein Mittagessen liegt 2026 bei 4,57 EUR nach § 2 Abs. 1 SvEV."""

ATZ = """## Zusammenfassung
Die Altersteilzeit ermöglicht einen gleitenden Übergang in den Ruhestand ab dem 55. Lebensjahr.
Der Arbeitgeber stockt das Entgelt um 20 % auf, wie „Aufstockungsbetrag“ im AltTZG heißt."""


def evidence(*blocks: tuple[str, str] | tuple[str, str, str]) -> list[Evidence]:
    found = []
    for n, (entry_id, text, *role) in enumerate(blocks, start=1):
        chunk = ChunkResult(
            chunk_id=f"{entry_id}#{n}",
            entry_id=entry_id,
            section="Details",
            text=text,
            title=entry_id,
            source_role=role[0] if role else "primary_answer_source",
        )
        found.append(Evidence(block=n, pointer_id=f"E{n}", evidence_id=f"ev{n:04d}", chunk=chunk))
    return found


def draft(question: str, blocks: list[Evidence], mode=AnswerMode.CITATIONS, language="en",
          vectors: Vectors | None = None) -> Draft:
    request = GenerationRequest(
        messages=[], mode=mode, question=question, evidence=blocks, language=language
    )
    return ExtractiveBackend(vectors).draft(request)


def ask(question: str, blocks: list[Evidence], mode=AnswerMode.CITATIONS, language="en") -> str:
    return draft(question, blocks, mode, language).text


CITED = re.compile(r"- (.+) \[([\w-]+)\]")


def cited_sentences(answer: str) -> list[tuple[str, str]]:
    """(passage, entry id) pairs of a citations-mode answer: one "- passage [id]" per line."""
    pairs = [CITED.fullmatch(line) for line in answer.splitlines()]
    assert all(pairs), f"answer is not '- passage [id]' lines: {answer!r}"
    return [(m.group(1), m.group(2)) for m in pairs if m]


def flat(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------- choosing and citing


def test_cites_the_sentence_that_answers_from_the_right_block():
    blocks = evidence(("travel-policy", TRAVEL), ("hr-vacation", VACATION))
    answer = ask("How many vacation days do full-time employees get?", blocks)
    pairs = cited_sentences(answer)
    assert pairs[0] == ("Full-time employees get 30 vacation days per year.", "hr-vacation")
    assert all(entry == "hr-vacation" for _, entry in pairs)


def test_every_sentence_is_verbatim_from_the_block_it_cites():
    blocks = evidence(("travel-policy", TRAVEL), ("hr-vacation", VACATION), ("reise-vma", MEAL))
    by_id = {e.entry_id: flat(e.text) for e in blocks}
    for question in ["vacation days part-time", "trips train plane", "Verpflegungsmehraufwand Abwesenheit"]:
        for sentence, entry in cited_sentences(ask(question, blocks)):
            assert sentence in by_id[entry]


def test_numbers_and_quotes_stay_with_their_block():
    blocks = evidence(("reise-vma", MEAL), ("lb-atz-01", ATZ))
    answer = ask("Wie hoch ist der Aufstockungsbetrag bei Altersteilzeit?", blocks, language="de")
    pairs = cited_sentences(answer)
    assert ("Der Arbeitgeber stockt das Entgelt um 20 % auf, wie „Aufstockungsbetrag“ im AltTZG heißt.",
            "lb-atz-01") in pairs
    for sentence, entry in pairs:
        block = next(e.text for e in blocks if e.entry_id == entry)
        for number in re.findall(r"\d+(?:[.,]\d+)*", sentence):
            assert number in block


def test_is_deterministic():
    blocks = evidence(("travel-policy", TRAVEL), ("hr-vacation", VACATION), ("reise-vma", MEAL))
    answers = {ask("How many vacation days, and do they expire?", blocks) for _ in range(5)}
    assert len(answers) == 1


def test_rarer_question_terms_weigh_more():
    text = (
        "Employees must book travel early. Employees get a parking space on request. "
        "Employees receive a laptop on their first day."
    )
    answer = ask("Do employees get parking?", evidence(("facilities", text)))
    assert cited_sentences(answer) == [("Employees get a parking space on request.", "facilities")]


def test_prefers_the_higher_ranked_block_on_a_tie():
    new, old = "Remote work is allowed two days per week.", "Remote work is allowed on Fridays."
    answer = ask("Is remote work allowed?", evidence(("policy-new", new), ("policy-old", old)))
    assert cited_sentences(answer)[0] == (new, "policy-new")
    answer = ask("Is remote work allowed?", evidence(("policy-old", old), ("policy-new", new)))
    assert cited_sentences(answer)[0] == (old, "policy-old")


def test_a_sentence_repeated_by_a_cross_ref_is_quoted_once():
    blocks = evidence(("hr-vacation", VACATION), ("hr-vacation-faq", VACATION))
    pairs = cited_sentences(ask("vacation days part-time full-time", blocks))
    sentences = [s for s, _ in pairs]
    assert len(sentences) == len(set(sentences))
    assert {entry for _, entry in pairs} == {"hr-vacation"}


def test_at_most_four_passages():
    text = " ".join(f"Overtime rule {i} applies to overtime hours." for i in range(1, 9))
    pairs = cited_sentences(ask("overtime hours rule", evidence(("overtime", text))))
    assert len(pairs) == MAX_PASSAGES


def test_sentences_come_in_reading_order_not_score_order():
    weaker = "Employees may work remotely."
    best = "The remote work allowance is 50 EUR per month."
    pairs = cited_sentences(ask("remote work allowance", evidence(("remote", f"{weaker} {best}"))))
    assert [s for s, _ in pairs] == [weaker, best]


def test_stops_when_the_rest_is_weak():
    travel = TRAVEL + "\nPlane tickets are booked through the travel portal."
    blocks = evidence(("travel-policy", travel), ("hr-vacation", VACATION))
    pairs = cited_sentences(ask("Is the train preferred over the plane?", blocks))
    assert pairs == [("Train is preferred over plane for trips under 500 km.", "travel-policy")]


def test_skips_headings_and_metadata_lines():
    blocks = evidence(("hr-vacation", VACATION + "\n\n## Scope of vacation days\nVacation days: 30"))
    answer = ask("vacation days scope", blocks)
    assert "Summary" not in answer and "Scope" not in answer and "**" not in answer
    assert "Vacation days: 30" not in answer


def test_german_compound_matches_its_part():
    answer = ask("Was gilt bei Teilzeit?", evidence(("lb-atz-01", ATZ)), language="de")
    assert "Altersteilzeit" in answer and answer.endswith("[lb-atz-01]")


def test_background_sources_are_not_quoted():
    blocks = evidence(
        ("forum-thread", "Employees get 45 vacation days per year.", "noisy_background_source"),
        ("hr-vacation", VACATION),
    )
    pairs = cited_sentences(ask("How many vacation days?", blocks))
    assert {entry for _, entry in pairs} == {"hr-vacation"}


# ----------------------------------------------------------------- the line before the passages


REFUSALS = {
    "en": "The knowledge base does not cover this question.",
    "de": "Dazu enthält die Wissensbasis keine Aussage.",
}


@pytest.mark.parametrize("language", ["en", "de"])
def test_passages_that_answer_come_as_the_knowledge_bases_own_words(language):
    out = draft("How many vacation days do full-time employees get?", evidence(("hr-vacation", VACATION)),
                language=language)
    assert out.lead == message(Key.EXTRACTIVE_LEAD, language) and out.not_covered == []
    # The lead says what the passages are, never that they answer (docs/DESIGN.md 3.6).
    assert out.lead in ("The passages of the knowledge base closest to your question:",
                        "Die Stellen der Wissensbasis, die deiner Frage am nächsten kommen:")


# Retrieval refuses what is plainly outside the KB (section 3.7); what it lets through
# and no passage answers gets the nearest passages under the same lead, never the refusal:
# the KB holds something on the topic, and "does not cover" would be false. The question
# goes to the gaps report (not_covered).
@pytest.mark.parametrize("language", ["en", "de"])
def test_nothing_that_answers_gets_the_nearest_passages_and_the_gaps_report(language):
    question = "Bermuda dollar exchange rate?"
    out = draft(question, evidence(("travel-policy", TRAVEL), ("reise-vma", MEAL)), language=language)
    assert out.lead == message(Key.EXTRACTIVE_LEAD, language) and out.not_covered == [question]
    assert cited_sentences(out.text) and out.text != REFUSALS[language]


@pytest.mark.parametrize("mode", list(AnswerMode))
def test_refuses_without_evidence_in_both_modes(mode):
    assert ask("How many vacation days?", [], mode=mode) == REFUSALS["en"]
    assert draft("How many vacation days?", [], mode=mode).lead == ""


def test_a_question_of_stop_words_only_is_not_answered():
    assert draft("What is it?", evidence(("hr-vacation", VACATION))).not_covered == ["What is it?"]


# ----------------------------------------------------------------- claims mode


def _vectors_by_word(close: set[str]) -> Vectors:
    """Stand-in vectors: the words in `close` point where every title points, all others elsewhere."""
    import numpy as np

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.0] if t in close or " " in t or "-" in t else [0.0, 1.0] for t in texts])

    return Vectors(embed, embed)


def _german(blocks: list[Evidence]) -> list[Evidence]:
    return [e.model_copy(update={"chunk": replace(e.chunk, language="de")}) for e in blocks]


def test_the_word_an_entry_does_not_mention_is_found_and_weighed_by_its_closeness_to_the_title():
    blocks = _german(evidence(("de-atz-01", ATZ), ("de-meal-01", MEAL)))
    best = candidates(blocks, "de")[0]
    assert best.evidence.entry_id == "de-atz-01"
    # "Teilzeit" is inside "Altersteilzeit" (the compound's word-pieces) and "Ruhestand" is a word of the
    # entry: neither is missing. "Sabbatical" is, and close to the title; "Montag" is missing too, but far.
    vectors = _vectors_by_word({"Sabbatical"})
    assert sibling_word("Gibt es Teilzeit vor dem Ruhestand als Sabbatical ab Montag?", best, blocks, "de",
                        vectors) == ("Sabbatical", 1.0)
    assert sibling_word("Gibt es Teilzeit vor dem Ruhestand ab Montag?", best, blocks, "de", vectors) == ("Montag", 0.0)
    assert sibling_word("Gibt es Teilzeit vor dem Ruhestand?", best, blocks, "de", vectors) == ("", 0.0)


def test_across_languages_no_word_is_missing():
    blocks = _german(evidence(("de-atz-01", ATZ)))
    best = candidates(blocks, "en")[0]
    assert sibling_word("Is there a sabbatical before retirement?", best, blocks, "en",
                        _vectors_by_word({"sabbatical"})) == ("", 0.0)


LEAD = message(Key.EXTRACTIVE_LEAD, "en")


def test_what_answers_is_read_with_the_embedders_record():
    # Question and passages point the same way (closeness 1), no word is close to the title: a sure answer,
    # on the scale the record was fitted on.
    question, blocks = "How many vacation days do full-time employees get?", evidence(("hr-vacation", VACATION))
    fitted = replace(_vectors_by_word(set()), calibration=MULTILINGUAL_E5_SMALL)
    answered = draft(question, blocks, vectors=fitted)
    assert answered.lead == LEAD
    # The same vectors with no record (vectors that do not say whose they are have none), or a stricter one:
    # the same passages under the same lead, and the question counted as not covered (the gaps report).
    for vectors in (Vectors(fitted.queries, fitted.passages), replace(fitted, calibration=UNCALIBRATED),
                    replace(fitted, calibration=replace(MULTILINGUAL_E5_SMALL, min_meaning=1.01))):
        marked = draft(question, blocks, vectors=vectors)
        assert (marked.lead, marked.text, marked.not_covered) == (LEAD, answered.text, [question])


@pytest.mark.parametrize(("min_meaning", "min_meaning_other", "near"), [
    (1.01, 0.9, False),  # across languages the record's own threshold
    (0.9, 1.01, True),
    (0.9, None, False),  # none: the same as in one language
    (1.01, None, True),
])
def test_a_passage_in_another_language_is_read_with_the_records_threshold_for_it(min_meaning, min_meaning_other,
                                                                                  near):
    calibration = replace(MULTILINGUAL_E5_SMALL, min_meaning=min_meaning, min_meaning_other=min_meaning_other)
    vectors = replace(_vectors_by_word(set()), calibration=calibration)
    question = "Was gilt bei Teilzeit vor dem Ruhestand?"
    out = draft(question, _german(evidence(("de-atz-01", ATZ))), vectors=vectors)
    assert out.not_covered == ([question] if near else []) and out.lead == LEAD


def test_the_word_rule_is_the_records_and_off_where_it_has_none():
    # "sabbatical" is a thing the vacation entry never mentions, as close to its title as can be.
    question, blocks = "How many sabbatical days do full-time employees get?", evidence(("hr-vacation", VACATION))
    close = replace(_vectors_by_word({"sabbatical"}), calibration=MULTILINGUAL_E5_SMALL)
    assert draft(question, blocks, vectors=close).not_covered == [question]
    no_rule = replace(close, calibration=replace(MULTILINGUAL_E5_SMALL, min_sibling=None))
    assert draft(question, blocks, vectors=no_rule).not_covered == []


def test_claims_mode_is_valid_json_with_pointer_ids():
    blocks = evidence(("travel-policy", TRAVEL), ("hr-vacation", VACATION))
    data = json.loads(ask("How many vacation days do part-time employees get?", blocks, mode=AnswerMode.CLAIMS))
    assert set(data) == {"claims"} and data["claims"]
    texts = {e.pointer_id: flat(e.text) for e in blocks}
    for claim in data["claims"]:
        assert set(claim) == {"text", "evidence_ids"}
        assert claim["evidence_ids"] == ["E2"]
        assert claim["text"] in texts["E2"]
    assert "Part-time employees get a pro-rata share of the 30 days." in [c["text"] for c in data["claims"]]


def test_claims_keep_non_ascii_text_readable():
    out = ask("Übergang Ruhestand", evidence(("lb-atz-01", ATZ)), AnswerMode.CLAIMS, "de")
    assert "Übergang" in out


def test_claims_leave_out_sentences_that_quote():
    # The same question in citations mode answers with the quoting sentence.
    question = "Wie hoch ist der Aufstockungsbetrag bei Altersteilzeit?"
    assert "„Aufstockungsbetrag“" in ask(question, evidence(("lb-atz-01", ATZ)), language="de")
    out = json.loads(ask(question, evidence(("lb-atz-01", ATZ)), AnswerMode.CLAIMS, "de"))
    assert out["claims"] and not any("„" in c["text"] for c in out["claims"])


async def test_generate_returns_a_draft():
    request = GenerationRequest(
        messages=[], mode=AnswerMode.CITATIONS, question="vacation days", evidence=evidence(("hr", VACATION))
    )
    out = await ExtractiveBackend().generate(request)
    assert out.model == "extractive" and out.text == out.raw and out.text.endswith("[hr]")


# ----------------------------------------------------------------- markdown


def test_prose_units_drop_labels_and_join_wrapped_lines():
    text = """## Zusammenfassung
Stand: 2026-01

**Rechtsgrundlage:**

Der Arbeitgeber zahlt einen Aufstockungsbetrag
von 20 % des Regelarbeitsentgelts.

- Erstens gilt das.
1. Zweitens
   auch das.

| Spalte | Wert |
|---|---|
| Satz | Eine Zeile. |

Hinweis: Das gilt immer.

```
code. Code.
```
**Wichtig**
"""
    assert prose_units(text) == [
        "Der Arbeitgeber zahlt einen Aufstockungsbetrag von 20 % des Regelarbeitsentgelts.",
        "Erstens gilt das.",
        "Zweitens auch das.",
        "Hinweis: Das gilt immer.",
    ]


def test_weak_extra_sentences_are_dropped():
    # The first sentence covers three of five topics; each other one only a fifth.
    text = "Employees get parking, a laptop and bikes. The canteen opens at noon. The gym is free."
    pairs = cited_sentences(ask("parking laptop canteen gym bikes", evidence(("perks", text))))
    assert pairs == [("Employees get parking, a laptop and bikes.", "perks")]


def test_a_sentence_sharing_one_word_with_the_question_is_no_answer():
    # Six topics, one sentence each: the best sentence covers a sixth of the question.
    text = (
        "Employees get parking. Employees get a laptop. The canteen opens at noon. "
        "The gym is free. Bikes are leased. Phones are provided."
    )
    out = draft("parking laptop canteen gym bikes phones", evidence(("perks", text)))
    assert out.not_covered == ["parking laptop canteen gym bikes phones"]


SPECIAL_LEAVE = """## Anlässe und Dauer
| Anlass | Bezahlte Freistellung |
|---|---|
| Eigene Eheschließung | 2 Arbeitstage |
| Tod eines Geschwisters oder Großelternteils | 1 Arbeitstag |
| Privater Umzug (einmal im Kalenderjahr) | 1 Arbeitstag |"""


def test_a_table_row_is_quoted_as_its_cells_and_passes_the_verifiers():
    blocks = evidence(("hp-sur-01", SPECIAL_LEAVE))
    out = ask("Wie viele Tage frei gibt es für einen privaten Umzug?", blocks, language="de")
    assert cited_sentences(out)[0] == ("Privater Umzug (einmal im Kalenderjahr) · 1 Arbeitstag", "hp-sur-01")
    verdict = verify_citations(out, blocks, "de")
    assert verdict.ok and not verdict.refusal, verdict.violations


# ----------------------------------------------------------------- against the verifiers


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("How many vacation days do part-time employees get?", "en"),
        ("Do unused vacation days expire?", "en"),
        ("Is the train preferred for short trips?", "en"),
        ("Wie hoch ist der Verpflegungsmehraufwand bei 24 Stunden?", "de"),
        ("Sachbezugswert Mittagessen", "de"),
        ("Wie heißt der Aufstockungsbetrag bei Altersteilzeit?", "de"),
    ],
)
def test_drafts_pass_both_verifiers(question, language):
    blocks = evidence(("travel-policy", TRAVEL), ("hr-vacation", VACATION), ("reise-vma", MEAL), ("lb-atz-01", ATZ))
    verdict = verify_citations(ask(question, blocks, language=language), blocks, language)
    assert verdict.ok and not verdict.refusal, verdict.violations
    verdict = verify_claims(ask(question, blocks, AnswerMode.CLAIMS, language), blocks, language)
    assert verdict.audit_mode is AuditMode.STRICT, verdict.violations


@pytest.mark.parametrize("mode", list(AnswerMode))
def test_refusal_passes_as_a_refusal(mode):
    verify = verify_claims if mode is AnswerMode.CLAIMS else verify_citations
    assert verify(ask("Bermuda dollar exchange rate?", [], mode=mode), [], "en").refusal


# ----------------------------------------------------------------- the pipeline, real index and embedder

BENCH_KBS = Path(__file__).resolve().parents[1] / "bench" / "extractive" / "kbs"
# A few entries of the labelled knowledge bases of bench/extractive (other companies than the sample's).
ENTRIES = ["corvid/kb/security/cs-mfa-01.md", "corvid/kb/security/cs-pwd-01.md", "hallberg/kb/personal/hp-url-01.md",
           "hallberg/kb/personal/hp-sur-01.md", "tidewater/kb/facilities/tf-canteen-01.md"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    from bot.answer.pipeline import Pipeline
    from kb_index import Retriever, build_index
    from kb_index.embedding import LocalE5Embedder

    root = tmp_path_factory.mktemp("extractive")
    for rel in ENTRIES:
        target = root / "kb" / Path(rel).parent.name / Path(rel).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BENCH_KBS / rel, target)
    embedder = LocalE5Embedder()
    assert build_index(root / "kb", root / "index", embedder=embedder).errors == []
    with Retriever(root / "index", embedder=embedder) as retriever:
        yield Pipeline(retriever, ExtractiveBackend())


async def ask_pipeline(pipeline, text: str):
    from bot.models import Question
    from kb_index.analysis import guess_language

    return await pipeline.answer(Question(text=text, language=guess_language(text)))


async def test_a_question_in_other_words_gets_the_passages_that_answer_it(pipeline):
    # No word of the steps is in the question: words alone refused it as "not covered".
    answer = await ask_pipeline(
        pipeline, "Getting a new phone tomorrow, how do I move my authenticator MFA over without locking myself out?")
    assert answer.outcome is Outcome.ANSWERED and answer.verified and answer.citations == ["cs-mfa-01"]
    assert answer.answer.startswith(message(Key.EXTRACTIVE_LEAD, "en") + "\n\n- ")
    assert "on the new phone" in answer.answer
    assert answer.not_covered == []


async def test_a_question_in_another_language_than_the_entry_gets_its_passages(pipeline):
    answer = await ask_pipeline(pipeline, "Ich bekomme morgen ein neues Handy – wie ziehe ich die Authenticator-App um?")
    assert answer.outcome is Outcome.ANSWERED and answer.citations == ["cs-mfa-01"]
    assert answer.answer.startswith(message(Key.EXTRACTIVE_LEAD, "de"))


async def test_a_near_topic_question_gets_the_nearest_passages_marked_never_as_the_answer(pipeline):
    # The KB has annual and special leave, nothing on holiday pay.
    question = "Wie hoch ist das Urlaubsgeld und wann wird es ausgezahlt?"
    answer = await ask_pipeline(pipeline, question)
    assert answer.answerability["answerable"], "retrieval lets it through: the backend has to tell"
    assert answer.answer.startswith(message(Key.EXTRACTIVE_LEAD, "de") + "\n\n- ")
    assert answer.not_covered == [question]


async def test_an_embedder_without_a_record_gets_its_passages_marked_never_posted_as_the_answer(pipeline):
    # The in-process embedder's vectors under a name nobody calibrated: the passages are chosen as before (by
    # meaning and words), but no confidence on an unmeasured scale says they answer the question as asked.
    from bot.answer.pipeline import Pipeline

    question = "Getting a new phone tomorrow, how do I move my authenticator MFA over without locking myself out?"
    answered = await ask_pipeline(pipeline, question)
    unknown = replace(Vectors.cached(pipeline.retriever.embedder), name="another-embedder",
                      calibration=for_embedder("another-embedder"))
    marked = await ask_pipeline(Pipeline(pipeline.retriever, ExtractiveBackend(unknown)), question)
    assert answered.answer.startswith(message(Key.EXTRACTIVE_LEAD, "en") + "\n\n")
    assert marked.answer == answered.answer  # the same passages and lead: only the gaps report tells them apart
    assert marked.verified and marked.not_covered == [question] and answered.not_covered == []


async def test_passages_in_a_table_are_found_by_meaning(pipeline):
    answer = await ask_pipeline(pipeline, "Wir ziehen nächsten Monat privat um, gibts da einen Tag frei?")
    assert answer.outcome is Outcome.ANSWERED and "hp-sur-01" in answer.citations
    assert "Privater Umzug (einmal im Kalenderjahr) · 1 Arbeitstag [1]" in answer.answer


@pytest.mark.parametrize("outcome", ["answered", "uncertain", "refused"])
def test_the_line_goes_only_before_passages_that_are_posted(outcome):
    from bot.answer.assemble import build_answer
    from bot.answer.pipeline import _with_lead
    from bot.models import Verdict, Violation

    blocks = evidence(("hr-vacation", VACATION))
    out = draft("Bermuda dollar exchange rate?", blocks)
    verdict = {
        "answered": verify_citations(out.text, blocks, "en"),
        "uncertain": Verdict(ok=False, violations=[Violation(kind="UNCITED_SENTENCE", detail="x")]),
        "refused": Verdict(ok=True, refusal=True),
    }[outcome]
    answer = build_answer("Bermuda dollar exchange rate?", out.text, verdict, blocks)
    body = answer.answer
    _with_lead(answer, out)
    if outcome == "answered":
        assert answer.answer == f"{message(Key.EXTRACTIVE_LEAD, 'en')}\n\n{body}"
        assert answer.not_covered == ["Bermuda dollar exchange rate?"]
    else:
        assert answer.answer == body and answer.not_covered == []


async def test_a_near_topic_question_close_in_meaning_is_marked_for_the_thing_it_names(pipeline):
    # The canteen entry is close in meaning to the question, which names a thing it never mentions (breakfast):
    # the passages come marked, and the question goes to the gaps report.
    question = "Does the canteen serve breakfast as well?"
    answer = await ask_pipeline(pipeline, question)
    assert answer.answerability["answerable"]
    assert answer.answer.startswith(message(Key.EXTRACTIVE_LEAD, "en") + "\n\n- ")
    assert answer.not_covered == [question]


async def test_a_near_topic_question_across_languages_is_marked_by_meaning(pipeline):
    # No word of a German question can be missing from an English entry; the embedder alone decides, at a
    # threshold that marks what a nearby topic reaches across languages (breakfast: the canteen serves lunch).
    question = "Gibt es in der Kantine auch Frühstück?"
    answer = await ask_pipeline(pipeline, question)
    assert answer.answerability["answerable"] and "tf-canteen-01" in answer.citations
    assert answer.answer.startswith(message(Key.EXTRACTIVE_LEAD, "de") + "\n\n- ")
    assert answer.not_covered == [question]


@pytest.mark.parametrize("question, language", [
    # The special-leave entry grants leave for one's own wedding, not for a silver wedding anniversary; the
    # canteen entry says nothing of dogs. No word of either question is close enough to the entry's title for
    # the word rule (MIN_SIBLING); the model, reading question and passage together, marks them.
    ("Gibt es Sonderurlaub für meine Silberhochzeit?", "de"),
    ("Can I bring my dog to the canteen?", "en"),
])
async def test_the_near_topic_model_marks_what_the_word_rule_lets_through(pipeline, question, language):
    from dataclasses import replace

    from bot.answer.pipeline import Pipeline

    marked = await ask_pipeline(pipeline, question)
    assert marked.answerability["answerable"]
    assert marked.answer.startswith(message(Key.EXTRACTIVE_LEAD, language) + "\n\n- ")
    assert marked.not_covered == [question]
    # With vectors that keep their embedder's thresholds but do not name it, the model is not used and the
    # word rule alone decides.
    unnamed = replace(Vectors.cached(pipeline.retriever.embedder), name="")
    by_rule = await ask_pipeline(Pipeline(pipeline.retriever, ExtractiveBackend(unnamed)), question)
    assert by_rule.answer.startswith(message(Key.EXTRACTIVE_LEAD, language) + "\n\n- ")


def test_the_near_topic_model_reads_only_the_embedder_it_was_fitted_on():
    from bot.answer import near_topic
    from kb_index.embedding import LOCAL_E5_NAME, LocalE5Embedder

    model = near_topic.for_embedder(LOCAL_E5_NAME)
    assert model is not None and model.weights.shape == (3 * LocalE5Embedder().dim + 2,)
    assert model.mean.shape == model.scale.shape == model.weights.shape and np.isfinite(model.threshold)
    assert near_topic.for_embedder("another-embedder") is None and near_topic.for_embedder("") is None


async def test_a_question_retrieval_refuses_as_near_gets_the_nearest_passages_marked(pipeline):
    # The canteen entry says when the fridges are cleared; the embedder places the question a little under
    # answerability's threshold. A refusal would say the KB does not cover it: the passages come marked.
    question = "someone threw out my yoghurt from the fridge, when do they clean it?"
    answer = await ask_pipeline(pipeline, question)
    assert not answer.answerability["answerable"] and answer.answerability["near"]
    assert answer.answer.startswith(message(Key.EXTRACTIVE_NEAR, "en") + "\n\n- ")
    assert answer.citations == ["tf-canteen-01"] and answer.verified
    assert answer.not_covered == [question]


async def test_a_question_far_from_everything_is_refused(pipeline):
    answer = await ask_pipeline(pipeline, "What's the capital of Australia?")
    assert not answer.answerability["near"]
    assert answer.outcome is Outcome.REFUSED and answer.answer == message(Key.REFUSAL, "en")


async def test_a_model_is_never_asked_about_a_question_refused_as_near(pipeline):
    from bot.answer.pipeline import Pipeline

    class NoModel:
        name = "a model"

        async def generate(self, request):
            raise AssertionError("the model was asked about a question retrieval refused")

    model_pipeline = Pipeline(pipeline.retriever, NoModel())
    answer = await ask_pipeline(model_pipeline, "someone threw out my yoghurt from the fridge, when do they clean it?")
    assert answer.answerability["near"] and answer.outcome is Outcome.REFUSED
