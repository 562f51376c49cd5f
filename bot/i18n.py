"""The bot's own sentences, in every language it speaks.

Everything the bot says in its own voice (not quoting the knowledge base) lives
here, so a translation is one edit and the refusal sentence the prompt asks the
model for is the same string the verifier looks for.
"""

from __future__ import annotations

from enum import StrEnum

DEFAULT_LANGUAGE = "en"


class Key(StrEnum):
    REFUSAL = "refusal"  # the KB has nothing on the question
    UNCERTAIN = "uncertain"  # a draft existed but could not be backed by the KB
    PARTIAL = "partial"  # only some statements of the answer could be verified
    TRUNCATED = "truncated"  # the question was cut to the maximum length
    HELP = "help"  # an empty mention
    LLM_DOWN = "llm_down"  # the model failed past all retries, or took the question's whole time budget
    FAILED = "failed"  # anything else failed past all retries (never Slack: it cannot carry the news)
    REVIEWED_BY = "reviewed_by"  # a reviewer's answer posted into the asker's thread
    SOURCES = "sources"  # heading of the sources list
    REVIEW_DISMISSED = "review_dismissed"  # a reviewer closed a rejected draft without an answer
    SOURCE_CHANGED = "source_changed"  # a cited entry changed after the answer was posted
    SOURCE_REMOVED = "source_removed"  # a cited entry left the knowledge base after the answer was posted


_MESSAGES: dict[str, dict[Key, str]] = {
    "en": {
        Key.REFUSAL: "The knowledge base does not cover this question.",
        Key.UNCERTAIN: (
            "I'm not sure about this one: I could not back an answer with the knowledge base. "
            "A reviewer may follow up in this thread."
        ),
        Key.PARTIAL: (
            "Partial answer: only the statements above could be verified against the knowledge base."
        ),
        Key.TRUNCATED: (
            "Your question was longer than {limit} characters, so I answered its first {limit} characters."
        ),
        Key.HELP: (
            "Ask me a question and I will answer it from the company knowledge base, "
            "with a source for every statement. For example: @citebot How many vacation days do I get?"
        ),
        Key.LLM_DOWN: (
            "Sorry, I can't answer right now: the language model is not responding. "
            "Your question has been recorded; please try again later."
        ),
        Key.FAILED: (
            "Sorry, something went wrong while answering your question. "
            "It has been recorded; please try again later."
        ),
        Key.REVIEWED_BY: "Reviewed by {reviewer}.",
        Key.SOURCES: "Sources",
        Key.REVIEW_DISMISSED: (
            "A reviewer looked at your question: the knowledge base has no answer to it yet."
        ),
        Key.SOURCE_CHANGED: "⚠️ Source [{n}] has changed since this answer — ask again.",
        Key.SOURCE_REMOVED: "⚠️ Source [{n}] has been removed from the knowledge base since this answer — ask again.",
    },
    "de": {
        Key.REFUSAL: "Dazu enthält die Wissensbasis keine Aussage.",
        Key.UNCERTAIN: (
            "Da bin ich mir nicht sicher: Ich konnte keine Antwort mit der Wissensbasis belegen. "
            "Eine Prüferin oder ein Prüfer meldet sich eventuell in diesem Thread."
        ),
        Key.PARTIAL: (
            "Teilantwort: Nur die Aussagen oben ließen sich anhand der Wissensbasis belegen."
        ),
        Key.TRUNCATED: (
            "Deine Frage war länger als {limit} Zeichen; ich habe die ersten {limit} Zeichen beantwortet."
        ),
        Key.HELP: (
            "Stell mir eine Frage, und ich beantworte sie aus der Wissensbasis des Unternehmens, "
            "mit einer Quelle für jede Aussage. Zum Beispiel: @citebot Wie viele Urlaubstage habe ich?"
        ),
        Key.LLM_DOWN: (
            "Entschuldigung, ich kann gerade nicht antworten: Das Sprachmodell reagiert nicht. "
            "Deine Frage wurde festgehalten; bitte versuch es später noch einmal."
        ),
        Key.FAILED: (
            "Entschuldigung, beim Beantworten deiner Frage ist etwas schiefgegangen. "
            "Sie wurde festgehalten; bitte versuch es später noch einmal."
        ),
        Key.REVIEWED_BY: "Geprüft von {reviewer}.",
        Key.SOURCES: "Quellen",
        Key.REVIEW_DISMISSED: (
            "Deine Frage wurde geprüft: Die Wissensbasis enthält dazu noch keine Antwort."
        ),
        Key.SOURCE_CHANGED: "⚠️ Quelle [{n}] hat sich seit dieser Antwort geändert – bitte frag noch einmal.",
        Key.SOURCE_REMOVED: "⚠️ Quelle [{n}] wurde seit dieser Antwort aus der Wissensbasis entfernt – bitte frag noch einmal.",
    },
}

LANGUAGES = tuple(_MESSAGES)


def normalize_language(language: str | None) -> str:
    """'de-AT' -> 'de'; anything the bot does not speak -> English, never an error,
    because a channel setting with an odd language must not stop an answer."""
    code = (language or "").strip().lower().replace("_", "-").split("-")[0]
    return code if code in _MESSAGES else DEFAULT_LANGUAGE


def message(key: str, language: str | None = DEFAULT_LANGUAGE, **fields: object) -> str:
    """The sentence `key` in `language`; `fields` fill placeholders such as {limit}."""
    text = _MESSAGES[normalize_language(language)][Key(key)]
    return text.format(**fields) if fields else text


def all_translations(key: str) -> list[str]:
    """The sentence in every language: a model may reply in another language than asked."""
    return [table[Key(key)] for table in _MESSAGES.values()]
