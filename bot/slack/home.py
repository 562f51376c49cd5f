"""The Home tab: one view per user, published with views.publish on app_home_opened.

Pure functions, no I/O: `home_view(data)` turns what bot.slack.home_data read
into a `home` view dict. What one user's tab may show another user is the
rule here: the asker's own questions only, and on a reviewer's tab no text
of a direct message (its review says only that it came from one; the card
in the review channel has the rest).

Slack refuses a view of more than 100 blocks, so every list has a fixed
share except the open reviews, which get what is left and end with how many
did not fit. Every text is escaped and clipped to its block's limit.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block, DividerBlock
from slack_sdk.models.views import View

from bot.i18n import Key, message
from bot.models import Outcome
from bot.review.gaps import Gap
from bot.slack.blockkit import MAX_MODAL_BLOCKS, MAX_SECTION_CHARS, context, header, section
from bot.slack.home_data import GAP_DAYS, PENDING, HomeData, KbState, MyQuestion
from bot.slack.mrkdwn import clip, clip_escaped, escape, heading, link, slack_date
from bot.store.records import ReviewRecord

# Slack's limit for a Home tab is the modal's: 100 blocks.
MAX_HOME_BLOCKS = MAX_MODAL_BLOCKS
# One line of a list: long questions are cut so ten of them fit one section.
LINE_CHARS = 250

OUTCOME_LABELS = {
    str(Outcome.ANSWERED): "✅ answered",
    str(Outcome.UNCERTAIN): "🤔 not sure (sent to a reviewer)",
    str(Outcome.REFUSED): "🚫 not in the knowledge base",
    str(Outcome.ERROR): "⚠️ failed",
    PENDING: "⏳ being answered",
}


def home_view(data: HomeData, *, language: str = "en") -> dict[str, Any]:
    head: list[Block] = [header("citebot"), section(_how_to_ask(language)), DividerBlock()]
    head += [section(_my_questions(data.questions, data.now)), DividerBlock(), section(_kb(data.kb))]
    tail: list[Block] = []
    if data.is_reviewer:
        tail = [DividerBlock(), section(_gaps(data.gaps))]
        head.append(DividerBlock())
        head.append(section(heading(f"Open reviews ({len(data.reviews)}), oldest first")))
        room = MAX_HOME_BLOCKS - len(head) - len(tail)
        head += review_blocks(data.reviews, data.now, room)
    return View(type="home", blocks=head + tail).to_dict()


def review_blocks(reviews: list[ReviewRecord], now: float, room: int) -> list[Block]:
    """One section per review, oldest first, in at most `room` blocks (the last one
    saying how many more there are, when they do not all fit)."""
    if not reviews:
        return [context(["No open reviews."])]
    if len(reviews) > room:
        shown = reviews[: max(0, room - 1)]
        more = len(reviews) - len(shown)
        return [section(_review(r, now)) for r in shown] + [
            context([f"…and {more} more: `citebot review list` shows them all."])
        ]
    return [section(_review(r, now)) for r in reviews]


def _how_to_ask(language: str) -> str:
    return "\n".join([
        heading("How to ask"),
        escape(message(Key.HELP, language)),
        "In a channel, mention @citebot (invite it first with `/invite @citebot`); "
        "privately, write to it in the Messages tab.",
    ])


def _my_questions(questions: list[MyQuestion], now: float) -> str:
    if not questions:
        return heading("Your recent questions") + "\nNone yet."
    lines = [heading("Your recent questions")]
    for q in questions:
        label = OUTCOME_LABELS.get(q.outcome, escape(q.outcome))
        lines.append(f"{label} · {slack_date(q.at)} · {clip_escaped(' '.join(q.text.split()), LINE_CHARS)}")
    return clip("\n".join(lines), MAX_SECTION_CHARS)


def _kb(kb: KbState) -> str:
    lines = [heading("Knowledge base")]
    if kb.generation:
        embedder = escape(kb.embedder) if kb.embedder else "none (keyword search only)"
        lines.append(
            f"Index {escape(kb.generation)} · {kb.entries} entries, {kb.chunks} chunks · "
            f"last indexed {escape(kb.built_at or '?')} · embedder {embedder}"
        )
    if kb.problem:
        lines.append(f"⚠️ {clip_escaped(kb.problem, 1000)}")
    return "\n".join(lines)


def _review(record: ReviewRecord, now: float) -> str:
    question = (
        "_a question asked in a direct message_"
        if record.is_dm
        else clip_escaped(" ".join(record.question.split()), LINE_CHARS)
    )
    kinds = ", ".join(sorted({v.kind for v in record.violations})) or record.kind
    if record.card_channel and record.card_ts:
        where = link(card_url(record.card_channel, record.card_ts), "open the card")
    else:
        # The review channel never got it: the reason is what someone must fix.
        where = f"⚠️ no card: `{escape(record.card_error or 'not posted yet')}`"
    return clip(f"*{age(now - record.created_at)} old* · {escape(kinds)} · {question}\n{where}", MAX_SECTION_CHARS)


def card_url(channel: str, ts: str) -> str:
    """The message's archive link, built rather than asked for (chat.getPermalink) so the
    tab costs no Slack call per review; Slack sends it on to the workspace's message."""
    return f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"


def age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def _gaps(gaps: list[Gap]) -> str:
    lines = [heading(f"Top gaps, last {GAP_DAYS} days") + " (`citebot review gaps` has the whole report)"]
    if not gaps:
        lines.append("No unanswered questions.")
    for g in gaps:
        lines.append(f"{g.count}× {clip_escaped(g.representative, LINE_CHARS)}")
    return clip("\n".join(lines), MAX_SECTION_CHARS)
