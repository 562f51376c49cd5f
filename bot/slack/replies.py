"""What the asker sees: the answer in their thread, the modals behind its
buttons, and the bot's own messages (refusal, uncertain, apology, help).

Pure functions, no I/O: a message is `{"text": fallback, "blocks": [...]}`, ready
for `chat.postMessage(channel=..., thread_ts=..., **message)` or `chat.update`;
a modal is a view for `views.open(trigger_id=..., view=...)`. Every piece of
model or KB text is escaped for mrkdwn before our own links and mentions are
added (see bot.slack.mrkdwn). The review channel's card is in
bot.slack.review_card.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block, DividerBlock

from bot.answer.assemble import truncated_note
from bot.i18n import LANGUAGES, Key, message
from bot.models import Answer, Outcome, Source
from bot.slack.blockkit import (
    MAX_FALLBACK_CHARS,
    MAX_MESSAGE_BLOCKS,
    MAX_MODAL_BLOCKS,
    MAX_SECTION_CHARS,
    MESSAGE_TEXT_BUDGET,
    block_text_length,
    button,
    checked_value,
    context,
    contexts,
    headed_section,
    modal,
    multiline_input,
    section,
    to_message,
)
from bot.slack.footnotes import answer_text, source_line, source_lines
from bot.slack.mrkdwn import (
    channel_link,
    clip,
    clip_escaped,
    escape,
    escaped_mrkdwn,
    link as mrkdwn_link,
    mention,
    split_text,
)

ACTION_SOURCES = "citebot_sources"
ACTION_FEEDBACK_UP = "citebot_feedback_up"
ACTION_FEEDBACK_DOWN = "citebot_feedback_down"
CALLBACK_FEEDBACK_REASON = "citebot_feedback_reason"
ACTION_POST_IN_CHANNEL = "citebot_post_in_channel"
ACTION_ANSWER_PRIVATELY = "citebot_answer_privately"
FEEDBACK_REASON_BLOCK = "citebot_feedback_reason"
FEEDBACK_REASON_ACTION = "reason"

# The footnote list must not crowd out the answer: past this many characters (or
# 5 context blocks) it ends with "…and N more", the full list is in the modal.
SOURCES_TEXT_BUDGET = 4000
MAX_SOURCE_BLOCKS = 5
# The modal shows whole passages up to this size; longer ones are cut so that
# one huge chunk cannot push every other footnote out of the 100 blocks.
MAX_PASSAGE_CHARS = 2 * MAX_SECTION_CHARS
QUESTION_CHARS = 1000
# A shortened answer does not end in a stub of a few words before its "shortened" note.
MIN_PIECE_CHARS = 200
# The compact form of an answer, for when Slack refuses the full one
# (msg_too_long): the start of the answer in a few sections, the footnotes
# (fewer of them listed, all of them in the Sources modal) and the buttons.
COMPACT_TEXT_BUDGET = 4000
COMPACT_BODY_BLOCKS = 3
COMPACT_SOURCES_CHARS = 1500
COMPACT_SOURCE_BLOCKS = 2
COMPACT_FALLBACK_CHARS = 3000


# -- the notes under an answer (Answer.notes)

# The partial note in any language: an answer flagged partial that carries none
# gets one, and one that carries it, in whatever language, gets no second.
_PARTIAL_NOTES = frozenset(message(Key.PARTIAL, language) for language in LANGUAGES)


def _notes_for(answer: Answer, language: str) -> list[str]:
    if answer.partial and not _PARTIAL_NOTES.intersection(answer.notes):
        return [message(Key.PARTIAL, language), *answer.notes]
    return list(answer.notes)


# -- the answer


def _answer_actions(answer: Answer, ref: str, language: str) -> ActionsBlock | None:
    elements = []
    if answer.sources:
        elements.append(button(message(Key.SOURCES, language), ACTION_SOURCES, ref, style="primary"))
    if answer.outcome is Outcome.ANSWERED:
        elements.append(button(message(Key.HELPFUL, language), ACTION_FEEDBACK_UP, ref))
        elements.append(button(message(Key.NOT_HELPFUL, language), ACTION_FEEDBACK_DOWN, ref))
    return ActionsBlock(elements=elements) if elements else None


def _body_blocks(body: str, max_chars: int, max_blocks: int, shortened: str) -> list[Block]:
    """The answer's sections within the budget; a cut answer ends with a visible note."""
    pieces = split_text(escaped_mrkdwn(body), MAX_SECTION_CHARS)
    if sum(map(len, pieces)) <= max_chars and len(pieces) <= max_blocks:
        return [section(p) for p in pieces]
    room_chars, room_blocks = max_chars - len(shortened), max_blocks - 1  # the note takes a block and its text
    kept: list[str] = []
    for piece in pieces:
        if room_blocks <= 0 or room_chars < MIN_PIECE_CHARS:
            break
        if len(piece) > room_chars:
            piece = clip(piece, room_chars)
        kept.append(piece)
        room_chars -= len(piece)
        room_blocks -= 1
    return [*(section(p) for p in kept), context([shortened])]


def answer_message(
    answer: Answer, *, language: str, ref: str, reviewed_by: str | None = None, compact: bool = False
) -> dict[str, Any]:
    """The answer in the asker's thread: text with [n] markers, the footnote list,
    and the Sources and feedback buttons, whose value is `ref` (e.g. the answer id).

    `reviewed_by` is the user id of the reviewer who approved or wrote the answer.
    Refused, uncertain and failed answers carry the bot's own sentence in
    `answer.answer`; they get no feedback buttons. `answer.notes` are shown apart
    from the body, in smaller print. `compact`: the smaller form
    posted when Slack refused the full one as too long.
    """
    checked_value(ref)
    body, notes = answer.answer.rstrip(), _notes_for(answer, language)
    tail: list[Block] = []
    tail += contexts([escape(n) for n in notes])
    if reviewed_by:
        tail.append(context([message(Key.REVIEWED_BY, language, reviewer=mention(reviewed_by))]))
    if compact:
        tail += contexts(source_lines(answer.sources, language, COMPACT_SOURCES_CHARS, COMPACT_SOURCE_BLOCKS))
    else:
        tail += contexts(source_lines(answer.sources, language, SOURCES_TEXT_BUDGET, MAX_SOURCE_BLOCKS))
    if (buttons := _answer_actions(answer, ref, language)) is not None:
        tail.append(buttons)
    shortened = escape(message(Key.SHORTENED if answer.sources else Key.SHORTENED_NO_SOURCES, language))
    budget = COMPACT_TEXT_BUDGET if compact else MESSAGE_TEXT_BUDGET
    blocks = _body_blocks(
        body,
        max_chars=budget - block_text_length(tail),
        max_blocks=COMPACT_BODY_BLOCKS if compact else MAX_MESSAGE_BLOCKS - len(tail),
        shortened=shortened,
    )
    fallback = answer_text(answer, language, COMPACT_FALLBACK_CHARS if compact else MAX_FALLBACK_CHARS)
    return to_message(fallback, blocks + tail)


# -- /citebot: the answer only its asker sees, and the same answer posted for everyone


def with_post_in_channel(msg: dict[str, Any], *, ref: str, language: str) -> dict[str, Any]:
    """`msg` (an answer_message) with a "Post in channel" button beside its other buttons.

    The button's value is the answer's id: the click posts the stored answer
    record, not this copy of it, so nothing the asker's client sends is posted.
    """
    share = button(message(Key.POST_IN_CHANNEL, language), ACTION_POST_IN_CHANNEL, checked_value(ref)).to_dict()
    blocks = [dict(b) for b in msg["blocks"]]
    if blocks and blocks[-1].get("type") == "actions":
        blocks[-1]["elements"] = [*blocks[-1]["elements"], share]
    elif len(blocks) < MAX_MESSAGE_BLOCKS:
        blocks.append(ActionsBlock(elements=[share]).to_dict())
    return {**msg, "blocks": blocks}


def shared_message(msg: dict[str, Any], *, asker: str | None, language: str) -> dict[str, Any]:
    """The stored answer as posted for everyone: who asked, under it, where a block is left."""
    blocks = list(msg["blocks"])
    if asker and len(blocks) < MAX_MESSAGE_BLOCKS:
        blocks.append(context([message(Key.SHARED_BY, language, asker=mention(asker))]).to_dict())
    return {**msg, "blocks": blocks}


def posted_copy(msg: dict[str, Any], *, channel: str, link: str | None, language: str) -> dict[str, Any]:
    """The asker's copy once "Post in channel" posted it: the stored answer (which never had
    the button), and a line saying where it went, so there is nothing left to click twice."""
    note = message(Key.POSTED_IN_CHANNEL, language, channel=channel_link(channel))
    if link:
        note = f"{note} {mrkdwn_link(link, message(Key.OPEN_POST, language))}"
    blocks = list(msg["blocks"])
    if len(blocks) < MAX_MESSAGE_BLOCKS:  # a full answer keeps all of itself; the button is gone either way
        blocks.append(context([note]).to_dict())
    return {**msg, "blocks": blocks}


# -- the Sources modal


def sources_modal(answer_sources: list[Source], *, question: str, language: str) -> dict[str, Any]:
    """The modal behind the Sources button: each footnote with its passage."""
    blocks: list[Block] = [
        headed_section(message(Key.QUESTION, language), clip_escaped(question, QUESTION_CHARS)),
        DividerBlock(),
    ]
    room = MAX_MODAL_BLOCKS - len(blocks) - 1  # one block stays free for "N more are not shown"
    for i, source in enumerate(answer_sources):
        source_blocks = _passage_blocks(source, language)
        if len(source_blocks) > room:
            left = len(answer_sources) - i
            blocks.append(context([escape(message(Key.MORE_PASSAGES, language, count=left))]))
            break
        blocks += source_blocks
        room -= len(source_blocks)
    return modal(message(Key.SOURCES, language), blocks, close=message(Key.CLOSE, language))


def notice_modal(title: Key, text: Key, *, language: str) -> dict[str, Any]:
    """A modal with one of the bot's own sentences (the Sources modal for someone it is not open to)."""
    return modal(message(title, language), [section(escape(message(text, language)))], close=message(Key.CLOSE, language))


def _passage_blocks(source: Source, language: str) -> list[Block]:
    heading = f"*{source_line(source)}*"
    passage = escaped_mrkdwn(source.passage)
    if not passage.strip():
        return [section(heading), context([escape(message(Key.NO_PASSAGE, language))]), DividerBlock()]
    shortened = len(passage) > MAX_PASSAGE_CHARS
    pieces = split_text(clip(passage, MAX_PASSAGE_CHARS), MAX_SECTION_CHARS)
    blocks: list[Block] = [section(heading), *(section(p) for p in pieces)]
    if shortened:
        blocks.append(context([escape(message(Key.PASSAGE_SHORTENED, language))]))
    return blocks + [DividerBlock()]


# -- the bot's own messages


def _notice(text: str, notes: list[str] | None = None) -> dict[str, Any]:
    """A message in the bot's own words: the sentence, and any notes in smaller print."""
    notes = notes or []
    blocks = [section(p) for p in split_text(escape(text), MAX_SECTION_CHARS)]
    fallback = "\n\n".join([text, *notes])
    return to_message(escape(fallback), [*blocks, *contexts([escape(n) for n in notes])])


def refusal_message(*, language: str, question_limit: int | None = None) -> dict[str, Any]:
    """The KB has nothing on the question. `question_limit`: the question was cut to that length."""
    return _notice(message(Key.REFUSAL, language), truncated_note(language, question_limit))


def uncertain_message(*, language: str, question_limit: int | None = None) -> dict[str, Any]:
    """No answer could be backed by the KB; a reviewer may follow up in the thread."""
    return _notice(message(Key.UNCERTAIN, language), truncated_note(language, question_limit))


def notice_message(key: Key, *, language: str) -> dict[str, Any]:
    """One of the bot's own sentences as a message (no KB text in it)."""
    return _notice(message(key, language))


def error_message(*, language: str) -> dict[str, Any]:
    """The apology when the model failed past all retries or used up the question's time."""
    return _notice(message(Key.LLM_DOWN, language))


def failure_message(*, language: str) -> dict[str, Any]:
    """The apology when something other than the model failed past all retries."""
    return _notice(message(Key.FAILED, language))


def kb_not_ready_message(*, language: str) -> dict[str, Any]:
    """The index is missing or empty: the question cannot be answered, and that is no fault of the question."""
    return _notice(message(Key.KB_NOT_READY, language))


def help_message(*, language: str) -> dict[str, Any]:
    """The reply to an empty mention."""
    return _notice(message(Key.HELP, language))


def command_help_message(*, language: str) -> dict[str, Any]:
    """The reply to /citebot without a question: how to ask."""
    return _notice(message(Key.COMMAND_HELP, language))


def looking_up_message(*, language: str) -> dict[str, Any]:
    """/citebot's acknowledgement: the answer follows, to the asker alone."""
    return _notice(message(Key.LOOKING_UP, language))


# -- feedback


def feedback_reason_modal(answer_ref: str, *, language: str = "en") -> dict[str, Any]:
    """After 👎: an optional reason. `private_metadata` carries the answer's reference."""
    field = multiline_input(
        FEEDBACK_REASON_BLOCK,
        FEEDBACK_REASON_ACTION,
        label=message(Key.FEEDBACK_LABEL, language),
        placeholder=message(Key.FEEDBACK_PLACEHOLDER, language),
        optional=True,  # a thumbs-down alone is already worth recording
    )
    return modal(
        message(Key.FEEDBACK_TITLE, language),
        [field],
        close=message(Key.CANCEL, language),
        submit=message(Key.FEEDBACK_SUBMIT, language),
        callback_id=CALLBACK_FEEDBACK_REASON,
        private_metadata=answer_ref,
    )


def feedback_reason_from(view: dict[str, Any]) -> str:
    """The reason typed into the feedback modal (view_submission payload's `view`), or ""."""
    values = view.get("state", {}).get("values", {})
    return (values.get(FEEDBACK_REASON_BLOCK, {}).get(FEEDBACK_REASON_ACTION, {}).get("value") or "").strip()


def better_in_private_message(question_id: str, *, language: str) -> dict[str, Any]:
    """The note to an asker who may read more than the channel: the bot's own words and a button, no KB text."""
    note = _notice(message(Key.BETTER_IN_PRIVATE, language))
    actions = ActionsBlock(elements=[button(message(Key.ANSWER_PRIVATELY, language), ACTION_ANSWER_PRIVATELY,
                                            question_id)])
    return {**note, "blocks": [*note["blocks"], actions.to_dict()]}
