"""The Home tab: one view per user, published with views.publish on app_home_opened.

Pure functions, no I/O: `home_view(data)` turns what bot.home.data read
into a `home` view dict. What one user's tab may show another user is the
rule here: the asker's own questions only, and on a reviewer's tab no text
of a direct message (its review says only that it came from one; the card
in the review channel has the rest, or, for a review Slack refused the card
of, the Write answer modal, which only the reviewer sees). A review without
a card carries the card's buttons: the tab is where it is decided.

Slack refuses a view of more than 100 blocks, so every list has a fixed
share except the open reviews, which get what is left and end with how many
did not fit. Every text is escaped and clipped to its block's limit.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block, DividerBlock
from slack_sdk.models.views import View

from bot.home.data import GAP_DAYS, PENDING, HomeData, KbState, MyQuestion
from bot.i18n import Key, message
from bot.models import Outcome
from bot.review.gaps import Gap
from bot.slack.blockkit import MAX_MODAL_BLOCKS, MAX_SECTION_CHARS, context, header, section
from bot.slack.mrkdwn import channel_link, clip, clip_escaped, escape, heading, link, slack_date
from bot.slack.review_card import review_buttons
from bot.slack.workspace import message_link
from bot.store.records import ReviewRecord, shown_collections

# Slack's limit for a Home tab is the modal's: 100 blocks.
MAX_HOME_BLOCKS = MAX_MODAL_BLOCKS
# One line of a list: long questions are cut so ten of them fit one section.
LINE_CHARS = 250
# A review without a card shows this much of its draft above its buttons.
DRAFT_PREVIEW_CHARS = 1200
# The block id of a review's buttons on the Home tab, + the review id.
HOME_REVIEW_BLOCK = "citebot_home_review:"

OUTCOME_LABELS = {
    str(Outcome.ANSWERED): Key.HOME_ANSWERED,
    str(Outcome.UNCERTAIN): Key.HOME_UNCERTAIN,
    str(Outcome.REFUSED): Key.HOME_REFUSED,
    str(Outcome.ERROR): Key.HOME_FAILED,
    PENDING: Key.HOME_PENDING,
}


def home_view(data: HomeData, *, language: str = "en") -> dict[str, Any]:
    head: list[Block] = [header("citebot"), section(_how_to_ask(language)), DividerBlock()]
    head += [section(_my_questions(data.questions, language)), DividerBlock(), section(_kb(data.kb, language))]
    tail: list[Block] = []
    if data.is_reviewer:
        tail = [DividerBlock(), section(_gaps(data.gaps, language))]
        head.append(DividerBlock())
        head.append(section(heading(message(Key.HOME_REVIEWS, language, count=len(data.reviews)))))
        room = MAX_HOME_BLOCKS - len(head) - len(tail)
        head += review_blocks(data.reviews, data.now, room, language, data.workspace_url, data.reads)
    return View(type="home", blocks=head + tail).to_dict()


def review_blocks(reviews: list[ReviewRecord], now: float, room: int, language: str = "en",
                  workspace_url: str | None = None, reads: frozenset[str] | None = None) -> list[Block]:
    """The reviews, oldest first, in at most `room` blocks: a section each, and under one
    without a card its buttons; the last block says how many more there are, when they do
    not all fit."""
    if not reviews:
        return [context([message(Key.HOME_NO_REVIEWS, language)])]
    out: list[Block] = []
    for i, record in enumerate(reviews):
        blocks = _review_blocks(record, now, language, workspace_url, reads)
        later = len(reviews) - i - 1
        # Before each review there is room for the "more" line; a review goes in only if that stays so.
        if len(out) + len(blocks) + (1 if later else 0) > room:
            return out + [context([message(Key.HOME_MORE_REVIEWS, language, more=len(reviews) - i)])]
        out += blocks
    return out


def _review_blocks(record: ReviewRecord, now: float, language: str, workspace_url: str | None,
                   reads: frozenset[str] | None = None) -> list[Block]:
    if record.restricted and reads is not None and shown_collections(record) <= reads:
        # A restricted review's card shows neither draft nor buttons: here, to a reviewer who may read every
        # one of its sources, both.
        text = _review(record, now, language, workspace_url, open_to_viewer=True)
        return [section(text), review_buttons(record, block_id=f"{HOME_REVIEW_BLOCK}{record.review_id}")]
    text = _review(record, now, language, workspace_url)
    if has_card(record):
        return [section(text)]
    # Slack refused the card: the Home tab is the one place left to decide it, with the
    # card's own buttons. A block id per review, as Slack wants them unique in a view.
    return [section(text), review_buttons(record, block_id=f"{HOME_REVIEW_BLOCK}{record.review_id}")]


def has_card(record: ReviewRecord) -> bool:
    return bool(record.card_channel and record.card_ts)


def _how_to_ask(language: str) -> str:
    return "\n".join([
        heading(message(Key.HOME_HOW_TO_ASK, language)),
        escape(message(Key.HELP, language)),
        message(Key.HOME_WHERE, language),
    ])


def _my_questions(questions: list[MyQuestion], language: str) -> str:
    title = heading(message(Key.HOME_MY_QUESTIONS, language))
    if not questions:
        return f"{title}\n{message(Key.HOME_NONE_YET, language)}"
    lines = [title]
    for q in questions:
        key = OUTCOME_LABELS.get(q.outcome)
        label = message(key, language) if key else escape(q.outcome)
        lines.append(f"{label} · {slack_date(q.at)} · {clip_escaped(' '.join(q.text.split()), LINE_CHARS)}")
    return clip("\n".join(lines), MAX_SECTION_CHARS)


def _kb(kb: KbState, language: str) -> str:
    lines = [heading(message(Key.HOME_KB, language))]
    if kb.generation:
        embedder = escape(kb.embedder) if kb.embedder else message(Key.HOME_NO_EMBEDDER, language)
        lines.append(message(Key.HOME_INDEX, language, generation=escape(kb.generation), entries=kb.entries,
                             chunks=kb.chunks, built_at=escape(kb.built_at or "?"), embedder=embedder))
    if kb.problem:
        lines.append(f"⚠️ {clip_escaped(kb.problem, 1000)}")
    return "\n".join(lines)


def _review(record: ReviewRecord, now: float, language: str, workspace_url: str | None, *,
            open_to_viewer: bool = False) -> str:
    """`open_to_viewer`: a restricted review, shown to a reviewer who may read its sources: with its draft."""
    question = (
        f"_{message(Key.HOME_DM_QUESTION, language)}_"
        if record.is_dm
        else clip_escaped(" ".join(record.question.split()), LINE_CHARS)
    )
    kinds = ", ".join(sorted({v.kind for v in record.violations})) or record.kind
    if record.card_channel and record.card_ts:
        if workspace_url:
            card = message_link(workspace_url, record.card_channel, record.card_ts)
            where = link(card, message(Key.HOME_OPEN_CARD, language))
        else:
            # Slack could not say the workspace's address: the channel, which Slack links itself.
            where = f"{message(Key.HOME_OPEN_CARD, language)}: {channel_link(record.card_channel)}"
    else:
        # The review channel never got it: the reason is what someone must fix.
        reason = escape(record.card_error or message(Key.HOME_NOT_POSTED, language))
        where = f"⚠️ {message(Key.HOME_NO_CARD, language)}: `{reason}` · {message(Key.HOME_DECIDE_HERE, language)}"
        if record.decision_error:
            where += f"\n⚠️ {message(Key.DECISION_FAILED, language, reason=f'`{escape(record.decision_error)}`')}"
    # What Approve would post, as the card would have shown it (a DM's stays off the tab: Write answer shows
    # it to the reviewer alone); a restricted review's only to a reviewer who may read its sources.
    preview = open_to_viewer or (not (record.card_channel and record.card_ts) and not record.restricted)
    if preview and not record.is_dm and record.draft.strip():
        title = message(Key.FLAGGED_ANSWER if record.kind == "feedback" else Key.REJECTED_DRAFT, language)
        where += f"\n*{escape(title)}*\n>{clip_escaped(' '.join(record.draft.split()), DRAFT_PREVIEW_CHARS)}"
    old = message(Key.HOME_AGE, language, age=age(now - record.created_at))
    return clip(f"*{old}* · {escape(kinds)} · {question}\n{where}", MAX_SECTION_CHARS)


def age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def _gaps(gaps: list[Gap], language: str) -> str:
    lines = [heading(message(Key.HOME_GAPS, language, days=GAP_DAYS)) + " (`citebot review gaps`)"]
    if not gaps:
        lines.append(message(Key.HOME_NO_GAPS, language))
    for g in gaps:
        lines.append(f"{g.count}× {clip_escaped(g.representative, LINE_CHARS)}")
    return clip("\n".join(lines), MAX_SECTION_CHARS)
