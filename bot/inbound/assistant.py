"""The assistant panel (Slack's "Agents & AI Apps"): Bolt's AsyncAssistant, in the web process.

- `assistant_thread_started`: the thread's context (the channel the panel was
  opened beside) is stored (bot.store.assistant_threads), and the user is
  greeted in their language with suggested prompts (bot.inbound.assistant_prompts).
  A retry of the event greets once: the greeting is claimed per thread first,
  and released if it fails, so that the retry greets instead.
- `assistant_thread_context_changed`: the user moved to another channel with
  the panel open; the newer context replaces the stored one, and the prompts
  are those of the new channel.
- A message in a panel thread is a question asked in a DM, built and queued by
  the DM's own functions (bot.inbound.listeners), deduplicated by Slack's event id
  like every event: the same worker job, checks and footnotes, the answer in the
  thread and nowhere else. Only its collections and language come from the channel
  the panel is beside (the DM's without one), and its job is marked `assistant`,
  so that the worker shows its progress with assistant.threads.setStatus and
  titles the thread by its first question (bot.slack.assistant_status).

Bolt routes every threaded message of the DM here, not only the panel's: a
thread the store does not know (a follow-up under an answer in the Messages
tab) is an ordinary DM question, with the DM's collections and no status.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncAssistant
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.say.async_say import AsyncSay
from slack_bolt.context.set_suggested_prompts.async_set_suggested_prompts import AsyncSetSuggestedPrompts

from bot.channels import ChannelPolicy, ChannelsConfig
from bot.i18n import Key, message
from bot.inbound.assistant_prompts import greeting_language, suggested_prompts
from bot.inbound.intake import AppDeps, bot_user_id_of, enqueue_question, is_question_in_dm, make_question
from bot.slack.event_text import scrubbed
from bot.store.assistant_threads import AssistantThreads
from kb_index.collection import in_collections

log = logging.getLogger(__name__)


def panel_policy(context: Mapping[str, Any] | None, channels: ChannelsConfig) -> ChannelPolicy:
    """What a panel thread may search: the channel's it is open beside; a DM's when it is
    beside a DM (someone else's conversation is no channel), or beside nothing."""
    channel = _text((context or {}).get("channel_id"))
    if channel is None or channel.startswith("D"):
        return channels.policy(None, is_dm=True)
    return channels.policy(channel, is_dm=False)


def register_assistant(app: AsyncApp, deps: AppDeps) -> None:
    threads = AssistantThreads(deps.records.redis)
    assistant = AsyncAssistant(thread_context_store=threads)

    @assistant.thread_started
    async def on_thread_started(event: dict[str, Any], say: AsyncSay, set_suggested_prompts: AsyncSetSuggestedPrompts) -> None:
        where = _thread_of(event)
        if where is None:
            return
        channel, thread_ts, context = where
        await threads.save_if_newer(channel_id=channel, thread_ts=thread_ts, context=context,
                                    event_ts=event.get("event_ts"))
        if not await threads.claim_greeting(channel, thread_ts):
            return  # a retry of a thread already greeted
        # What is stored: a context change may have overtaken this event.
        stored = await threads.context(channel, thread_ts)
        try:
            await _offer(event, context if stored is None else stored, set_suggested_prompts, greet=say)
        except Exception:
            await threads.release_greeting(channel, thread_ts)
            raise

    async def _offer(event: dict[str, Any], context: Mapping[str, Any], set_suggested_prompts: AsyncSetSuggestedPrompts,
                     *, greet: AsyncSay | None = None) -> None:
        """The greeting (with `greet`), then the prompts of the channel beside, in the user's language."""
        user = _text(event["assistant_thread"].get("user_id")) or ""
        policy = panel_policy(context, deps.channels)
        redis, settings = deps.records.redis, deps.settings
        language = await greeting_language(user, policy, settings=settings, redis=redis)
        if greet is not None:
            await greet(message(Key.ASSISTANT_GREETING, language))
        if deps.access is not None:
            # Prompts name collections and earlier answered questions: only those the user may read now.
            reads = await deps.access.user_reads(user)
            allowed = reads if policy.collections is None else {
                c for c in reads if in_collections(c, policy.collections)}
            policy = policy.model_copy(update={"collections": tuple(sorted(allowed))})
        prompts = await suggested_prompts(user, policy, language, settings=settings, redis=redis)
        if prompts:
            await set_suggested_prompts(prompts=prompts, title=message(Key.ASSISTANT_PROMPTS_TITLE, language))

    @assistant.thread_context_changed
    async def on_context_changed(event: dict[str, Any], set_suggested_prompts: AsyncSetSuggestedPrompts) -> None:
        if (where := _thread_of(event)) is None:
            return
        channel, thread_ts, context = where
        if await threads.save_if_newer(channel_id=channel, thread_ts=thread_ts, context=context,
                                       event_ts=event.get("event_ts")):
            # Setting the same prompts again (Slack's retry) changes nothing.
            await _offer(event, context, set_suggested_prompts)

    @assistant.user_message
    async def on_user_message(event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        bot = bot_user_id_of(context, body)
        if not is_question_in_dm(event, bot):
            return
        channel, thread_ts = _text(event.get("channel")), _text(event.get("thread_ts"))
        in_panel = bool(channel and thread_ts) and await threads.is_panel_thread(channel or "", thread_ts or "")
        policy = None
        if in_panel:
            found = await threads.find(channel_id=channel or "", thread_ts=thread_ts or "")
            policy = panel_policy(found, deps.channels)
        question = make_question(event, deps, is_dm=True, bot_user_id=bot, policy=policy)
        await enqueue_question(question, body, deps, bot_user_id=bot, assistant=in_panel)

    app.assistant(assistant)


def _thread_of(event: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """The DM channel, thread ts and context of an assistant_thread_* event; None for an odd one."""
    thread = event.get("assistant_thread")
    thread = thread if isinstance(thread, dict) else {}
    channel, thread_ts = _text(thread.get("channel_id")), _text(thread.get("thread_ts"))
    if channel is None or thread_ts is None:
        log.warning("%s without a thread ignored", event.get("type"))
        return None
    context = thread.get("context")
    return channel, thread_ts, context if isinstance(context, dict) else {}


def _text(value: Any) -> str | None:
    return scrubbed(value) if isinstance(value, str) and value else None
