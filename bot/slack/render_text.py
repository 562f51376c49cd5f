"""Sentences the Slack surfaces need beyond bot.i18n: button labels, modal titles, card headings.

bot.i18n holds what the bot says in answers (and what the verifier looks
for); these are only interface labels, so they live next to the renderer that
uses them. Same rule as there: every key in every language, English fallback.
"""

from __future__ import annotations

from bot.i18n import normalize_language

_PHRASES: dict[str, dict[str, str]] = {
    "en": {
        "helpful": "👍 Helpful",
        "not_helpful": "👎 Not helpful",
        "shortened": "…answer shortened, see Sources for the passages.",
        "shortened_no_sources": "…answer shortened.",
        "more_sources": "…and {count} more sources.",
        "close": "Close",
        "cancel": "Cancel",
        "question": "Question",
        "passage_shortened": "…passage shortened.",
        "more_passages": "{count} more sources are not shown.",
        "no_passage": "(no passage text stored)",
        "review_heading": "Answer needs review",
        "feedback_heading": "Answer marked as not helpful",
        "feedback_reason": "Reason given",
        "no_reason": "(no reason given)",
        "flagged_answer": "The answer that was posted",
        "asked_by": "Asked by {user} in {channel}",
        "asked_by_user": "Asked by {user}",
        "asked_in_dm": "Asked in a direct message",
        "flagged_by": "flagged by {user}",
        "decision_failed": (
            "Your decision was not posted in the asker's thread: Slack said {reason}. "
            "The review is open again; click again once that is fixed."
        ),
        "rejected_draft": "Rejected draft",
        "no_draft": "(no draft)",
        "violations": "Why it was rejected",
        "no_violations": "No violations recorded.",
        "more_violations": "…and {count} more.",
        "retrieved_sources": "Retrieved sources",
        "no_sources": "No sources were retrieved.",
        "approve": "Approve draft",
        "write_answer": "Write answer",
        "dismiss": "Dismiss",
        "approved_by": "✅ Approved by {user} at {time}",
        "answered_by": "✍️ Answered by {user} at {time}",
        "dismissed_by": "🚫 Dismissed by {user} at {time}",
        "posted_answer": "Posted answer",
        "review_fallback": "Answer needs review: {question}",
        "review_modal_title": "Write the answer",
        "review_modal_submit": "Post answer",
        "your_answer": "Your answer",
        "answer_hint": "Posted in the asker's thread, marked as reviewed by you.",
        "answer_placeholder": "Answer from the knowledge base…",
        "feedback_title": "Feedback",
        "feedback_submit": "Send",
        "feedback_label": "What was wrong with the answer? (optional)",
        "feedback_placeholder": "e.g. outdated, wrong source, did not answer my question",
    },
    "de": {
        "helpful": "👍 Hilfreich",
        "not_helpful": "👎 Nicht hilfreich",
        "shortened": "…Antwort gekürzt, die Fundstellen stehen unter Quellen.",
        "shortened_no_sources": "…Antwort gekürzt.",
        "more_sources": "…und {count} weitere Quellen.",
        "close": "Schließen",
        "cancel": "Abbrechen",
        "question": "Frage",
        "passage_shortened": "…Fundstelle gekürzt.",
        "more_passages": "{count} weitere Quellen werden nicht angezeigt.",
        "no_passage": "(kein Text der Fundstelle gespeichert)",
        "review_heading": "Antwort muss geprüft werden",
        "feedback_heading": "Antwort als nicht hilfreich markiert",
        "feedback_reason": "Angegebener Grund",
        "no_reason": "(kein Grund angegeben)",
        "flagged_answer": "Die gepostete Antwort",
        "asked_by": "Gefragt von {user} in {channel}",
        "asked_by_user": "Gefragt von {user}",
        "asked_in_dm": "In einer Direktnachricht gefragt",
        "flagged_by": "gemeldet von {user}",
        "decision_failed": (
            "Deine Entscheidung wurde nicht im Thread der fragenden Person gepostet: Slack meldete {reason}. "
            "Die Prüfung ist wieder offen; klick noch einmal, sobald das behoben ist."
        ),
        "rejected_draft": "Abgelehnter Entwurf",
        "no_draft": "(kein Entwurf)",
        "violations": "Warum er abgelehnt wurde",
        "no_violations": "Keine Verstöße festgehalten.",
        "more_violations": "…und {count} weitere.",
        "retrieved_sources": "Gefundene Quellen",
        "no_sources": "Es wurden keine Quellen gefunden.",
        "approve": "Entwurf freigeben",
        "write_answer": "Antwort schreiben",
        "dismiss": "Verwerfen",
        "approved_by": "✅ Freigegeben von {user} am {time}",
        "answered_by": "✍️ Beantwortet von {user} am {time}",
        "dismissed_by": "🚫 Verworfen von {user} am {time}",
        "posted_answer": "Gepostete Antwort",
        "review_fallback": "Antwort muss geprüft werden: {question}",
        "review_modal_title": "Antwort schreiben",
        "review_modal_submit": "Antwort posten",
        "your_answer": "Deine Antwort",
        "answer_hint": "Wird im Thread der fragenden Person gepostet, als von dir geprüft markiert.",
        "answer_placeholder": "Antwort aus der Wissensbasis…",
        "feedback_title": "Rückmeldung",
        "feedback_submit": "Senden",
        "feedback_label": "Was war an der Antwort falsch? (optional)",
        "feedback_placeholder": "z. B. veraltet, falsche Quelle, Frage nicht beantwortet",
    },
}


def phrase(key: str, language: str | None = "en", **fields: object) -> str:
    # A language bot.i18n speaks but this table lacks falls back to English, never an error.
    text = _PHRASES.get(normalize_language(language), _PHRASES["en"])[key]
    return text.format(**fields) if fields else text


def phrase_languages() -> tuple[str, ...]:
    return tuple(_PHRASES)


def phrase_keys(language: str) -> set[str]:
    return set(_PHRASES[language])
