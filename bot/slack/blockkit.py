"""Block Kit: Slack's limits, the blocks and views we build, and the plain dicts they become.

Blocks and modals are slack_sdk's models (slack_sdk.models.blocks, .views),
so Slack's schema is checked where we build, not when Slack refuses a post.
slack_sdk validates lengths and raises; it does not clip. So every text is cut
to its limit here or by the caller (split_text, clip, the budgets in
bot.slack.replies and bot.slack.review_card) before a model sees it, and
`to_message` / `modal` turn the models into the plain dicts that
chat.postMessage, chat.update and views.open take (and the records store).
The text inside is mrkdwn built by bot.slack.mrkdwn, escaped before it gets here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack.mrkdwn import clip, heading

# Slack's limits (Block Kit reference; the cumulative one is observed, not documented).
MAX_MESSAGE_BLOCKS = 50
MAX_MODAL_BLOCKS = 100
MAX_SECTION_CHARS = 3000  # section text, context element text
MAX_CONTEXT_ELEMENTS = 10
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_VIEW_TITLE = 24  # modal title, close and submit labels
MAX_PRIVATE_METADATA = 3000
MAX_HEADER_CHARS = 150
MAX_LABEL_CHARS = 2000  # input label and hint
MAX_PLACEHOLDER_CHARS = 150
MAX_INPUT_CHARS = 3000  # plain_text_input max_length
MAX_FALLBACK_CHARS = 40000  # chat.postMessage truncates `text` past this
# chat.postMessage answers msg_blocks_too_long once the text of all blocks
# together passes roughly 12,000 characters, well before 50 full sections;
# 10,000 leaves room for the JSON around the text.
MESSAGE_TEXT_BUDGET = 10000


# -- blocks


def section(text: str) -> SectionBlock:
    """`text`: mrkdwn of at most MAX_SECTION_CHARS characters (split_text cuts longer text)."""
    return SectionBlock(text=MarkdownTextObject(text=text))


def headed_section(title: str, body: str) -> SectionBlock:
    """The one way a section with a heading is written: `title` in bold, then `body` (mrkdwn, escaped already)."""
    return section(f"{heading(title)}\n{body}")


def context(texts: Iterable[str], block_id: str | None = None) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=t) for t in texts], block_id=block_id)


def contexts(lines: list[str]) -> list[ContextBlock]:
    """One element per line, a new context block every 10 (Slack's element limit)."""
    return [context(lines[i : i + MAX_CONTEXT_ELEMENTS]) for i in range(0, len(lines), MAX_CONTEXT_ELEMENTS)]


def plain_text(text: str, limit: int) -> PlainTextObject:
    return PlainTextObject(text=clip(text, limit), emoji=True)


def header(text: str) -> HeaderBlock:
    return HeaderBlock(text=plain_text(text, MAX_HEADER_CHARS))


def button(label: str, action_id: str, value: str, style: str | None = None) -> ButtonElement:
    return ButtonElement(
        text=plain_text(label, MAX_BUTTON_TEXT), action_id=action_id, value=checked_value(value), style=style
    )


def checked_value(value: str, limit: int = MAX_BUTTON_VALUE) -> str:
    """A reference id for a button or view: Slack rejects the whole message for an
    oversized one, so a caller's mistake fails here, where it is easy to find."""
    if not value or not isinstance(value, str):
        raise ValueError("a button or view reference must be a non-empty string")
    if len(value) > limit:
        raise ValueError(f"reference is {len(value)} characters; Slack allows {limit}")
    return value


def multiline_input(
    block_id: str,
    action_id: str,
    *,
    label: str,
    placeholder: str,
    hint: str | None = None,
    optional: bool | None = None,
    min_length: int | None = None,
) -> InputBlock:
    """A modal's free-text field, up to what Slack lets a person type into one."""
    return InputBlock(
        block_id=block_id,
        label=plain_text(label, MAX_LABEL_CHARS),
        hint=plain_text(hint, MAX_LABEL_CHARS) if hint else None,
        optional=optional,
        element=PlainTextInputElement(
            action_id=action_id,
            multiline=True,
            min_length=min_length,
            max_length=MAX_INPUT_CHARS,
            placeholder=plain_text(placeholder, MAX_PLACEHOLDER_CHARS),
        ),
    )


def checkbox_input(block_id: str, action_id: str, *, label: str, option: str, value: str) -> InputBlock:
    """A modal's single optional checkbox (ticked: `value` among the state's selected options)."""
    return InputBlock(
        block_id=block_id,
        label=plain_text(label, MAX_LABEL_CHARS),
        optional=True,
        element=CheckboxesElement(action_id=action_id, options=[Option(text=plain_text(option, MAX_BUTTON_TEXT), value=value)]),
    )


# -- the plain dicts Slack's Web API takes


def to_dicts(blocks: Sequence[Block]) -> list[dict[str, Any]]:
    """The blocks as JSON-ready dicts; slack_sdk checks each against Slack's schema on the way."""
    return [block.to_dict() for block in blocks]


def to_message(fallback: str, blocks: Sequence[Block]) -> dict[str, Any]:
    """`{"text": ..., "blocks": [...]}` for chat.postMessage / chat.update (`**message`)."""
    return {"text": fallback, "blocks": to_dicts(blocks)}


def modal(
    title: str,
    blocks: Sequence[Block],
    *,
    close: str,
    submit: str | None = None,
    callback_id: str | None = None,
    private_metadata: str | None = None,
) -> dict[str, Any]:
    """A modal view for views.open, as a dict."""
    view = View(
        type="modal",
        title=plain_text(title, MAX_VIEW_TITLE),
        close=plain_text(close, MAX_VIEW_TITLE),
        submit=plain_text(submit, MAX_VIEW_TITLE) if submit else None,
        blocks=list(blocks[:MAX_MODAL_BLOCKS]),
        callback_id=callback_id,
        private_metadata=None if private_metadata is None else checked_value(private_metadata, MAX_PRIVATE_METADATA),
    )
    return view.to_dict()


def block_text_length(blocks: Sequence[Block | dict[str, Any]]) -> int:
    """Characters in every `text` string of the blocks: what Slack's cumulative limit counts."""
    total = 0
    stack: list[Any] = [b.to_dict() if isinstance(b, Block) else b for b in blocks]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "text" and isinstance(value, str):
                    total += len(value)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return total
