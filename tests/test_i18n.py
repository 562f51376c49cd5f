"""The one table of the bot's sentences: every key in every language, the fallback, the documented ones."""

from __future__ import annotations

import string

from bot.answer.prompt import system_rules
from bot.answer.verify.text import is_refusal
from bot.i18n import LANGUAGES, Key, all_translations, message
from bot.models import AnswerMode

REFUSAL_DE = message("refusal", "de")


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_every_key_exists_in_every_language_with_the_same_placeholders():
    assert set(LANGUAGES) == {"en", "de"}
    for key in Key:
        texts = all_translations(key)  # a language without the key raises here
        assert len(texts) == len(LANGUAGES) and all(t.strip() for t in texts), key
        assert len({frozenset(placeholders(t)) for t in texts}) == 1, key


def test_refusal_sentences_are_the_documented_ones():
    assert message("refusal", "en") == "The knowledge base does not cover this question."
    assert message("refusal", "de") == "Dazu enthält die Wissensbasis keine Aussage."


def test_every_message_exists_in_both_languages_and_differs():
    for key in ("refusal", "uncertain", "partial", "truncated", "help", "llm_down"):
        en, de = message(key, "en", limit=10), message(key, "de", limit=10)
        assert en and de and en != de, key
        assert "{" not in en and "{" not in de, key


def test_uncertain_message_says_a_reviewer_may_follow_up():
    assert "reviewer may follow up" in message("uncertain", "en")


def test_message_language_falls_back_to_english_and_accepts_regions():
    assert message("refusal", "de-AT") == REFUSAL_DE
    assert message("refusal", "fr") == message("refusal", "en")
    assert message("refusal", None) == message("refusal", "en")


def test_the_refusal_the_prompt_asks_for_is_the_one_the_verifier_recognises():
    for language in LANGUAGES:
        refusal = message(Key.REFUSAL, language)
        assert refusal in system_rules(AnswerMode.CITATIONS, language)
        assert is_refusal(refusal)
