"""The web process's listeners for /citebot, the "Ask citebot" message shortcut and "Post in channel".

Like the event listeners (bot.inbound.listeners), each one only turns Slack's
payload into a job and acks once the job is in Redis; the worker answers.

- `/citebot <question>`: answered to the asker alone, through the command's
  response_url (the job's `ephemeral`), with a "Post in channel" button, unless
  asked in a DM. Slack shows an error unless the command is acked within 3
  seconds, so the ack says that the answer follows. An empty command is
  answered in the ack itself: how to ask.
- "Ask citebot" on a message: the message's text is the question, answered in
  the message's thread, as a mention of it would be. In a DM (which the bot
  may not even be a member of) the answer goes to the one who asked alone,
  through the shortcut's response_url: a DM's text never leaves the DM.
- "Post in channel": a job that posts the stored answer, keyed by the answer,
  so two clicks (or two web processes) post it once; it carries the click's
  response_url, through which the worker then replaces the asker's copy
  (bot.slack.shared_copy).

Slack does not retry commands and shortcuts as it retries events, but a
double submission is deduplicated all the same: by the command's trigger_id,
and by the message a shortcut was used on.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext

from bot import metrics
from bot.inbound.intake import AppDeps, bot_user_id_of, make_question, remember_asked
from bot.jobs.job import AnswerPayload, Ephemeral, HelpPayload, Job, ShareAnswerPayload, share_dedupe_id, stable_id
from bot.logs import about_question
from bot.models import SlackQuestion
from bot.slack import replies
from bot.slack.event_text import scrubbed
from bot.store.keys import PRIVATE_OFFER_PREFIX

log = logging.getLogger(__name__)

COMMAND = "/citebot"
SHORTCUT_ASK = "citebot_ask"


def is_dm(channel_id: str, channel_name: str | None) -> bool:
    """A direct message (D…), or a group DM: where a command or shortcut came from. Slack names
    a DM "directmessage" and a group DM "mpdm-…" in command payloads."""
    name = channel_name or ""
    return channel_id.startswith("D") or name == "directmessage" or name.startswith("mpdm-")


def command_question(command: dict[str, Any], deps: AppDeps, *, bot_user_id: str | None) -> SlackQuestion | None:
    """The question of a /citebot payload; None without a channel to answer in."""
    channel = _text(command.get("channel_id"))
    trigger = _text(command.get("trigger_id")) or _text(command.get("response_url"))
    if not channel or not trigger:
        return None
    private = is_dm(channel, _text(command.get("channel_name")))
    # A command is no message: it has no ts of its own, so its id comes from
    # its trigger, and its ts (for the audit trail) is when it arrived.
    event = {"channel": channel, "ts": f"{time.time():.6f}", "user": command.get("user_id"), "text": command.get("text")}
    question = make_question(event, deps, is_dm=private, bot_user_id=bot_user_id)
    if question is None:
        return None
    return question.model_copy(update={"id": f"{channel}:cmd-{stable_id(trigger)}"})


def shortcut_question(shortcut: dict[str, Any], deps: AppDeps, *, bot_user_id: str | None) -> SlackQuestion | None:
    """The question of an "Ask citebot" payload: the message's text, asked by whoever used the shortcut."""
    channel_info, msg, asker = (_object(shortcut.get(name)) for name in ("channel", "message", "user"))
    user = asker.get("id")
    channel = _text(channel_info.get("id"))
    event = {"channel": channel, "ts": msg.get("ts"), "thread_ts": msg.get("thread_ts"), "user": user,
             "text": msg.get("text")}
    private = bool(channel) and is_dm(channel or "", _text(channel_info.get("name")))
    question = make_question(event, deps, is_dm=private, bot_user_id=bot_user_id)
    if question is None or not private:
        return question
    # Answered to this asker alone: another member of the DM asking about the
    # same message gets an answer of their own.
    return question.model_copy(update={"id": f"{question.id}:sc-{stable_id(user or '')}"})


def _object(value: Any) -> dict[str, Any]:
    # An odd payload must not raise: the asker would get Slack's error and no word from us.
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return scrubbed(value) if isinstance(value, str) and value else None


async def _enqueue(question: SlackQuestion, deps: AppDeps, *, dedupe: str, bot_user_id: str | None, ephemeral: Ephemeral | None) -> None:
    payload = AnswerPayload if question.text else HelpPayload
    job = Job.of(payload(question=question, bot_user_id=bot_user_id, ephemeral=ephemeral))
    with about_question(question.id):
        added = await deps.queue.enqueue(job, dedupe_id=dedupe)
        await remember_asked(question, deps)
        metrics.EVENTS.labels(result="enqueued" if added else "duplicate").inc()
        log.info("%s %s", "question" if question.text else "empty question",
                 "enqueued" if added else "already enqueued", extra={"dm": question.is_dm})


def register_surfaces(app: AsyncApp, deps: AppDeps) -> None:
    settings = deps.settings

    @app.command(COMMAND)
    async def on_command(ack: AsyncAck, command: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        bot = bot_user_id_of(context, body)
        question = command_question(command, deps, bot_user_id=bot)
        response_url = _text(command.get("response_url"))
        if question is None or not question.text or not response_url:
            language = question.language if question else settings.language
            await ack(response_type="ephemeral", **replies.command_help_message(language=language))
            return
        ephemeral = Ephemeral(response_url=response_url, shareable=not question.is_dm)
        await _enqueue(question, deps, dedupe=f"command:{question.id}", bot_user_id=bot, ephemeral=ephemeral)
        await ack(response_type="ephemeral", **replies.looking_up_message(language=question.language))

    @app.shortcut(SHORTCUT_ASK)
    async def on_ask_shortcut(ack: AsyncAck, shortcut: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        bot = bot_user_id_of(context, body)
        question = shortcut_question(shortcut, deps, bot_user_id=bot)
        ephemeral = None
        if question is not None and question.is_dm:
            response_url = _text(shortcut.get("response_url"))
            if response_url is None:
                log.warning("shortcut in a DM without a response_url ignored: nowhere private to answer")
                question = None
            else:
                ephemeral = Ephemeral(response_url=response_url)
        if question is None:
            metrics.EVENTS.labels(result="ignored").inc()
        else:
            # Keyed by the message: a mention of it, or a second click, is one answer.
            await _enqueue(question, deps, dedupe=f"shortcut:{question.id}", bot_user_id=bot, ephemeral=ephemeral)
        await ack()

    @app.action(replies.ACTION_ANSWER_PRIVATELY)
    async def on_answer_privately(ack: AsyncAck, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """"Answer privately" under the note to an asker who may read more than the channel: the same question
        again, from the asker's own access, answered to them alone (the click's response_url, as /citebot's).
        Only the asker's click counts: a forwarded note clicked by anyone else asks nothing."""
        await ack()
        question_id = (body.get("actions") or [{}])[0].get("value") or ""
        user = (body.get("user") or {}).get("id") or ""
        response_url = _text(body.get("response_url"))
        raw = await deps.records.redis.get(PRIVATE_OFFER_PREFIX + question_id) if question_id else None
        if raw is None or not response_url:
            return
        question = SlackQuestion.model_validate_json(raw)
        if not user or user != question.user:
            log.warning("answer privately for %s clicked by %s, not its asker: ignored", question_id, user)
            return
        private = question.model_copy(update={"id": f"{question.id}:private"})
        await _enqueue(private, deps, dedupe=f"private:{question.id}", bot_user_id=bot_user_id_of(context, body),
                       ephemeral=Ephemeral(response_url=response_url))

    @app.action(replies.ACTION_POST_IN_CHANNEL)
    async def on_post_in_channel(ack: AsyncAck, body: dict[str, Any]) -> None:
        answer_id = (body.get("actions") or [{}])[0].get("value") or ""
        user = (body.get("user") or {}).get("id") or ""
        if answer_id and user:
            # The click's response_url replaces the asker's copy once the answer is posted.
            job = Job.of(ShareAnswerPayload(answer_id=answer_id, user=user, response_url=_text(body.get("response_url"))))
            # One job per clicker and answer, however often they click; the worker's post ledger does the rest.
            await deps.queue.enqueue(job, dedupe_id=share_dedupe_id(answer_id, user))
        await ack()
