"""What Slack says about people, groups and channels, cached in Redis for a short while.

users.info (guest, deactivated, bot, organization), usergroups.list (a handle's
group ID), usergroups.users.list, conversations.members (paginated) and
conversations.info (shared with another organization). Each answer is cached
under bot.store.keys ACCESS_PREFIX for ACCESS_TTL_S, and dropped earlier on
Slack's event that it changed (`forget`, called by the web process's
listeners), so a question costs no Slack call once its people are known.
A reply that was in flight when its event came is not cached at all
(bot.access.cache: every cached thing has a version the event bumps).

A Slack error (past slack_sdk's own retries) is `AccessUnavailable`, a
Retryable: the job is tried again, and after its last try the asker hears
that access could not be checked. Never a guess: what is not known reads
nothing. Only Slack's own "no such user / group / channel" is an answer (that
one reads nothing), not an error.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.access.cache import USERS_EPOCH, AccessCache, key, version_key
from bot.access.policy import Directory, Kind, Person, audience_names
from bot.slack.calls import SlackError, SlackFailed, call
from bot.store.keys import ACCESS_TTL_S
from citebot_core.errors import Retryable
from kb_index.collection import CollectionAccess

log = logging.getLogger(__name__)

# Slack's codes for "there is no such thing": an answer (it reads nothing), not a failure to retry.
_NOT_FOUND = frozenset({"user_not_found", "users_not_found", "no_such_subteam", "subteam_not_found", "channel_not_found"})
# conversations.members returns at most this many per page (Slack's documented maximum is 1000).
MEMBERS_PAGE = 1000
# users.info calls at once for the members of a channel not cached yet.
USER_LOOKUPS_AT_ONCE = 8
# So many people not cached at once (a cold large channel): the workspace's users are read in bulk with users.list,
# USERS_PAGE a call, instead of one users.info each; those it does not list (another organization's, in a Slack
# Connect channel) are still asked one by one. At most one users.list page per BULK_PAGE_COST people missing,
# so that a huge workspace never costs more calls than asking each would.
BULK_FROM = 50
USERS_PAGE = 200
BULK_PAGE_COST = 5


class AccessUnavailable(Retryable):
    """Slack did not say who may read what: the job is retried; past its last try the asker is told."""


@dataclass(frozen=True)
class ChannelKind:
    id: str
    is_im: bool = False
    is_mpim: bool = False
    shared_externally: bool = False


class AccessResolver:
    """Slack's answers about people, groups and channels, through a Redis cache."""

    def __init__(self, slack: AsyncWebClient, redis: aioredis.Redis, *, ttl_s: int = ACCESS_TTL_S):
        self.slack, self.redis, self.ttl_s = slack, redis, ttl_s
        self.cache = AccessCache(redis, ttl_s)
        self._org: tuple[str, str | None] | None = None  # (team id, enterprise id) of this workspace

    # ---------------------------------------------------------------- people

    async def person(self, user: str) -> Person:
        [found] = await self.people([user])
        return found

    async def people(self, users: Iterable[str]) -> list[Person]:
        ids = list(dict.fromkeys(users))
        if not ids:
            return []
        cached = await self.redis.mget([key("user", u) for u in ids])
        known = {u: _person(u, json.loads(raw)) for u, raw in zip(ids, cached, strict=True) if raw is not None}
        missing = [u for u in ids if u not in known]
        if len(missing) >= BULK_FROM:
            known.update(await self._warm_in_bulk(set(missing)))
            missing = [u for u in ids if u not in known]
        if missing:
            team, enterprise = await self._organization()
            limit = asyncio.Semaphore(USER_LOOKUPS_AT_ONCE)

            async def look_up(user: str) -> None:
                async with limit:
                    known[user] = await self._fetch_person(user, team, enterprise)

            await asyncio.gather(*(look_up(u) for u in missing))
        return [known[u] for u in ids]

    async def channel_people(self, channel: str, members: Iterable[str]) -> list[Person]:
        """The people of a channel, from one cached list per channel: a channel of thousands costs one Redis
        read, not one per member. The list holds the users' epoch (bumped on every user_change) it was made
        in, so a changed person is seen at once; a member joining or leaving drops it with the members."""
        ids = sorted(set(members))
        epoch, raw = await self.redis.mget([version_key(USERS_EPOCH), key("people", channel)])
        now = (epoch or b"0").decode() if isinstance(epoch, bytes) else str(epoch or "0")
        if raw is not None:
            cached = json.loads(raw)
            if cached.get("epoch") == now and cached.get("ids") == ids:
                return [Person(id=u, kind=Kind(k)) for u, k in zip(ids, cached["kinds"], strict=True)]
        people = await self.people(ids)
        data = {"epoch": now, "ids": ids, "kinds": [p.kind.value for p in people]}
        await self.cache.store_if_current(version_key(USERS_EPOCH), now, {key("people", channel): data})
        return people

    async def _warm_in_bulk(self, wanted: set[str]) -> dict[str, Person]:
        """The wanted people found in users.list, page by page until all are found (or the pages a lookup of
        each would cost are spent); every user a page holds is cached, one Redis round trip a page."""
        team, enterprise = await self._organization()
        found: dict[str, Person] = {}
        cursor: str | None = None
        # A page's people are not known before it arrives: it is stored under everyone's version, the epoch.
        epoch = await self.cache.version(version_key(USERS_EPOCH))
        for _ in range(max(1, len(wanted) // BULK_PAGE_COST)):
            page = await self._ask("users.list", self.slack.users_list(limit=USERS_PAGE, cursor=cursor))
            entries: dict[str, Any] = {}
            for user in page.get("members") or []:
                if not isinstance(user, dict) or not user.get("id"):
                    continue
                data = entries[key("user", str(user["id"]))] = {"kind": _kind(user, team, enterprise)}
                if user["id"] in wanted:
                    found[str(user["id"])] = _person(str(user["id"]), data)
            await self.cache.store_if_current(version_key(USERS_EPOCH), epoch, entries)
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor or len(found) == len(wanted):
                break
        return found

    async def _fetch_person(self, user: str, team: str, enterprise: str | None) -> Person:
        seen = await self.cache.version(version_key("user", user))
        info = await self._ask("users.info", self.slack.users_info(user=user), not_found={})
        data = {"kind": _kind(info.get("user") or {}, team, enterprise)} if info else {"kind": Kind.UNKNOWN}
        await self.cache.store_if_current(version_key("user", user), seen, {key("user", user): data})
        return _person(user, data)

    async def _organization(self) -> tuple[str, str | None]:
        if self._org is None:
            info = await self._ask("auth.test", self.slack.auth_test())
            self._org = (str(info.get("team_id") or ""), info.get("enterprise_id") or None)
        return self._org

    # ---------------------------------------------------------------- groups and channels

    async def directory(self, accesses: Mapping[str, CollectionAccess]) -> Directory:
        """The members of every group and channel the audiences of `accesses` name."""
        groups, channels = audience_names(accesses)
        group_members = {g: await self.group_members(g) for g in sorted(groups)}
        channel_members = {c: await self.channel_members(c) for c in sorted(channels)}
        return Directory(groups=group_members, channels=channel_members)

    async def group_members(self, group: str) -> frozenset[str]:
        """A user group's members, by its ID (S…) or handle; an unknown group has none."""
        group_id = group if _is_group_id(group) else (await self._group_ids()).get(group)
        if group_id is None:
            log.warning("the user group %r an audience names is unknown to Slack: it grants nobody access", group)
            return frozenset()
        if (cached := await self.cache.get(key("group", group_id))) is not None:
            return frozenset(cached)
        seen = await self.cache.version(version_key("group", group_id))
        answer = await self._ask("usergroups.users.list", self.slack.usergroups_users_list(usergroup=group_id),
                                 not_found={})
        members = sorted(answer.get("users") or [])
        await self.cache.store_if_current(version_key("group", group_id), seen, {key("group", group_id): members})
        return frozenset(members)

    async def _group_ids(self) -> dict[str, str]:
        if (cached := await self.cache.get(key("groups"))) is not None:
            return dict(cached)
        seen = await self.cache.version(version_key("groups"))
        answer = await self._ask("usergroups.list", self.slack.usergroups_list(include_disabled=False))
        ids = {g["handle"]: g["id"] for g in answer.get("usergroups") or [] if g.get("handle") and g.get("id")}
        await self.cache.store_if_current(version_key("groups"), seen, {key("groups"): ids})
        return ids

    async def channel_members(self, channel: str) -> frozenset[str]:
        """Every member of a channel, all pages; an unknown channel has none."""
        if (cached := await self.cache.get(key("members", channel))) is not None:
            return frozenset(cached)
        seen = await self.cache.version(version_key("members", channel))
        members: list[str] = []
        cursor: str | None = None
        while True:
            page = await self._ask("conversations.members", self.slack.conversations_members(
                channel=channel, limit=MEMBERS_PAGE, **({"cursor": cursor} if cursor else {})), not_found={})
            members += page.get("members") or []
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                break
        await self.cache.store_if_current(version_key("members", channel), seen,
                                          {key("members", channel): sorted(set(members))})
        return frozenset(members)

    async def channel(self, channel: str) -> ChannelKind:
        """What kind of conversation a channel is; an unknown one counts as shared with another organization."""
        if (cached := await self.cache.get(key("channel", channel))) is not None:
            return ChannelKind(id=channel, **cached)
        seen = await self.cache.version(version_key("channel", channel))
        answer = await self._ask("conversations.info", self.slack.conversations_info(channel=channel), not_found={})
        info: dict[str, Any] = answer.get("channel") or {}
        data = {
            "is_im": bool(info.get("is_im")),
            "is_mpim": bool(info.get("is_mpim")),
            # Not found: nothing says who reads it, so it is treated as the most open kind there is.
            "shared_externally": not info or bool(info.get("is_ext_shared") or info.get("is_pending_ext_shared")
                                                  or (info.get("is_shared") and not info.get("is_org_shared"))),
        }
        await self.cache.store_if_current(version_key("channel", channel), seen, {key("channel", channel): data})
        return ChannelKind(id=channel, **data)

    # ---------------------------------------------------------------- Slack

    async def _ask(self, method: str, awaitable: Any, *, not_found: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = await call(awaitable, f"{method} (who may read what)")
        except SlackFailed as exc:
            if not_found is not None and exc.code in _NOT_FOUND:
                return not_found
            raise AccessUnavailable(f"{method}: Slack said {exc.code}") from exc
        except SlackError as exc:
            raise AccessUnavailable(f"{method}: {exc}", retry_after=exc.retry_after) from exc
        return dict(response.data) if hasattr(response, "data") and isinstance(response.data, dict) else dict(response)


def _is_group_id(name: str) -> bool:
    return name[:1] == "S" and name.isupper()


def _kind(user: Mapping[str, Any], team: str, enterprise: str | None) -> Kind:
    if user.get("deleted"):
        return Kind.DEACTIVATED
    if user.get("is_bot") or user.get("is_app_user") or user.get("id") == "USLACKBOT":
        return Kind.BOT
    user_enterprise = (user.get("enterprise_user") or {}).get("enterprise_id")
    same_org = user.get("team_id") == team or (enterprise is not None and user_enterprise == enterprise)
    if user.get("is_stranger") or not same_org:
        return Kind.EXTERNAL
    if user.get("is_restricted") or user.get("is_ultra_restricted"):
        return Kind.GUEST
    return Kind.MEMBER


def _person(user: str, data: Mapping[str, Any]) -> Person:
    return Person(id=user, kind=Kind(data["kind"]))
