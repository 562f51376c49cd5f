"""bench/trust.py's check report: what each check costs and catches, and the trade its subsets allow."""

from __future__ import annotations

import json

from bench.trust import Case, Replay, Result, check_costs, frontier, recorded_hits
from bot.models import Answer, Outcome, Violation
from kb_index import Retriever
from tests.kb_fixtures import mini_index


def result(kind: str, checks: tuple[str, ...], *, posted: bool = False) -> Result:
    """A judge-off result: a right draft flagged by `checks` (none: passed), or a wrong draft that the
    checks held back (posted=False) or that went out."""
    case = Case(id=f"q:{kind}:{'-'.join(checks)}:{posted}", pid="q", qid="q", half="tune", mode="citations",
                language="en", pair="en-en", kind=kind, question="?", draft="draft", messages=())
    held = bool(checks) and not (kind != "right" and posted)
    answer = Answer(question="?", answer="draft", verified=not held, refused=False,
                    outcome=Outcome.UNCERTAIN if held else Outcome.ANSWERED,
                    violations=[Violation(kind=c, detail="") for c in checks])
    calls = 2 if checks else 1
    return Result(case, answer, calls, 0, 0.0, 0.0, 0.0, 0.0, 0.0, False, 0)


RESULTS = [
    result("right", ()), result("right", ()), result("right", ("SCOPE",)), result("right", ("NUMBER", "SCOPE")),
    result("negation_flipped", ("NEGATION",)), result("number_changed", ("NUMBER",)),
    result("actor_changed", ("NUMBER", "NEGATION")), result("fact_added", (), posted=True),
]


def test_each_check_counts_its_flags_and_catches_and_those_it_alone_makes():
    rows = {kind: counts for kind, *counts in check_costs(RESULTS)}
    assert rows == {"NUMBER": [1, 0, 2, 1], "SCOPE": [2, 1, 0, 0], "NEGATION": [0, 0, 2, 1]}


def test_the_frontier_keeps_only_subsets_no_other_beats():
    points = frontier(RESULTS)
    # NEGATION alone flags no right draft and catches two of four wrong ones (keeping nothing does no
    # better on right drafts and worse on wrong ones); NUMBER too costs one right draft and catches all
    # that the checks catch.
    assert points == [(0.0, 0.5, ("NEGATION",)), (0.25, 0.25, ("NEGATION", "NUMBER"))]
    # SCOPE costs two right drafts and catches nothing: no point of the frontier keeps it.
    assert all("SCOPE" not in kept for _f, _p, kept in points)


def test_replay_shows_the_recorded_blocks_in_their_order_as_the_index_holds_them(tmp_path):
    """The benchmark checks a draft against the blocks its recorded prompt showed, not against what
    retrieval finds now: in the recorded order, a cross-reference marked as one, a block whose text
    changed since taken as it is now, and one the index no longer has counted."""
    with Retriever(mini_index(tmp_path)) as retriever:
        aufstockung = retriever.entry_chunks("lb-atz-02")[0]
        voraussetzungen = next(c for c in retriever.entry_chunks("lb-atz-01") if c.section == "Voraussetzungen")
        user = ("Blöcke aus der Wissensbasis:\n\nBlock 1 — [lb-atz-01]\nTitel: …\n\n…\n\n"
                "Block 2 — [lb-atz-02] (Querverweis)\nTitel: …\n\n…\n\nBlock 3 — [lb-gone-01]\n\n…")
        case = Case(id="q:right", pid="q", qid="q", half="tune", mode="citations", language="de", pair="de-de",
                    kind="right", question="?", draft="draft",
                    messages=(json.dumps({"role": "system", "content": "…"}), json.dumps({"role": "user", "content": user})),
                    blocks=((1, "lb-atz-01", "Voraussetzungen", "an-older-hash"),
                            (2, "lb-atz-02", aufstockung.section, aufstockung.content_hash),
                            (3, "lb-gone-01", "Weg", "hash")))
        replay = Replay()
        hits = recorded_hits(retriever, case, replay)

    assert [(h.entry_id, h.section, h.expanded) for h in hits] == [
        ("lb-atz-01", "Voraussetzungen", False), ("lb-atz-02", aufstockung.section, True),
    ]
    assert hits[0].text == voraussetzungen.text
    assert (replay.changed, replay.lost) == (1, 1)
