"""The words a question is made of, for the modules of kb_index.question.

Phrase patterns (a space is any whitespace, ' any apostrophe), the words a
question clause starts with, content-word counting, whitespace tidying, and
the sentences of a chat message. Stdlib and kb_index.sentences only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kb_index.sentences import sentences


def phrase(pattern: str) -> str:
    """Phrase pattern -> regex: a space is any run of whitespace, ' any apostrophe.

    Idempotent, so phrase patterns can be composed of phrase patterns.
    """
    pattern = re.sub(r"(?<!\[)'(?!’\])", "['’]", pattern)
    return pattern.replace(" ", r"\s+")


def alternation(*groups: Iterable[str]) -> str:
    """Alternation of words/phrases, longest first."""
    items = sorted({w for g in groups for w in g}, key=len, reverse=True)
    return phrase("(?:" + "|".join(items) + ")")


# A word ends here: not followed by more of a word (letters, apostrophe, hyphen).
WORD_END = r"(?![\w-]|['’])"

# ------------------------------------------------------- question structure --

# Words a question clause starts with. They decide where a message may be
# split, and where a greeting ends when the writer left out the comma
# ("hey team how do I ..."). Wh-words are the strong signal (the only one
# trusted after "or"), auxiliaries and modal verbs the weaker one.
WH_WORDS = (
    "what", "what's", "whats", "which", "who", "whom", "whose", "when", "where",
    "why", "how", "how's",
    "was", "wie", "wieviel", "wieviele", "wann", "wo", "woher", "wohin", "wofür",
    "wozu", "womit", "wer", "wen", "wem", "wessen", "welche", "welcher", "welches",
    "welchen", "welchem", "warum", "wieso", "weshalb", "weswegen",
)
AUXILIARIES = (
    "can", "could", "do", "does", "did", "is", "are", "am", "were", "will",
    "would", "should", "shall", "may", "might", "must", "have", "has", "had",
    "kann", "kannst", "können", "könnt", "könnte", "könnten", "muss", "musst",
    "müssen", "muß", "darf", "darfst", "dürfen", "soll", "sollte", "sollten",
    "sollen", "gibt", "gilt", "gelten", "werden", "wird", "wurde", "bekomme",
    "bekommt", "bekommen", "kriege", "kriegt", "habe", "hat", "haben", "hast",
    "ist", "sind", "brauche", "braucht", "brauchen",
)
# Openings of a request: a sentence starting so is a question too.
REQUESTS = (
    "please", "pls", "plz", "bitte", "tell me", "explain", "i need", "i'd like",
    "i would like", "i want to know", "i'm looking for", "i am looking for",
    "looking for", "anyone know", "anybody know", "i wonder", "i was wondering",
    "wondering", "any idea", "any ideas", "ich brauche", "ich suche", "ich möchte",
    "ich würde gern", "ich würde gerne", "ich will wissen", "sag mir", "sagt mir",
    "erklär", "erkläre", "weiß jemand", "wisst ihr", "ich frage mich",
)
# Words that may follow a greeting when its comma is missing: a question
# start, a pronoun, a connective, or the first word of more chatter.
WH = alternation(WH_WORDS) + WORD_END
QUESTION_START = alternation(WH_WORDS, AUXILIARIES) + WORD_END
CLAUSE_START = alternation(WH_WORDS, AUXILIARIES, REQUESTS) + WORD_END

# --------------------------------------------------------------- counting ---

# Words that carry no topic, for counting a clause's content words: articles,
# pronouns, auxiliaries, wh-words, core prepositions (en, de). Deliberately
# short: "over" in "carry them over" or "per" in "per diem" count.
_FUNCTION_WORDS = frozenset(
    """
    a an the and or but if then than so of to in on at for from with by about as into
    is are am was were be been being do does did done doing have has had having
    can could will would shall should may might must i me my mine we us our you your
    he him his she her it its they them their this that these those there here
    what what's whats which who whom whose when where why how how's also too just
    still any some all each every much many more most very really please get got gets
    not no yes i'm i've i'd i'll it's that's there's don't doesn't can't isn't aren't
    won't didn't let lets let's anyone someone one ok okay yet again tell know
    der die das den dem des ein eine einen einem einer eines und oder aber wenn dass
    daß ob als wie was wann wo wer wen wem warum wieso weshalb welche welcher welches
    welchen welchem ich du er sie es wir ihr mich mir dich dir uns euch ihn ihm mein
    meine meinen meinem meiner dein deine sein seine unser unsere ist sind war waren
    bin bist seid werden wird wurde wurden hat habe haben hast hatte kann können
    kannst könnte muss müssen musst darf dürfen soll sollen sollte will wollen möchte
    gibt gilt im in am an auf aus bei mit nach von vom vor zu zum zur für um da dann
    auch noch schon nur mal denn doch ja nein nicht kein keine man bitte sehr viel
    viele wieviel genau eigentlich lange bekomme bekommt bekommen dies diese dieses
    dafür davon dazu darauf daran dabei hier dort
    """.split()
)
TOKEN = re.compile(r"\w+(?:['’-]\w+)*")


def content_words(text: str) -> list[str]:
    tokens = (t.replace("’", "'") for t in TOKEN.findall(text.lower()))
    return [t for t in tokens if t not in _FUNCTION_WORDS]


def has_letters(text: str) -> bool:
    return re.search(r"[^\W\d_]", text) is not None



def chat_sentences(text: str) -> list[str]:
    """Sentences and lines of a message, each with its own end punctuation.

    The project's one splitter (kb_index.sentences), in its chat form: people
    start a sentence in lower case. German rules, because they are the cautious
    ones: "ab 1. September" stays one sentence, an English question loses nothing.
    """
    return sentences(text, "de", any_case=True)


def collapse(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"\s+([,.!?;:)])", r"\1", text)
    text = re.sub(r"([,;])(?:\s*[,;])+", r"\1", text)
    return " ".join(text.split())
