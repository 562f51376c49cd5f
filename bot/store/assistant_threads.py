"""The assistant panel's threads in Redis: each thread's context, and its greeting's claim.

Bolt's default context store keeps the context in the metadata of the bot's
first reply in the thread, which costs a conversations.replies and a
chat.update per change and is lost when that message is. Here it is one key
per thread (bot.store.keys says how long it lives): the web process writes it
when a thread starts and whenever the user moves to another channel with the
panel open, and reads it for each question asked in the thread.

A context change carries Slack's event_ts, and only a newer one replaces what
is stored: Slack retries an event it got no ack for, and a late retry of an
older change must not undo a newer one.
"""

from __future__ import annotations

import json
import time

import redis.asyncio as aioredis
from slack_bolt.context.assistant.thread_context import AssistantThreadContext
from slack_bolt.context.assistant.thread_context_store.async_store import AsyncAssistantThreadContextStore

from bot.store import keys

# KEYS: the thread's key. ARGV: the record's JSON, its event_ts, the key's TTL.
# One script: two changes handled by two web processes at once keep the newer.
SAVE_IF_NEWER_LUA = """
local old = redis.call('GET', KEYS[1])
if old then
  local ok, stored = pcall(cjson.decode, old)
  if ok and type(stored) == 'table' and tonumber(stored['at'] or 0) > tonumber(ARGV[2]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
return 1
"""


class AssistantThreads(AsyncAssistantThreadContextStore):
    """Bolt's context store interface (`save`, `find`), plus what the panel needs besides."""

    def __init__(self, redis: aioredis.Redis):
        self.redis = redis
        self._save = redis.register_script(SAVE_IF_NEWER_LUA)

    async def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None:
        """Bolt's interface: the context as of now."""
        await self.save_if_newer(channel_id=channel_id, thread_ts=thread_ts, context=context)

    async def save_if_newer(self, *, channel_id: str, thread_ts: str, context: dict[str, str],
                            event_ts: str | None = None) -> bool:
        """The thread's context as of `event_ts` (now, if Slack gave none); False when it was
        older than the one stored, and dropped."""
        at = _seconds(event_ts) if event_ts else time.time()
        record = json.dumps({"context": dict(context or {}), "at": at}, sort_keys=True)
        saved = await self._save(keys=[keys.assistant_thread_key(channel_id, thread_ts)],
                                 args=[record, at, keys.ASSISTANT_THREAD_TTL_S])
        return bool(saved)

    async def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None:
        """The channel the panel is open beside, or None (no context, or no such thread)."""
        context = await self.context(channel_id, thread_ts)
        return AssistantThreadContext(context) if context and context.get("channel_id") else None

    async def is_panel_thread(self, channel_id: str, thread_ts: str) -> bool:
        """Whether the thread was started in the panel (an ordinary thread of the DM was not)."""
        return await self.context(channel_id, thread_ts) is not None

    async def claim_greeting(self, channel_id: str, thread_ts: str) -> bool:
        """True for the one delivery of assistant_thread_started that greets."""
        key = keys.assistant_greeted_key(channel_id, thread_ts)
        return bool(await self.redis.set(key, "1", nx=True, ex=keys.ASSISTANT_GREETED_TTL_S))

    async def release_greeting(self, channel_id: str, thread_ts: str) -> None:
        """The greeting failed: Slack's retry of the event greets instead."""
        await self.redis.delete(keys.assistant_greeted_key(channel_id, thread_ts))

    async def context(self, channel_id: str, thread_ts: str) -> dict | None:
        """The stored context ({} without a channel beside); None for a thread the store does not know."""
        raw = await self.redis.get(keys.assistant_thread_key(channel_id, thread_ts))
        if raw is None:
            return None
        try:
            context = json.loads(raw).get("context")
        except (ValueError, AttributeError):
            return {}  # unreadable: a panel thread all the same, without a channel beside it
        return context if isinstance(context, dict) else {}


def _seconds(event_ts: str) -> float:
    try:
        return float(event_ts)
    except ValueError:
        return time.time()
