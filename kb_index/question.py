"""Question pre-processing: Slack chatter out, one retrieval query per topic.

People don't write in the KB's words. They greet, thank, sign off, mention
colleagues, paste links and emoji, and ask two things at once. Chatter must
neither lower an answerability score nor steer ranking, and two topics must be
retrieved separately. Pure functions, stdlib only, no I/O.

strip_chatter(text) -> str
    Removes Slack markup (user / channel / special mentions; links together
    with their labels, since "this page" or "here" is no topic; bare URLs),
    emoji (shortcodes, unicode pictographs, ascii smileys) and greeting /
    thanks / sign-off / filler phrases in English and German. Phrases go only
    at the start of the message, at its end, or when they form a sentence of
    their own; words inside a question stay ("Thanks to the new policy, ..."
    and "How do I say thanks" are left alone). E-mail addresses stay, also
    from <mailto:...> links; so does the text of <!date^...|Feb 18>.
    Whitespace is collapsed. Never "" for a message with words: if everything
    was chatter ("Thanks! :pray:"), the markup-free text ("Thanks!") is
    returned; only a message of markup and emoji alone comes back empty.

split_question(text) -> list[str]
    The questions of a message that is already chatter-stripped. Splits at
    sentence ends between questions/requests ("A? B?"), at explicit
    connectives ("and also", "und außerdem", ", also", ", plus"), and at
    "and"/"und"/"sowie"/","/"or"/"oder" only when the left side is a question
    and the right side starts its own with a question word or auxiliary
    ("..., and can I carry them over?", "... und wie werden Überstunden
    vergütet?"; after "or" only a wh-word: "... or do I need to come in?" is
    one question). A part needs MIN_CONTENT_WORDS content words, or one in a
    complete question of its own ("Was ist die Kilometerpauschale?");
    otherwise it stays joined ("Teilzeit- und Vollzeitkräfte", "from home and
    from abroad", "... and what about interns?", "... and is it paid?").
    Statements ("I work part-time.") are context: they go with the next
    question. At most MAX_PARTS parts, the rest joins the last one. Split
    parts lose leading/trailing connectives and get the "?" of their sentence.
    One question -> [text], unchanged.

retrieval_text(question, history=()) -> str
    The text to retrieve with in a thread: the chatter-stripped question,
    preceded by the chatter-stripped previous question only when the current
    one is a follow-up: at most one content word ("und bei Teilzeit?", "what
    if I'm sick?"), a follow-up opening ("what about", "and for", "was ist
    mit") with at most three, or a pronoun pointing back ("Can I carry them
    over?") with at most two. Only one earlier question is used, the most
    recent one that isn't pure chatter ("thanks!"), itself chatter-stripped
    and clipped to HISTORY_CHARS, so an old greeting or essay cannot swamp
    the follow-up. A chatter-only current message is never combined.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MAX_PARTS = 4
# Content words a split-off part needs (one suffices for a complete question).
MIN_CONTENT_WORDS = 2
# How much of the previous question a follow-up may carry along.
HISTORY_CHARS = 300


def _p(pattern: str) -> str:
    """Phrase pattern -> regex: a space is any run of whitespace, ' any apostrophe.

    Idempotent, so phrase patterns can be composed of phrase patterns.
    """
    pattern = re.sub(r"(?<!\[)'(?!’\])", "['’]", pattern)
    return pattern.replace(" ", r"\s+")


def _words(*groups: Iterable[str]) -> str:
    """Alternation of words/phrases, longest first."""
    items = sorted({w for g in groups for w in g}, key=len, reverse=True)
    return _p("(?:" + "|".join(items) + ")")


# A word ends here: not followed by more of a word (letters, apostrophe, hyphen).
_END = r"(?![\w-]|['’])"

# ----------------------------------------------------------------- markup ---

# Slack's wire format. Mentions say who is asked, never what. Links go with
# their label: "this page" or "here" is no KB topic, and neither is a URL.
# <mailto:a@b|a@b> keeps the address and <!date^..|Feb 18> its text, because
# those can be part of the question.
_MAILTO = re.compile(r"<mailto:([^|>\s]+)(?:\|[^>]*)?>", re.I)
_DATE = re.compile(r"<!date\^[^|>]*\|([^>]*)>")
_SLACK_MARKUP = re.compile(r"<(?:[@#!][^>]*|[a-z][a-z0-9+.-]*:[^>]*)>", re.I)
_BARE_URL = re.compile(r"(?:https?://|www\.)[^\s<>]*[^\s<>.,!?;:)\]'\"]", re.I)
_PLAIN_BROADCAST = re.compile(r"(?<![\w@])@(?:here|channel|everyone)\b", re.I)
# Slack escapes these three in message text; decoded after markup is gone.
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))

# :smile:, :+1:, :thumbsup::skin-tone-2:. Lowercase, with a letter (or +1), so
# times ("10:30:00") and "Note: see: ..." survive.
_SHORTCODE = re.compile(r"(?::(?:[a-z0-9_+'-]*[a-z][a-z0-9_+'-]*|[+-]1):)+")
# Unicode emoji and pictographs, with their joiners and modifiers. Letters,
# currency, °, ©, arrows and math stay.
_PICTOGRAPHS = re.compile(
    "["
    "\U0001F000-\U0001FAFF"  # emoticons, pictographs, transport, flags, skin tones
    "\u2600-\u27BF"  # misc symbols, dingbats (☀ ✅ ❤ ✨)
    "\u2B00-\u2BFF"  # ⭐ ⬆
    "\u2300-\u23FF"  # ⌚ ⏰ ⏳
    "\uFE00-\uFE0F"  # variation selectors
    "\u200D\u20E3"  # zero-width joiner, keycap
    "\U000E0020-\U000E007F"  # tag sequences (subdivision flags)
    "\u3030\u303D\u3297\u3299"
    "]+"
)
# :) ;-) :D xD ^^ <3, only as a token of their own.
_SMILEY = re.compile(r"(?<!\S)(?:[:;=]-?[)(\]\[DPpOo/\\|*3]+|\^\^|<3|[xX]D+)(?=\s|$|[.,!?])")

# ------------------------------------------------------- question structure --

# Words a question clause starts with. They decide where a message may be
# split, and where a greeting ends when the writer left out the comma
# ("hey team how do I ..."). Wh-words are the strong signal (the only one
# trusted after "or"), auxiliaries and modal verbs the weaker one.
_WH_WORDS = (
    "what", "what's", "whats", "which", "who", "whom", "whose", "when", "where",
    "why", "how", "how's",
    "was", "wie", "wieviel", "wieviele", "wann", "wo", "woher", "wohin", "wofür",
    "wozu", "womit", "wer", "wen", "wem", "wessen", "welche", "welcher", "welches",
    "welchen", "welchem", "warum", "wieso", "weshalb", "weswegen",
)
_AUXILIARIES = (
    "can", "could", "do", "does", "did", "is", "are", "am", "were", "will",
    "would", "should", "shall", "may", "might", "must", "have", "has", "had",
    "kann", "kannst", "können", "könnt", "könnte", "könnten", "muss", "musst",
    "müssen", "muß", "darf", "darfst", "dürfen", "soll", "sollte", "sollten",
    "sollen", "gibt", "gilt", "gelten", "werden", "wird", "wurde", "bekomme",
    "bekommt", "bekommen", "kriege", "kriegt", "habe", "hat", "haben", "hast",
    "ist", "sind", "brauche", "braucht", "brauchen",
)
# Openings of a request: a sentence starting so is a question too.
_REQUESTS = (
    "please", "pls", "plz", "bitte", "tell me", "explain", "i need", "i'd like",
    "i would like", "i want to know", "i'm looking for", "i am looking for",
    "looking for", "anyone know", "anybody know", "i wonder", "i was wondering",
    "wondering", "any idea", "any ideas", "ich brauche", "ich suche", "ich möchte",
    "ich würde gern", "ich würde gerne", "ich will wissen", "sag mir", "sagt mir",
    "erklär", "erkläre", "weiß jemand", "wisst ihr", "ich frage mich",
)
# Words that may follow a greeting when its comma is missing: a question
# start, a pronoun, a connective, or the first word of more chatter.
_CONTINUATIONS = (
    "i", "i'm", "i've", "i'd", "we", "my", "our", "ich", "wir", "mein", "meine",
    "man", "du", "ihr", "and", "und", "but", "aber", "so", "also", "or", "oder",
    "quick", "short", "just", "a", "one", "sorry", "hope", "thanks", "thank",
    "danke", "vielen", "kurze", "eine", "ne", "question", "frage", "any", "hab",
    "entschuldigung", "anyone", "does", "jemand", "hi", "hey", "hello", "hallo",
    "good", "guten", "moin", "servus", "dear", "liebe", "lieber", "liebes",
    "greetings", "grüße",
)

_WH = _words(_WH_WORDS) + _END
_QUESTION_START = _words(_WH_WORDS, _AUXILIARIES) + _END
_CLAUSE_START = _words(_WH_WORDS, _AUXILIARIES, _REQUESTS) + _END

# Where a leading phrase may end in the middle of a line: before punctuation,
# at the end, or before a word that starts something new.
_BOUNDARY = (
    r"(?=\s*[,.!?:;—–]|\s+-|\s*$|\s+"
    + _words(_WH_WORDS, _AUXILIARIES, _REQUESTS, _CONTINUATIONS)
    + _END
    + ")"
)

# ---------------------------------------------------------------- chatter ---

# A short capitalised name (one or two words) after a sign-off or a dash:
# "Cheers, Bob", "LG Jörg Müller", "— Anne-Marie".
_NAME = r"(?-i:[A-ZÄÖÜ](?:[\w.-]|['’])*(?:\s+[A-ZÄÖÜ](?:[\w.-]|['’])*)?)"

# Who a greeting is addressed to.
_GROUP = _p(
    "(?:team|all|everyone|everybody|folks|there|guys|people|y'?all|you all|"
    "friends|colleagues|again|zusammen|alle|allerseits|leute|ihr lieben|"
    "miteinander|in die runde|liebes team|hr|[\\w-]+ team|[\\w]+-team)"
)
# "(quick question) from the Berlin office", "(kurze Frage) aus dem Büro
# Hamburg": up to four words, and only when something recognisable follows,
# so "quick question from Berlin how many..." keeps "how many".
_FROM = _p(
    "(?: (?:from|aus) (?:the |our |dem |der |unserem |unserer )?[\\w-]+(?: [\\w-]+){0,3}?"
    + _BOUNDARY
    + ")"
)
# "(liebe Grüße) aus Hamburg": place after a sign-off, up to two words.
_AUS = _p("(?: (?:aus|from) (?:dem |der |den |the )?[\\w-]+(?: [\\w-]+)?)")
_TO_WHOM = _p("(?: (?:for|an) (?:you|you all|y'all|everyone|the team|hr|euch|dich|sie|alle|das team))")

# Greetings; said at the start of a message or as a sentence of their own.
_GREETINGS = (
    _p(
        "(?:hi|hello|hey|hiya|heya|howdy|hallo|hallöchen|hej|moin moin|moinsen|moin|"
        f"servus|grüezi|grüß gott|grüss gott|tach)(?: {_GROUP})*"
    ),
    _p(f"good (?:morning|afternoon|evening|day)(?: {_GROUP})?"),
    _p(f"morning(?: {_GROUP})?"),
    _p(f"guten (?:morgen|tag|abend)(?: {_GROUP})?"),
    _p(
        "(?:hallo |hi )?(?:liebe|lieber|liebes|dear) (?:kolleg(?:[\\w*:/_]|innen)*(?: und kolleg\\w*)?|"
        "colleagues|team|all|alle|leute|hr team|hr-team|hr|people|community)"
    ),
    _p(f"(?:greetings|(?:liebe |viele )?(?:grüße|grüsse)){_FROM}?"),
    _p(f"(?:hi|hello|hey|hallo|moin|servus|dear|liebe|lieber|guten morgen|good morning) {_NAME}"),
)
# Fillers around the question; at the start or as a sentence of their own.
_FILLERS = (
    _p(
        "(?:just )?(?:a |one |another |ne |'ne |eine )?(?:quick|short|small|little|dumb|"
        "stupid|silly|simple|general|kurze|kleine|schnelle|dumme|blöde|allgemeine) "
        f"(?:question|q|one|frage)(?:s|n)?{_TO_WHOM}?{_FROM}?"
    ),
    _p(
        "(?:i have|i've got|i've|i got|got|ich habe|ich hab|ich hätte|hab|habe|hätte) "
        "(?:mal )?(?:a |one |another |eine |ne |'ne )?(?:quick |short |small |kurze |kleine )?"
        f"(?:question|frage){_TO_WHOM}?{_FROM}?"
    ),
    _p("(?:question|frage)"),
    _p(
        "(?:sorry|apologies|entschuldigung|entschuldigt|verzeihung)(?: (?:to bother|for bothering|"
        "to disturb|to ask|for the (?:dumb |stupid |silly |basic |noob |naive )?question|"
        "if this is (?:a|another) (?:dumb|stupid|silly|basic|naive) question|"
        "if this (?:was|has been) asked before|if this is the wrong (?:channel|place)|"
        "für die störung|die störung|wenn ich störe|falls das eine dumme frage ist|"
        "für die (?:dumme |blöde )?frage)(?: you| you all| everyone| again| y'all)?)?"
    ),
    _p(
        "(?:i )?hope (?:you're|you are|you all are|y'all are|everyone's|everyone is|all is|"
        "you're all|this finds you) (?:all )?(?:well|doing well|good|fine|ok|okay|great|"
        "having a (?:good|great|nice) (?:day|week|weekend))"
    ),
    _p(
        "(?:ich )?hoffe,? (?:es geht euch gut|euch geht's gut|ihr hattet ein schönes wochenende|"
        "ich bin hier richtig|das ist der richtige kanal|ich bin im richtigen kanal)"
    ),
    _p("(?:i )?hope (?:this is|i'm in|i am in) the right (?:channel|place)(?: to ask)?"),
    _p("(?:not sure|i'm not sure|unsure) (?:if|whether) this is the right (?:channel|place)(?: to ask)?"),
    _p("(?:ich bin mir |bin mir )?nicht sicher,? ob ich hier richtig bin"),
)
# "Any help appreciated"; anywhere a sign-off may stand.
_HELP = _p(
    "(?:(?:any|all|your) help (?:is |would be )?(?:much |greatly |very much |really )?appreciated|"
    "(?:i'd |i would |i )?(?:really )?appreciate (?:any|your) help|"
    "(?:ich bin )?(?:für jede|über jede) hilfe dankbar|jede hilfe ist willkommen)"
)
# Thanks: an unambiguous sign-off, so also taken at the end of a question
# without punctuation ("... do I get thanks in advance").
_THANKS = _p(
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
_REGARDS = _p(
    "(?:best regards|kind regards|warm regards|warmest regards|many regards|"
    "with best regards|all the best|cheers|have a (?:nice|great|good|lovely) "
    "(?:day|weekend|one|evening)|(?:liebe|lieben|viele|vielen|beste|besten|schöne|"
    f"schönen|herzliche|herzlichen|freundliche|sonnige|sonnigen) {_GRUESSE}|"
    "mit freundlichen (?:grüßen|grüssen|gruessen))"
)
# One-word sign-offs that are also ordinary words or abbreviations ("Which
# hotel is best"): removed only after sentence punctuation, as a sentence, or
# with a place ("LG aus Hamburg").
_WEAK_SIGN_OFFS = _p(f"(?:best|regards|br|kr|ty|lg|vg|mfg|sg|bg|{_GRUESSE})")

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
    (re.compile(f"(?:{_THANKS}|{_HELP}){_END}", re.I), "thanks"),
    (re.compile(f"(?:{_REGARDS}|{_WEAK_SIGN_OFFS}){_AUS}?{_END}", re.I), "closer"),
    (re.compile("(?:" + "|".join((*_GREETINGS, *_FILLERS)) + ")" + _END, re.I), "opener"),
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
_TOKEN = re.compile(r"\w+(?:['’-]\w+)*")


def _content_words(text: str) -> list[str]:
    tokens = (t.replace("’", "'") for t in _TOKEN.findall(text.lower()))
    return [t for t in tokens if t not in _FUNCTION_WORDS]


def _has_letters(text: str) -> bool:
    return re.search(r"[^\W\d_]", text) is not None


# -------------------------------------------------------------- sentences ---

# A period after these is no sentence end.
_ABBREVIATIONS = frozenset(
    "e.g i.e z.b bzw ca etc usw vs dr nr no inkl ggf evtl u.a d.h mr mrs ms st vgl "
    "abs approx ext tel str z.t u.u".split()
)
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*(?=\s)|\n")


def _ends_with_abbreviation(text: str) -> bool:
    last = text.rsplit(None, 1)[-1].lstrip("([\"'").lower() if text.split() else ""
    return last in _ABBREVIATIONS or len(last) == 1 or last.isdigit()


def _sentences(text: str) -> list[str]:
    """Sentences and lines of `text`, each with its own end punctuation."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group().startswith(".") and _ends_with_abbreviation(text[start : m.start()]):
            continue
        piece = text[start : m.end()].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _collapse(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"\s+([,.!?;:)])", r"\1", text)
    text = re.sub(r"([,;])(?:\s*[,;])+", r"\1", text)
    return " ".join(text.split())


# ----------------------------------------------------------- strip_chatter --


def _strip_markup(text: str) -> str:
    """Slack markup, URLs and emoji out; newlines kept (they end sentences)."""
    text = unicodedata.normalize("NFC", text)
    text = _MAILTO.sub(r" \1 ", text)
    text = _DATE.sub(r" \1 ", text)
    text = _SLACK_MARKUP.sub(" ", text)
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    text = _BARE_URL.sub(" ", text)
    text = _PLAIN_BROADCAST.sub(" ", text)
    text = _SHORTCODE.sub(" ", text)
    text = _PICTOGRAPHS.sub(" ", text)
    text = _SMILEY.sub(" ", text)
    lines = (_collapse(line) for line in text.split("\n"))
    return "\n".join(line.lstrip(",;: ") for line in lines)


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
    if not _has_letters(rest):
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


def _strip_phrases(plain: str) -> str:
    """Chatter phrases out of markup-free text; may return ""."""
    sentences = _sentences(plain)
    kept: list[str] = []
    after_chatter = False
    for i, sentence in enumerate(sentences):
        previous = sentences[i - 1] if i else ""
        if _is_chatter_sentence(sentence, previous, after_chatter, last=i == len(sentences) - 1):
            after_chatter = True
            continue
        after_chatter = False
        kept.append(sentence)
    text = _collapse(" ".join(kept))
    text = _strip_leading(text)
    text = _strip_trailing(text)
    text = text.lstrip(_PUNCTUATION_RUN)
    return _collapse(re.sub(r"[\s,;:]+$", "", text))


def strip_chatter(text: str) -> str:
    """`text` without Slack markup, emoji, greetings, thanks, fillers, sign-offs."""
    plain = _strip_markup(text)
    kept = _strip_phrases(plain)
    if _has_letters(kept):
        return kept
    return _collapse(plain)


# ---------------------------------------------------------- split_question --

# Openings that lean on an earlier question: "what about interns?", "und bei
# Teilzeit?". Such a clause is not split off, and in a thread it is retrieved
# together with the previous question.
_ELLIPTICAL_OPENINGS = (
    "what about", "how about", "what if", "and if", "and for", "same for",
    "same goes for", "also for", "even for", "what's with", "was ist mit",
    "was ist bei", "wie ist es mit", "wie ist es bei", "wie sieht es mit",
    "wie sieht es bei", "wie sieht es aus", "was wenn", "und wenn", "und bei",
    "und für", "gilt das", "gilt dies", "auch für", "auch bei",
)
_ELLIPTICAL_START = re.compile("^" + _words(_ELLIPTICAL_OPENINGS) + _END, re.I)
_FOLLOW_UP_START = re.compile(
    "^" + _words(_ELLIPTICAL_OPENINGS, ("and", "und", "or", "oder", "but", "aber", "for", "bei", "für"))
    + _END,
    re.I,
)
# Pronouns that point back at an earlier question. German "das"/"dies(e)" only
# when no capitalised noun follows: "ist das bezahlt?" points back, "ist das
# Weihnachtsgeld ..." doesn't.
_ANAPHORA = frozenset("it that this them they those these dafür davon dazu darauf daran dabei".split())
_DEMONSTRATIVES = frozenset("das dies diese dieses".split())
# Content words a thread follow-up may have, by kind of hint (see _is_follow_up).
_SHORT_MAX, _ANAPHORA_MAX, _FOLLOW_UP_MAX = 1, 2, 3


def _has_anaphora(text: str) -> bool:
    tokens = _TOKEN.findall(text)
    for i, token in enumerate(tokens):
        word = token.lower()
        if word in _ANAPHORA:
            return True
        if word in _DEMONSTRATIVES and (i + 1 == len(tokens) or not tokens[i + 1][0].isupper()):
            return True
    return False


# Connectives that start a further question; dropped from a part's start.
_LEADING_CONNECTIVES = re.compile(
    "^(?:"
    + _words(
        (
            "and also", "and", "also", "plus", "additionally", "oh and", "but", "or",
            "und außerdem", "und ausserdem", "und", "außerdem", "ausserdem", "zudem",
            "sowie", "oder", "aber",
        )
    )
    + _END
    + r"[\s,:]*)+",
    re.I,
)
_TRAILING_CONNECTIVES = re.compile(
    r"(?:[\s,;:]+(?:and|und|or|oder|also|sowie|but|aber))*[\s,;:]*$", re.I
)
# Where one clause may end and another begin, most explicit first.
_CLAUSE_BREAK = re.compile(
    r"(?P<explicit>(?:,\s*|\s+)(?:and|und)\s+(?:also|außerdem|ausserdem|zudem|additionally)\b,?"
    r"|[,;]\s*(?:also|plus|additionally|außerdem|ausserdem|zudem)\b,?)"
    r"|(?P<and>,?\s+(?:and|und|sowie|as\s+well\s+as)\b)"
    r"|(?P<or>,?\s+(?:or|oder)\b)"
    r"|(?P<comma>[,;])(?=\s)",
    re.I,
)
_STARTS_CLAUSE = re.compile(_CLAUSE_START, re.I)
_STARTS_QUESTION = re.compile(_QUESTION_START, re.I)
_STARTS_WH = re.compile(_WH, re.I)
# A question after a short lead-in: "As a part-timer, how ...", "Bei Teilzeit: wie ...".
_INNER_QUESTION = re.compile(r"[,:;]\s*" + _QUESTION_START, re.I)
_LEAD_IN_QUESTION = re.compile(r"[^,:;?]{1,40}[,:]\s*" + _QUESTION_START, re.I)


def _stands_alone(clause: str) -> bool:
    """Enough of a question to be retrieved on its own.

    Two content words; or one, in a complete question that doesn't lean on
    another: starts with a question word, no "what about ...", no pronoun
    pointing back ("Was ist die Kilometerpauschale?" yes, "is it paid?" no).
    """
    n = len(_content_words(clause))
    if n != 1:
        return n >= MIN_CONTENT_WORDS
    clause = _LEADING_CONNECTIVES.sub("", clause.strip())
    return bool(
        _STARTS_QUESTION.match(clause)
        and not _ELLIPTICAL_START.match(clause)
        and not _has_anaphora(clause)
    )


def _looks_like_question(clause: str) -> bool:
    clause = _LEADING_CONNECTIVES.sub("", clause.strip())
    return bool(_STARTS_CLAUSE.match(clause) or _INNER_QUESTION.search(clause))


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or _looks_like_question(sentence)


def _split_here(left: str, right: str, kind: str) -> bool:
    """Whether a clause break between `left` and `right` separates two questions."""
    if kind == "and" and left.rstrip().endswith("-"):  # "Teilzeit- und Vollzeitkräfte"
        return False
    if not (_looks_like_question(left) and _stands_alone(left) and _stands_alone(right)):
        return False
    right = right.lstrip(" ,")
    if kind == "explicit":
        return True
    if kind == "or":  # "... or do I need to come in?" is one question
        return bool(_STARTS_WH.match(right))
    if _STARTS_QUESTION.match(right):
        return True
    n = min(len(_content_words(left)), len(_content_words(right)))
    return kind == "and" and n >= 3 and bool(_LEAD_IN_QUESTION.match(right))


def _split_clauses(sentence: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _CLAUSE_BREAK.finditer(sentence):
        if m.start() <= start:
            continue
        left, right = sentence[start : m.start()], sentence[m.end() :]
        if _split_here(left, right, m.lastgroup or ""):
            pieces.append(left)
            start = m.end()
    pieces.append(sentence[start:])
    if sentence.rstrip().endswith("?"):
        pieces = [p if p.rstrip()[-1:] in "?.!" else p.rstrip(" ,;:") + "?" for p in pieces]
    return pieces


def _clean_part(part: str) -> str:
    part = _LEADING_CONNECTIVES.sub("", part.strip())
    end = part[-1:] if part[-1:] in "?.!" else ""
    body = _TRAILING_CONNECTIVES.sub("", part[: len(part) - len(end)])
    return _collapse(body + end)


def _merge_small(parts: list[str]) -> list[str]:
    """Parts with too few content words join their neighbour."""
    out: list[str] = []
    for part in parts:
        if out and not _stands_alone(part):
            out[-1] = f"{out[-1]} {part}"
        else:
            out.append(part)
    if len(out) > 1 and not _stands_alone(out[0]):
        out[:2] = [f"{out[0]} {out[1]}"]
    return out


def split_question(text: str) -> list[str]:
    """The separate questions of a (chatter-stripped) message; [text] for one."""
    parts: list[str] = []
    context: list[str] = []
    for sentence in _sentences(text):
        if not _is_question(sentence):
            context.append(sentence)
            continue
        pieces = _split_clauses(sentence)
        if context:
            pieces[0] = " ".join((*context, pieces[0]))
            context = []
        parts.extend(pieces)
    if not parts:
        return [text]
    if context:
        parts[-1] = " ".join((parts[-1], *context))
    parts = _merge_small(parts)
    if len(parts) > MAX_PARTS:
        parts[MAX_PARTS - 1 :] = [" ".join(parts[MAX_PARTS - 1 :])]
    if len(parts) == 1:
        return [text]
    return [_clean_part(p) for p in parts]


# ---------------------------------------------------------- retrieval_text --


def _is_follow_up(question: str) -> bool:
    """Short or elliptical: it needs the previous question to mean anything.

    At most one content word ("und bei Teilzeit?", "what if I'm sick?"); or a
    follow-up opening ("what about", "and for", "was ist mit") with at most
    three; or a pronoun pointing back ("Can I carry them over?") with at most two.
    """
    n = len(_content_words(question))
    if n <= _SHORT_MAX:
        return True
    if _FOLLOW_UP_START.match(question) and n <= _FOLLOW_UP_MAX:
        return True
    return n <= _ANAPHORA_MAX and _has_anaphora(question)


def _clip(text: str, limit: int = HISTORY_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut.rsplit(None, 1)[0] if " " in cut else cut


def retrieval_text(question: str, history: Iterable[str] = ()) -> str:
    """What to retrieve with for `question`, asked after `history` (oldest first)."""
    current = strip_chatter(question)
    if not _has_letters(_strip_phrases(_strip_markup(question))) or not _is_follow_up(current):
        return current
    for earlier in reversed(list(history)):
        previous = _strip_phrases(_strip_markup(earlier))
        if _has_letters(previous):
            return f"{_clip(previous)} {current}"
    return current
