"""Does a message in a help channel ask something? Decided from its words alone, no model call.

In a channel with `answer: questions` (bot.channels) every top-level message is
read here first, in the web process before the ack, so this must be cheap and
predictable: a channel's members should be able to tell why the bot answered
one message and left another alone. Pure functions, stdlib and the question
words kb_index.question already knows.

A message that mentions a person, a user group or the whole channel
(`<@U…>`, `<!subteam^…>`, `<!here>`) is addressed to them, not to the bot: it is
left alone (a mention of the bot itself arrives as `app_mention` and is answered
as one). Otherwise a message asks when, after its markup, greetings, thanks and sign-offs are
gone (kb_index.question.chatter), it has between MIN_CONTENT_WORDS content
words and MAX_CHARS characters, is not social chatter ("lunch anyone?"), and
one of its sentences
- ends with a question mark;
- starts with a question word followed by what a question goes on with
  ("how do I …", "wie lange dauert …"; not "when I joined, …", "wie besprochen");
- starts with an auxiliary and a subject ("can someone …", "is the VPN …",
  "gibt es …"), which in English and German only a question does (not "have a
  nice weekend", "do not forget");
- opens with an ask for information ("does anyone know …", "weiß jemand …",
  "looking for …").
Anything else (a statement, an announcement, thanks, "+1") is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb_index.question.chatter import strip_phrases
from kb_index.question.markup import strip_markup
from kb_index.question.words import alternation, chat_sentences, content_words

# Fewer content words than this is too little to search for ("any update?", "why?").
MIN_CONTENT_WORDS = 2
# A longer post is an announcement, an incident write-up or a pasted log, not a question to look up.
MAX_CHARS = 1500

QUESTION_MARK = "question mark"
QUESTION_WORD = "question word"
ASKS_FOR = "asks for information"
NO_QUESTION = "no question"
TOO_SHORT = "too short"
TOO_LONG = "too long"
SOCIAL = "social chatter"
ADDRESSED = "addressed to people"

# Wh-words that open a question in either language. "was" is German's "what" and
# English's past tense: it counts only before a German verb (below).
_WH_EN = ("what", "what's", "whats", "which", "who", "whom", "whose", "when", "where", "why", "how", "how's")
_WH_DE = ("wie", "wieviel", "wieviele", "wann", "wo", "woher", "wohin", "wofür", "wozu", "womit", "wer", "wen",
          "wem", "wessen", "welche", "welcher", "welches", "welchen", "welchem", "warum", "wieso", "weshalb",
          "weswegen")
_WH_ALWAYS = ("whats", "which", "whose", "whom")
# What an English question goes on with after its wh-word: an auxiliary within two words
# ("how long does it take", "what is the", "where can I", "how to").
_AUX_EN = ("is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "will", "would", "should",
           "shall", "may", "might", "must", "have", "has", "had", "to", "'s", "’s")
# German wh-words that open a clause which is no question: "wie besprochen, …", "wie immer".
_NOT_AFTER_WH_DE = ("gesagt", "besprochen", "erwähnt", "angekündigt", "versprochen", "vereinbart", "immer",
                    "schon", "gewohnt", "üblich", "auch")
_VERB_AFTER_WAS = ("ist", "sind", "war", "kann", "muss", "soll", "sollte", "darf", "mache", "machen", "macht",
                   "tue", "tun", "bedeutet", "heißt", "kostet", "gilt", "zählt", "passiert", "brauche", "braucht",
                   "gibt", "habe", "hat", "haben", "wird", "würde", "müsste", "könnte")
# Verb-first: an auxiliary, then a subject. English and German statements put the subject first.
_AUX_FIRST = ("can", "could", "do", "does", "did", "is", "are", "would", "should", "shall", "may", "must",
              "kann", "kannst", "können", "könnte", "könnten", "muss", "musst", "müssen", "darf", "dürfen", "soll",
              "sollte", "sollen", "gibt", "gilt", "ist", "sind", "hat", "haben", "hast", "habt", "brauche",
              "braucht", "brauchen", "weiß", "wisst", "kennt", "bekomme", "bekommt", "bekommen", "wird", "werden")
_SUBJECTS = ("i", "you", "we", "they", "he", "she", "it", "someone", "somebody", "anyone", "anybody", "everyone",
             "the", "my", "our", "your", "this", "that", "there", "these", "those", "a", "an", "ich", "du", "man",
             "jemand", "wir", "ihr", "es", "der", "die", "das", "den", "dem", "mein", "meine", "unser", "unsere",
             "eine", "ein", "einen", "mir", "mich", "uns", "sie", "er", "dies", "diese", "dieser")
# "have a nice weekend", "is a go": with "a" the auxiliary opens an English statement or wish.
_NOT_AFTER_AUX = {("have", "a"), ("is", "a")}
# Openings that ask for information without a question word.
_ASKS_FOR = (
    "does anyone know", "does anybody know", "anyone know", "anybody know", "anyone knows", "does anyone have",
    "anyone have", "has anyone", "can anyone", "can someone", "could someone", "could anyone", "i wonder",
    "i was wondering", "wondering if", "wondering whether", "any idea", "any ideas", "tell me", "looking for",
    "i'm looking for", "i am looking for", "need help with", "i need help", "help with",
    "weiß jemand", "weiss jemand", "wisst ihr", "kennt jemand", "hat jemand", "kann mir jemand", "kann jemand",
    "ich frage mich", "ich suche", "sag mir", "sagt mir", "brauche hilfe", "ich brauche hilfe", "hilfe bei",
)
# Short messages about these are the channel's social life, not questions for the knowledge base.
_SOCIAL = frozenset(
    """
    lunch coffee kaffee mittag mittagessen mensa kantine weekend wochenende cake kuchen beer bier party
    feierabend birthday geburtstag congrats congratulations glückwunsch gratuliere drinks pizza
    """.split()
)
SOCIAL_MAX_CONTENT_WORDS = 4

_WORD = re.compile(r"[\w'’]+")
_ASKS_FOR_START = re.compile(r"^\W*" + alternation(_ASKS_FOR) + r"(?!\w)", re.IGNORECASE)
_QUESTION_MARK = re.compile(r"[?？¿]")
# Slack's markup for a mention of a person, a user group, or everyone in the channel.
_ADDRESSED = re.compile(r"<(?:@[UW][A-Z0-9]+|!subteam\^[A-Z0-9]+|!here|!channel|!everyone)(?:\|[^>]*)?>")


@dataclass(frozen=True)
class Asks:
    """Whether a message asks something, and the rule that decided it (for logs and the bench)."""

    question: bool
    reason: str

    def __bool__(self) -> bool:
        return self.question


def asks(text: str) -> Asks:
    """Does `text` (a Slack message's text) ask something the knowledge base could answer?"""
    if len(text) > MAX_CHARS:
        return Asks(False, TOO_LONG)
    if _ADDRESSED.search(text):
        return Asks(False, ADDRESSED)
    plain = strip_phrases(strip_markup(text))
    words = content_words(plain)
    if len(words) < MIN_CONTENT_WORDS:
        return Asks(False, TOO_SHORT)
    if len(words) <= SOCIAL_MAX_CONTENT_WORDS and _SOCIAL.intersection(w.lower() for w in words):
        return Asks(False, SOCIAL)
    for sentence in chat_sentences(plain):
        if reason := _sentence_asks(sentence):
            return Asks(True, reason)
    return Asks(False, NO_QUESTION)


def _sentence_asks(sentence: str) -> str | None:
    if _QUESTION_MARK.search(sentence):
        return QUESTION_MARK
    tokens = [t.lower().replace("’", "'") for t in _WORD.findall(sentence)]
    if not tokens:
        return None
    if _asks_for(sentence):
        return ASKS_FOR
    first, rest = tokens[0], tokens[1:]
    if _wh_question(first, rest) or _aux_question(first, rest):
        return QUESTION_WORD
    return None


def _asks_for(sentence: str) -> bool:
    return _ASKS_FOR_START.search(sentence) is not None


def _wh_question(first: str, rest: list[str]) -> bool:
    if first in _WH_EN:
        # "how's", "what's": the auxiliary is in the word itself; "which"/"whose" open no statement.
        return (first.endswith("'s") or first in _WH_ALWAYS or any(w in _AUX_EN for w in rest[:2])) and bool(rest)
    if first in _WH_DE:
        return bool(rest) and rest[0] not in _NOT_AFTER_WH_DE
    if first == "was":
        return bool(rest) and rest[0] in _VERB_AFTER_WAS
    return False


def _aux_question(first: str, rest: list[str]) -> bool:
    if first not in _AUX_FIRST or not rest:
        return False
    return rest[0] in _SUBJECTS and (first, rest[0]) not in _NOT_AFTER_AUX


__all__ = ["Asks", "asks"]
