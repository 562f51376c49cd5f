"""A slow Slack reply and the event that makes it stale, forced in that order: the stale reply is never cached.

Each test holds one Slack answer in flight (made from the state before the change), lets the change happen in the
fake and its event reach `forget`, then lets the old answer arrive. What the resolver answered for the question in
flight is whatever Slack said then; what matters is the next question: it must see the change, not a cache entry
written after the event with a fresh lifetime (bot.access.resolver, "versions").
"""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from bot.access.cache import forget
from bot.access.policy import Kind
from bot.access.resolver import BULK_FROM, AccessResolver
from bot.slack.calls import make_client
from tests.fakes.slack_server import BOT_USER_ID, FakeSlackServer


@pytest.fixture
def slack():
    with FakeSlackServer() as server:
        yield server


@pytest.fixture
async def redis(redis_url):
    client = aioredis.Redis.from_url(redis_url)
    await client.flushdb()
    yield client
    await client.aclose()


def resolver_for(slack: FakeSlackServer, redis) -> AccessResolver:
    return AccessResolver(make_client("xoxb-test", slack.url), redis)


async def race(slack: FakeSlackServer, redis, method: str, lookup, change, event: dict) -> None:
    """`lookup` runs with its `method` call held in flight; meanwhile `change` happens in Slack and its `event`
    reaches `forget`, as the web process's listener passes it on; then the old answer arrives."""
    held = slack.hold(method)
    task = asyncio.create_task(lookup())
    await asyncio.to_thread(held.wait_made)
    change()
    await forget(redis, event)
    held.release()
    await task


async def test_a_group_member_removed_while_its_members_are_read_is_not_cached_as_member(slack, redis):
    resolver = resolver_for(slack, redis)
    assert "UPAYROLL" in await resolver.group_members("S0PAYROLL")  # the group's ID is known
    await forget(redis, {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL"})

    def remove() -> None:
        slack.usergroups["S0PAYROLL"]["users"] = []

    await race(slack, redis, "usergroups.users.list", lambda: resolver.group_members("S0PAYROLL"), remove,
               {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL"})
    assert "UPAYROLL" not in await resolver_for(slack, redis).group_members("S0PAYROLL")


async def test_a_group_renamed_while_the_handles_are_read_is_not_cached_under_its_old_handle(slack, redis):
    resolver = resolver_for(slack, redis)

    def rename() -> None:
        slack.usergroups["S0PAYROLL"]["handle"] = "payroll-old"

    await race(slack, redis, "usergroups.list", lambda: resolver.group_members("payroll-team"), rename,
               {"type": "subteam_updated", "subteam": {"id": "S0PAYROLL"}})
    # The handle no longer names the group: nobody is a member of "payroll-team".
    assert await resolver_for(slack, redis).group_members("payroll-team") == frozenset()


async def test_someone_who_joins_a_channel_while_its_members_are_read_is_seen_next_time(slack, redis):
    resolver = resolver_for(slack, redis)

    def join() -> None:
        slack.channels["CPAYROLL"]["members"] = [*slack.channels["CPAYROLL"]["members"], "UGUEST"]

    await race(slack, redis, "conversations.members", lambda: resolver.channel_members("CPAYROLL"), join,
               {"type": "member_joined_channel", "channel": "CPAYROLL", "user": "UGUEST"})
    assert "UGUEST" in await resolver_for(slack, redis).channel_members("CPAYROLL")


async def test_someone_who_leaves_a_channel_while_its_members_are_read_is_seen_gone(slack, redis):
    resolver = resolver_for(slack, redis)

    def leave() -> None:
        slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID]

    await race(slack, redis, "conversations.members", lambda: resolver.channel_members("CPAYROLL"), leave,
               {"type": "member_left_channel", "channel": "CPAYROLL", "user": "UPAYROLL"})
    assert "UPAYROLL" not in await resolver_for(slack, redis).channel_members("CPAYROLL")


async def test_a_channel_shared_while_its_kind_is_read_is_seen_shared(slack, redis):
    resolver = resolver_for(slack, redis)

    def share() -> None:
        slack.channels["CPAYROLL"]["is_ext_shared"] = True

    await race(slack, redis, "conversations.info", lambda: resolver.channel("CPAYROLL"), share,
               {"type": "channel_shared", "channel": "CPAYROLL", "connected_team_id": "T0OTHER1"})
    assert (await resolver_for(slack, redis).channel("CPAYROLL")).shared_externally


async def test_a_member_made_a_guest_while_users_info_is_read_is_seen_a_guest(slack, redis):
    resolver = resolver_for(slack, redis)
    await resolver.person("UASKER")  # auth.test is cached: the held call below is the user's own
    await forget(redis, {"type": "user_change", "user": {"id": "UASKER"}})

    def restrict() -> None:
        slack.users["UASKER"] = {**slack.users["UASKER"], "is_restricted": True}

    await race(slack, redis, "users.info", lambda: resolver.person("UASKER"), restrict,
               {"type": "user_change", "user": {"id": "UASKER", "is_restricted": True}})
    assert (await resolver_for(slack, redis).person("UASKER")).kind is Kind.GUEST


async def test_a_member_made_a_guest_while_users_are_read_in_bulk_is_seen_a_guest(slack, redis):
    members = [BOT_USER_ID, "UASKER"] + [f"UMEMBER{i:04d}" for i in range(BULK_FROM)]
    slack.channels["CBIG"] = {"id": "CBIG", "name": "big", "is_member": True, "members": members}
    resolver = resolver_for(slack, redis)
    await resolver.person("UOTHER")  # auth.test is cached: the held call below is users.list

    def restrict() -> None:
        slack.users["UASKER"] = {**slack.users["UASKER"], "is_restricted": True}

    await race(slack, redis, "users.list", lambda: resolver.people(members[1:]), restrict,
               {"type": "user_change", "user": {"id": "UASKER", "is_restricted": True}})
    assert (await resolver_for(slack, redis).person("UASKER")).kind is Kind.GUEST


async def test_a_channels_people_read_while_one_of_them_changes_are_read_again(slack, redis):
    resolver = resolver_for(slack, redis)
    members = sorted(await resolver.channel_members("CGENERAL"))
    await resolver.channel_people("CGENERAL", members)
    # Only UREVIEWER is not cached now, so the users.info call held below is theirs.
    await forget(redis, {"type": "user_change", "user": {"id": "UREVIEWER"}})

    def restrict() -> None:
        slack.users["UREVIEWER"] = {**slack.users["UREVIEWER"], "is_restricted": True}

    await race(slack, redis, "users.info", lambda: resolver.channel_people("CGENERAL", members), restrict,
               {"type": "user_change", "user": {"id": "UREVIEWER", "is_restricted": True}})
    people = await resolver_for(slack, redis).channel_people("CGENERAL", members)
    assert {p.id: p.kind for p in people}["UREVIEWER"] is Kind.GUEST
