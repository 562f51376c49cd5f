"""The web process's part of help channels: which channel messages become questions, and the hand-over click.

With the `message.channels` and `message.groups` events Slack sends every
message of every channel the bot is in. Only these go on:
- a person's top-level message (not an edit, a deletion, a join, a bot's
  post) in a channel with `answer: questions` that asks something
  (bot.helpdesk.asks) and does not mention the bot (that one arrives as
  `app_mention` too, and is answered as a mention), within the channel's
  `max_per_hour`: it becomes exactly the job a mention of it would
  (`make_question`, `enqueue_question`), so the worker answers it the same way,
  searching only what the channel may search;
- a person's reply in a thread that was handed over (bot.helpdesk.learning).
Everything else is dropped before any Redis call but that thread lookup; a
message that asks nothing is left alone without a word.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot import metrics
from bot.helpdesk.asks import asks
from bot.helpdesk.handover import ACTION_HANDOVER
from bot.inbound.intake import AppDeps, bot_user_id_of, enqueue_question, is_question_in_dm, make_question
from bot.jobs.job import HandoverPayload, HandoverReplyPayload, Job
from bot.store.audit import AuditTrail
from bot.store.escalations import Escalation, Escalations

log = logging.getLogger(__name__)


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


async def on_channel_message(event: dict[str, Any], body: dict[str, Any], context: Any, deps: AppDeps) -> None:
    """A `message` event from a channel or private channel (not a DM)."""
    channel, ts = _string(event.get("channel")), _string(event.get("ts"))
    bot = bot_user_id_of(context, body)
    if not channel or not ts or not is_question_in_dm(event, bot) or not _string(event.get("user")):
        return  # an edit, a deletion, a join, a bot's post: nobody asks
    raw = event.get("text")
    text = raw if isinstance(raw, str) else ""
    thread_ts = _string(event.get("thread_ts"))
    if thread_ts and thread_ts != ts:
        await _thread_reply(event, channel, thread_ts, text, body, deps)
        return
    policy = deps.channels.policy(channel, is_dm=False)
    if not policy.answers_questions:
        return
    if bot and f"<@{bot}" in text:
        return  # a mention: app_mention brings it
    verdict = asks(text)
    if not verdict:
        metrics.EVENTS.labels(result="not_a_question").inc()
        log.debug("left alone in %s: %s", channel, verdict.reason)
        return
    if policy.max_per_hour is not None and not await Escalations(deps.records.redis).within_cap(
        channel, ts, policy.max_per_hour
    ):
        metrics.EVENTS.labels(result="over_hourly_cap").inc()
        log.info("question in %s left alone: the channel's max_per_hour of %d is reached", channel, policy.max_per_hour)
        return
    await enqueue_question(make_question(event, deps, is_dm=False, bot_user_id=bot), body, deps, bot_user_id=bot)


async def _thread_reply(event: dict[str, Any], channel: str, thread_ts: str, text: str, body: dict[str, Any], deps: AppDeps) -> None:
    """A reply in a thread: worth a job only in a handed-over thread, by someone other than the asker."""
    escalations = Escalations(deps.records.redis)
    question_id = await escalations.in_thread(channel, thread_ts)
    if question_id is None or not text.strip():
        return
    escalation = await escalations.get(question_id)
    user = event["user"]
    if escalation is None or user in (escalation.asker, escalation.requested_by):
        return  # the asker's "thanks" or more detail is no answer to learn from
    job = Job.of(HandoverReplyPayload(question_id=question_id, user=user, text=text, ts=event["ts"]))
    await deps.queue.enqueue(job, dedupe_id=_string(body.get("event_id")) or f"handover-reply:{channel}:{event['ts']}")


async def on_handover_click(body: dict[str, Any], deps: AppDeps) -> None:
    """"Still need help?" clicked: the asker's first click in the thread claims the hand-over and queues it."""
    actions = body.get("actions")
    first = actions[0] if isinstance(actions, list) and actions and isinstance(actions[0], dict) else {}
    question_id = _string(first.get("value"))
    user = _string(_object(body.get("user")).get("id"))
    clicked_in = _object(body.get("channel")).get("id") or _object(body.get("container")).get("channel_id")
    if not question_id or not user:
        return
    record = await deps.records.answer(question_id)
    if record is None or record.channel != clicked_in:
        log.warning("hand-over click for an unknown reply, or from another channel, ignored")
        return
    if record.asker and user != record.asker:
        log.info("hand-over click on %s by %s ignored: only the asker hands their question over", question_id, user)
        return
    policy = deps.channels.policy(record.channel, is_dm=record.is_dm)
    if not policy.escalate_to:
        log.warning("hand-over click on %s ignored: nobody to hand over to (escalate_to) any more", question_id)
        return
    cited = sorted({s.collection for s in record.sources if s.collection})
    escalation = Escalation(
        question_id=question_id, question=record.question, language=record.language, channel=record.channel,
        thread_ts=record.thread_ts, question_ts=_question_ts(question_id, record.is_dm), is_dm=record.is_dm,
        asker=record.asker, requested_by=user, escalate_to=list(policy.escalate_to),
        collections=cited or list(policy.collections or ()), outcome=await _outcome(question_id, deps),
    )
    escalations = Escalations(deps.records.redis)
    if not await escalations.claim(escalation):
        return  # handed over already: a second click does nothing
    job = Job.of(HandoverPayload(question_id=question_id))
    try:
        # The claim lets one click through; a key per job, not per question, so that a click after a
        # hand-over Slack refused (and the worker released) is not taken for a duplicate.
        await deps.queue.enqueue(job, dedupe_id=f"handover:{question_id}:{job.id}")
    except Exception:
        await escalations.release(question_id)
        raise


def _question_ts(question_id: str, is_dm: bool) -> str | None:
    """The asker's message (the question id is channel:ts), for the reaction; none in a DM."""
    return None if is_dm else question_id.rpartition(":")[2] or None


async def _outcome(question_id: str, deps: AppDeps) -> str:
    """What the handed-over reply was (answered, refused, uncertain), from the audit trail."""
    entry = await AuditTrail(deps.records.redis).get(question_id)
    return str(entry.outcome) if entry is not None else ""


def register_handover(app: AsyncApp, deps: AppDeps) -> None:
    """"Still need help?": the button's listener."""

    @app.action(ACTION_HANDOVER)
    async def on_handover(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await on_handover_click(body, deps)
