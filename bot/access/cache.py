"""The Redis cache of Slack's answers about who may read what, with a version for each thing it caches.

A lookup that asks Slack takes seconds at worst; the event saying its answer changed (someone left a group, joined
a channel, became a guest) can arrive meanwhile. Deleting the cached entry on the event is not enough: the reply
still in flight was made before the change and would be written after the delete, with a fresh lifetime. So every
cached thing has a version, which the event bumps (`forget`) before it deletes, and a lookup stores Slack's reply
only if the version it read before asking is still the version when the reply arrives (`store_if_current`, one
Lua script: read and write with nothing in between). A reply fetched under an older version answers the question
in flight, as it would have without a cache, and is not kept for the next one.

All keys share the hash tag in ACCESS_PREFIX, so the scripts run on one Redis Cluster node like anywhere else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import redis.asyncio as aioredis

from bot.store.keys import ACCESS_PREFIX

# A version outlives any lookup by far (Slack's calls time out in seconds), and is dropped after a quiet day:
# a missing version reads as "0", which a lookup that began under a later version never matches.
VERSION_TTL_S = 24 * 3600
# The version every person's entry also answers to: bumped on any user_change, it is what a users.list page
# (whose people are not known before it arrives) and a channel's cached list of people are stored under.
USERS_EPOCH = "epoch"

# KEYS: the version, then the entries. ARGV: the version read before asking, the lifetime, then the values.
STORE_IF_CURRENT_LUA = """
if (redis.call('GET', KEYS[1]) or '0') ~= ARGV[1] then
  return 0
end
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], ARGV[i + 1], 'EX', ARGV[2])
end
return 1
"""

# KEYS: the versions to bump (ARGV[1] of them), then the entries to drop. ARGV: that count, the versions' lifetime.
BUMP_AND_DROP_LUA = """
local versions = tonumber(ARGV[1])
for i = 1, versions do
  redis.call('INCR', KEYS[i])
  redis.call('EXPIRE', KEYS[i], ARGV[2])
end
local dropped = 0
for i = versions + 1, #KEYS do
  dropped = dropped + redis.call('DEL', KEYS[i])
end
return dropped
"""


def key(kind: str, name: str = "") -> str:
    """The cache entry of one thing: `key("group", "S0PAYROLL")`, `key("members", "C0HR")`, `key("groups")`."""
    return f"{ACCESS_PREFIX}{kind}:{name}" if name else f"{ACCESS_PREFIX}{kind}"


def version_key(kind: str, name: str = "") -> str:
    """The version of one cached thing; USERS_EPOCH (kind) for everyone's."""
    return key("v:" + kind, name) if kind != USERS_EPOCH else key(USERS_EPOCH)


class AccessCache:
    """Entries read as JSON; written only under the version they were looked up under."""

    def __init__(self, redis: aioredis.Redis, ttl_s: int):
        self.redis, self.ttl_s = redis, ttl_s
        self._store = redis.register_script(STORE_IF_CURRENT_LUA)

    async def get(self, entry: str) -> Any:
        raw = await self.redis.get(entry)
        return None if raw is None else json.loads(raw)

    async def version(self, version: str) -> str:
        """Read before asking Slack: the version the reply will be stored under."""
        raw = await self.redis.get(version)
        return _text(raw) if raw is not None else "0"

    async def store_if_current(self, version: str, seen: str, values: Mapping[str, Any]) -> bool:
        """Stores `values` (entry -> JSON-able) unless an event bumped `version` since it read `seen`."""
        if not values:
            return True
        entries = list(values)
        stored = await self._store(keys=[version, *entries],
                                   args=[seen, self.ttl_s, *(json.dumps(values[e]) for e in entries)])
        return bool(stored)


async def forget(redis: aioredis.Redis, event: Mapping[str, Any]) -> int:
    """Drops what a Slack event says has changed, after bumping its versions so that a reply already in flight
    is not stored either; the number of entries dropped."""
    versions, entries = _changed_by(event)
    if not versions and not entries:
        return 0
    script = redis.register_script(BUMP_AND_DROP_LUA)
    return int(await script(keys=[*versions, *entries], args=[len(versions), VERSION_TTL_S]))


def _changed_by(event: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(versions to bump, entries to drop) for one of bot.inbound.access_events' ACCESS_EVENTS."""
    kind = event.get("type")
    user = _mapping(event.get("user"))
    subteam = _mapping(event.get("subteam"))
    channel = str(event.get("channel") or "")
    things: list[tuple[str, str]] = []
    if kind == "subteam_members_changed" and event.get("subteam_id"):
        things.append(("group", str(event["subteam_id"])))
    elif kind in ("member_joined_channel", "member_left_channel") and channel:
        things += [("members", channel), ("people", channel)]
    elif kind == "user_change" and user.get("id"):
        # Every channel's cached list of people may hold this one: the epoch makes them all stale.
        things += [("user", str(user["id"])), (USERS_EPOCH, "")]
    elif kind in ("channel_shared", "channel_unshared") and channel:
        things += [("channel", channel), ("members", channel), ("people", channel)]
    elif kind in ("subteam_created", "subteam_updated"):
        things.append(("groups", ""))
        if subteam.get("id"):
            things.append(("group", str(subteam["id"])))
    # A channel's people are stored under the epoch and checked against their member IDs when read: dropped only.
    versions = [version_key(k, n) for k, n in things if k != "people"]
    # The epoch is a version only.
    entries = [key(k, n) for k, n in things if k != USERS_EPOCH]
    return versions, entries


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
