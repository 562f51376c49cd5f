"""The review channel's card for a rejected draft, its decided form, and the modal
in which a reviewer writes the answer.

Button values carry only the review id: the record (with the asker and the
question) lives in Redis, so nothing private travels through Slack's payloads.
A question asked in a DM shows neither the asker nor the DM channel on its card;
the review channel is the one place besides the DM that sees its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block

from bot.i18n import Key, message
from bot.models import Source, Violation
from bot.slack.blockkit import (
    MAX_SECTION_CHARS,
    button,
    checkbox_input,
    checked_value,
    context,
    contexts,
    headed_section,
    header,
    modal,
    multiline_input,
    section,
    to_message,
)
from bot.slack.footnotes import source_lines
from bot.slack.mrkdwn import (
    channel_link,
    clip,
    clip_escaped,
    escape,
    escaped_mrkdwn,
    heading,
    mention,
    slack_date,
    split_text,
)
from bot.store.records import ReviewRecord, ReviewStatus

ACTION_REVIEW_APPROVE = "citebot_review_approve"
ACTION_REVIEW_ANSWER = "citebot_review_answer"
ACTION_REVIEW_DISMISS = "citebot_review_dismiss"
CALLBACK_REVIEW_ANSWER_SUBMIT = "citebot_review_answer_submit"
REVIEW_ANSWER_BLOCK = "citebot_review_answer"
REVIEW_ANSWER_ACTION = "answer"
# The box under the answer: ticked, the worker also writes the answer as a draft KB entry (bot.review.drafts).
SAVE_DRAFT_BLOCK = "citebot_review_save_draft"
SAVE_DRAFT_ACTION = "save_draft"
SAVE_DRAFT_VALUE = "draft"
REVIEW_ACTIONS_BLOCK = "citebot_review_actions"

# Character budgets that keep a card under Slack's cumulative block-text limit
# (blockkit.MESSAGE_TEXT_BUDGET) whatever the record holds.
QUESTION_CHARS = 1500
DRAFT_CHARS = 4000
DRAFT_CHARS_DECIDED = 2000  # a decided card also shows the posted answer
POSTED_ANSWER_CHARS = 2000
MAX_VIOLATIONS = 10
VIOLATION_DETAIL_CHARS = 200
# Tries named one line each (a first draft and its regeneration: two).
MAX_TRIES = 3
VIOLATION_KIND_CHARS = 40  # the verifier's names are short; a record is not trusted to keep them so
SOURCES_CHARS = 1500
MAX_SOURCE_BLOCKS = 2

_DECIDED_LINE = {
    ReviewStatus.APPROVED: Key.APPROVED_BY,
    ReviewStatus.ANSWERED: Key.ANSWERED_BY,
    ReviewStatus.DISMISSED: Key.DISMISSED_BY,
}


def _is_dm(review: ReviewRecord) -> bool:
    # A D… channel is a DM even if a record forgot the flag: privacy must not hang on one field.
    return review.is_dm or review.channel.startswith("D")


# -- the card


def _asked_line(review: ReviewRecord, language: str) -> str:
    parts = [_asked_by(review, language)]
    # A 👎 card names who flagged the answer apart from who asked: often not the same person.
    flagger = None if _is_dm(review) else review.flagged_by
    if flagger:
        parts.append(message(Key.FLAGGED_BY, language, user=mention(flagger)))
    created = slack_date(review.created_at)
    if created:
        parts.append(created)
    return " · ".join(parts)


def _asked_by(review: ReviewRecord, language: str) -> str:
    if _is_dm(review):
        return escape(message(Key.ASKED_IN_DM, language))
    if review.asker and review.channel:
        return message(Key.ASKED_BY, language, user=mention(review.asker), channel=channel_link(review.channel))
    if review.asker:
        return message(Key.ASKED_BY_USER, language, user=mention(review.asker))
    return escape(message(Key.ASKED_BY_USER, language, user="?"))


def _quoted_sections(title: str, text: str, limit: int) -> list[Block]:
    """`title` as the heading, then `text` as a mrkdwn quote, escaped, over as many sections as it needs."""
    lines = escaped_mrkdwn(text.strip()).split("\n")
    # Clipped after escaping and quoting: both add characters, a draft of short lines nearly doubles.
    quoted = clip("\n".join(f">{line}" for line in lines), limit)
    pieces = split_text(quoted, MAX_SECTION_CHARS - len(heading(title)) - 2)  # room for the newline and a re-added ">"
    # A piece cut inside a paragraph starts without the quote mark.
    pieces = [p if p.startswith(">") else f">{p}" for p in pieces] or [">"]
    return [headed_section(title, pieces[0]), *(section(p) for p in pieces[1:])]


def _violation_lines(violations: list[Violation], language: str) -> str:
    if not violations:
        return escape(message(Key.NO_VIOLATIONS, language))
    lines = [
        f"• *{clip_escaped(v.kind, VIOLATION_KIND_CHARS)}*: {clip_escaped(v.detail, VIOLATION_DETAIL_CHARS)}"
        for v in violations[:MAX_VIOLATIONS]
    ]
    if len(violations) > MAX_VIOLATIONS:
        lines.append(escape(message(Key.MORE_VIOLATIONS, language, count=len(violations) - MAX_VIOLATIONS)))
    return "\n".join(lines)


def _card_body(review: ReviewRecord, draft_chars: int) -> list[Block]:
    """Question, draft and why it is here, sources. A feedback record (a 👎 with a
    reason) shows the posted answer and the reason where a rejection shows the
    rejected draft and its violations."""
    language = review.language
    feedback = review.kind == "feedback"
    blocks: list[Block] = [
        header(message(Key.FEEDBACK_HEADING if feedback else Key.REVIEW_HEADING, language)),
        context([_asked_line(review, language)]),
        headed_section(message(Key.QUESTION, language), clip_escaped(review.question, QUESTION_CHARS)),
    ]
    if review.restricted:
        # Draft, violations (they quote it) and sources stay off a card that not every member may read.
        return blocks + [section(escape(message(Key.REVIEW_RESTRICTED, language)))]
    draft_title = message(Key.FLAGGED_ANSWER if feedback else Key.REJECTED_DRAFT, language)
    if review.draft.strip():
        blocks += _quoted_sections(draft_title, review.draft, draft_chars)
    else:
        blocks.append(headed_section(draft_title, escape(message(Key.NO_DRAFT, language))))
    blocks.append(_why_section(review, feedback))
    blocks += _sources_blocks(review.sources, language)
    return blocks


def _why_section(review: ReviewRecord, feedback: bool) -> Block:
    language = review.language
    if feedback:
        reason = (review.feedback_reason or "").strip()
        text = clip_escaped(reason, VIOLATION_DETAIL_CHARS * MAX_VIOLATIONS) if reason else None
        return headed_section(message(Key.FEEDBACK_REASON, language), text or escape(message(Key.NO_REASON, language)))
    tries = [f"• {clip_escaped(t, VIOLATION_DETAIL_CHARS)}" for t in review.tries[:MAX_TRIES]]
    return headed_section(message(Key.VIOLATIONS, language),
                          "\n".join([*tries, _violation_lines(review.violations, language)]))


def _sources_blocks(sources: list[Source], language: str) -> Sequence[Block]:
    title = heading(message(Key.RETRIEVED_SOURCES, language))
    if not sources:
        return [context([title, escape(message(Key.NO_SOURCES, language))])]
    return contexts([title, *source_lines(sources, language, SOURCES_CHARS, MAX_SOURCE_BLOCKS)])


def _fallback(review: ReviewRecord) -> str:
    return escape(message(Key.REVIEW_FALLBACK, review.language, question=clip(review.question, 200)))


def review_card(review: ReviewRecord) -> dict[str, Any]:
    """The card posted to the review channel, in the record's language: question,
    rejected draft, violations, retrieved sources, and the approve / write answer /
    dismiss buttons."""
    if review.restricted:
        # No buttons: Approve would post a draft nobody here saw, and Write answer shows it.
        return to_message(_fallback(review), _card_body(review, DRAFT_CHARS))
    return to_message(_fallback(review), _card_body(review, DRAFT_CHARS) + [review_buttons(review)])


def review_buttons(review: ReviewRecord, block_id: str = REVIEW_ACTIONS_BLOCK) -> ActionsBlock:
    """Approve / write answer / dismiss: on the card, and on a reviewer's Home tab for a
    review whose card Slack refused (the same action ids, so the same listeners decide)."""
    language = review.language
    review_id = checked_value(review.review_id)
    return ActionsBlock(
        elements=[
            button(message(Key.APPROVE, language), ACTION_REVIEW_APPROVE, review_id, style="primary"),
            button(message(Key.WRITE_ANSWER, language), ACTION_REVIEW_ANSWER, review_id),
            button(message(Key.DISMISS, language), ACTION_REVIEW_DISMISS, review_id, style="danger"),
        ],
        block_id=block_id,
    )


def review_card_decided(review: ReviewRecord) -> dict[str, Any]:
    """The card of a decided review (for chat.update): no buttons any more, a line
    saying who decided what and when, and the posted answer if there is one."""
    key = _DECIDED_LINE.get(review.status)
    if key is None:
        raise ValueError(f"review {review.review_id} is {review.status}, not decided")
    language = review.language
    blocks = _card_body(review, DRAFT_CHARS_DECIDED)
    if review.final_answer and review.final_answer.strip() and not review.restricted:
        blocks += _quoted_sections(message(Key.POSTED_ANSWER, language), review.final_answer, POSTED_ANSWER_CHARS)
    when = slack_date(review.decided_at) or "?"
    decided = message(key, language, user=mention(review.decided_by), time=when)
    blocks.append(context([decided]))
    return to_message(f"{_fallback(review)}\n{decided}", blocks)


# -- the reviewer's answer


def review_answer_modal(review: ReviewRecord) -> dict[str, Any]:
    """Opened by the write-answer button; `private_metadata` is the review id, so the
    submission handler finds the record without trusting anything else in the view."""
    language = review.language
    blocks: list[Block] = [headed_section(message(Key.QUESTION, language), clip_escaped(review.question, QUESTION_CHARS))]
    if review.draft.strip():
        blocks += _quoted_sections(message(Key.REJECTED_DRAFT, language), review.draft, DRAFT_CHARS_DECIDED)
    blocks.append(
        multiline_input(
            REVIEW_ANSWER_BLOCK,
            REVIEW_ANSWER_ACTION,
            label=message(Key.YOUR_ANSWER, language),
            hint=message(Key.ANSWER_HINT, language),
            placeholder=message(Key.ANSWER_PLACEHOLDER, language),
            min_length=1,
        )
    )
    blocks.append(
        checkbox_input(
            SAVE_DRAFT_BLOCK,
            SAVE_DRAFT_ACTION,
            label=message(Key.SAVE_DRAFT_LABEL, language),
            option=message(Key.SAVE_DRAFT_OPTION, language),
            value=SAVE_DRAFT_VALUE,
        )
    )
    return modal(
        message(Key.REVIEW_MODAL_TITLE, language),
        blocks,
        close=message(Key.CANCEL, language),
        submit=message(Key.REVIEW_MODAL_SUBMIT, language),
        callback_id=CALLBACK_REVIEW_ANSWER_SUBMIT,
        private_metadata=checked_value(review.review_id),
    )


def review_answer_from(view: dict[str, Any]) -> str:
    """The answer typed into the review modal (view_submission payload's `view`), or ""."""
    values = view.get("state", {}).get("values", {})
    return (values.get(REVIEW_ANSWER_BLOCK, {}).get(REVIEW_ANSWER_ACTION, {}).get("value") or "").strip()


def save_draft_from(view: dict[str, Any]) -> bool:
    """Whether the review modal's "also save as a draft KB entry" box was ticked."""
    values = view.get("state", {}).get("values", {})
    selected = values.get(SAVE_DRAFT_BLOCK, {}).get(SAVE_DRAFT_ACTION, {}).get("selected_options") or []
    return any(isinstance(o, dict) and o.get("value") == SAVE_DRAFT_VALUE for o in selected)
