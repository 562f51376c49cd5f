"""The one sentence splitter (kb_index.sentences.sentences): KB text for the
extractive backend, answers and cited blocks for the verifiers."""

from __future__ import annotations

import pytest

from kb_index.sentences import sentences


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Das gilt z. B. für Minijobs.", "de"),
        ("Das gilt z.B. für Minijobs.", "de"),
        ("Nach § 3 Abs. 1 EStG ist der Betrag steuerfrei.", "de"),
        ("Siehe Abs. 2 Satz 1.", "de"),
        ("Benefits, e.g. Lunch vouchers, are taxable.", "en"),
        ("Use a voucher, i.e. the card.", "en"),
        ("Der Sachbezug beträgt 13,90 EUR pro Tag.", "de"),
        ("The rate is 13.90 EUR per day.", "en"),
        ("Der Antrag ist bis zum 31.03.2026 zu stellen.", "de"),
        ("Die Regel gilt ab dem 1. Januar 2026 für alle.", "de"),
        ("Der Anspruch beginnt mit dem 18. Lebensjahr.", "de"),
        ("It starts on 1. January for everyone.", "en"),
        ("Ask Dr. Meier or Prof. Schulz.", "en"),
        ("Gilt auch bzw. Nr. 4 Ziff. 2 ff.", "de"),
        ("Siehe §§ 3 ff. EStG für die Details.", "de"),
        ("Bitte Hr. Meier fragen.", "de"),
        ("Es gilt i.V.m. Satz 2 EStG.", "de"),
        ("Bei 24 €/Std. sind das 30 € Zuschlag pro Stunde.", "de"),
        ("Das sind 3 Stk. pro Person und 40 € mtl. Zuschuss.", "de"),
    ],
)
def test_does_not_split_inside_a_sentence(text, language):
    assert sentences(text, language) == [text]


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("First rule. Second rule.", "en", ["First rule.", "Second rule."]),
        ("Wirklich? Ja! Gut so.", "de", ["Wirklich?", "Ja!", "Gut so."]),
        ("The limit is 2026. Then it rises.", "en", ["The limit is 2026.", "Then it rises."]),
        ("Das gilt seit 2026. Danach nicht.", "de", ["Das gilt seit 2026.", "Danach nicht."]),
        # A year is no ordinal: it ends the sentence whatever word follows.
        ("Das gilt seit 2026. Mitarbeiter zahlen mehr.", "de", ["Das gilt seit 2026.", "Mitarbeiter zahlen mehr."]),
        ("The limit is 100. Then it rises.", "en", ["The limit is 100.", "Then it rises."]),
        ('He said "stop." Then he left.', "en", ['He said "stop."', "Then he left."]),
        ("Der Betrag ist 13,90 EUR. 2026 steigt er.", "de", ["Der Betrag ist 13,90 EUR.", "2026 steigt er."]),
        ("Geteilt durch 6. Bei vier Tagen sind es 16.", "de", ["Geteilt durch 6.", "Bei vier Tagen sind es 16."]),
        ("No final stop", "en", ["No final stop"]),
        ("", "en", []),
    ],
)
def test_splits_between_sentences(text, language, expected):
    assert sentences(text, language) == expected


def test_sentences_are_substrings_of_their_text():
    text = "Nach § 3 Abs. 1 gilt z. B. das.  Am 1. Januar 2026 beginnt es. Fertig!"
    parts = sentences(text, "de")
    assert len(parts) == 3 and all(p in text for p in parts)


def test_sentences_keep_citation_after_full_stop_with_its_sentence():
    assert sentences("Satz eins. [lb-1] Satz zwei.", "de") == ["Satz eins. [lb-1]", "Satz zwei."]


def test_sentences_do_not_split_abbreviations_or_inside_quotes():
    text = 'Das gilt z. B. für HR. Er sagte: "Das gilt. Immer." Ende.'
    assert sentences(text, "en") == ["Das gilt z. B. für HR.", 'Er sagte: "Das gilt. Immer."', "Ende."]


def test_sentences_split_list_items():
    assert sentences("Voraussetzungen:\n- 55 Jahre\n- Vereinbarung", "de") == [
        "Voraussetzungen:", "- 55 Jahre", "- Vereinbarung",
    ]


def test_german_number_before_a_sentence_opener_ends_the_sentence():
    assert sentences("Die Frist beträgt 30. Sie beginnt am 1. Januar.", "de") == [
        "Die Frist beträgt 30.", "Sie beginnt am 1. Januar.",
    ]
