"""Who may read which collection: the rules (bot.access.policy) and what Slack says (bot.access.resolver),
over HTTP against the fake Slack Web API and a real Redis, and the races between a slow Slack reply and the
event that makes it stale (bot.access.cache)."""

from __future__ import annotations

import asyncio

import pytest

from bot.access.cache import forget
from bot.access.policy import Directory, Kind, Person, may_read, readable_by, readable_by_all
from bot.access.resolver import BULK_FROM, AccessResolver, AccessUnavailable
from bot.access.scope import conversation_scope, private_scope
from bot.slack.calls import make_client
from bot.store.keys import ACCESS_PREFIX
from kb_index.collection import EVERY_MEMBER, NOBODY, Audience, CollectionAccess
from tests.fakes.slack_server import BOT_USER_ID, FakeSlackServer

PAYROLL = CollectionAccess(audience=Audience(groups=("payroll-team",), channels=("CPAYROLL",)))
ACCESSES = {
    "handbook": EVERY_MEMBER,
    "payroll": PAYROLL,
    "visitors": CollectionAccess(guests=True),
    "partners": CollectionAccess(external=True),
    "broken": NOBODY,
}
DIRECTORY = Directory(groups={"payroll-team": frozenset({"UPAYROLL"})}, channels={"CPAYROLL": frozenset({"UPAYROLL"})})


def person(uid: str, kind: Kind = Kind.MEMBER) -> Person:
    return Person(uid, kind)


@pytest.mark.parametrize(
    ("who", "reads"),
    [
        (person("UPAYROLL"), {"handbook", "payroll", "visitors", "partners"}),
        (person("UASKER"), {"handbook", "visitors", "partners"}),
        (person("UGUEST", Kind.GUEST), {"visitors"}),
        (person("UEXTERNAL", Kind.EXTERNAL), {"partners"}),
        (person("UGONE", Kind.DEACTIVATED), set()),
        (person("UOTHERBOT", Kind.BOT), set()),
        (person("UNOBODY", Kind.UNKNOWN), set()),
    ],
)
def test_each_kind_of_asker_reads_what_the_matrix_says(who, reads):
    assert readable_by(who, ACCESSES, DIRECTORY) == reads


def test_a_guest_in_the_audience_reads_it_only_with_guests_true():
    audience = Audience(users=("UGUEST",))
    guest = person("UGUEST", Kind.GUEST)
    assert not may_read(guest, CollectionAccess(audience=audience), DIRECTORY).allowed
    assert may_read(guest, CollectionAccess(audience=audience, guests=True), DIRECTORY).allowed
    # guests: true opens nothing to a guest outside the audience
    assert not may_read(person("UGUEST2", Kind.GUEST), CollectionAccess(audience=audience, guests=True), DIRECTORY).allowed


def test_the_reason_says_why():
    assert may_read(person("UPAYROLL"), PAYROLL, DIRECTORY).why == "member of the user group payroll-team"
    assert may_read(person("UASKER"), PAYROLL, DIRECTORY).why == "not in its audience"
    assert "invalid" in may_read(person("UPAYROLL"), NOBODY, DIRECTORY).why


def test_a_conversation_reads_what_every_person_in_it_reads():
    payroll_only = [person("UPAYROLL"), person("UOTHERBOT", Kind.BOT)]
    assert readable_by_all(payroll_only, ACCESSES, DIRECTORY, shared_externally=False) == {
        "handbook", "payroll", "visitors", "partners"}
    with_guest = [*payroll_only, person("UGUEST", Kind.GUEST)]
    assert readable_by_all(with_guest, ACCESSES, DIRECTORY, shared_externally=False) == {"visitors"}
    # Shared with another organization: only external: true, even with only employees in it now.
    assert readable_by_all(payroll_only, ACCESSES, DIRECTORY, shared_externally=True) == {"partners"}


# ---------------------------------------------------------------- the resolver, over HTTP


@pytest.fixture
def slack():
    with FakeSlackServer() as server:
        yield server


def resolver_for(slack: FakeSlackServer, redis) -> AccessResolver:
    return AccessResolver(make_client("xoxb-test", slack.url), redis)


async def test_users_info_says_who_is_a_guest_external_deactivated_or_a_bot(slack, redis):
    resolver = resolver_for(slack, redis)
    people = await resolver.people(["UASKER", "UGUEST", "UEXTERNAL", "UGONE", "UOTHERBOT"])
    assert [p.kind for p in people] == [Kind.MEMBER, Kind.GUEST, Kind.EXTERNAL, Kind.DEACTIVATED, Kind.BOT]
    slack.users["UCROSS"] = {"team_id": "T0OTHER1"}  # another team, without is_stranger
    assert (await resolver.person("UCROSS")).kind is Kind.EXTERNAL


async def test_the_cache_lives_as_long_as_citebot_access_cache_s(slack, redis, monkeypatch):
    from bot.access.gate import AccessGate
    from bot.config import Settings
    from bot.store.keys import ACCESS_PREFIX

    monkeypatch.setenv("CITEBOT_ACCESS_CACHE_S", "42")
    settings = Settings()
    assert settings.access_cache_s == 42
    gate = AccessGate.of(make_client("xoxb-test", slack.url), redis, settings.index_dir, cache_s=settings.access_cache_s)
    await redis.delete(f"{ACCESS_PREFIX}user:UASKER")
    await gate.resolver.person("UASKER")
    assert 0 < await redis.ttl(f"{ACCESS_PREFIX}user:UASKER") <= 42
    monkeypatch.setenv("CITEBOT_ACCESS_CACHE_S", "0")
    with pytest.raises(ValueError):
        Settings()


async def test_cached_answers_cost_no_slack_call_and_an_event_drops_them(slack, redis):
    resolver = resolver_for(slack, redis)
    await private_scope(resolver, ACCESSES, "UPAYROLL")
    before = len(slack.calls())
    scope = await private_scope(resolver_for(slack, redis), ACCESSES, "UPAYROLL")  # another process, same Redis
    assert "payroll" in scope.collections and len(slack.calls()) == before  # no Slack call once cached
    # Removed from the group: the event drops the cached members, and the next question sees it.
    slack.usergroups["S0PAYROLL"]["users"] = []
    slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID]
    assert "payroll" in (await private_scope(resolver, ACCESSES, "UPAYROLL")).collections  # cached: until the event
    assert await forget(redis, {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL"}) == 1
    assert await forget(redis, {"type": "member_left_channel", "channel": "CPAYROLL", "user": "UPAYROLL"}) == 1
    assert "payroll" not in (await private_scope(resolver, ACCESSES, "UPAYROLL")).collections


async def test_a_deactivated_user_is_seen_after_user_change(slack, redis):
    resolver = resolver_for(slack, redis)
    assert (await resolver.person("UASKER")).kind is Kind.MEMBER
    slack.users["UASKER"] = {**slack.users["UASKER"], "deleted": True}
    await forget(redis, {"type": "user_change", "user": {"id": "UASKER"}})
    assert (await resolver.person("UASKER")).kind is Kind.DEACTIVATED


async def test_channel_members_are_read_across_pages(slack, redis):
    slack.members_page = 1
    members = await resolver_for(slack, redis).channel_members("CGUESTS")
    assert members == {BOT_USER_ID, "UASKER", "UPAYROLL", "UGUEST"}
    assert len(slack.calls("conversations.members")) == 4


async def test_a_channel_scope_is_what_everyone_in_it_may_read(slack, redis):
    resolver = resolver_for(slack, redis)
    own = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CPAYROLL", bot_user_id=BOT_USER_ID)
    assert own.collections == {"handbook", "payroll", "visitors", "partners"}
    general = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CGENERAL", bot_user_id=BOT_USER_ID)
    assert general.collections == {"handbook", "visitors", "partners"} and general.more_for_asker == {"payroll"}
    guests = await conversation_scope(resolver, ACCESSES, "UASKER", "CGUESTS", bot_user_id=BOT_USER_ID)
    assert guests.collections == {"visitors"}
    shared = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CSHARED", bot_user_id=BOT_USER_ID)
    assert shared.shared_externally and shared.collections == {"partners"}
    # A guest asking in the payroll channel reads only what a guest may, whoever else is in it.
    slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID, "UPAYROLL", "UGUEST"]
    await forget(redis, {"type": "member_joined_channel", "channel": "CPAYROLL", "user": "UGUEST"})
    joined = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CPAYROLL", bot_user_id=BOT_USER_ID)
    assert joined.collections == {"visitors"}


@pytest.mark.parametrize("trouble", [{"status": 500, "times": 5}, {"error": "missing_scope"},
                                     {"status": 429, "retry_after": 0, "times": 5}])
async def test_a_slack_error_is_retryable_and_never_a_guess(slack, redis, trouble):
    resolver = AccessResolver(make_client("xoxb-test", slack.url), redis)
    resolver.slack.retry_handlers = []
    slack.fail(method="usergroups.users.list", **trouble)
    with pytest.raises(AccessUnavailable):
        await private_scope(resolver, ACCESSES, "UPAYROLL")
    assert await redis.keys(f"{ACCESS_PREFIX}group:*") == []  # nothing half-known is cached


async def test_an_unknown_group_or_user_grants_nothing(slack, redis):
    resolver = resolver_for(slack, redis)
    accesses = {"secret": CollectionAccess(audience=Audience(groups=("S0NOSUCH", "no-such-team")))}
    assert (await private_scope(resolver, accesses, "UASKER")).collections == frozenset()
    assert (await resolver.person("XNOBODY")).kind is Kind.UNKNOWN


async def test_a_channels_people_are_read_once_and_again_after_a_user_change(slack, redis):
    resolver = resolver_for(slack, redis)
    first = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CGENERAL", bot_user_id=BOT_USER_ID)
    assert first.collections == {"handbook", "visitors", "partners"}
    # A member of #general turned into a guest: the channel's cached people are stale from the event on.
    slack.users["UREVIEWER"] = {**slack.users["UREVIEWER"], "is_restricted": True}
    calls = len(slack.calls("users.info"))
    cached = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CGENERAL", bot_user_id=BOT_USER_ID)
    assert cached.collections == first.collections and len(slack.calls("users.info")) == calls
    await forget(redis, {"type": "user_change", "user": {"id": "UREVIEWER"}})
    changed = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CGENERAL", bot_user_id=BOT_USER_ID)
    assert changed.collections == {"visitors"} and len(slack.calls("users.info")) == calls + 1


async def test_a_cold_large_channel_reads_its_people_in_bulk(slack, redis):
    await redis.flushdb()
    members = [BOT_USER_ID, "UPAYROLL", "UGUEST", "UEXTERNAL"] + [f"UMEMBER{i:04d}" for i in range(996)]
    slack.channels["CBIG"] = {"id": "CBIG", "name": "big", "is_member": True, "members": members}
    resolver = resolver_for(slack, redis)
    scope = await conversation_scope(resolver, ACCESSES, "UPAYROLL", "CBIG", bot_user_id=BOT_USER_ID)
    # users.list, 200 a page, instead of a users.info per member: only the asker (resolved first, alone) and the
    # other organization's person (not listed) are asked one by one; a guest and an outsider are seen all the same.
    assert len(slack.calls("users.list")) <= 6
    assert sorted(c.body["user"] for c in slack.calls("users.info")) == ["UEXTERNAL", "UPAYROLL"]
    assert len([c for c in slack.calls() if c.method != "conversations.members"]) <= 12  # its pages apart
    assert scope.shared_externally is False and "handbook" not in scope.collections  # the outsider keeps it out
    people = {p.id: p.kind for p in await resolver.people(["UGUEST", "UEXTERNAL", "UMEMBER0001"])}
    assert people == {"UGUEST": Kind.GUEST, "UEXTERNAL": Kind.EXTERNAL, "UMEMBER0001": Kind.MEMBER}


# ---------------------------------------------------------------- races
# A slow Slack reply and the event that makes it stale, forced in that order: the stale reply is never cached.
# Each test holds one Slack answer in flight (made from the state before the change), lets the change happen in
# the fake and its event reach `forget`, then lets the old answer arrive. What the resolver answered for the
# question in flight is whatever Slack said then; the next question must see the change, not a cache entry
# written after the event with a fresh lifetime (bot.access.cache).


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
