"""KB gaps: the questions the knowledge base could not answer, grouped by wording.

`citebot review gaps` feeds this the refused and uncertain questions of the
audit trail; a KB owner reads the biggest groups first, as what to write next.
Pure functions, no I/O.

Grouping, deterministic and simple on purpose (a KB owner must be able to
predict it): each question becomes the set of its analyzed terms in both
languages (stemmed, stop words dropped, the same analysis retrieval uses), so
"How many vacation days do I get?" and "vacation days?" look alike. Questions
are taken oldest first; each joins the existing group whose first question
("seed") it resembles most, if that resemblance reaches `threshold`, else it
seeds a new group. Comparing with the seed rather than with every member keeps
a group from drifting, one similar question at a time, into another topic.

Resemblance is the share of both term sets that finds a match in the other
(Dice over matched terms). A term matches an equal term, or, for German
compounds, a term of at least MIN_PART_CHARS letters it contains or is
contained in: "Urlaubstage" meets "Tage Urlaub" through "urlaub".
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from bot.terminal import clean
from kb_index.analysis import query_terms

# Questions that share at least this share of their terms are one gap.
DEFAULT_THRESHOLD = 0.5
# Shorter terms are too common inside other words ("tag" in "montag") to count as a compound part.
MIN_PART_CHARS = 4
# Other wordings shown under a group's representative.
MAX_VARIANTS = 3


@dataclass(frozen=True)
class GapQuestion:
    text: str
    language: str = "en"
    at: float = 0.0  # epoch seconds
    outcome: str = "refused"  # "refused", "uncertain" or "not covered" (answered, but not all of it: NOT_COVERED)


NOT_COVERED = "not covered"


def gap_outcome(entry) -> str:
    """How an audit entry counts in the report: its outcome, or "not covered" for an answer
    that said what the knowledge base lacks (a partial refusal)."""
    return NOT_COVERED if str(entry.outcome) == "answered" else str(entry.outcome)


@dataclass
class Gap:
    """Similar questions the KB could not answer."""

    representative: str  # the most asked wording (latest on a tie)
    count: int
    languages: list[str]
    last_asked: float
    first_asked: float
    outcomes: dict[str, int]  # "refused"/"uncertain"/"not covered" -> count
    variants: list[str] = field(default_factory=list)  # other wordings, most asked first

    def as_json(self) -> dict:
        # The report names the representative wording "question"; every other field as it is here.
        data = asdict(self)
        return {"question": data.pop("representative"), **data}


def question_terms(text: str) -> frozenset[str]:
    """The question's analyzed terms in both languages, each tagged with its language."""
    return frozenset(f"{lang}:{term}" for lang in ("en", "de") for term in query_terms(text, lang))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Share of the terms of `a` and `b` that match a term of the other (0..1)."""
    if not a or not b:
        return 0.0
    matched = sum(_matches(t, b) for t in a) + sum(_matches(t, a) for t in b)
    return matched / (len(a) + len(b))


def _matches(term: str, others: frozenset[str]) -> bool:
    if term in others:
        return True
    lang, _, word = term.partition(":")
    for other in others:
        olang, _, oword = other.partition(":")
        if olang != lang:
            continue
        short, long = (word, oword) if len(word) <= len(oword) else (oword, word)
        if len(short) >= MIN_PART_CHARS and short in long:
            return True
    return False


def _wording(text: str) -> str:
    """How two askings count as the same wording: case, spacing and end punctuation aside."""
    return re.sub(r"\s+", " ", text).strip().rstrip("?!.").strip().casefold()


@dataclass
class _Group:
    seed: frozenset[str]
    key: str  # the seed's wording, for questions without terms
    members: list[GapQuestion] = field(default_factory=list)


def group_questions(questions: Iterable[GapQuestion], *, threshold: float = DEFAULT_THRESHOLD) -> list[Gap]:
    """Groups of similar questions, most asked first (then most recently asked)."""
    ordered = sorted(questions, key=lambda q: (q.at, q.text))
    groups: list[_Group] = []
    for q in ordered:
        terms = question_terms(q.text)
        best, best_score = None, 0.0
        for group in groups:
            if terms or group.seed:
                score = similarity(terms, group.seed)
            else:
                # Nothing but stop words ("???"): only the same wording joins.
                score = 1.0 if _wording(q.text) == group.key else 0.0
            if score > best_score:
                best, best_score = group, score
        if best is None or best_score < threshold:
            best = _Group(seed=terms, key=_wording(q.text))
            groups.append(best)
        best.members.append(q)
    gaps = [_gap(g.members) for g in groups]
    return sorted(gaps, key=lambda g: (-g.count, -g.last_asked, g.representative))


def _gap(members: list[GapQuestion]) -> Gap:
    wordings: dict[str, list[GapQuestion]] = {}
    for q in members:
        wordings.setdefault(_wording(q.text), []).append(q)
    # Most asked wording first; on a tie the one asked last; each shown as last typed.
    ranked = sorted(wordings.values(), key=lambda qs: (-len(qs), -max(q.at for q in qs), qs[-1].text))
    texts = [" ".join(qs[-1].text.split()) for qs in ranked]
    return Gap(
        representative=texts[0],
        count=len(members),
        languages=sorted({q.language for q in members}),
        last_asked=max(q.at for q in members),
        first_asked=min(q.at for q in members),
        outcomes=dict(sorted(Counter(q.outcome for q in members).items())),
        variants=texts[1 : 1 + MAX_VARIANTS],
    )


def format_gaps(gaps: list[Gap], *, days: int) -> str:
    """`citebot review gaps`: the groups as a KB owner reads them."""
    total = sum(g.count for g in gaps)
    if not gaps:
        return f"No unanswered questions in the last {days} days."
    lines = [f"KB gaps, last {days} days: {total} question(s) the knowledge base could not answer, in {len(gaps)} group(s)", ""]
    for g in gaps:
        last = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(g.last_asked))
        outcomes = " · ".join(f"{name} {n}" for name, n in g.outcomes.items())
        lines.append(f"{g.count:4d}×  {g.representative}")
        lines.append(f"       {outcomes} · {', '.join(g.languages)} · last asked {last}")
        if g.variants:
            lines.append("       also asked as: " + " · ".join(f'"{v}"' for v in g.variants))
    # Questions are typed by anyone: shown escaped, one per line, never obeyed by the terminal.
    return "\n".join(clean(line, newlines=False) for line in lines)
