"""Analyzers: Snowball stems, stop words, accent folding, German subwords."""

from __future__ import annotations

import pickle

import pytest

from kb_index.analysis import analyzer, fold_accents, guess_language, query_terms, subword_terms, terms


def test_english_snowball_not_porter_quirks():
    assert terms("running policies carried", "en") == ["run", "polici", "carri"]


def test_english_stop_and_question_words_are_dropped():
    assert terms("How many vacation days do I get?", "en") == ["vacat", "day"]


def test_german_stems_inflections_together():
    assert terms("Überstunden", "de") == terms("Überstunde", "de")
    assert terms("des Lohns", "de") == terms("Lohn", "de") == ["lohn"]


def test_german_question_words_are_dropped():
    assert terms("Ab wann kann ich in Altersteilzeit?", "de") == ["altersteilzeit"]


@pytest.mark.parametrize(("a", "b"), [("Überstunden", "Uberstunden"), ("Straße", "Strasse")])
def test_german_accents_fold_after_stemming(a, b):
    assert terms(a, "de") == terms(b, "de")


def test_english_accents_fold():
    assert terms("café", "en") == terms("cafe", "en") == ["cafe"]


def test_fold_accents():
    assert fold_accents("Überstunden café Straße") == "Uberstunden cafe Strasse"


def test_numbers_keep_their_separators():
    assert terms("1.538,50 EUR am 31.03.2026", "de") == ["1.538,50", "eur", "31.03.2026"]


def test_compound_shares_all_grams_of_its_part():
    part = set(subword_terms("Teilzeit", "de"))
    assert part <= set(subword_terms("Altersteilzeit", "de"))
    assert len(part) == 5


def test_lohnfortzahlung_contains_the_grams_of_fortzahlung_des_lohns():
    compound = set(subword_terms("Lohnfortzahlung", "de"))
    parts = set(subword_terms("Fortzahlung des Lohns", "de"))
    assert parts <= compound


def test_query_terms_drop_both_languages_stop_words():
    assert query_terms("Wie hoch ist der Wechselkurs von Bermuda-Dollar?", "en") == ["wechselkur", "bermuda", "dollar"]


def test_analyzer_pickles_for_the_whoosh_schema():
    restored = pickle.loads(pickle.dumps(analyzer("de")))
    assert [t.text for t in restored("Häuser")] == ["haus"]


def test_unknown_language_is_rejected():
    with pytest.raises(ValueError, match="unsupported language 'fr'"):
        analyzer("fr")


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Ab wann kann ich in Altersteilzeit gehen?", "de"),
        ("Wie viele Urlaubstage habe ich?", "de"),
        ("Überstunden", "de"),
        ("How many vacation days can I carry over?", "en"),
        ("What is a Minijob?", "en"),
    ],
)
def test_guess_language_by_function_words(text, language):
    assert guess_language(text) == language


def test_guess_language_falls_back_to_the_default():
    assert guess_language("VPN", default="de") == "de"
    assert guess_language("VPN") == "en"
