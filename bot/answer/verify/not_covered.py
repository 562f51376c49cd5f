"""Sentences that say what the knowledge base does not cover: a partial refusal.

Capable models answer what the blocks cover and then say, rightly, what they do not. Such a
sentence states nothing a block could back: it needs no citation, is not checked nor judged, and
is shown to the asker as what it is, the question counted in the gaps report (docs/DESIGN.md 3.6).

Recognised by its own words, in English and German: a subject that is the knowledge base or its
blocks, sources, documents or information (or "dazu"), a verb of saying or containing, and a
negation, or "there is no information on ...". A clause that goes on to state something ("…, but
you get 30 days") or a link (bot.answer.verify.citations) makes it a statement to check. The
numbers it names are those of what is missing: they are not checked.
"""

from __future__ import annotations

import re

from bot.answer.verify.text import fold
from kb_index.sentences import sentences

# On folded text (bot.answer.verify.text.fold): lower case, no accents, no punctuation.
_SOURCE_EN = (r"(?:knowledge ?base|kb|wiki|handbook|(?:provided |available |cited |given |above |these |the )*"
              r"(?:blocks?|sources?|documents?|documentation|information|entries|entry|articles?|pages?|context"
              r"|excerpts?|sections?|policy|policies|material|texts?))")
_SAY_EN = (r"(?:say|says|state|states|mention|mentions|specify|specifies|cover|covers|contain|contains|include"
           r"|includes|provide|provides|address|addresses|describe|describes|detail|details|explain|explains|list"
           r"|lists|give|gives|indicate|indicates|define|defines|answer|answers|discuss|discusses|clarify|clarifies"
           r"|set out|sets out|go into|goes into|offer|offers)")
_NOT_EN = r"(?:does not|do not|did not|doesnt|dont|didnt|cannot|can not|nor)"

_SOURCE_DE = (r"(?:wissensbasis|kb|wiki|handbuch|(?:vorliegenden |zitierten |angegebenen |genannten |diese |die |den "
              r"|der |vorhandenen )*(?:blocke|blocken|bloecke|quellen?|unterlagen|dokumenten?|dokumente|informationen"
              r"|eintragen?|eintrage|abschnitten?|abschnitte|artikeln?|seiten?|texten?|richtlinien?|kontext))")
_SAY_DE = (r"(?:enthalt|enthalten|nennt|nennen|sagt|sagen|macht|machen|gibt|geben|erwahnt|erwahnen|regelt|regeln"
           r"|beschreibt|beschreiben|beantwortet|beantworten|aussert|aussern|geht|gehen|liefert|liefern|fuhrt|fuhren"
           r"|legt|legen|behandelt|behandeln|klart|klaren|spricht|sprechen|beziffert|beziffern|deckt|decken)")
_NOTHING_DE = r"(?:keine|keinen|keinerlei|kein|nicht|nichts)"
_INFO_DE = r"(?:angaben?|informationen?|aussagen?|hinweise?|regelungen?|regeln|details?|auskunft|auskunfte|daten)"
_INFO_EN = r"(?:information|details?|data|statement|mention|indication|rule|rules|guidance|figures?|answer)"

_PATTERNS = [
    # "The knowledge base does not say whether ...", "the provided sources do not mention ..."
    rf"\b{_SOURCE_EN}\b(?: \w+){{0,4}} {_NOT_EN}(?: \w+){{0,2}} {_SAY_EN}\b",
    rf"\b{_SOURCE_EN}\b(?: \w+){{0,4}} (?:is|are) silent\b",
    # "... is not covered / specified in the knowledge base"
    rf"\b(?:is|are|was|were|isnt|arent)(?: not)? (?:\w+ )?(?:covered|mentioned|specified|stated|addressed|described"
    rf"|included|defined|listed|answered|found|given|provided|explained|detailed)\b(?: \w+){{0,3}} (?:in|by) "
    rf"(?:the |these |this )?{_SOURCE_EN}\b",
    # "There is no information on ...", "No details are given ...", "I could not find ..."
    rf"\bthere (?:is|are) no {_INFO_EN}\b",
    rf"\bno {_INFO_EN} (?:is|are|was|were) (?:given|provided|available|included|stated|found)\b",
    rf"\b{_SOURCE_EN}\b(?: \w+){{0,3}} (?:has|have|contains?|includes?|gives?|provides?|offers?) no {_INFO_EN}\b",
    r"\bi (?:could not|couldnt|cannot|can not|did not|didnt) find\b",
    # "Die Wissensbasis enthält keine Angaben ...", "Dazu sagen die Blöcke nichts", "... nennt die Wissensbasis nicht"
    # (not across "dass": "Das Handbuch sagt, dass Sie nicht ..." reports what it says)
    rf"\b{_SOURCE_DE}\b(?: \w+){{0,6}} {_SAY_DE}\b(?: (?!dass\b)\w+){{0,6}} {_NOTHING_DE}\b",
    rf"\b{_SAY_DE}\b(?: \w+){{0,3}} (?:die |den |der )?{_SOURCE_DE}\b(?: (?!dass\b)\w+){{0,6}} {_NOTHING_DE}\b",
    # "Keine Angaben enthält die Wissensbasis zu ...", "Informationen dazu liegen nicht vor"
    rf"\b{_NOTHING_DE} {_INFO_DE}\b(?: \w+){{0,8}} (?:{_SOURCE_DE}|vor|gemacht|enthalten|zu finden|entnehmen)\b",
    rf"\b{_INFO_DE}\b(?: \w+){{0,5}} (?:liegen|liegt|finden sich|findet sich|gibt es|sind|ist) (?:\w+ )?(?:nicht|keine)\b",
    # "lässt sich der Wissensbasis nicht entnehmen", "ist den Blöcken nicht zu entnehmen"
    r"\b(?:lasst|lassen) sich\b(?: \w+){0,5} (?:nicht|nichts|keine \w+) entnehmen\b",
    r"\b(?:ist|sind)\b(?: \w+){0,5} nicht zu entnehmen\b",
    # "... ist in der Wissensbasis nicht geregelt"
    rf"\b(?:in|aus) (?:der |den |dem |diesen )?{_SOURCE_DE}\b(?: \w+){{0,4}} (?:nicht|nichts|keine \w+) "
    r"(?:geregelt|beschrieben|angegeben|genannt|erwahnt|enthalten|beantwortet|festgelegt|hervor|ersichtlich)\b",
    r"\bgeht\b(?: \w+){0,6} (?:nicht|nichts) hervor\b",
]
_COMPILED = [re.compile(p) for p in _PATTERNS]


# "..., but you get 30 days", "...; sie nennt aber ...": a statement after the partial refusal.
# On the sentence as written: the word opens a clause after a comma, semicolon, colon or dash, so a
# "but" inside what is missing ("whether submitting after 30 but within 90 days counts") is none.
_GOES_ON = re.compile(r"(?:[,;:–—]|\s-)\s*(?:but|however|though|although|aber|jedoch|allerdings|dafür|sondern|doch)\b",
                      re.IGNORECASE)


def says_not_covered(text: str) -> bool:
    """Does the text say that the knowledge base (its blocks, sources ...) does not cover
    something, and nothing more? Each of its sentences must say so; a clause that goes on
    to state something ("but you get 30 days") makes it a statement to check."""
    # The verifier's own splitter: "ab dem 1. Juli 2026" is not the end of a sentence.
    parts = [p for p in sentences(text.strip(), "de") if p.strip()]
    return bool(parts) and all(_only_not_covered(p) for p in parts)


def _only_not_covered(sentence: str) -> bool:
    folded = fold(sentence)
    return any(p.search(folded) for p in _COMPILED) and not _GOES_ON.search(sentence)
