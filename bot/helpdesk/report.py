"""Hand-overs as operators and KB owners read them: `citebot review list`, `review gaps`,
`review escalations` and `audit show`. Pure functions over bot.store.escalations records."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable

from bot.store.escalations import HANDED_OVER, Escalation

# A hand-over whose reply drew on no collection and whose channel may search every one.
EVERY_COLLECTION = "(every collection)"


def by_collection(escalations: Iterable[Escalation]) -> dict[str, int]:
    """How many questions were handed over per collection, most first: what the KB lacks, by where it would go.
    A question counts once for each collection its reply drew on (or its channel may search)."""
    counts: Counter[str] = Counter()
    for e in escalations:
        counts.update(e.collections or [EVERY_COLLECTION])
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def state(e: Escalation) -> str:
    if e.replies:
        return f"answered by {', '.join(dict.fromkeys(r.user for r in e.replies))}"
    return "waiting for a person" if e.status == HANDED_OVER else "being handed over"


def line(e: Escalation) -> str:
    """One hand-over on one line (the caller cleans it for the terminal)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.at))
    where = "a direct message" if e.is_dm else f"<#{e.channel}>"
    flat = " ".join(e.question.split())
    question = flat if len(flat) <= 70 else flat[:69].rsplit(" ", 1)[0] + " …"
    return f"{e.question_id}  {when}  {where}  to {', '.join(e.escalate_to)}  [{state(e)}]  {question}"


def gaps_line(escalations: list[Escalation], days: int) -> str:
    """The gaps report's last line: questions people had to answer, by collection."""
    if not escalations:
        return f"No question was handed over to people in the last {days} days."
    counts = " · ".join(f"{name} {n}" for name, n in by_collection(escalations).items())
    return f"Handed over to people, last {days} days: {len(escalations)} question(s); by collection: {counts}"


def audit_line(e: Escalation) -> str:
    """`citebot audit show`: the hand-over of the question."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(e.at))
    where = f" · posted in {e.handover_channel} at ts {e.handover_ts}" if e.handover_ts else ""
    return f"escalated   {when} · to {', '.join(e.escalate_to)} · {state(e)}{where}"
