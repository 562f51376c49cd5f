"""The intake: a Slack event or click turned into a question, and the question into a job on the queue.

Every way of asking (a mention, a DM, the assistant panel, /citebot, the message shortcut, a help channel) makes
its question here (`make_question`) and enqueues it here (`enqueue_question`), so that each is narrowed to its
channel's collections and language, deduplicated and remembered for the asker's Home tab the same way. `AppDeps`
is what the web process's listeners are given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot import metrics
from bot.access.gate import AccessGate
from bot.channels import ChannelPolicy, ChannelsConfig
from bot.config import Settings
from bot.jobs.job import AnswerPayload, Enqueue, HelpPayload, Job, stable_id
from bot.logs import about_question
from bot.models import SlackQuestion, clip_question
from bot.slack.event_text import question_text, scrubbed
from bot.store.asked import AskedIndex
from bot.store.records import Records
from kb_index.analysis import guess_language

log = logging.getLogger(__name__)
# Message subtypes a person asks with; the rest (edits, deletions, joins,
# bot posts...) are not questions.
_QUESTION_SUBTYPES = {None, "file_share", "thread_broadcast"}


@dataclass
class AppDeps:
    settings: Settings
    queue: Enqueue  # bot.jobs.queue JobQueue; the listeners only enqueue
    records: Records
    channels: ChannelsConfig
    # Who may read what (bot.access): the Sources modal is shown only to whoever may read every cited collection.
    # None: made from the app's client, Redis and the index (the web process's own).
    access: AccessGate | None = None


def make_question(event: dict[str, Any], deps: AppDeps, *, is_dm: bool, bot_user_id: str | None = None,
                  policy: ChannelPolicy | None = None) -> SlackQuestion | None:
    """The question an event asks, or None for an event there is nothing to answer into.

    Its collections and language are the channel's (bot.channels), or `policy`'s:
    the assistant panel's questions search what the channel beside it may.

    Slack retries an event it got a 500 for, with the same body, so an odd
    event must never raise here: it would fail on every retry and the
    question would be dropped without a word to anyone.
    """
    channel, ts = _string(event.get("channel")), _string(event.get("ts"))
    if not channel or not ts:
        log.warning("event without %s ignored: no place to answer", "a channel" if not channel else "a ts",
                    extra={"event_type": event.get("type")})
        return None
    settings = deps.settings
    # Text that is not a string is no question: the asker gets the help message.
    raw = question_text(_string(event.get("text")) or "", bot_user_id)
    text, truncated = clip_question(raw, settings.max_question_chars)
    policy = policy or deps.channels.policy(channel, is_dm=is_dm)
    return SlackQuestion(
        id=f"{channel}:{ts}",
        text=text,
        language=policy.language or guess_language(text, default=settings.language),
        collections=list(policy.collections) if policy.collections is not None else None,
        channel=channel,
        user=_string(event.get("user")),
        ts=ts,
        thread_ts=_string(event.get("thread_ts")),
        is_dm=is_dm,
        truncated=truncated,
    )


def _string(value: Any) -> str | None:
    return scrubbed(value) if isinstance(value, str) else None


def feedback_dedupe_id(answer_id: str, user: str, reason: str) -> str:
    return f"feedback:{answer_id}:{user}:{stable_id(reason)}"


def bot_user_id_of(context: Mapping[str, Any] | None, body: dict[str, Any]) -> str | None:
    """The bot's own user id: from auth.test (Bolt's context), else the event's authorizations."""
    user = context.get("bot_user_id") if context is not None else None
    if isinstance(user, str) and user:
        return user
    for authorization in body.get("authorizations") or []:
        if isinstance(authorization, dict) and authorization.get("is_bot") and authorization.get("user_id"):
            return str(authorization["user_id"])
    return None


async def enqueue_question(
    question: SlackQuestion | None, body: dict[str, Any], deps: AppDeps, *, bot_user_id: str | None = None,
    assistant: bool = False,
) -> None:
    """`assistant`: asked in the assistant panel, whose thread shows the worker's progress."""
    if question is None:
        metrics.EVENTS.labels(result="ignored").inc()
        return
    payload = AnswerPayload if question.text else HelpPayload
    job = Job.of(payload(question=question, bot_user_id=bot_user_id, assistant=assistant,
                         handover=offers_handover(deps.channels, question)))
    # Slack retries carry the same event_id; the question id also guards a
    # message that reaches us through two events.
    dedupe = _string(body.get("event_id")) or question.id
    with about_question(question.id):
        added = await deps.queue.enqueue(job, dedupe_id=dedupe)
        await remember_asked(question, deps)
        metrics.EVENTS.labels(result="enqueued" if added else "duplicate").inc()
        log.info(
            "%s %s",
            "question" if question.text else "empty mention",
            "enqueued" if added else "already enqueued (a Slack retry)",
            extra={"event_id": body.get("event_id"), "dm": question.is_dm},
        )


async def remember_asked(question: SlackQuestion, deps: AppDeps) -> None:
    """The question in its asker's list for the Home tab. After the enqueue: a failure here fails
    the request, and Slack's retry (dropped by the queue's dedupe) writes it again."""
    if question.text and question.user:
        await AskedIndex(deps.records.redis).add(
            question.user, question.id, question.text, _asked_at(question.ts), is_dm=question.is_dm
        )


def is_question_in_dm(event: dict[str, Any], bot_user_id: str | None) -> bool:
    """A person's message to the bot; not an edit, a deletion, nor our own or another bot's post."""
    subtype = event.get("subtype")
    if not isinstance(subtype, str | None) or subtype not in _QUESTION_SUBTYPES or event.get("bot_id"):
        return False
    return not (bot_user_id and event.get("user") == bot_user_id)


def _asked_at(ts: str | None) -> float:
    try:
        return float(ts or "")
    except ValueError:
        return time.time()


def offers_handover(channels: ChannelsConfig, question: SlackQuestion) -> bool:
    """The reply to `question` carries "Still need help?": its policy names people to hand over to."""
    return bool(channels.policy(question.channel, is_dm=question.is_dm).escalate_to)
