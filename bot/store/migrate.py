"""Keys written before they carried hash tags, renamed to today's names once.

Until the cluster support, one server held `citebot:jobs`, `citebot:posted:<key>` and
so on; now the same keys carry hash tags (bot.store.keys). A deployment upgraded in
place keeps its queued jobs (with their consumer group and pending entries: RENAME
keeps a stream whole), its dedupe keys and post records (with their TTLs: RENAME keeps
those too), its audit trail and its open reviews, because the first worker to start
renames them. RENAMENX, so a key written under the new name meanwhile is never
overwritten; the marker key makes every later start skip the scan.

Only on one server or a Sentinel-managed one: a cluster deployment is new, and its
keys were never written untagged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from bot.store import keys

log = logging.getLogger(__name__)

# Set once every old key has its new name; its value is the layout version.
MIGRATED_KEY = keys.PREFIX + "keys-version"
VERSION = "2"
SCAN_COUNT = 1000

# Whole keys: old name -> new name.
_RENAMED = {
    keys.PREFIX + "jobs": keys.JOBS_STREAM,
    keys.PREFIX + "jobs:delayed": keys.DELAYED_ZSET,
    keys.PREFIX + "jobs:dead": keys.DEAD_LIST,
    keys.PREFIX + "reviews:open": keys.OPEN_REVIEWS_ZSET,
    keys.PREFIX + "audit": keys.AUDIT_STREAM,
}
# Families: old prefix -> how the rest of the name becomes the new key.
_FAMILIES: dict[str, Callable[[str], str]] = {
    keys.PREFIX + "dedupe:": keys.dedupe_key,
    keys.PREFIX + "posted:": keys.posted_key,
    keys.PREFIX + "post-claim:": keys.post_claim_key,
    keys.PREFIX + "post-attempt:": keys.post_attempt_key,
    keys.PREFIX + "review:": keys.review_key,
    keys.PREFIX + "audit:q:": keys.audit_question_key,
    keys.PREFIX + "cited-by:": keys.cited_by_key,
    keys.PREFIX + "worker:": keys.heartbeat_key,
}


async def migrate_untagged_keys(redis: aioredis.Redis) -> int:
    """Renames the keys of the layout before hash tags; returns how many. Cheap after the first time."""
    if await redis.get(MIGRATED_KEY) == VERSION:
        return 0
    renamed = 0
    for old, new in _RENAMED.items():
        renamed += await _rename(redis, old, new)
    for prefix, new_name in _FAMILIES.items():
        async for old in redis.scan_iter(match=_glob_escape(prefix) + "*", count=SCAN_COUNT):
            rest = old[len(prefix):]
            # A new key of the same family starts with "{": it is not an old one.
            if not rest.startswith("{"):
                renamed += await _rename(redis, old, new_name(rest))
    await redis.set(MIGRATED_KEY, VERSION)
    if renamed:
        log.info("renamed %d keys to their hash-tagged names", renamed)
    return renamed


async def _rename(redis: aioredis.Redis, old: str, new: str) -> int:
    try:
        return int(await redis.renamenx(old, new))
    except ResponseError as exc:
        if "no such key" in str(exc).lower():  # gone meanwhile (expired, or another worker renamed it)
            return 0
        raise


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


__all__ = ["MIGRATED_KEY", "migrate_untagged_keys"]
