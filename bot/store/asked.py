"""Each user's own recent questions, for their Home tab.

The web process adds a question here when it enqueues it; the Home tab reads
the newest ones back and looks up each one's outcome in the audit trail
(bot.store.audit). Only the asker's own Home tab reads a user's list, so the
text of a direct message stays with the person who wrote it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import redis.asyncio as aioredis

from bot.store import keys

# The Home tab shows a line of a question, not the whole of it: no need to keep more.
TEXT_CHARS = 300


@dataclass(frozen=True)
class Asked:
    question_id: str
    text: str
    at: float  # epoch seconds
    is_dm: bool = False


# KEYS: the user's key. ARGV: member, score, keep, ttl. A script, not MULTI:
# a cluster client has no transactions.
ADD_LUA = """
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -tonumber(ARGV[3]) - 1)
redis.call('EXPIRE', KEYS[1], ARGV[4])
"""


class AskedIndex:
    def __init__(self, redis: aioredis.Redis, *, keep: int = keys.ASKED_MAX):
        self.redis = redis
        self.keep = keep
        self._add = redis.register_script(ADD_LUA)

    async def add(self, user: str, question_id: str, text: str, at: float, *, is_dm: bool = False) -> None:
        """Idempotent: a Slack retry of the same event writes the same member again."""
        member = json.dumps({"id": question_id, "text": text[:TEXT_CHARS], "dm": is_dm}, sort_keys=True, ensure_ascii=False)
        await self._add(keys=[keys.asked_key(user)], args=[member, repr(at), self.keep, keys.ASKED_TTL_S])

    async def recent(self, user: str, limit: int = keys.ASKED_MAX) -> list[Asked]:
        """Newest first."""
        rows = await self.redis.zrevrange(keys.asked_key(user), 0, limit - 1, withscores=True)
        out = []
        for member, score in rows:
            data = json.loads(member)
            out.append(Asked(question_id=data["id"], text=data["text"], at=float(score), is_dm=bool(data.get("dm"))))
        return out
