"""Greetings, thanks, fillers and sign-offs out of a message, in English and German.

Chatter must neither lower an answerability score nor steer ranking. Phrases
go only at the start of the message, at its end, or when they form a sentence
of their own; words inside a question stay ("Thanks to the new policy, ..."
and "How do I say thanks" are left alone). Stdlib only, no I/O.
"""

from __future__ import annotations

import re

from kb_index.question.markup import strip_markup
from kb_index.question.words import (
    AUXILIARIES,
    REQUESTS,
    WH_WORDS,
    WORD_END,
    alternation,
    chat_sentences,
    collapse,
    has_letters,
    phrase,
)

_CONTINUATIONS = (
    "i", "i'm", "i've", "i'd", "we", "my", "our", "ich", "wir", "mein", "meine",
    "man", "du", "ihr", "and", "und", "but", "aber", "so", "also", "or", "oder",
    "quick", "short", "just", "a", "one", "sorry", "hope", "thanks", "thank",
    "danke", "vielen", "kurze", "eine", "ne", "question", "frage", "any", "hab",
    "entschuldigung", "anyone", "does", "jemand", "hi", "hey", "hello", "hallo",
    "good", "guten", "moin", "servus", "dear", "liebe", "lieber", "liebes",
    "greetings", "grüße",
)

# Where a leading phrase may end in the middle of a line: before punctuation,
# at the end, or before a word that starts something new.
_BOUNDARY = (
    r"(?=\s*[,.!?:;—–]|\s+-|\s*$|\s+"
    + alternation(WH_WORDS, AUXILIARIES, REQUESTS, _CONTINUATIONS)
    + WORD_END
    + ")"
)


# A short capitalised name (one or two words) after a sign-off or a dash:
# "Cheers, Bob", "LG Jörg Müller", "— Anne-Marie".
_NAME = r"(?-i:[A-ZÄÖÜ](?:[\w.-]|['’])*(?:\s+[A-ZÄÖÜ](?:[\w.-]|['’])*)?)"

# Who a greeting is addressed to.
_GROUP = phrase(
    "(?:team|all|everyone|everybody|folks|there|guys|people|y'?all|you all|"
    "friends|colleagues|again|zusammen|alle|allerseits|leute|ihr lieben|"
    "miteinander|in die runde|liebes team|hr|[\\w-]+ team|[\\w]+-team)"
)
# "(quick question) from the Berlin office", "(kurze Frage) aus dem Büro
# Hamburg": up to four words, and only when something recognisable follows,
# so "quick question from Berlin how many..." keeps "how many".
_FROM = phrase(
    "(?: (?:from|aus) (?:the |our |dem |der |unserem |unserer )?[\\w-]+(?: [\\w-]+){0,3}?"
    + _BOUNDARY
    + ")"
)
# "(liebe Grüße) aus Hamburg": place after a sign-off, up to two words.
_AUS = phrase("(?: (?:aus|from) (?:dem |der |den |the )?[\\w-]+(?: [\\w-]+)?)")
_TO_WHOM = phrase("(?: (?:for|an) (?:you|you all|y'all|everyone|the team|hr|euch|dich|sie|alle|das team))")

# Greetings; said at the start of a message or as a sentence of their own.
_GREETINGS = (
    phrase(
        "(?:hi|hello|hey|hiya|heya|howdy|hallo|hallöchen|hej|moin moin|moinsen|moin|"
        f"servus|grüezi|grüß gott|grüss gott|tach)(?: {_GROUP})*"
    ),
    phrase(f"good (?:morning|afternoon|evening|day)(?: {_GROUP})?"),
    phrase(f"morning(?: {_GROUP})?"),
    phrase(f"guten (?:morgen|tag|abend)(?: {_GROUP})?"),
    phrase(
        "(?:hallo |hi )?(?:liebe|lieber|liebes|dear) (?:kolleg(?:[\\w*:/_]|innen)*(?: und kolleg\\w*)?|"
        "colleagues|team|all|alle|leute|hr team|hr-team|hr|people|community)"
    ),
    phrase(f"(?:greetings|(?:liebe |viele )?(?:grüße|grüsse)){_FROM}?"),
    phrase(f"(?:hi|hello|hey|hallo|moin|servus|dear|liebe|lieber|guten morgen|good morning) {_NAME}"),
)
# Fillers around the question; at the start or as a sentence of their own.
_FILLERS = (
    phrase(
        "(?:just )?(?:a |one |another |ne |'ne |eine )?(?:quick|short|small|little|dumb|"
        "stupid|silly|simple|general|kurze|kleine|schnelle|dumme|blöde|allgemeine) "
        f"(?:question|q|one|frage)(?:s|n)?{_TO_WHOM}?{_FROM}?"
    ),
    phrase(
        "(?:i have|i've got|i've|i got|got|ich habe|ich hab|ich hätte|hab|habe|hätte) "
        "(?:mal )?(?:a |one |another |eine |ne |'ne )?(?:quick |short |small |kurze |kleine )?"
        f"(?:question|frage){_TO_WHOM}?{_FROM}?"
    ),
    phrase("(?:question|frage)"),
    phrase(
        "(?:sorry|apologies|entschuldigung|entschuldigt|verzeihung)(?: (?:to bother|for bothering|"
        "to disturb|to ask|for the (?:dumb |stupid |silly |basic |noob |naive )?question|"
        "if this is (?:a|another) (?:dumb|stupid|silly|basic|naive) question|"
        "if this (?:was|has been) asked before|if this is the wrong (?:channel|place)|"
        "für die störung|die störung|wenn ich störe|falls das eine dumme frage ist|"
        "für die (?:dumme |blöde )?frage)(?: you| you all| everyone| again| y'all)?)?"
    ),
    phrase(
        "(?:i )?hope (?:you're|you are|you all are|y'all are|everyone's|everyone is|all is|"
        "you're all|this finds you) (?:all )?(?:well|doing well|good|fine|ok|okay|great|"
        "having a (?:good|great|nice) (?:day|week|weekend))"
    ),
    phrase(
        "(?:ich )?hoffe,? (?:es geht euch gut|euch geht's gut|ihr hattet ein schönes wochenende|"
        "ich bin hier richtig|das ist der richtige kanal|ich bin im richtigen kanal)"
    ),
    phrase("(?:i )?hope (?:this is|i'm in|i am in) the right (?:channel|place)(?: to ask)?"),
    phrase("(?:not sure|i'm not sure|unsure) (?:if|whether) this is the right (?:channel|place)(?: to ask)?"),
    phrase("(?:ich bin mir |bin mir )?nicht sicher,? ob ich hier richtig bin"),
)
# "Any help appreciated"; anywhere a sign-off may stand.
_HELP = phrase(
    "(?:(?:any|all|your) help (?:is |would be )?(?:much |greatly |very much |really )?appreciated|"
    "(?:i'd |i would |i )?(?:really )?appreciate (?:any|your) help|"
    "(?:ich bin )?(?:für jede|über jede) hilfe dankbar|jede hilfe ist willkommen)"
)
# Thanks: an unambiguous sign-off, so also taken at the end of a question
# without punctuation ("... do I get thanks in advance").
_THANKS = phrase(
    "(?:many thanks|thanks|thank you|thankyou|thx|thnx|thanx|tnx|tia|much appreciated|"
    "appreciate it|merci|vielen lieben dank|vielen dank|besten dank|tausend dank|"
    "herzlichen dank|danke schön|dankeschön|danke sehr|danke)"
    "(?: (?:so much|very much|a lot|a ton|a bunch|in advance|again|all|everyone|everybody|"
    "team|guys|folks|y'all|for (?:your|the|any|all the) (?:quick |fast |detailed |great )?"
    "(?:help|answer|answers|reply|response|info|information|time|support|explanation)|"
    "schön|sehr|vorab|im voraus|schon mal|schonmal|schon einmal|euch|dir|ihnen|"
    "für (?:eure|deine|ihre|die|jede|alle) (?:schnelle |tolle |ausführliche )?"
    "(?:hilfe|antwort|antworten|rückmeldung|unterstützung|mühe|info|infos)))*"
)
_GRUESSE = "(?:grüße|grüsse|gruesse|grüssle|gruß|gruss)"
# Multi-word sign-offs: unambiguous.
_REGARDS = phrase(
    "(?:best regards|kind regards|warm regards|warmest regards|many regards|"
    "with best regards|all the best|cheers|have a (?:nice|great|good|lovely) "
    "(?:day|weekend|one|evening)|(?:liebe|lieben|viele|vielen|beste|besten|schöne|"
    f"schönen|herzliche|herzlichen|freundliche|sonnige|sonnigen) {_GRUESSE}|"
    "mit freundlichen (?:grüßen|grüssen|gruessen))"
)
# One-word sign-offs that are also ordinary words or abbreviations ("Which
# hotel is best"): removed only after sentence punctuation, as a sentence, or
# with a place ("LG aus Hamburg").
_WEAK_SIGN_OFFS = phrase(f"(?:best|regards|br|kr|ty|lg|vg|mfg|sg|bg|{_GRUESSE})")

# Words that, among the two before it, make "thanks" content, not a sign-off
# ("how do I say thanks", "Wie sage ich danke").
_NOT_BEFORE_SIGN_OFF = frozenset(
    "a an the to say says said my your our for of send sending write writing big "
    "ein eine einen die der das zu sagen sage sagt mein meine unser unsere".split()
)

_OPENER = re.compile(
    "(?:" + "|".join((*_GREETINGS, *_FILLERS, _HELP, _THANKS)) + ")" + _BOUNDARY, re.I
)
# A sentence of its own made of these is dropped; tried in this order.
_SENTENCE_PHRASES = (
    (re.compile(f"(?:{_THANKS}|{_HELP}){WORD_END}", re.I), "thanks"),
    (re.compile(f"(?:{_REGARDS}|{_WEAK_SIGN_OFFS}){_AUS}?{WORD_END}", re.I), "closer"),
    (re.compile("(?:" + "|".join((*_GREETINGS, *_FILLERS)) + ")" + WORD_END, re.I), "opener"),
)
_TRAILING_CLOSER = re.compile(
    f"(?:{_HELP}|{_THANKS}|{_REGARDS}|(?P<weak>{_WEAK_SIGN_OFFS}))(?P<place>{_AUS})?"
    rf"(?:[\s,.!;:—–-]+{_NAME})?[\s.!,;:)]*$",
    re.I,
)
_BARE_NAME = re.compile(rf"{_NAME}[.!]*$")
_ONE_WORD = re.compile(r"[^\W\d_][\w'’-]{0,20}[.!]*$")
_DASH_NAME = re.compile(rf"[—–-]+\s*{_NAME}[.!]*$")
# "- Sick Leave" after "- Vacation days?" is a list item, not a signature.
_LIST_ITEM = re.compile(r"\s*[-–—•*]")
_CONNECTIVE_AFTER_CHATTER = re.compile(r"^(?:(?:and|und|but|aber|so)(?![\w'’-])|[&+])[\s,.!:;—–-]*", re.I)
_PUNCTUATION_RUN = " \t\n,.;:!?—–-"

def _is_chatter_sentence(sentence: str, previous: str, after_chatter: bool, last: bool) -> bool:
    """True when the sentence is greetings, thanks, fillers and sign-offs only."""
    if last and _DASH_NAME.match(sentence) and not _LIST_ITEM.match(previous):  # "— Bob"
        return True
    if last and after_chatter and _BARE_NAME.match(sentence):  # "Thanks!\nBob"
        return True
    rest, kind = sentence, ""
    while True:
        rest = rest.lstrip(_PUNCTUATION_RUN)
        if kind:
            rest = _CONNECTIVE_AFTER_CHATTER.sub("", rest, count=1)
        for pattern, name in _SENTENCE_PHRASES:
            m = pattern.match(rest)
            if m and m.group():
                kind, rest = name, rest[m.end() :]
                break
        else:
            break
    if not has_letters(rest):
        return bool(kind)
    if "?" in rest or kind not in ("thanks", "closer"):
        return False
    # "Cheers, Bob", "LG Jörg Müller"; after thanks also "thanks bob".
    return bool(_BARE_NAME.match(rest) or (kind == "thanks" and _ONE_WORD.match(rest)))


def _strip_leading(text: str) -> str:
    while (m := _OPENER.match(text)) and m.group():
        text = text[m.end() :].lstrip(_PUNCTUATION_RUN)
        text = _CONNECTIVE_AFTER_CHATTER.sub("", text, count=1)
    return text


def _trailing_closer_at(text: str) -> int | None:
    """Start of a sign-off that ends `text`, or None."""
    for start in (m.start() for m in re.finditer(r"(?<![\w'’])\w", text[-120:])):
        start += max(0, len(text) - 120)
        m = _TRAILING_CLOSER.match(text, start)
        if not m:
            continue
        before = text[:start].rstrip()
        if not before or before[-1] in ",.!?;:—–-)":
            return start
        previous = {w.lower() for w in before.split()[-2:]}
        weak = m.group("weak") and not m.group("place")  # "LG aus Hamburg" is no content
        if not weak and not previous & _NOT_BEFORE_SIGN_OFF:
            return start
    return None


def _strip_trailing(text: str) -> str:
    while (start := _trailing_closer_at(text)) is not None and start > 0:
        text = text[:start].rstrip(" \t,;:—–-")
    return text


def strip_phrases(plain: str) -> str:
    """Chatter phrases out of markup-free text; may return ""."""
    sentences = chat_sentences(plain)
    kept: list[str] = []
    after_chatter = False
    for i, sentence in enumerate(sentences):
        previous = sentences[i - 1] if i else ""
        if _is_chatter_sentence(sentence, previous, after_chatter, last=i == len(sentences) - 1):
            after_chatter = True
            continue
        after_chatter = False
        kept.append(sentence)
    text = collapse(" ".join(kept))
    text = _strip_leading(text)
    text = _strip_trailing(text)
    text = text.lstrip(_PUNCTUATION_RUN)
    return collapse(re.sub(r"[\s,;:]+$", "", text))


def strip_chatter(text: str) -> str:
    """`text` without Slack markup, emoji, greetings, thanks, fillers, sign-offs."""
    plain = strip_markup(text)
    kept = strip_phrases(plain)
    if has_letters(kept):
        return kept
    return collapse(plain)
