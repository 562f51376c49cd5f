"""Citations mode: the verifier's rules one by one, plus the text helpers it relies on."""

from __future__ import annotations

import pytest

from bot.answer.prompt import build_evidence
from bot.answer.verify.citations import verify_citations
from bot.answer.verify.numbers import find_numbers, unstated
from bot.answer.verify.text import is_refusal, quote_in, strip_think
from bot.i18n import message
from kb_index import ChunkResult

REFUSAL_DE = message("refusal", "de")
REFUSAL_EN = message("refusal", "en")

OPEN, CLOSE = "<think>", "</think>"


def chunk(entry_id: str, text: str, **kw) -> ChunkResult:
    fields = dict(
        chunk_id=f"{entry_id}#0", entry_id=entry_id, section="Zusammenfassung", text=text,
        title=f"Titel {entry_id}", stand="2026-01",
    )
    fields.update(kw)
    return ChunkResult(**fields)


ATZ = chunk(
    "lb-atz-01",
    "Altersteilzeit ist eine Teilzeit mit Lohnausgleich. Sie ist ab dem 55. Lebensjahr möglich. "
    "Der Aufstockungsbetrag beträgt 1.538,50 € im Monat, die Pauschale 13,90 €. "
    "Die Vereinbarung muss „schriftlich vor Beginn der Altersteilzeit“ geschlossen werden.",
    legal_bases=("AltTZG § 2",),
)
URLAUB = chunk("lb-url-02", "Der Urlaubsanspruch beträgt 30 Tage im Kalenderjahr 2024.")
MIN1 = chunk("lb-min-01", "ATZ ist eine Teilzeit mit Lohnausgleich.")
MIN2 = chunk("lb-min-02", "Details zur Lohnverrechnung.")
EVIDENCE = build_evidence([ATZ, URLAUB])


def kinds(verdict) -> list[str]:
    return [v.kind for v in verdict.violations]


def verify(text: str, evidence=None, language: str = "de"):
    return verify_citations(text, EVIDENCE if evidence is None else evidence, language)


# ------------------------------------------------------------------ seed: validate answer


def test_valid_citation_passes():
    verdict = verify("ATZ ist Teilzeit [lb-min-01].", build_evidence([MIN1]))
    assert verdict.ok and verdict.violations == []
    assert verdict.citations == ["lb-min-01"]


def test_unknown_id_is_violation_naming_the_id():
    verdict = verify("ATZ ist xyz [lb-atz-99].", build_evidence([MIN1]))
    assert not verdict.ok
    assert kinds(verdict) == ["UNKNOWN_ID"]
    assert "lb-atz-99" in verdict.violations[0].detail


def test_no_citation_is_violation():
    verdict = verify("ATZ ist eine Teilzeit.", build_evidence([MIN1]))
    assert not verdict.ok and kinds(verdict) == ["NO_CITATION"]
    assert "KB-ID" in verdict.violations[0].detail


def test_refusal_without_citation_is_ok():
    verdict = verify(REFUSAL_DE, build_evidence([MIN1]))
    assert verdict.ok and verdict.refusal and verdict.citations == []


def test_bare_id_mention_is_detected():
    verdict = verify("Siehe lb-min-02 für Details.", build_evidence([MIN2]))
    assert verdict.ok and verdict.citations == ["lb-min-02"]


# ------------------------------------------------------------------ seed: refusal detection


def test_refusal_phrase():
    assert is_refusal("Dazu enthält die Wissensbasis keine Aussage.")


def test_refusal_phrase_with_other_punctuation_still_counts():
    assert is_refusal("Dazu enthält die Wissensbasis keine Aussage!")


def test_normal_answer_is_no_refusal():
    assert not is_refusal("Der Anspruch besteht [lb-min-01].")


def test_strip_think_removes_block():
    out = strip_think(OPEN + "Reasoning here" + CLOSE + "Antwort [lb-min-01].")
    assert "Reasoning" not in out
    assert out.startswith("Antwort [lb-min-01].")


def test_refusal_embedded_in_longer_reply_is_a_refusal():
    verdict = verify(f"Zu dieser Frage: {REFUSAL_DE}", build_evidence([MIN1]))
    assert verdict.ok and verdict.refusal


def test_refusal_with_a_short_lead_in_is_a_refusal():
    assert verify(f"Sorry, {REFUSAL_EN}", build_evidence([MIN1]), "en").refusal
    assert verify(f"Leider: {REFUSAL_DE}", build_evidence([MIN1])).refusal


def test_refusal_followed_by_a_statement_is_an_answer_and_gets_checked():
    # The statement cites no known KB-ID, so only the refusal would have been seen.
    verdict = verify(f"{REFUSAL_EN} However, you get 30 days [E1].", EVIDENCE, "en")
    assert not verdict.refusal and not verdict.ok and "UNKNOWN_ID" in kinds(verdict)
    verdict = verify(f"{REFUSAL_DE} Es gibt aber 30 Urlaubstage im Jahr.", EVIDENCE)
    assert not verdict.refusal and kinds(verdict) == ["NO_CITATION"]


def test_refusal_ignores_case_accents_and_punctuation():
    assert is_refusal("dazu enthalt die wissensbasis, keine aussage")
    assert is_refusal("THE KNOWLEDGE BASE DOESN'T COVER THIS QUESTION")
    assert not is_refusal("The knowledge base covers this question.")


def test_english_refusal_is_recognised_in_a_german_setup():
    assert verify(REFUSAL_EN).refusal


def test_refusal_sentence_next_to_citations_is_an_answer_and_gets_checked():
    verdict = verify(f"ATZ gilt ab dem 60. Lebensjahr [lb-atz-01]. {REFUSAL_DE}")
    assert not verdict.refusal
    assert kinds(verdict) == ["NUMBER_NOT_IN_SOURCE"]


# ------------------------------------------------------------------ reasoning blocks


def test_lone_closing_tag_drops_everything_before_it():
    assert strip_think("Reasoning here" + CLOSE + " Antwort [x].") == "Antwort [x]."


def test_unclosed_leading_block_is_all_reasoning():
    assert strip_think(OPEN + "still thinking about [lb-atz-99]") == ""


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("<think >", "</think >"),
        ('<think foo="x">', "</think>"),
        ("<THINK>", "</THINK>"),
        ("<Thinking\n>", "</thinking\t>"),
        ("< think>", "</ think >"),
        ("<reasoning effort='high'>", "</REASONING >"),
    ],
)
def test_reasoning_tags_with_spaces_attributes_or_capitals_are_stripped(opening, closing):
    text = opening + "maybe [lb-atz-99] at 60?" + closing + "Antwort [lb-min-01]."
    assert strip_think(text) == "Antwort [lb-min-01]."
    assert strip_think("maybe [lb-atz-99]" + closing + " Antwort [x].") == "Antwort [x]."
    assert strip_think("Antwort [x]. " + opening + "still thinking") == "Antwort [x]."


def test_empty_self_closing_reasoning_tag_hides_nothing():
    assert strip_think("<think/>Antwort [x].") == "Antwort [x]."


def test_words_that_only_start_like_a_tag_are_kept():
    assert strip_think("Use <thinker> and <thinkpad> here [x].") == "Use <thinker> and <thinkpad> here [x]."


def test_reasoning_is_not_verified():
    verdict = verify(OPEN + "Vielleicht [lb-atz-99] mit 60 Jahren?" + CLOSE + "ATZ ist Teilzeit [lb-atz-01].")
    assert verdict.ok and verdict.citations == ["lb-atz-01"]


def test_only_reasoning_means_no_citation():
    verdict = verify(OPEN + "Hmm [lb-atz-01]")
    assert kinds(verdict) == ["NO_CITATION"]
    assert verdict.violations[0].detail == "empty answer"


# ------------------------------------------------------------------ id forms


def test_several_ids_in_one_bracket():
    verdict = verify("Beides gilt [lb-atz-01, lb-url-02].")
    assert verdict.ok and verdict.citations == ["lb-atz-01", "lb-url-02"]


def test_one_unknown_id_in_a_bracket_fails_the_answer():
    verdict = verify("Beides gilt [lb-atz-01, lb-xyz-07].")
    assert kinds(verdict) == ["UNKNOWN_ID"] and "lb-xyz-07" in verdict.violations[0].detail


def test_citations_are_in_order_of_first_use():
    verdict = verify("Urlaub gibt es [lb-url-02]. ATZ ist Teilzeit [lb-atz-01]. Noch einmal [lb-url-02].")
    assert verdict.citations == ["lb-url-02", "lb-atz-01"]


def test_upper_case_id_is_the_same_id():
    verdict = verify("ATZ ist Teilzeit [LB-ATZ-01].")
    assert verdict.ok and verdict.citations == ["lb-atz-01"]


def test_labelled_bracket_counts_as_citation():
    assert verify("ATZ ist Teilzeit [Quelle: lb-atz-01].").citations == ["lb-atz-01"]


def test_footnote_number_in_brackets_is_not_a_kb_id():
    assert kinds(verify("ATZ ist Teilzeit [1].")) == ["UNKNOWN_ID"]


def test_bare_unknown_id_of_the_same_shape_is_flagged():
    assert kinds(verify("ATZ ist Teilzeit, siehe lb-atz-99.")) == ["UNKNOWN_ID"]


def test_editorial_brackets_and_markdown_links_are_not_citations():
    verdict = verify("ATZ [sic] ist Teilzeit [lb-atz-01], siehe [Wiki](https://wiki.example.com/x-1).")
    assert verdict.citations == ["lb-atz-01"]
    # Not a citation, but a link: it must be in the cited block (it is not).
    assert kinds(verdict) == ["LINK_NOT_IN_SOURCE"]


# ------------------------------------------------------------------ numbers


def test_number_not_in_cited_block_fails():
    verdict = verify("ATZ gilt ab dem 60. Lebensjahr [lb-atz-01].")
    assert kinds(verdict) == ["NUMBER_NOT_IN_SOURCE"]
    assert "60" in verdict.violations[0].detail


def test_number_in_cited_block_passes():
    assert verify("ATZ gilt ab dem 55. Lebensjahr [lb-atz-01].").ok


def test_amount_spellings_are_normalised():
    assert verify("Der Aufstockungsbetrag ist 1538.50 EUR, die Pauschale 13.90 Euro [lb-atz-01].").ok
    assert kinds(verify("Die Pauschale ist 13,95 € [lb-atz-01].")) == ["NUMBER_NOT_IN_SOURCE"]


def test_number_must_not_match_inside_a_longer_number():
    assert kinds(verify("Es gibt 24 Urlaubstage [lb-url-02].")) == ["NUMBER_NOT_IN_SOURCE"]


def test_number_from_a_block_the_sentence_does_not_cite_fails():
    # 30 is in lb-url-02, but the sentence cites lb-atz-01 only.
    assert kinds(verify("ATZ dauert 30 Tage [lb-atz-01].")) == ["NUMBER_NOT_IN_SOURCE"]


def test_block_header_stand_and_legal_basis_count_as_stated():
    assert verify("Stand 2026-01, Grundlage AltTZG § 2 [lb-atz-01].").ok


def test_kb_id_digits_are_not_numbers():
    assert verify("ATZ ist Teilzeit [lb-atz-01].").ok


def test_uncited_sentence_takes_citations_of_the_next_cited_sentence():
    assert verify("Ab dem 55. Lebensjahr geht es. Das regelt die ATZ [lb-atz-01].").ok
    failing = verify("Ab dem 30. Lebensjahr geht es. Das regelt die ATZ [lb-atz-01].")
    assert kinds(failing) == ["NUMBER_NOT_IN_SOURCE"] and failing.violations[0].claim == 0


def test_trailing_uncited_sentence_takes_citations_of_the_one_before():
    assert verify("ATZ ist Teilzeit mit Lohnausgleich [lb-atz-01]. (Stand 2026-01)").ok


def test_inheritance_stops_at_the_paragraph():
    verdict = verify("Es gibt 30 Tage.\n\nUrlaub regelt [lb-url-02].")
    assert kinds(verdict) == ["UNCITED_NUMBER"]


def test_uncited_paragraph_without_numbers_or_quotes_is_allowed():
    assert verify("Kurz gesagt:\n\nATZ ist Teilzeit [lb-atz-01].").ok


def test_numbers_are_checked_per_sentence_with_german_ordinals_kept_whole():
    verdict = verify("ATZ ist ab dem 55. Lebensjahr möglich [lb-atz-01]. Urlaub: 31 Tage [lb-url-02].")
    assert kinds(verdict) == ["NUMBER_NOT_IN_SOURCE"] and verdict.violations[0].claim == 1


# ------------------------------------------------------------------ quotations


def test_verbatim_quote_in_cited_block_passes():
    assert verify("Sie muss „schriftlich vor Beginn der Altersteilzeit“ vereinbart werden [lb-atz-01].").ok


@pytest.mark.parametrize(
    "quoted", ['"eine Teilzeit mit Lohnausgleich"', "“eine Teilzeit mit Lohnausgleich”", "»eine Teilzeit mit Lohnausgleich«"]
)
def test_every_double_quote_style_is_checked(quoted):
    assert verify(f"ATZ ist {quoted} [lb-atz-01].").ok
    changed = quoted.replace("mit", "ohne")
    assert kinds(verify(f"ATZ ist {changed} [lb-atz-01].")) == ["QUOTE_NOT_IN_SOURCE"]


def test_quote_comparison_ignores_line_breaks_and_spacing():
    assert verify('ATZ ist "eine   Teilzeit\nmit Lohnausgleich" [lb-atz-01].').ok


def test_quote_must_be_in_a_cited_block_not_just_any_block():
    verdict = verify('Es heißt "30 Tage im Kalenderjahr" [lb-atz-01].')
    assert kinds(verdict) == ["QUOTE_NOT_IN_SOURCE"]


def test_quote_with_ellipsis_needs_each_part_in_order():
    assert verify("ATZ ist „eine Teilzeit … Lohnausgleich“ [lb-atz-01].").ok
    assert not quote_in("Lohnausgleich … eine Teilzeit", ATZ.text)


def test_quote_without_any_citation_is_uncited():
    verdict = verify('Es heißt "eine Teilzeit".\n\nATZ [lb-atz-01].')
    assert kinds(verdict) == ["UNCITED_SENTENCE"]


# ------------------------------------------------------------------ helpers


def test_number_readings():
    # A dated day also reads as that day in any year, which only a source's yearly date offers.
    assert find_numbers("15.01.2026")[0].values == {"2026-01-15", "~01-15"}
    assert "~07-01" in find_numbers("jedes Jahr zum 1. Juli", "de", source=True)[0].values
    assert "~07-01" not in find_numbers("seit dem 1. Juli 2025", "de", source=True)[0].values
    assert find_numbers("1,000 genomes", "en")[0].values == {"1000", "1"}
    assert [n.raw for n in find_numbers("CD4 and p53 and IL-6")] == ["6"]
    assert unstated("am 2026-01-15", ["Stichtag 15.01.2026"]) == []
    assert unstated("sechs Wochen", ["6 Wochen"], "de") == []
    assert unstated("seven weeks", ["6 weeks"], "en") == ["seven"]


def test_number_in_the_next_sentence_is_checked_against_that_sentences_citation():
    verdict = verify("Urlaub gibt es 30 Tage [lb-url-02]. Die ATZ beginnt ab dem 55. Lebensjahr [lb-atz-01].")
    assert verdict.ok


# ------------------------------------------------------------------ links, addresses, phone numbers

PTO = chunk(
    "hb-pto-01",
    "You can carry over up to 5 unused vacation days until 31 March of the next year. "
    "Requests go to hr@example.com or to the HR hotline +49 30 1234567. "
    "The form is at https://wiki.example.com/hr/leave-form.",
    title="Annual leave", section="Carry-over",
)
PTO_EVIDENCE = build_evidence([PTO])


def verify_en(text: str):
    return verify_citations(text, PTO_EVIDENCE, "en")


@pytest.mark.parametrize(
    "sentence",
    [
        "Reset your password at https://evil.example/reset before carrying over leave [hb-pto-01].",
        "Send your request to payroll@evil.example [hb-pto-01].",
        "Use the [leave form](https://evil.example/form) to carry over days [hb-pto-01].",
        "Use the <https://evil.example/form|leave form> to carry over days [hb-pto-01].",
        "Write to <mailto:boss@evil.example|HR> to carry over days [hb-pto-01].",
        "Call the HR hotline +1 (555) 010-0199 to carry over days [hb-pto-01].",
        "Carry over days by phone (Tel. 030 9876543) [hb-pto-01].",
        "Carry-over requests go to evil.example/hr [hb-pto-01].",
        "Ask <!channel> about carrying over days [hb-pto-01].",
    ],
)
def test_made_up_links_addresses_and_phone_numbers_fail(sentence):
    verdict = verify_en(sentence)
    assert not verdict.ok and "LINK_NOT_IN_SOURCE" in kinds(verdict)


@pytest.mark.parametrize(
    "sentence",
    [
        "The form is at https://wiki.example.com/hr/leave-form [hb-pto-01].",
        "The form is at <https://wiki.example.com/hr/leave-form|the wiki> [hb-pto-01].",
        "Fill in the [leave form](https://wiki.example.com/hr/leave-form) [hb-pto-01].",
        "Write to HR@example.com or call +49 30 1234567 [hb-pto-01].",
        "Call the hotline on 030 1234567 [hb-pto-01].",
        "The wiki (wiki.example.com) has the form [hb-pto-01].",
        "You can carry over up to 5 unused days until 31 March [hb-pto-01].",
        "Unused days can be carried over [hb-pto-01].",
    ],
)
def test_links_addresses_and_phone_numbers_of_the_cited_block_pass(sentence):
    verdict = verify_en(sentence)
    assert verdict.ok, verdict.violations


def test_years_beside_each_other_are_no_phone_number():
    from bot.answer.verify.links import find_links

    assert find_links("Der Mindestlohn beträgt seit 1. Januar 2026 (2025: 12,82 €) 13,90 €.") == []
    assert find_links("Die Werte für 2025 2026 stehen im Block.") == []
    assert [link.kind for link in find_links("Anrufen (Tel. 030 9876543) genügt.")] == ["phone"]


def test_a_link_from_a_block_the_sentence_does_not_cite_fails():
    evidence = build_evidence([PTO, MIN1])
    verdict = verify_citations("The form is at https://wiki.example.com/hr/leave-form [lb-min-01].", evidence, "en")
    assert kinds(verdict) == ["LINK_NOT_IN_SOURCE"]


SICK = chunk(
    "hb-sick-01",
    "Tell your manager before 10:00 on the first day you are sick. A doctor's note is not needed for the "
    "first three days. Sick days do not count as vacation days.",
    title="Sick leave", section="Reporting",
)


@pytest.mark.parametrize(
    "sentence",
    [
        "You don't need a doctor's note for the first three days [hb-sick-01].",
        "No doctor's note is needed for the first three days [hb-sick-01].",
        "Sick days are not counted as vacation days [hb-sick-01].",
        "Tell your manager no later than 10:00 on the first sick day [hb-sick-01].",
    ],
)
def test_a_negation_the_cited_sentence_carries_passes(sentence):
    verdict = verify_citations(sentence, build_evidence([SICK]), "en")
    assert verdict.ok, verdict.violations


def test_a_bound_is_not_a_negation():
    assert verify_en("You cannot carry over more than 5 unused vacation days [hb-pto-01].").ok
    assert verify_en("Unused days must be used no later than 31 March [hb-pto-01].").ok
    assert "NEGATION_NOT_IN_SOURCE" not in kinds(verify("Es gibt nicht mehr als 30 Urlaubstage im Kalenderjahr [lb-url-02]."))


def test_a_negation_in_a_sentence_without_content_words_is_not_checked():
    assert verify_en("No. You can carry over up to 5 unused days [hb-pto-01].").ok


def test_a_link_in_a_paragraph_without_any_citation_is_uncited():
    verdict = verify_en("Reset your password at https://evil.example/reset.\n\nUnused days can be carried over [hb-pto-01].")
    assert kinds(verdict) == ["UNCITED_SENTENCE"]


def test_the_refusal_sentence_next_to_an_answer_is_no_made_up_negation():
    verdict = verify_en(f"You can carry over up to 5 unused vacation days [hb-pto-01]. {REFUSAL_EN}")
    assert verdict.ok and not verdict.refusal


def test_an_uncited_heading_of_the_answers_layout_is_not_a_statement_to_judge():
    from bot.answer.verify.citations import cited_sentences

    draft = (
        "Zum Beginn:\n"
        "**Altersteilzeit bei Zwillingen**\n"
        "- Sie ist ab dem 55. Lebensjahr möglich [lb-atz-01].\n"
        "**Urlaub [lb-url-02]**\n"
        "- Der Urlaubsanspruch beträgt 30 Tage [lb-url-02].\n"
        "**Zusammen 30 Tage**\n"
        "- Im Kalenderjahr 2024 [lb-url-02].\n"
        "**Ja, Sie bekommen den Aufstockungsbetrag auch als Werkstudent und Praktikant**\n"
        "- Der Aufstockungsbetrag beträgt 1.538,50 € im Monat [lb-atz-01]."
    )
    asked = [s.text for s in cited_sentences(draft, EVIDENCE, "de")]
    assert "**Altersteilzeit bei Zwillingen**" not in asked  # names a topic, cited by nobody
    assert "Zum Beginn:" not in asked  # introduces the line after it
    assert any(t.startswith("**Urlaub") for t in asked)  # its writer cited it
    assert "**Zusammen 30 Tage**" in asked  # a number is a statement
    assert any(t.startswith("**Ja, Sie bekommen") for t in asked)  # too long for a heading
    assert "Sie ist ab dem 55. Lebensjahr möglich." in asked
