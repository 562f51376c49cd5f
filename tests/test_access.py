"""Who may read which collection: the rules (bot.access.policy) and what Slack says (bot.access.resolver),
over HTTP against the fake Slack Web API and a real Redis."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from bot.access.cache import forget
from bot.access.policy import Directory, Kind, Person, may_read, readable_by, readable_by_all
from bot.access.resolver import AccessResolver, AccessUnavailable
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


@pytest.fixture
async def redis(redis_url):
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


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
