"""What capable models really get wrong, and right: one test per cause the issue answer-trust names.

Wrong answers whose every word is in the block they cite (a number in words changed, a negation
flipped or dropped, a fact added, a condition or scope changed, the wrong actor) must fail; right
answers written the way such models write (a hard-wrapped block quoted, an exception put as a
negation, a sentence on what the KB does not cover, an answer in the other language, the asker's
own numbers worked with) must pass. Each failed before this issue.
"""

from __future__ import annotations

import pytest

from bot.answer.prompt import build_evidence
from bot.answer.verify.align import Aligner, VectorCache
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.claims import verify_claims
from bot.answer.verify.judgement import statements
from bot.answer.verify.not_covered import says_not_covered
from bot.answer.verify.support import weigher
from bot.models import AnswerMode
from kb_index import ChunkResult
from kb_index.entries import parse_entry


def block(entry_id: str, text: str, language: str = "de", section: str = "Details") -> ChunkResult:
    return ChunkResult(chunk_id=f"{entry_id}#0", entry_id=entry_id, section=section, text=text, title=entry_id,
                       stand="2026-01", language=language)


EFZ = block("lb-efz-01", "Der Anspruch auf Entgeltfortzahlung entsteht erst nach vier Wochen ununterbrochener Dauer "
                         "des Arbeitsverhältnisses (Wartezeit). Die Entgeltfortzahlung dauert bis zu sechs Wochen. "
                         "Für jede neue Krankheit beginnt ein neuer Anspruch von 6 Wochen.")
PF = block("lb-pf-01", "Bestimmte Bezüge sind ganz oder teilweise unpfändbar, zum Beispiel die Hälfte der Vergütung für "
                       "Überstunden. Der Arbeitgeber erhält als Drittschuldner einen Pfändungsbeschluss.")
SW = block("it-sw-01", "Private software may not be installed on company laptops, not even for a short test. "
                       "Request the software you need through the IT service desk.", "en")
PWD = block("it-pwd-01", "Passwords saved in the browser are not allowed. Use the company password manager.", "en")
STK = block("lb-stk-01", "Wer die Steuerklassen III und V wählt, muss eine Einkommensteuererklärung abgeben. "
                         "Ein Wechsel der Steuerklasse ist bis zum 30. November beim Finanzamt zu beantragen; die "
                         "Steuerklasse gilt ab dem 1. des Folgemonats. Nachzahlungen sind bis zum 31. März fällig.")
EZ = block("lb-ez-01", "Die Elternzeit muss frühestens acht Wochen vor ihrem Beginn schriftlich beim Arbeitgeber "
                       "angemeldet werden. Elterngeld beantragen Sie bei der Elterngeldstelle. Während der Elternzeit "
                       "dürfen Beschäftigte bis zu 32 Wochenstunden arbeiten.")
KUG = block("lb-kug-01", "Das Kurzarbeitergeld wird höchstens für 90 Prozent der Beschäftigten eines Betriebs gezahlt. "
                         "Es beträgt 60 Prozent der Nettoentgeltdifferenz.")
WIFI = block("it-wifi-01", "Every network you connect to outside the office counts as untrusted. Start the VPN before "
                           "you open company systems; use the wireless network of the office only with your badge.", "en")
SEC = block("hb-sec-01", "If you receive a suspicious email, report it to the security team. The IT service desk "
                         "resets passwords and unlocks accounts.", "en")
URL = block("lb-url-02", "Der Arbeitgeber darf den Urlaub für jeden vollen Monat der Elternzeit um ein Zwölftel "
                         "kürzen, außer die Beschäftigte arbeitet während der Elternzeit in Teilzeit.")
SB = block("lb-sb-02", "Für einen Dienstwagen werden nach der 1-%-Regelung monatlich 1 % des Bruttolistenpreises "
                       "angesetzt. Maßgeblich ist der Bruttolistenpreis zum Zeitpunkt der Erstzulassung.")
PTO = block("hb-pto-01", "You can carry over up to four unused days of annual leave. You do not need HR's approval "
                         "for that; carried-over days must be taken by 31 March.", "en")


def check(text: str, *blocks: ChunkResult, language: str = "de", question: str = "", aligner=None):
    return verify_citations(text, build_evidence(list(blocks)), language, question=question, aligner=aligner)


def kinds(verdict) -> set[str]:
    return {v.kind for v in verdict.violations}


def assert_worked_out(right: str, wrongs: tuple[str, ...], *blocks: ChunkResult, question: str, language: str = "de"):
    """The right answer passes; each wrong one, a number worked out otherwise, fails on that number."""
    assert check(right, *blocks, language=language, question=question).ok
    for wrong in wrongs:
        assert "NUMBER_NOT_IN_SOURCE" in kinds(check(wrong, *blocks, language=language, question=question)), wrong


def assert_caught(right: str, wrong: str, kind: str, *blocks: ChunkResult, question: str = "", language: str = "de"):
    """The right statement passes; the wrong one fails with `kind`."""
    verdict = check(right, *blocks, language=language, question=question)
    assert verdict.ok, verdict.violations
    assert kind in kinds(check(wrong, *blocks, language=language, question=question)), wrong


@pytest.fixture(scope="module")
def meaning() -> Aligner:
    """Alignment by words and by meaning: the in-process multilingual embedder."""
    from kb_index.embedding import LocalE5Embedder

    return Aligner(weigher(None), VectorCache(LocalE5Embedder().embed_queries))


# ------------------------------------------------------------------ wrong answers that were posted


def test_a_number_in_words_changed_fails_although_the_new_number_stands_elsewhere_in_the_block():
    verdict = check("Der Anspruch entsteht bereits nach 6 Wochen ununterbrochener Dauer des Arbeitsverhältnisses "
                    "[lb-efz-01].", EFZ)
    assert "NUMBER_NOT_IN_SOURCE" in kinds(verdict)
    assert check("Der Anspruch entsteht erst nach vier Wochen ununterbrochener Dauer des Arbeitsverhältnisses "
                 "[lb-efz-01].", EFZ).ok


def test_a_negation_flipped_by_the_words_affix_fails():
    verdict = check("Bestimmte Bezüge sind ganz oder teilweise pfändbar, zum Beispiel die Hälfte der Vergütung für "
                    "Überstunden [lb-pf-01].", PF)
    assert "NEGATION_DROPPED" in kinds(verdict)


@pytest.mark.parametrize("wrong", [
    "Private software may be installed on company laptops for a short test [it-sw-01].",
    "Passwords saved in the browser are allowed [it-pwd-01].",
])
def test_a_negation_the_source_has_and_the_answer_drops_fails(wrong):
    verdict = check(wrong, SW, PWD, language="en")
    assert "NEGATION_DROPPED" in kinds(verdict)


def test_the_same_sentences_with_their_negation_pass():
    assert check("Private software may not be installed on company laptops, not even for a short test [it-sw-01]. "
                 "Passwords saved in the browser are not allowed [it-pwd-01].", SW, PWD, language="en").ok


def test_a_deadline_the_block_does_not_name_fails_though_its_day_stands_in_another_date():
    verdict = check("Die Erklärung müssen Sie bis zum 31. Juli des Folgejahres beim Finanzamt einreichen [lb-stk-01].", STK)
    assert "NUMBER_NOT_IN_SOURCE" in kinds(verdict)


@pytest.mark.parametrize("wrong, right", [
    ("Die Elternzeit muss spätestens acht Wochen vor ihrem Beginn schriftlich beim Arbeitgeber angemeldet werden [lb-ez-01].",
     "Die Elternzeit muss frühestens acht Wochen vor ihrem Beginn schriftlich beim Arbeitgeber angemeldet werden [lb-ez-01]."),
    ("Kurzarbeitergeld wird für mindestens 90 Prozent der Beschäftigten eines Betriebs gezahlt [lb-kug-01].",
     "Kurzarbeitergeld wird für höchstens 90 Prozent der Beschäftigten eines Betriebs gezahlt [lb-kug-01]."),
])
def test_a_bound_turned_into_its_opposite_fails(wrong, right):
    assert "SCOPE_NOT_IN_SOURCE" in kinds(check(wrong, EZ, KUG))
    assert check(right, EZ, KUG).ok


def test_a_quantifier_narrowed_by_a_word_put_in_fails():
    verdict = check("Every wireless network you connect to outside the office counts as untrusted [it-wifi-01].", WIFI,
                    language="en")
    assert "SCOPE_NOT_IN_SOURCE" in kinds(verdict)
    assert check("Every network you connect to outside the office counts as untrusted [it-wifi-01].", WIFI, language="en").ok


@pytest.mark.parametrize("wrong, blocks, language", [
    ("Die Elternzeit muss frühestens acht Wochen vor ihrem Beginn schriftlich bei der Elterngeldstelle angemeldet "
     "werden [lb-ez-01].", (EZ,), "de"),
    ("If you receive a suspicious email, report it to the IT service desk [hb-sec-01].", (SEC,), "en"),
])
def test_the_wrong_actor_taken_from_elsewhere_in_the_block_fails(wrong, blocks, language):
    assert "WORDS_NOT_IN_SOURCE" in kinds(check(wrong, *blocks, language=language))


# ------------------------------------------------------------------ right answers that were flagged


WRAPPED_ENTRY = b"""---
id: lb-mid-01
title: Midijob
stand: 2026-01
language: de
---
## Midijob
Ein Midijob liegt vor, wenn das regelm\xc3\xa4\xc3\x9fige Entgelt \xc3\xbcber der Minijob-Grenze liegt, aber
2.000 Euro nicht \xc3\xbcbersteigt. Dann zahlen Besch\xc3\xa4ftigte einen geringeren
Arbeitnehmeranteil zur Sozialversicherung.
"""


def test_a_hard_wrapped_paragraph_keeps_its_negation_with_its_sentence():
    entry = parse_entry(WRAPPED_ENTRY, "payroll/lb-mid-01.md", "de")
    text = entry.sections[0].text
    assert "\n" not in text  # the paragraph is one line in the index
    verdict = check("Ein Midijob liegt vor, wenn das regelmäßige Entgelt über der Minijob-Grenze liegt, aber 2.000 Euro "
                    "nicht übersteigt [lb-mid-01].", block("lb-mid-01", text))
    assert verdict.ok, verdict.violations


def test_a_wrapped_block_from_an_old_index_is_read_by_its_paragraphs_too():
    raw = WRAPPED_ENTRY.decode().split("## Midijob\n", 1)[1]
    verdict = check("Das Entgelt darf 2.000 Euro nicht übersteigen [lb-mid-01].", block("lb-mid-01", raw))
    assert "NEGATION_NOT_IN_SOURCE" not in kinds(verdict)


def test_an_exception_put_as_a_negation_passes_and_the_reverse():
    assert check("Der Arbeitgeber darf den Urlaub nicht kürzen, wenn die Beschäftigte während der Elternzeit in "
                 "Teilzeit arbeitet [lb-url-02].", URL).ok
    negative = block("lb-url-03", "Der Arbeitgeber darf den Urlaub nicht kürzen, wenn die Beschäftigte in Teilzeit arbeitet.")
    assert check("Der Arbeitgeber darf den Urlaub kürzen, außer die Beschäftigte arbeitet in Teilzeit [lb-url-03].",
                 negative).ok


def test_a_sentence_on_what_the_kb_does_not_cover_is_a_partial_refusal():
    draft = ("Bestimmte Bezüge sind ganz oder teilweise unpfändbar [lb-pf-01]. "
             "Zur Pfändung Ihres Kontos enthält die Wissensbasis keine Angaben.")
    evidence = build_evidence([PF])
    verdict = verify_citations(draft, evidence, "de")
    assert verdict.ok and not verdict.refusal
    assert verdict.not_covered == ["Zur Pfändung Ihres Kontos enthält die Wissensbasis keine Angaben."]
    asked = statements(draft, verdict, evidence, AnswerMode.CITATIONS, "de")
    assert [s.text for s in asked] == ["Bestimmte Bezüge sind ganz oder teilweise unpfändbar."]  # never judged


def test_a_partial_refusal_may_name_the_numbers_of_what_is_missing_but_not_a_link():
    """The asker's date, or a figure worked out from their case, inside what the KB does not say: no block
    states it, rightly, and the judge is never asked, so a check on it could only hold a right answer back."""
    question = "Bekomme ich für die Schicht am 25. Dezember und die 350 € Differenz etwas?"
    draft = ("Bestimmte Bezüge sind ganz oder teilweise unpfändbar [lb-pf-01]. "
             "Ob der 26. Dezember dazu zählt und wer die 700 € Differenz trägt, sagt die Wissensbasis nicht.")
    verdict = check(draft, PF, question=question)
    assert verdict.ok, verdict.violations
    assert verdict.not_covered == [draft.split("]. ")[1]]
    with_link = draft.replace("sagt die Wissensbasis nicht.", "sagt die Wissensbasis nicht, siehe https://example.org/x.")
    assert "LINK_NOT_IN_SOURCE" in kinds(check(with_link, PF, question=question))


def test_a_claim_on_what_the_kb_does_not_cover_is_not_checked_as_a_claim():
    draft = ('{"claims": [{"text": "Bestimmte Bezüge sind ganz oder teilweise unpfändbar.", "evidence_ids": ["E1"]}, '
             '{"text": "Ob auch das Konto gepfändet werden kann, sagt die Wissensbasis nicht.", "evidence_ids": ["E1"]}]}')
    verdict = verify_claims(draft, build_evidence([PF]), "de")
    assert verdict.ok and verdict.not_covered == ["Ob auch das Konto gepfändet werden kann, sagt die Wissensbasis nicht."]


def test_an_answer_in_the_other_language_passes_with_numbers_and_negation_in_words(meaning):
    draft = ("Sie können bis zu vier nicht genommene Urlaubstage übertragen [hb-pto-01]. Dafür brauchen Sie keine "
             "Zustimmung von HR; übertragene Tage müssen bis zum 31. März genommen werden [hb-pto-01].")
    verdict = check(draft, PTO, aligner=meaning)
    assert verdict.ok, verdict.violations
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(draft.replace("vier", "sechs"), PTO, aligner=meaning))


def test_claims_in_the_other_language_are_supported_by_meaning(meaning):
    draft = ('{"claims": [{"text": "Sie können bis zu vier nicht genommene Urlaubstage ins nächste Jahr übertragen.", '
             '"evidence_ids": ["E1"]}, {"text": "Übertragene Tage müssen bis zum 31. März genommen werden.", '
             '"evidence_ids": ["E1"]}]}')
    verdict = verify_claims(draft, build_evidence([PTO]), "de", aligner=meaning)
    assert verdict.ok, verdict.violations
    wrong = draft.replace("31. März", "30. April")
    assert not verify_claims(wrong, build_evidence([PTO]), "de", aligner=meaning).ok


def test_a_number_the_question_gives_may_be_repeated_and_one_worked_out_from_it_is_recomputed():
    question = "Ich bekomme einen Firmenwagen mit 50.000 Euro Listenpreis. Was muss ich versteuern?"
    right = "Bei 50.000 Euro Listenpreis setzt man monatlich 1 % an, also 500 Euro [lb-sb-02]."
    assert check(right, SB, question=question).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right.replace("500 Euro", "5.000 Euro"), SB, question=question))
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right, SB))  # without the question, 50.000 is stated nowhere


def soft_only(verdict) -> bool:
    return bool(verdict.violations) and all(v.soft for v in verdict.violations)


def test_a_partial_refusal_keeps_its_ordinal_dates_and_the_but_inside_what_is_missing():
    for gap in ("Wie hoch die Freigrenze ab dem 1. Juli 2026 ist, sagt die Wissensbasis nicht.",
                "Ob Essen dafür erstattet wird, sagt die Wissensbasis nicht.",
                "The knowledge base does not say whether a claim after 30 but within 90 days counts."):
        assert says_not_covered(gap), gap
    for goes_on in ("The knowledge base does not say it, but you get 30 days.",
                    "Die Wissensbasis nennt keine Frist; allerdings gelten 30 Tage."):
        assert not says_not_covered(goes_on), goes_on


def test_a_yearly_date_of_the_block_backs_that_day_in_a_given_year_and_a_dated_one_does_not():
    yearly = block("lb-pf-01", "Die Pfändungsfreigrenzen werden jedes Jahr zum 1. Juli angepasst.")
    dated = block("lb-pf-01", "Die Pfändungsfreigrenzen wurden zum 1. Juli 2025 angepasst.")
    answer = "Die Freigrenzen werden zum 1. Juli 2026 angepasst [lb-pf-01]."
    assert check(answer, yearly).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(answer, dated))


def test_a_number_stated_nowhere_fails_with_the_judge_off_and_is_left_to_the_judge_to_recompute():
    # WorkedOut follows arithmetic one step at a time; a result of more steps (the days to a deadline of
    # the asker's dates), and a number added, are the judge's to recompute with the question and the blocks.
    question = "Unser Kind kam am 2. Mai, errechnet war der 23. Mai. Bis wann geht die Schutzfrist?"
    mu = block("lb-mu-01", "Die Schutzfrist endet acht Wochen nach der Entbindung. Kommt das Kind früher zur Welt, "
                           "verlängert sich die Schutzfrist nach der Entbindung um die Tage, die vor der Geburt nicht "
                           "in Anspruch genommen werden konnten.")
    # (The 21 days from 2 to 23 May are the asker's own dates counted: WorkedOut follows that step; the
    # 77 days of the eight weeks and the 21 days are two steps more.)
    worked = ("Die Schutzfrist verlängert sich um die nicht genutzten Tage [lb-mu-01]:\n\n"
              "- nicht genutzte Tage: 2. bis 23. Mai = 21 Tage\n\n"
              "Mit den acht Wochen nach der Geburt dauert die Schutzfrist nach der Entbindung damit 77 Tage [lb-mu-01].")
    plain = "Die Schutzfrist verlängert sich um höchstens 21 Tage [lb-mu-01]."
    for verdict, number in ((check(worked, mu, question=question), "'77'"),
                            (check(plain, mu, question="Verlängert sich die Schutzfrist?"), "'21'")):
        assert not verdict.ok and soft_only(verdict), verdict.violations
        assert [v.kind for v in verdict.violations if number in v.detail] == ["NUMBER_NOT_IN_SOURCE"], verdict.violations


def test_the_lines_of_a_worked_example_after_a_cited_paragraph_are_judged_as_they_are_checked():
    draft = ("Das Krankengeld beträgt 70 % des Bruttoentgelts [lb-efz-01]. Für dich heißt das:\n\n"
             "- 70 % von 3.000 € ÷ 30 = 70 € am Tag\n")
    evidence = build_evidence([EFZ])
    verdict = verify_citations(draft, evidence, "de", question="Ich verdiene 3.000 € brutto.")
    asked = [s.text for s in statements(draft, verdict, evidence, AnswerMode.CITATIONS, "de")]
    assert "70 % von 3.000 € ÷ 30 = 70 € am Tag" in asked


def test_a_stand_line_after_a_cited_paragraph_is_checked_but_not_judged():
    draft = "Die Entgeltfortzahlung dauert bis zu sechs Wochen [lb-efz-01].\n\nStand: 2026-01"
    evidence = build_evidence([EFZ])
    verdict = verify_citations(draft, evidence, "de")
    assert verdict.ok, verdict.violations
    assert [s.text for s in statements(draft, verdict, evidence, AnswerMode.CITATIONS, "de")] == [
        "Die Entgeltfortzahlung dauert bis zu sechs Wochen."]
    assert not verify_citations(draft.replace("2026-01", "2024-03"), evidence, "de").ok


def test_a_fraction_in_words_changed_fails_and_the_same_fraction_passes_across_languages(meaning):
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check("Ein Drittel der Überstundenvergütung ist unpfändbar [lb-pf-01].", PF))
    twelfth = block("hb-pto-03", "New joiners get one twelfth of the annual leave for each full month.", "en")
    assert check("Neue bekommen ein Zwölftel des Jahresurlaubs je vollem Monat [hb-pto-03].", twelfth,
                 aligner=meaning).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check("Neue bekommen ein Drittel des Jahresurlaubs je vollem Monat "
                                                 "[hb-pto-03].", twelfth, aligner=meaning))


def test_a_negation_dropped_in_the_second_clause_of_a_statement_fails():
    ez = block("lb-ez-02", "Die Elternzeit muss schriftlich beim Arbeitgeber angemeldet werden, und zwar spätestens "
                           "sieben Wochen vor Beginn. Schriftlich bedeutet: mit eigenhändiger Unterschrift; eine E-Mail "
                           "genügt nicht.")
    right = ("Die Elternzeit muss schriftlich mit Unterschrift angemeldet werden; eine E-Mail mit dem unterschriebenen "
             "Schreiben als Anhang genügt nicht [lb-ez-02].")
    assert check(right, ez).ok
    wrong = right.replace("genügt nicht", "genügt")
    assert "NEGATION_DROPPED" in kinds(check(wrong, ez))


MU = block("lb-mu-02", "Nach der Entbindung gilt eine Schutzfrist von acht Wochen. Kommt das Kind früher als berechnet "
                       "zur Welt, verlängert sich die Schutzfrist um die Tage, die vor der Geburt nicht in Anspruch "
                       "genommen werden konnten.")


def test_days_between_the_askers_dates_and_a_date_moved_twice_are_worked_out():
    question = "Unser Kind kam am 2. Mai zur Welt, errechnet war der 23. Mai. Wann endet die Schutzfrist?"
    right = ("Acht Wochen ab dem 2. Mai reichen bis zum 27. Juni; dazu kommen die 21 Tage vom 2. bis 23. Mai, "
             "sodass die Schutzfrist am 18. Juli endet [lb-mu-02].")
    assert_worked_out(right, (right.replace("18. Juli", "25. Juli"), right.replace("27. Juni", "30. Juni")), MU,
                      question=question)


def test_a_date_moved_by_calendar_months_of_the_block_from_the_askers_date_or_month_is_worked_out():
    kug = block("lb-kug-01", "Die Erstattung muss innerhalb von drei Kalendermonaten nach Ablauf des jeweiligen "
                             "Monats beantragt werden.")
    june = "Bis wann müssen wir die Erstattung für Juni beantragen?"
    assert check("Für Juni läuft die Frist also bis zum 30. September [lb-kug-01].", kug, question=june).ok
    assert not check("Für Juni läuft die Frist also bis zum 31. Oktober [lb-kug-01].", kug, question=june).ok
    assert not check("Für Juni läuft die Frist also bis zum 30. September [lb-kug-01].", kug,
                     question="Bis wann müssen wir die Erstattung beantragen?").ok
    mu = block("lb-mu-03", "Eine Kündigung ist bis zum Ablauf von vier Monaten nach der Entbindung unzulässig.")
    born = "Unser Kind kam am 2. Mai. Wie lange ist meine Frau vor einer Kündigung geschützt?"
    right = "Vier Monate nach dem 2. Mai ist sie also bis zum 2. September geschützt [lb-mu-03]."
    assert "NUMBER_NOT_IN_SOURCE" not in kinds(check(right, mu, question=born))
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right.replace("2. September", "2. Oktober"), mu, question=born))


def test_a_day_and_month_moved_into_the_next_year_is_worked_out():
    leave = block("hb-parental-02", "Partner leave must be taken within 8 weeks after the birth.", "en")
    question = "My partner is due on 12 November. By when do I have to take partner leave?"
    assert check("If the baby arrives on 12 November, you have until 7 January [hb-parental-02].", leave,
                 language="en", question=question).ok
    assert not check("If the baby arrives on 12 November, you have until 14 January [hb-parental-02].", leave,
                     language="en", question=question).ok


REMOTE = block("hb-remote-01", "Employees may work from another EU country for up to 20 working days per calendar year.",
               "en")


def test_what_is_left_of_a_limit_after_the_askers_working_days_is_worked_out_in_their_unit():
    question = "Ich war dieses Jahr schon 12 Arbeitstage remote aus Spanien. Darf ich noch 2 Wochen aus Italien arbeiten?"
    right = ("Mit deinen 12 Tagen aus Spanien bleiben dir noch 8 Arbeitstage [hb-remote-01]. Zwei Wochen sind "
             "10 Arbeitstage, das wären 2 Tage zu viel [hb-remote-01].")
    assert_worked_out(right, (right.replace("noch 8", "noch 9"), right.replace("sind 10", "sind 12")), REMOTE,
                      question=question)


def test_a_day_of_the_month_the_asker_names_moved_by_the_blocks_weeks_is_worked_out():
    pf = block("lb-pf-03", "Der Drittschuldner muss dem Gläubiger innerhalb von zwei Wochen nach Zustellung erklären, "
                           "ob er die Forderung anerkennt.")
    question = "Zwei Pfändungsbeschlüsse sind eingegangen, einer am 5. und einer am 12. Bis wann müssen wir antworten?"
    right = "Bei Zustellung am 5. und am 12. also bis zum 19. bzw. 26. des Monats [lb-pf-03]."
    assert_worked_out(right, (right.replace("19.", "21."),), pf, question=question)


def test_the_full_months_of_the_askers_year_and_a_twelfth_for_each_are_worked_out():
    pto = block("hb-pto-03", "Employees who join during the year receive one twelfth of the annual entitlement of "
                             "30 days for each full month of employment in that year.", "en")
    question = "I start on 1 August. How much leave do I get this year?"
    right = "Joining on 1 August gives 5 full months, so you get 30 × 5 ÷ 12 = 12.5 days [hb-pto-03]."
    assert_worked_out(right, (right.replace("5 full", "6 full").replace("× 5", "× 6"), right.replace("12.5", "15")),
                      pto, question=question, language="en")


def test_a_verbs_separated_particle_is_no_order_word():
    pf = block("lb-pf-04", "Liegen mehrere Pfändungen vor, werden sie in der Reihenfolge ihrer Zustellung bedient.")
    question = "Wir haben eine Pfändung vom 5. und eine vom 12. Welche zuerst?"
    right = "Mehrere Pfändungen werden in der Reihenfolge ihrer Zustellung bedient, zuerst die vom 5. und danach die vom 12."
    assert "SCOPE_NOT_IN_SOURCE" not in kinds(verify_claims(
        f'{{"claims": [{{"text": "{right}", "evidence_ids": ["E1"]}}]}}', build_evidence([pf]), "de",
        question=question))


def test_a_negation_in_the_conclusion_drawn_from_a_rule_passes_and_one_in_the_rule_fails():
    exp = block("hb-exp-01", "Submit every expense claim within 30 days of the date of the expense; claims older than "
                             "90 days are rejected.", "en")
    right = "Only claims older than 90 days are rejected, so your claim is not rejected on that ground [hb-exp-01]."
    assert check(right, exp, language="en").ok
    wrong = "Claims older than 90 days are not rejected, so your claim is accepted [hb-exp-01]."
    assert not check(wrong, exp, language="en").ok


def test_a_claim_applying_the_rule_to_the_askers_dates_needs_no_word_support_but_its_numbers_are_checked():
    question = "Unser Kind kam am 2. Mai zur Welt, errechnet war der 23. Mai. Wann endet die Schutzfrist?"
    claim = ("Acht Wochen ab dem 2. Mai reichen bis zum 27. Juni; dazu kommen die 21 Tage vom 2. bis 23. Mai, "
             "sodass die Schutzfrist am 18. Juli endet.")

    def claims(text: str):
        return verify_claims(f'{{"claims": [{{"text": "{text}", "evidence_ids": ["E1"]}}]}}', build_evidence([MU]),
                             "de", question=question)

    assert claims(claim).ok
    assert "NUMBER_NOT_IN_SOURCE" in {v.kind for v in claims(claim.replace("18. Juli", "25. Juli")).violations}


def test_a_multiple_in_words_backs_the_same_multiple_across_languages_and_no_other_count(meaning):
    atz = block("lb-atz-03", "Übersteigt das Wertguthaben das Dreifache des Regelarbeitsentgelts, muss der Arbeitgeber "
                             "es gegen Insolvenz absichern und die Sicherung einmal im Jahr nachweisen.")
    right = "The employer must protect the value credit against insolvency once it exceeds three times the regular pay."
    assert check(f"{right} [lb-atz-03]", atz, language="en", aligner=meaning).ok
    wrong = ("Übersteigt das Wertguthaben das Dreifache des Regelarbeitsentgelts, muss der Arbeitgeber es absichern "
             "und die Sicherung alle drei Monate nachweisen [lb-atz-03].")
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(wrong, atz))


def test_an_operand_of_arithmetic_written_out_may_come_from_another_sentence_of_the_block():
    kg = block("lb-efz-02", "Das Krankengeld beträgt 70 % des Bruttoentgelts, höchstens 90 % des Nettoentgelts. "
                            "Berücksichtigt wird das Bruttoentgelt bis zur Beitragsbemessungsgrenze von 5.812,50 € im "
                            "Monat. Ein Monat zählt mit 30 Tagen.")
    question = "Ich verdiene 8.000 € brutto. Wie viel Krankengeld bekomme ich am Tag?"
    right = "Das sind 70 % von 5.812,50 € ÷ 30 = 135,63 € am Tag [lb-efz-02]."
    assert check(right, kg, question=question).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right.replace("135,63", "145,63"), kg, question=question))


def test_an_order_word_on_the_askers_date_is_their_case_and_one_on_the_rules_number_is_checked():
    exp = block("hb-exp-02", "Submit every expense claim within 30 days of the date of the expense.", "en")
    question = "I paid for a hotel on 2 March and submitted the claim on 15 April. Is that too late?"
    right = "You submitted on 15 April, 44 days after 2 March, so you missed the 30-day deadline [hb-exp-02]."
    assert check(right, exp, language="en", question=question).ok
    wrong = "Submit every expense claim at the earliest 30 days after the date of the expense [hb-exp-02]."
    assert "SCOPE_NOT_IN_SOURCE" in kinds(check(wrong, exp, language="en", question=question))


def test_the_asker_counted_with_their_guests_is_worked_out():
    exp = block("hb-exp-03", "Client entertainment is reimbursed up to 70 EUR per person including tip.", "en")
    question = "took 3 clients out for dinner yesterday, bill was 310. how much can I claim back?"
    right = "With you and 3 clients that's 4 × 70 EUR = 280 EUR at most [hb-exp-03]."
    assert check(right, exp, language="en", question=question).ok
    assert not check(right.replace("4 ×", "5 ×").replace("280", "350"), exp, language="en", question=question).ok


def test_a_number_joined_to_its_unit_by_a_hyphen_keeps_its_unit():
    pto = block("hb-pto-04", "Leave may be taken during the six-month probation period. A three-day week gives 17 days "
                             "of annual leave.", "en")
    right = "You may take leave during the six-month probation period [hb-pto-04]."
    assert check(right, pto, language="en").ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right.replace("six-month", "three-month"), pto, language="en"))


# ------------------------------------------------------------------ the judge and the answer's own arithmetic


TRAVEL = block("hb-travel-02", "In Paris, hotels are reimbursed up to 200 EUR per night.", "en")
TAXI = block("hb-exp-04", "For expenses of 25 EUR or less, a short description is accepted if the receipt was lost.",
             "en")
SUM_QUESTION = "I stayed 2 nights in Paris at 230 EUR a night and lost my 19 EUR taxi receipt. What do I get back?"
SUM_DRAFT = ("For 2 nights that means 400 EUR back for the hotel [hb-travel-02]. The 19 EUR taxi is accepted with a "
             "short description [hb-exp-04].\n\nIn total you can expect 419 EUR (400 EUR hotel + 19 EUR taxi).")


def asked_texts(draft: str, *blocks: ChunkResult, question: str) -> list[str]:
    evidence = build_evidence(list(blocks))
    verdict = verify_citations(draft, evidence, "en", question=question)
    assert verdict.ok, verdict.violations
    return [s.text for s in statements(draft, verdict, evidence, AnswerMode.CITATIONS, "en", question)]


def test_a_sum_of_the_answers_own_numbers_is_recomputed_not_sent_to_the_judge():
    asked_ = asked_texts(SUM_DRAFT, TRAVEL, TAXI, question=SUM_QUESTION)
    assert asked_ == ["For 2 nights that means 400 EUR back for the hotel.",
                      "The 19 EUR taxi is accepted with a short description."]
    wrong = SUM_DRAFT.replace("419 EUR", "429 EUR")
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(wrong, TRAVEL, TAXI, language="en", question=SUM_QUESTION))


@pytest.mark.parametrize("line", [
    "In total 419 EUR (400 EUR hotel + 19 EUR taxi), so the whole trip is reimbursed.",  # a conclusion of its own
    "Finance transfers 419 EUR (400 EUR hotel + 19 EUR taxi) to your salary account.",  # words of its own
    "The hotel is not paid in full: 400 EUR + 19 EUR = 419 EUR.",  # a negation
])
def test_a_line_of_arithmetic_that_says_more_is_still_judged(line):
    draft = SUM_DRAFT.replace("In total you can expect 419 EUR (400 EUR hotel + 19 EUR taxi).", line)
    evidence = build_evidence([TRAVEL, TAXI])
    verdict = verify_citations(draft, evidence, "en", question=SUM_QUESTION)
    assert verdict.ok, verdict.violations  # nothing but the judge holds it back
    asked_ = [s.text for s in statements(draft, verdict, evidence, AnswerMode.CITATIONS, "en", SUM_QUESTION)]
    assert line in asked_


def test_the_company_by_its_name_is_the_employer_and_no_actor_a_statement_must_repeat():
    sick = block("hb-sick-02", "After six weeks, the health insurer pays sickness benefit of 70 % of the gross salary. "
                               "All Acme Labs business trips need your manager's approval; book them through the "
                               "travel desk.", "en")
    wrong = "After six weeks, Acme Labs pays sickness benefit of 70 % of the gross salary [hb-sick-02]."
    assert "WORDS_NOT_IN_SOURCE" in kinds(check(wrong, sick, language="en"))
    right = "Business trips need your manager's approval; book them through the travel desk [hb-sick-02]."
    assert check(right, sick, language="en").ok


def test_a_short_answer_ahead_of_its_details_rests_on_what_the_details_cite():
    draft = ("**Short answer:** 400 EUR for the hotel.\n\n"
             "Hotels in Paris are reimbursed up to 200 EUR per night, so for 2 nights that is 400 EUR [hb-travel-02].")
    question = "I stayed 2 nights in Paris at 230 EUR a night. What do I get back for the hotel?"
    assert check(draft, TRAVEL, language="en", question=question).ok
    assert asked_texts(draft, TRAVEL, question=question)[0] == "**Short answer:** 400 EUR for the hotel."
    made_up = draft.replace("**Short answer:** 400 EUR", "**Short answer:** 380 EUR")
    assert "UNCITED_SENTENCE" in kinds(check(made_up, TRAVEL, language="en", question=question))


def test_a_link_of_another_block_the_answer_cites_is_no_made_up_link():
    travel = block("hb-travel-03", "All business trips need your manager's approval before anything is booked.", "en")
    portal = block("hb-travel-04", "Book trains and hotels through the travel portal at https://travel.example.com.",
                   "en")
    draft = ("Get your manager's approval first, then book at https://travel.example.com [hb-travel-03]. "
             "Trains and hotels are booked through the travel portal [hb-travel-04].")
    assert check(draft, travel, portal, language="en").ok
    made_up = draft.replace("travel.example.com", "trips.example.com")
    assert "LINK_NOT_IN_SOURCE" in kinds(check(made_up, travel, portal, language="en"))


def test_the_employee_is_not_the_employer():
    levy = block("hb-pay-02", "The employer pays the flat-rate levy for every mini-job, and HR reports it each month.",
                 "en")
    wrong = "The employee pays the flat-rate levy for every mini-job [hb-pay-02]."
    assert "WORDS_NOT_IN_SOURCE" in kinds(check(wrong, levy, language="en"))
    assert check("Your employer pays the flat-rate levy for every mini-job [hb-pay-02].", levy, language="en").ok


# ------------------------------------------------------------------ the asker's case worked out

LEAVE = block("hb-pto-01", "Employees on a five-day week receive 28 working days of paid annual leave per calendar "
                           "year. Young people under 17 get 27 Werktage; leave in Werktage is converted by multiplying "
                           "by the working days per week and dividing by 6.", "en")
PAYOUT = block("hb-pto-02", "Leave that cannot be taken before the last working day is paid out with the final "
                            "salary. One day of leave is worth monthly gross salary × 3 ÷ 65.", "en")
PROBATION = block("hb-onb-01", "The probation period lasts 6 months. During probation, either side can end the "
                               "employment with 2 weeks' notice.", "en")


def en(text: str, *blocks: ChunkResult, question: str):
    return check(text, *blocks, language="en", question=question)


def test_a_small_count_one_step_from_the_askers_number_in_the_same_sentence_passes():
    question = "I've taken 17 days of leave so far this year. How many are left?"
    right = "With 17 days taken, 11 of the 28 days are left [hb-pto-01]."
    assert en(right, LEAVE, question=question).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(en(right.replace("11 of", "12 of"), LEAVE, question=question))


def test_a_formula_of_the_blocks_applied_to_the_askers_salary_is_recomputed():
    question = "I earn 4,550 a month and leave with 11 days I can't take. What are they worth?"
    right = "At 4,550 EUR a month, one day of leave is worth 210 EUR [hb-pto-02]."
    assert en(right, PAYOUT, question=question).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(en(right.replace("210 EUR", "220 EUR"), PAYOUT, question=question))


def test_a_result_stated_ahead_of_its_working_passes():
    question = "I've taken 17 days of leave so far this year. How many are left?"
    right = "You have 11 days left [hb-pto-01]. With 17 days taken, 11 of the 28 days are left [hb-pto-01]."
    assert en(right, LEAVE, question=question).ok
    wrong = right.replace("You have 11 days", "You have 12 days")
    assert "NUMBER_NOT_IN_SOURCE" in kinds(en(wrong, LEAVE, question=question))


def test_a_period_of_months_ends_the_day_before_the_same_date():
    question = "I start on 1 March. When does my probation end?"
    right = "Probation lasts 6 months, so starting on 1 March it ends on 31 August [hb-onb-01]."
    assert en(right, PROBATION, question=question).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(en(right.replace("31 August", "30 August"), PROBATION, question=question))


def test_a_result_after_its_bracketed_working_is_recomputed():
    question = "My apprentice is 16 and works a 5-day week. How much leave does he get?"
    right = "On a 5-day week (27 × 5 ÷ 6), that's 22.5 working days [hb-pto-01]."
    assert en(right, LEAVE, question=question).ok
    assert "NUMBER_NOT_IN_SOURCE" in kinds(en(right.replace("22.5", "23.5"), LEAVE, question=question))


FLIGHTS = block("hb-travel-01", "Flüge sind mindestens 14 Tage vor Abflug zu buchen.")
HOLIDAY = block("lb-ueb-02", "Für Arbeit an einem Feiertag sind Zuschläge von 125 % des Grundlohns steuerfrei.")


def test_an_order_word_of_the_source_said_too_is_no_opposite_of_another_use_of_its_counterpart():
    assert check("Flüge nach Möglichkeit mindestens 14 Tage vor Abflug buchen [hb-travel-01].", FLIGHTS).ok
    assert "SCOPE_NOT_IN_SOURCE" in kinds(check("Flüge mindestens 14 Tage nach Abflug buchen [hb-travel-01].", FLIGHTS))


def test_a_bound_on_a_result_worked_out_from_the_askers_case_is_not_a_bound_the_rule_must_state():
    question = "Ich arbeite 8 Stunden am Feiertag, mein Grundlohn ist 24 € pro Stunde. Was ist steuerfrei?"
    right = ("Steuerfrei sind 125 % des Grundlohns: 8 h × 24 € × 125 % = 240 € [lb-ueb-02]. "
             "Insgesamt sind damit bis zu 240 € steuerfrei [lb-ueb-02].")
    assert check(right, HOLIDAY, question=question).ok
    wrong = right.replace("Steuerfrei sind 125 %", "Steuerfrei sind bis zu 125 %")
    assert "SCOPE_NOT_IN_SOURCE" in kinds(check(wrong, HOLIDAY, question=question))


MEALS = block("hb-travel-02", "If meals are provided, for example breakfast included in the hotel rate, the per diem is "
                              "reduced by 5.60 EUR for breakfast.", "en")
ORDER = block("lb-ueb-01", "Überstunden sind zu vergüten, wenn der Arbeitgeber sie angeordnet, gebilligt oder geduldet "
                           "hat. Geduldet sind sie, wenn der Arbeitgeber von ihnen weiß und sie hinnimmt.")
ATZ = block("lb-atz-01", "Angerechnet werden nur versicherungspflichtige Beschäftigung und Zeiten mit Arbeitslosengeld.")
MU_PAY = block("lb-mu-02", "Der Mutterschutzlohn entspricht dem durchschnittlichen Arbeitsentgelt der letzten drei "
                       "abgerechneten Kalendermonate vor Eintritt der Schwangerschaft.")
NIGHT = block("lb-ueb-03", "Für Nachtarbeit sind Zuschläge von 25 % des Grundlohns steuerfrei.")


def test_a_negation_in_a_conclusion_about_the_askers_case_passes_and_one_in_the_rule_fails():
    assert check("No breakfast was included, so there is no reduction [hb-travel-02].", MEALS, language="en").ok
    assert check("Without breakfast in the hotel rate, the per diem is not reduced [hb-travel-02].", MEALS,
                 language="en").ok
    assert "NEGATION_NOT_IN_SOURCE" in kinds(check("With breakfast in the hotel rate, the per diem is not reduced "
                                                   "[hb-travel-02].", MEALS, language="en"))
    assert check("Wusste dein Chef davon und hat es hingenommen, sind sie geduldet [lb-ueb-01]. Eine ausdrückliche "
                 "Anordnung ist also nicht nötig [lb-ueb-01].", ORDER).ok
    assert check("Die Selbstständigkeit zählt nicht mit, weil nur versicherungspflichtige Beschäftigung und Zeiten mit "
                 "Arbeitslosengeld angerechnet werden [lb-atz-01].", ATZ).ok
    assert "NEGATION_NOT_IN_SOURCE" in kinds(check("Überstunden sind nicht zu vergüten, wenn der Arbeitgeber sie "
                                                   "geduldet hat [lb-ueb-01].", ORDER))


def test_what_an_amount_is_based_on_is_no_order_in_time():
    right = ("Berechnet wird er nicht nach einem einzelnen Monat, sondern nach dem durchschnittlichen Arbeitsentgelt "
             "der letzten drei abgerechneten Kalendermonate vor Eintritt der Schwangerschaft [lb-mu-02].")
    wrong = "Der Mutterschutzlohn richtet sich nach den drei Kalendermonaten nach Eintritt der Schwangerschaft [lb-mu-02]."
    assert_caught(right, wrong, "SCOPE_NOT_IN_SOURCE", MU_PAY)


def test_a_small_amount_of_money_worked_out_is_recomputed_like_any_other():
    question = "Ich arbeite 2 Stunden nachts, Grundlohn 24 € die Stunde. Was ist steuerfrei?"
    right = ("Für Nachtarbeit sind 25 % steuerfrei, also 6 € pro Stunde [lb-ueb-03]. "
             "Für 2 Stunden sind das zusammen 12 € [lb-ueb-03].")
    assert_worked_out(right, (right.replace("12 €", "11 €"),), NIGHT, question=question)


TOPUP = block("hb-sick-03", "Tell your manager on the first day of illness. For employees with at least 2 years of "
                            "service, Northwind Labs tops up the sickness benefit to 100 % of the net salary until the "
                            "end of the 12th week of illness.", "en")
ATZ_TOPUP = block("lb-atz-02", "Der Arbeitgeber stockt das Entgelt für die Altersteilzeitarbeit um mindestens 20 % auf.")
LEAVE_DAYS = block("lb-url-05", "Wer fünf Tage die Woche arbeitet, erhält 28 Arbeitstage Urlaub im Jahr.")
REQUEST = block("hb-pto-requests", "Requests for 10 or more consecutive working days must be submitted at least 4 weeks in "
                             "advance. Your manager answers within 5 working days.", "en")


def test_a_rule_number_changed_in_a_sentence_about_the_askers_case_fails():
    # (The block says "1" too, as "the first day": the number is stated, just not in this sentence.)
    question = "I'll be off sick for 9 weeks in total. Do I get more than sickness benefit in the last weeks?"
    right = ("If you have at least 2 years of service, all 9 weeks are within the top-up to 100 % of your net "
             "salary until the end of the 12th week [hb-sick-03].")
    assert_caught(right, right.replace("at least 2 years", "at least 1 year"), "NUMBER_NOT_IN_SOURCE", TOPUP,
                  question=question, language="en")


def test_a_span_counted_out_from_the_askers_dates_is_theirs():
    question = "Today is 10 June and I want to take 20 July to 31 July off. Am I in time?"
    right = ("20 July is 5 weeks and 5 days away, more than the 4 weeks in advance that requests for 10 or more "
             "consecutive working days need, so you are in time [hb-pto-requests].")
    # (The block states a 5 elsewhere: the span's numbers are stated, just not as the rule's.) The rule's own
    # number in the same sentence is still the rule's.
    assert_caught(right, right.replace("the 4 weeks", "the 3 weeks"), "NUMBER_NOT_IN_SOURCE", REQUEST,
                  question=question, language="en")


def test_no_chance_arithmetic_on_the_askers_numbers_vouches_for_a_rate_or_a_rule():
    question = "Ich bin 58 und arbeite seit 33 Jahren Vollzeit. Was zahlt der Arbeitgeber in der Altersteilzeit?"
    right = "Der Arbeitgeber stockt Ihr Entgelt um mindestens 20 % auf [lb-atz-02]."
    assert check(right, ATZ_TOPUP, question=question).ok
    # 58 - 33 = 25: years make no rate.
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right.replace("20 %", "25 %"), ATZ_TOPUP, question=question))
    question = "Ich arbeite 5 Tage die Woche und bin seit 12 Monaten dabei. Wie viel Urlaub habe ich?"
    right = "Bei fünf Arbeitstagen pro Woche haben Sie 28 Arbeitstage Urlaub im Jahr [lb-url-05]."
    assert check(right, LEAVE_DAYS, question=question).ok
    # 5 × 12 ÷ 2 = 30: half of a product is no step of the rule.
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(right.replace("28", "30"), LEAVE_DAYS, question=question))


HOURS = block("hb-hours-03", "You may not work more than 10 hours on any working day.", "en")
PTO_TWELFTH = block("lb-url-06", "Für jeden vollen Monat der Elternzeit wird der Urlaub um ein Zwölftel gekürzt.")


def test_a_span_of_the_askers_times_in_hours_and_minutes_is_worked_out():
    question = "I start at 7:00, leave at 16:30 and take a 20 min lunch. Is that fine?"
    right = ("From 7:00 to 16:30 minus a 20-minute lunch is 9 hours 10 minutes of work, under the 10 hours you "
             "may work on any working day [hb-hours-03].")
    assert_worked_out(right, (right.replace("9 hours 10", "9 hours 40"),), HOURS, question=question, language="en")


def test_days_listed_within_the_askers_dates_are_theirs():
    question = "I want to take Tue 12 May to Fri 15 May off; 14 May is a holiday here. How many days is that?"
    right = "That is 3 vacation days: 12, 13 and 15 May; requests for 3 or more days need 2 weeks' notice [hb-pto-05]."
    pto = block("hb-pto-05", "Requests for 3 or more consecutive working days must be submitted at least 2 weeks in "
                             "advance.", "en")
    assert_worked_out(right, (right.replace("12, 13", "11, 13"),), pto, question=question, language="en")


def test_a_result_in_bold_ends_its_arithmetic():
    question = "Ich bin vom 1. Januar bis 31. Juli in Elternzeit, normal habe ich 28 Tage Urlaub. Wie viel bleibt?"
    right = "Für August bis Dezember bleiben 28 × 5/12 ≈ **11,67 Urlaubstage** [lb-url-06]."
    assert_worked_out(right, (right.replace("11,67", "12,67"),), PTO_TWELFTH, question=question)


ATZ_TERM = block("lb-atz-04", "Die Vereinbarung muss mindestens bis zu dem Zeitpunkt reichen, ab dem eine Altersrente "
                              "beansprucht werden kann.")


def test_at_least_until_is_a_bound_below_though_it_says_up_to():
    right = "Die Vereinbarung muss mindestens bis zu dem Zeitpunkt reichen, ab dem Sie eine Altersrente beanspruchen können [lb-atz-04]."
    assert_caught(right, right.replace("muss mindestens", "darf höchstens"), "SCOPE_NOT_IN_SOURCE", ATZ_TERM)


ATZ_DEAL = block("lb-atz-05", "Einen gesetzlichen Anspruch auf Altersteilzeit gibt es nicht: Altersteilzeit setzt immer "
                              "eine schriftliche Vereinbarung mit dem Arbeitgeber voraus, die häufig auf einem "
                              "Tarifvertrag oder einer Betriebsvereinbarung beruht.")


def test_a_claim_in_the_other_language_may_restate_one_clause_of_a_long_sentence(meaning):
    def claims(text: str):
        return verify_claims(f'{{"claims": [{{"text": "{text}", "evidence_ids": ["E1"]}}]}}', build_evidence([ATZ_DEAL]),
                             "en", aligner=meaning)

    assert claims("This agreement is often based on a collective agreement or a works agreement.").ok
    assert not claims("The agreement is usually concluded by phone with the pension office.").ok


SPECIAL = block("hb-pto-06", "In addition to annual leave, Northwind Labs grants paid special leave for certain personal "
                             "events: 2 days when you get married and 1 day for your own graduation ceremony.", "en")


def test_a_short_answer_before_a_colon_may_say_no_and_the_statement_after_it_is_checked():
    question = "My graduation ceremony is on a Friday. Do I have to burn a vacation day for it?"
    right = ("**Graduation:** No need to use a vacation day: Northwind Labs grants 1 day of paid special leave for "
             "your own graduation ceremony, in addition to annual leave [hb-pto-06].")
    assert_caught(right, right.replace("Northwind Labs grants", "Northwind Labs does not grant"),
                  "NEGATION_NOT_IN_SOURCE", SPECIAL, question=question, language="en")


MU_BAN = block("lb-mu-03", "Darf eine Schwangere außerhalb der Schutzfristen wegen eines ärztlichen Beschäftigungsverbots "
                           "ganz oder teilweise nicht arbeiten, zahlt der Arbeitgeber Mutterschutzlohn.")


def test_a_negation_in_a_rules_condition_is_not_dropped_by_a_statement_that_names_the_condition_otherwise():
    right = ("Bei einem ärztlichen Beschäftigungsverbot außerhalb der Schutzfristen zahlt der Arbeitgeber "
             "Mutterschutzlohn [lb-mu-03].")
    wrong = ("Eine Schwangere darf außerhalb der Schutzfristen trotz eines ärztlichen Beschäftigungsverbots "
             "arbeiten [lb-mu-03].")
    assert_caught(right, wrong, "NEGATION_DROPPED", MU_BAN)


WEEKEND_HOLIDAY = block("hb-hol-02", "If a public holiday falls on a Saturday or Sunday, there is no replacement day off.", "en")


def test_a_negation_dropped_from_a_rules_consequence_fails_though_its_condition_holds_most_words():
    right = "A public holiday on a Saturday or Sunday gives you no replacement day off [hb-hol-02]."
    wrong = "If a public holiday falls on a Saturday or Sunday, you get a replacement day off [hb-hol-02]."
    assert_caught(right, wrong, "NEGATION_DROPPED", WEEKEND_HOLIDAY, language="en")


TEILURLAUB = block("lb-url-01", "Wer die Wartezeit im Kalenderjahr nicht erfüllt oder in der ersten Jahreshälfte "
                                "ausscheidet, erhält Teilurlaub. Dasselbe gilt für vier Monate nach einer Fehlgeburt "
                                "nach der 12. Schwangerschaftswoche.")


def test_a_negation_negates_up_to_the_next_or_and_a_compound_of_fehl_negates_nothing():
    # "nicht erfüllt oder in der ersten Jahreshälfte ausscheidet": leaving in the first half is not negated.
    right = "Da du in der ersten Jahreshälfte ausscheidest, erhältst du Teilurlaub [lb-url-01]."
    assert check(right, TEILURLAUB).ok
    assert "NEGATION_DROPPED" in kinds(check("Wer die Wartezeit erfüllt, erhält Teilurlaub [lb-url-01].", TEILURLAUB))
    assert check("Vier Monate nach einer Fehlgeburt nach der 12. Schwangerschaftswoche gilt dasselbe [lb-url-01].",
                 TEILURLAUB).ok


ELTERNZEIT_URLAUB = block("lb-url-03", "Der Arbeitgeber darf den Erholungsurlaub für jeden vollen Kalendermonat der "
                                       "Elternzeit um ein Zwölftel kürzen. Der Grundfreibetrag beträgt 12.348 €; er gilt "
                                       "für alle Beschäftigten.")
JOINERS = block("hb-pto-04", "Employees who join during the year receive one twelfth of the annual entitlement for each "
                             "full month of employment in that year.", "en")


@pytest.mark.parametrize("right, wrong, blocks, language", [
    ("Für jeden vollen Kalendermonat der Elternzeit darf der Arbeitgeber den Urlaub um ein Zwölftel kürzen [lb-url-03].",
     "Für jeden angefangenen Kalendermonat der Elternzeit darf der Arbeitgeber den Urlaub um ein Zwölftel kürzen "
     "[lb-url-03].", (ELTERNZEIT_URLAUB,), "de"),
    ("Der Grundfreibetrag beträgt 12.348 € [lb-url-03].", "Der Kinderfreibetrag beträgt 12.348 € [lb-url-03].",
     (ELTERNZEIT_URLAUB,), "de"),
    ("As you join during the year, you get one twelfth of the annual entitlement for each full month of employment "
     "[hb-pto-04].",
     "As you join during the year, you get one twelfth of the annual entitlement for each started month of employment "
     "[hb-pto-04].", (JOINERS,), "en"),
])
def test_a_word_changed_in_a_frame_the_statement_repeats_fails_and_a_reworded_verb_passes(right, wrong, blocks,
                                                                                        language):
    # "get" for "receive", "Für jeden … darf der Arbeitgeber": a paraphrase rewords and reorders.
    assert_caught(right, wrong, "WORDS_NOT_IN_SOURCE", *blocks, language=language)


def test_a_bound_in_the_second_rule_a_statement_joins_is_held_against_that_rules_sentence(meaning):
    hybrid = ("Northwind Labs employees can work remotely for up to 3 days per week, provided their role allows it "
              "and they agree the arrangement with their manager. {} During your first week at Northwind Labs you "
              "work from the office every day.")
    remote = block("hb-remote-02", hybrid.format("At least 2 days per week are spent in the office; each team agrees "
                                                 "its own anchor days, usually Tuesday and Thursday."), "en")
    no_bound = block("hb-remote-02", hybrid.format("On 2 days per week the team meets in the office; each team agrees "
                                                   "its own anchor days, usually Tuesday and Thursday."), "en")
    joined = ("Bei Northwind Labs kannst du bis zu 3 Tage pro Woche remote arbeiten, sofern deine Rolle das zulässt "
              "und du es mit deiner Führungskraft vereinbarst; mindestens 2 Tage pro Woche bist du im Büro, meist an "
              "den Ankertagen deines Teams [hb-remote-02].")
    assert check(joined, remote, aligner=meaning).ok
    assert "SCOPE_NOT_IN_SOURCE" in kinds(check(joined, no_bound, aligner=meaning))


MU_BAN_AFTER = block("lb-mu-04", "In den acht Wochen nach der Entbindung gilt ein absolutes Beschäftigungsverbot. In den "
                                 "sechs Wochen vor der Entbindung dürfen Schwangere nur beschäftigt werden, wenn sie sich "
                                 "ausdrücklich dazu bereit erklären.")


def test_a_negation_added_to_a_clause_that_restates_the_source_fails_though_another_sentence_says_only():
    right = ("In den acht Wochen nach der Entbindung gilt ein absolutes Beschäftigungsverbot; in den sechs Wochen davor "
             "darf eine Schwangere nur arbeiten, wenn sie sich ausdrücklich dazu bereit erklärt [lb-mu-04].")
    wrong = ("In den acht Wochen nach der Entbindung gilt kein absolutes Beschäftigungsverbot; die Mutter darf "
             "arbeiten, wenn sie sich ausdrücklich dazu bereit erklärt [lb-mu-04].")
    assert_caught(right, wrong, "NEGATION_NOT_IN_SOURCE", MU_BAN_AFTER)


YOUTH_LEAVE = block("lb-url-04", "Nach § 3 Abs. 1 BUrlG beträgt der gesetzliche Mindesturlaub 24 Werktage. Für "
                                 "Jugendliche gilt ein höherer Mindesturlaub nach § 19 JArbSchG: 30 Werktage unter 16 "
                                 "Jahren und 27 Werktage unter 17 Jahren.")


def test_a_law_cited_for_a_rule_that_another_law_states_fails_in_either_language(meaning):
    right = "Young people under 17 get at least 27 Werktage of leave under § 19 JArbSchG [lb-url-04]."
    wrong = "Young people under 17 get at least 27 Werktage of leave under § 3 BUrlG [lb-url-04]."
    assert check(right, YOUTH_LEAVE, language="en", aligner=meaning).ok
    assert "WORDS_NOT_IN_SOURCE" in kinds(check(wrong, YOUTH_LEAVE, language="en", aligner=meaning))
    assert "WORDS_NOT_IN_SOURCE" in kinds(check("Jugendliche unter 17 bekommen nach § 3 BUrlG 27 Werktage Urlaub "
                                                "[lb-url-04].", YOUTH_LEAVE))


MILEAGE = block("hb-travel-03", "If you use your private car for a business trip, Northwind Labs pays 0.30 EUR per "
                                "kilometre driven. Bicycles and e-scooters are not reimbursed.", "en")


def test_an_alternative_put_into_a_rule_widens_it_and_fails_unless_the_block_names_it():
    right = "If you use your private car for a business trip, you get 0.30 EUR per kilometre driven [hb-travel-03]."
    assert_caught(right, right.replace("private car", "private car or motorbike"), "WORDS_NOT_IN_SOURCE", MILEAGE,
                  language="en")
    # The block names bicycles: "car or bicycle" is a statement about two of its rules, left to the other checks.
    verdict = check(right.replace("private car", "private car or bicycle"), MILEAGE, language="en")
    assert not any("alternative" in v.detail for v in verdict.violations)


EXPENSES = block("hb-exp-02", "Submit every expense claim in Northwind Spend within 30 days of the date of the expense. "
                              "Northwind Labs pays approved claims with the next salary; leave requests go through "
                              "Northwind People.", "en")


def test_one_of_the_companys_tools_named_for_another_fails():
    right = "Submit your expense claim in Northwind Spend within 30 days of the expense [hb-exp-02]."
    assert_caught(right, right.replace("Spend", "People"), "WORDS_NOT_IN_SOURCE", EXPENSES, language="en")


SICK_AGAIN = block("lb-efz-03", "Wegen derselben Krankheit entsteht ein neuer Anspruch, wenn seit Beginn der ersten "
                                "Arbeitsunfähigkeit zwölf Monate vergangen sind.")


def test_the_first_day_of_a_range_the_asker_gives_is_a_date_of_theirs():
    question = "Ich war letztes Jahr vom 3. bis 28. Februar krank. Bekomme ich wieder Lohnfortzahlung?"
    assert_worked_out(
        "Seit dem 3. Februar letzten Jahres sind zwölf Monate vergangen, also entsteht ein neuer Anspruch [lb-efz-03].",
        ("Seit dem 4. Februar letzten Jahres sind zwölf Monate vergangen, also entsteht ein neuer Anspruch [lb-efz-03].",),
        SICK_AGAIN, question=question)


ONBOARDING = block("hb-onb-02", "The first week follows a fixed plan: Monday is welcome and IT setup, Wednesday the "
                                "mandatory security training. Complete the security training within the first 5 "
                                "working days.", "en")


def test_a_date_moved_by_working_days_or_named_with_its_weekday_in_the_askers_week_is_worked_out():
    question = "I start on Monday 1 June. By when must the security training be done?"
    assert_worked_out("Complete the security training by Friday 5 June, within the first 5 working days [hb-onb-02].",
                      ("Complete the security training by Friday 12 June, within the first 5 working days [hb-onb-02].",
                       "Complete the security training by 9 June, within the first 5 working days [hb-onb-02]."),
                      ONBOARDING, question=question, language="en")
    assert_worked_out("The mandatory security training is on Wednesday 3 June [hb-onb-02].",
                      ("The mandatory security training is on Wednesday 4 June [hb-onb-02].",
                       "The mandatory security training is on Wednesday 10 June [hb-onb-02]."),
                      ONBOARDING, question=question, language="en")


MEAL_DEDUCTION = block("lb-rk-02", "Bei mehr als 8 Stunden Abwesenheit beträgt die Verpflegungspauschale 14 €. Für ein "
                          "gestelltes Mittagessen werden 11,20 € abgezogen.")
CAP = block("lb-min-03", "Bis Ende 2025 lag die Minijob-Grenze bei 556 € im Monat.")


def test_an_amount_to_the_cent_from_numbers_the_answer_writes_or_a_months_amount_made_a_years_is_worked_out():
    question = "Ich war 10 Stunden unterwegs, das Mittagessen hat die Firma bezahlt. Was bekomme ich?"
    assert_worked_out(
        "Bei mehr als 8 Stunden gibt es 14 € [lb-rk-02]. Für das Mittagessen werden 11,20 € abgezogen, es bleiben "
        "dir 2,80 € [lb-rk-02].",
        ("Bei mehr als 8 Stunden gibt es 14 € [lb-rk-02]. Für das Mittagessen werden 11,20 € abgezogen, es bleiben "
         "dir 3,20 € [lb-rk-02].",),
        MEAL_DEDUCTION, question=question)
    assert_worked_out("Bis Ende 2025 lag die Grenze bei 556 € im Monat, also bei 6.672 € im Jahr [lb-min-03].",
                      ("Bis Ende 2025 lag die Grenze bei 556 € im Monat, also bei 6.772 € im Jahr [lb-min-03].",),
                      CAP, question="Wie hoch war die Grenze 2025?")


BAV = block("lb-bav-03", "Steuerfrei sind Beiträge bis 8.112 € im Jahr oder 676 € im Monat. Sozialversicherungsfrei "
                         "sind sie bis 4.056 € im Jahr oder 338 € im Monat.")
BAV_HB = block("hb-ben-03", "In 2026, you can convert up to 4,056 EUR per year (338 EUR per month) free of social "
                            "security contributions.", "en")


def test_two_numbers_of_another_block_do_not_vouch_for_each_other_as_a_calculation():
    # Neither number is in the block cited; each is the other times twelve, and both stand in another block.
    wrong = "Sozialversicherungsfrei sind bis zu 8.112 € im Jahr (676 € im Monat) [hb-ben-03]."
    assert "NUMBER_NOT_IN_SOURCE" in kinds(check(wrong, BAV_HB, BAV, question="Wie viel ist beitragsfrei?"))


CARS = block("hb-car-02", "Northwind Labs provides company cars to employees in field sales and to directors. Plug-in "
                          "hybrids are not offered. Parking at the office is reserved for visitors.", "en")


def test_a_short_answer_after_a_label_is_a_lead_in_and_a_labelled_statement_is_still_checked():
    assert check("Plug-in hybrid: unfortunately not. Plug-in hybrids are not offered [hb-car-02].", CARS,
                 language="en").ok
    assert check("**Your colleague in marketing:** no, it's not the same. Company cars go to employees in field sales "
                 "and to directors [hb-car-02].", CARS, language="en").ok
    assert "NEGATION_NOT_IN_SOURCE" in kinds(check("Parking: not for visitors [hb-car-02].", CARS, language="en"))
    from bot.answer.verify.statement import lead_in

    assert lead_in("**Tax return:** Yes, it matters.", "en") and not lead_in("Parking: not possible.", "en")




PASSWORDS = block("it-pwd-02", "A new password must have at least 14 characters and must differ from your last 10 "
                               "passwords. After 5 failed sign-in attempts, the account locks for 15 minutes.", "en")


def test_what_the_asker_quotes_or_abbreviates_is_counted_as_theirs():
    question = "Can I use 'Nordwind2026!' as my new password? Or go back to the one from 2 yrs ago?"
    assert_worked_out("'Nordwind2026!' has only 13 characters, but a new password must have at least 14 characters "
                      "[it-pwd-02].",
                      ("'Nordwind2026!' has only 12 characters, but a new password must have at least 14 characters "
                       "[it-pwd-02].",),
                      PASSWORDS, question=question, language="en")
    assert_worked_out("Your password from 2 years ago may still be among your last 10 passwords [it-pwd-02].",
                      ("Your password from 3 years ago may still be among your last 10 passwords [it-pwd-02].",),
                      PASSWORDS, question=question, language="en")


def test_a_changed_count_of_a_thing_without_a_unit_fails_across_languages(meaning):
    right = "Außerdem muss es sich von deinen letzten zehn Passwörtern unterscheiden [it-pwd-02]."
    assert check(right, PASSWORDS, aligner=meaning).ok
    verdict = check(right.replace("zehn", "fünf"), PASSWORDS, aligner=meaning)
    assert any(v.kind == "NUMBER_NOT_IN_SOURCE" and "'fünf'" in v.detail for v in verdict.violations), verdict.violations


CAR_BENEFIT = block("lb-sb-03", "Für einen Dienstwagen werden monatlich 1 % des Bruttolistenpreises angesetzt, zuzüglich "
                                "0,03 % pro Entfernungskilometer für Fahrten zwischen Wohnung und erster "
                                "Tätigkeitsstätte.\n\nFür reine Elektroautos werden monatlich 0,25 % statt 1 % angesetzt. "
                                "Die Reduzierung gilt auch für den Zuschlag für Fahrten zur Arbeit. Beispiel: "
                                "Elektroauto mit 60.000 € Bruttolistenpreis und 20 km Entfernung: 150 € (0,25 %) plus "
                                "90 € für die Fahrten zur Arbeit, zusammen 240 € im Monat.")


def test_an_operand_of_arithmetic_written_out_is_not_held_against_the_rate_of_the_worked_example():
    # The line of arithmetic aligns best to the block's worked example, whose rate is another; its own
    # rate stands in the rule before it.
    question = "Listenpreis 41.380 €, 10 km zur Arbeit: was wird versteuert?"
    draft = ("So rechnet sich das bei dir [lb-sb-03]:\n\n- Listenpreis abgerundet: 41.300 €\n- 1 %: 413 €\n"
             "- Fahrten zur Arbeit: 0,03 % × 41.300 € × 10 km = 123,90 €\n")
    assert_worked_out(draft, (draft.replace("123,90", "132,90"),), CAR_BENEFIT, question=question)


def test_a_word_ordinal_of_the_block_is_no_length_to_hold_a_count_against():
    from bot.answer.verify.numbers import find_numbers
    from bot.answer.verify.statement import _other_number

    five_days = find_numbers("your first 5 working days run from Monday to Friday", "en")[0]
    first_week = find_numbers("The first week follows a fixed plan.", "en", source=True)
    assert not _other_number(five_days, first_week, {v for n in first_week for v in n.values})
    four_weeks = find_numbers("The probation lasts four weeks.", "en", source=True)
    assert _other_number(five_days, four_weeks, {v for n in four_weeks for v in n.values})


def test_tens_and_ones_written_as_one_number_are_read_as_one():
    from bot.answer.verify.numbers import find_numbers

    assert [(n.raw, set(n.values)) for n in find_numbers("twenty-four working days", "en")] == [("twenty-four", {"24"})]
    assert [(n.raw, set(n.values)) for n in find_numbers("achtundzwanzig Tage", "de")] == [("achtundzwanzig", {"28"})]


BUDGET = block("hb-remote-05", "Every employee gets a second monitor and a home office budget of 500 EUR, which is "
                               "renewed every 3 years.", "en")


def test_an_ordinal_of_a_thing_states_no_number_a_changed_count_could_hide_behind(meaning):
    right = "Das Homeoffice-Budget wird alle drei Jahre erneuert [hb-remote-05]."
    assert check(right, BUDGET, aligner=meaning).ok
    verdict = check(right.replace("drei", "zwei"), BUDGET, aligner=meaning)
    assert any("'zwei'" in v.detail for v in verdict.violations), verdict.violations


EG_LIMIT = block("lb-ez-03", "Für Geburten ab dem 1. April 2025 entfällt der Anspruch auf Elterngeld, wenn das zu "
                             "versteuernde Einkommen der Eltern über 175.000 € liegt.")


def test_a_verb_that_ends_a_claim_backs_a_negation_in_either_language(meaning):
    assert check("For births from 1 April 2025 there is no Elterngeld if the parents' taxable income is above "
                 "175,000 EUR [lb-ez-03].", EG_LIMIT, language="en", aligner=meaning).ok
    assert check("Liegt das Einkommen über 175.000 €, gibt es kein Elterngeld [lb-ez-03].", EG_LIMIT).ok


TAX_CLASS = block("lb-stk-02", "Steuerklasse II gilt für Alleinerziehende, denen der Entlastungsbetrag für "
                               "Alleinerziehende zusteht.")


def test_a_negation_with_the_reason_the_block_states_is_a_conclusion_and_without_it_is_checked():
    assert check("Steuerklasse II kommt für dich nicht in Frage, weil sie für Alleinerziehende gilt, denen der "
                 "Entlastungsbetrag zusteht [lb-stk-02].", TAX_CLASS).ok
    assert "NEGATION_NOT_IN_SOURCE" in kinds(check("Steuerklasse II gilt nicht für Alleinerziehende, denen der "
                                                   "Entlastungsbetrag zusteht [lb-stk-02].", TAX_CLASS))


FLU = block("hb-ben-04", "Flu vaccinations are offered in all offices every autumn. Northwind Labs also pays half of "
                         "a gym membership.", "en")


def test_the_companys_own_name_between_a_quantifier_and_its_noun_narrows_nothing():
    assert check("Flu vaccinations are offered in all Northwind Labs offices every autumn [hb-ben-04].", FLU,
                 language="en").ok
    assert "SCOPE_NOT_IN_SOURCE" in kinds(check("Flu vaccinations are offered in all German offices every autumn "
                                                "[hb-ben-04].", FLU, language="en"))


MIDI = block("lb-mid-02", "Im Übergangsbereich liegt ein regelmäßiges Arbeitsentgelt von 603,01 € bis 2.000 € im Monat. "
                          "Maßgeblich ist das Entgelt im Jahresdurchschnitt, einschließlich vertraglich zugesagter "
                          "Einmalzahlungen.")


def test_two_steps_on_three_numbers_the_sentence_writes_are_worked_out():
    question = "Ich verdiene 1.900 € brutto im Monat und bekomme im November 1.500 € Weihnachtsgeld. Midijob?"
    right = ("Mit 12 × 1.900 € und 1.500 € Weihnachtsgeld ergeben sich 24.300 € im Jahr, also durchschnittlich "
             "2.025 € im Monat [lb-mid-02].")
    assert_worked_out(right, (right.replace("24.300", "24.500"),), MIDI, question=question)
