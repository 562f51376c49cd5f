"""Language analyzers (en, de) shared by indexing and querying.

Both languages: a word tokenizer, lower-casing, stop words, Snowball stemming
(PyStemmer, the C build of the Snowball algorithms: "running" -> "run", not
Porter's "runn"), accent folding.

German packs meaning into compounds: "Altersteilzeit" contains "Teilzeit",
"Lohnfortzahlung" is "Fortzahlung des Lohns". A stem never equals a part of
another stem, so German text also gets a second, lower-weighted stream of
character n-grams of its stems (`subword_analyzer`). A question about
"Teilzeit" shares all of its grams with "Altersteilzeit". Unlike a
vocabulary-driven decompounder, grams need no lexicon per KB and also split
compounds of words the KB never spells out alone.

The analyzers are plain Whoosh analyzers, because Whoosh pickles them into the
index schema: the same code must analyze at index and at query time.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache

import Stemmer
from whoosh.analysis import Filter, LowercaseFilter, RegexTokenizer, StopFilter
from whoosh.lang.stopwords import stoplists

from citebot_core.languages import LANGUAGES

# Words people put around a question that carry no topic. The NLTK lists Whoosh
# ships keep some of them ("ab", "wann", "viele"); left in, they would make
# "Ab wann ..." match every entry that says "ab".
_QUESTION_WORDS = {
    "en": {
        "can", "could", "would", "should", "may", "might", "must", "shall", "will",
        "get", "got", "please", "tell", "know", "much", "many", "also", "still",
        "what", "which", "who", "whom", "when", "where", "why", "how", "does", "do",
        "did", "need", "want", "us", "our", "ours", "one", "anyone", "someone",
    },
    "de": {
        "ab", "wann", "wie", "viel", "viele", "vielen", "welche", "welcher", "wer",
        "wen", "wem", "warum", "wieso", "weshalb", "woher", "wohin", "gibt", "geben",
        "bekomme", "bekommt", "bekommen", "darf", "dürfen", "muß", "müssen", "mus",
        "bitte", "eigentlich", "genau", "mal", "denn", "gilt", "gelten", "lange",
        "hoch", "kann", "könnte", "kannst", "könnt", "habe", "hast", "wurde", "bzw",
    },
}

_SNOWBALL_NAMES = {"en": "english", "de": "german"}

# Token pattern: words, and numbers with their inner separators ("1.538,50",
# "2026-01" stays two tokens, which is what a question about "2026" needs).
TOKEN_PATTERN = r"\w+(?:[.,]\d+)*"

# Gram size of the German subword stream: four letters are the shortest piece
# that is still rare enough to mean something ("zeit", "lohn", "geld").
SUBWORD_GRAM = 4


def fold_accents(text: str) -> str:
    """'Überstunden' -> 'Uberstunden', 'café' -> 'cafe'; 'ß' -> 'ss'."""
    text = text.replace("ß", "ss")
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@cache
def stop_words(language: str) -> frozenset[str]:
    words = set(stoplists[language]) | _QUESTION_WORDS[language]
    # Match both spellings: the list has "für", "über"; people type "fur".
    return frozenset(words | {fold_accents(w) for w in words})


class SnowballFilter(Filter):
    """Snowball stemming, then accent folding.

    Stemming comes first because the German stemmer knows umlauts
    ("Häuser" -> "haus"); folding first would change its rules. The stemmer is
    created lazily, so the filter pickles (Whoosh stores it in the schema).
    """

    def __init__(self, language: str):
        self.language = language
        self._stem = None

    def __getstate__(self):
        return {"language": self.language}

    def __setstate__(self, state):
        self.language = state["language"]
        self._stem = None

    def __eq__(self, other):
        return type(other) is type(self) and other.language == self.language

    def __hash__(self):
        return hash((type(self), self.language))

    def __call__(self, tokens):
        stem = self._stem or self._make_stemmer()
        for t in tokens:
            if not t.stopped:
                t.text = stem(t.text)
            yield t

    def _make_stemmer(self):
        stemmer = Stemmer.Stemmer(_SNOWBALL_NAMES[self.language])
        cache: dict[str, str] = {}

        def stem(word: str) -> str:
            hit = cache.get(word)
            if hit is None:
                hit = fold_accents(stemmer.stemWord(word))
                if len(cache) < 200_000:
                    cache[word] = hit
            return hit

        self._stem = stem
        return stem


class GramFilter(Filter):
    """Replaces each token by its character n-grams (the word itself if shorter)."""

    def __init__(self, size: int = SUBWORD_GRAM):
        self.size = size

    def __eq__(self, other):
        return type(other) is type(self) and other.size == self.size

    def __hash__(self):
        return hash((type(self), self.size))

    def __call__(self, tokens):
        n = self.size
        for t in tokens:
            word = t.text
            if len(word) <= n:
                yield t
                continue
            for i in range(len(word) - n + 1):
                t.text = word[i : i + n]
                yield t


def _check(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f"unsupported language {language!r}; expected one of {', '.join(LANGUAGES)}")


def analyzer(language: str):
    """The main analyzer of a language: words -> folded Snowball stems, no stop words."""
    _check(language)
    return (
        RegexTokenizer(TOKEN_PATTERN)
        | LowercaseFilter()
        | StopFilter(stoplist=stop_words(language), minsize=1)
        | SnowballFilter(language)
    )


def subword_analyzer(language: str):
    """The compound-splitting stream: n-grams of the main analyzer's stems."""
    return analyzer(language) | GramFilter()


@lru_cache(maxsize=4)
def _cached(language: str, subwords: bool):
    return subword_analyzer(language) if subwords else analyzer(language)


def terms(text: str, language: str) -> list[str]:
    """The analyzed terms of `text`, in order, duplicates kept."""
    return [t.text for t in _cached(language, False)(text)]


def subword_terms(text: str, language: str) -> list[str]:
    return [t.text for t in _cached(language, True)(text)]


@lru_cache(maxsize=4)
def _query_analyzer(language: str):
    # A question's language is not known for sure, and it is analyzed for both
    # term spaces; dropping either language's stop words keeps "der", "von" or
    # "the" from matching as content words in the other one.
    both = stop_words("en") | stop_words("de")
    return RegexTokenizer(TOKEN_PATTERN) | LowercaseFilter() | StopFilter(stoplist=both, minsize=1) | SnowballFilter(language)


def query_terms(text: str, language: str) -> list[str]:
    """Terms of a question for the `language` term space."""
    _check(language)
    return [t.text for t in _query_analyzer(language)(text)]


_WORD = re.compile(r"\w+")


def guess_language(text: str, default: str = "en") -> str:
    """'de' or 'en' for a question, by its function words; `default` when unclear.

    Questions are short, so a statistical detector has little to go on; the
    function words of a sentence ("ich", "der", "wie" / "the", "how", "I")
    decide nearly always, umlauts and ß settle the rest.
    """
    own = _function_words()
    words = [w.lower() for w in _WORD.findall(text[:2000])]
    de = sum(1 for w in words if w in own["de"]) + 2 * len(re.findall(r"[äöüß]", text.lower()))
    en = sum(1 for w in words if w in own["en"])
    if de > en:
        return "de"
    if en > de:
        return "en"
    return default


@lru_cache(maxsize=1)
def _function_words() -> dict[str, frozenset[str]]:
    """Stop words of one language that are not also stop words of the other."""
    de, en = stop_words("de"), stop_words("en")
    return {"de": de - en, "en": en - de}


# A document's language is decided on this much of its text: enough words for
# the count to be sure, bounded so a 500-page PDF costs what a page does.
DETECT_CHARS = 20_000
# The winner needs this many function words, and this many times the other
# language's: an English page quoting a German form title stays English, and
# a two-line page ("Die Drucker im 2. Stock …") still has three or more.
DETECT_MIN_WORDS = 3
DETECT_RATIO = 2.0


def detect_language(text: str) -> str | None:
    """'de' or 'en' for a document's text by its function words; None when the count is not clear.

    The same signal as `guess_language`, over a page of text instead of a
    question, and with a margin: a wrong language puts an entry's words in the
    other language's term space, where no question finds them. Umlauts are
    not counted here, since English text quotes German names.
    """
    own = _function_words()
    counts = {lang: 0 for lang in own}
    for word in _WORD.findall(text[:DETECT_CHARS]):
        lowered = word.lower()
        for lang, words in own.items():
            counts[lang] += lowered in words
    (best, high), (_, low) = sorted(counts.items(), key=lambda kv: -kv[1])
    if high >= DETECT_MIN_WORDS and high >= DETECT_RATIO * low:
        return best
    return None
