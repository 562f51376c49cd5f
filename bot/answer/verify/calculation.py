"""A statement that is the answer's own arithmetic: the checks recompute it, no block states it.

"In total you can expect 419 EUR (400 EUR hotel + 19 EUR taxi).", "14 EUR − 11.20 EUR = 2.80 EUR":
operators written out between numbers, and hardly a word the question and the rest of the answer
do not already say. Its numbers are checked like those of any statement (numbers.WorkedOut works
the arithmetic out again), so a wrong sum fails there. The entailment judge is not asked about it:
it sees one statement alone with its blocks, and no block says "419 EUR" of the asker's trip,
so it could only call the sum "not stated".

A conclusion drawn from the sum ("…, so all 80 EUR are taxable"), a negation or a word of its own
makes it a statement like any other, and the judge is asked.
"""

from __future__ import annotations

import re

from bot.answer.verify import commitments as cm
from kb_index.analysis import terms

# An operator between digits, or "= 419": what may be arithmetic written out (the uncited-sentence
# rule of citations.py lets such a line use the blocks' numbers; a range "1–6" matches too).
ARITHMETIC = re.compile(r"\d\s*(?:[×x*÷/+=]|−|–\s*\d)|=\s*\d")

# Arithmetic for sure: an operator between numbers ("3.600 € ÷ 30", "= 84,00 €"), or set off by
# spaces with a unit or a word between ("400 EUR hotel + 19 EUR taxi"); not the range "1–6", the
# file number "9 AZR 541/15" or the phone number "4357 bzw. +49 30".
_OPERATOR = re.compile(r"\d\s*[×*÷+=−]\s*[€$]?\s*\d|=\s*[€$]?\s*\d")
_OPERATION = re.compile(r"\d[\d.,]*\s*(?:(?:%|€|\$|[^\W\d_]{1,12}\.?)\s*){0,2}\s(?:[×*÷+=−]|x)\s+[€$]?\s*\d")

# Words of its own a calculation may have beyond the question's, the answer's and those that announce
# its result ("you can expect").
NEW_WORDS = 1
_RESULT_WORDS = ("total together altogether sum overall result makes comes insgesamt zusammen gesamt summe ergibt "
                 "macht sind")

# What follows one of these is a conclusion, a statement of its own.
_CONCLUSION = re.compile(
    r"\b(?:so|therefore|thus|hence|which means|meaning|daher|deshalb|deswegen|damit|somit|folglich|also"
    r"|das heißt|d\.\s?h\.)\b",
    re.IGNORECASE,
)


def is_calculation(text: str, language: str, *, question: str = "", answer: str = "") -> bool:
    """Is `text` a line of arithmetic on what the question and the rest of `answer` say (module docstring)?"""
    if not (_OPERATOR.search(text) or _OPERATION.search(text)) or _CONCLUSION.search(text) or cm.negates(text, language):
        return False
    known = set(terms(answer.replace(text, " "), language)) | set(terms(question, language)) \
        | set(terms(_RESULT_WORDS, language))
    own = [t for t in terms(text, language) if not any(ch.isdigit() for ch in t) and t not in known]
    return len(set(own)) <= NEW_WORDS
