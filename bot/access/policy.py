"""Who may read which collection: pure functions over what Slack said (bot.access.resolver).

A person reads a collection when the collection is not closed, the person is
active and not a bot, of this organization unless the collection is
`external: true`, a full member unless it is `guests: true`, and in its
audience when it has one (a listed user, a member of a listed group or
channel). A conversation reads what every one of its people reads; in a
channel shared with another organization only `external: true` collections
are used at all. Everything unknown reads nothing: a person Slack could not
name, a group or channel whose members are unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kb_index.collection import Audience, CollectionAccess


class Kind(StrEnum):
    MEMBER = "member"  # a full member of the workspace
    GUEST = "guest"  # a single- or multi-channel guest
    EXTERNAL = "external"  # a user of another organization (Slack Connect)
    DEACTIVATED = "deactivated"
    BOT = "bot"
    UNKNOWN = "unknown"  # Slack knows no such user


@dataclass(frozen=True)
class Person:
    id: str
    kind: Kind


@dataclass(frozen=True)
class Directory:
    """The members of the groups and channels that audiences name (by the name the collection file uses)."""

    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)
    channels: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    why: str


def may_read(person: Person, access: CollectionAccess, directory: Directory) -> Decision:
    """Whether `person` may read a collection of `access`, and why (for `citebot access` and the audit)."""
    if access.closed:
        return Decision(False, "its collection file is invalid: nobody reads it until it is fixed")
    if person.kind in (Kind.DEACTIVATED, Kind.BOT, Kind.UNKNOWN):
        return Decision(False, {Kind.DEACTIVATED: "a deactivated user", Kind.BOT: "a bot",
                                Kind.UNKNOWN: "not a user Slack knows"}[person.kind])
    if person.kind is Kind.EXTERNAL and not access.external:
        return Decision(False, "of another organization, and the collection is not external: true")
    if person.kind is Kind.GUEST and not access.guests:
        return Decision(False, "a guest, and the collection is not guests: true")
    audiences = access.audiences()
    if not audiences:
        if person.kind is Kind.EXTERNAL:
            return Decision(True, "external: true, no audience")
        return Decision(True, "no audience: every full member" + (" and guest (guests: true)" if access.guests else ""))
    whys = []
    for audience in audiences:
        why = _in_audience(person, audience, directory)
        if why is None:
            restriction = "its audience" if audience is access.audience else "its source's view restriction"
            if person.kind is Kind.EXTERNAL:
                # Another organization's people are in no group of ours, and a channel they share is no audience.
                return Decision(False, f"of another organization, and not named in {restriction}")
            return Decision(False, f"not in {restriction}")
        whys.append(why)
    return Decision(True, "; ".join(whys))


def _in_audience(person: Person, audience: Audience, directory: Directory) -> str | None:
    """Why `person` is in `audience`, or None."""
    if person.id in audience.users:
        return f"named in its audience ({person.id})"
    if person.kind is Kind.EXTERNAL:
        return None
    for group in audience.groups:
        if person.id in directory.groups.get(group, frozenset()):
            return f"member of the user group {group}"
    for channel in audience.channels:
        if person.id in directory.channels.get(channel, frozenset()):
            return f"member of the channel {channel}"
    return None


def readable(person: Person, accesses: Mapping[str, CollectionAccess], directory: Directory) -> dict[str, Decision]:
    """Each collection's decision for `person`."""
    return {name: may_read(person, access, directory) for name, access in accesses.items()}


def readable_by(person: Person, accesses: Mapping[str, CollectionAccess], directory: Directory) -> set[str]:
    return {name for name, decision in readable(person, accesses, directory).items() if decision.allowed}


def readable_by_all(people: Iterable[Person], accesses: Mapping[str, CollectionAccess], directory: Directory, *,
                    shared_externally: bool) -> set[str]:
    """What every one of `people` may read (bots other than the asker are no readers: pass them or not).

    In a channel shared with another organization only `external: true` collections, whoever is in it now:
    Slack Connect members come and go without this workspace's say.
    """
    names = {name for name, access in accesses.items() if access.external or not shared_externally}
    # Everyone an audience does not name is decided by their kind alone: once per kind, not per person
    # (a channel of thousands costs a handful of decisions).
    named = _named(accesses, directory)
    decided: set[str | Kind] = set()
    for person in people:
        key: str | Kind = person.id if person.id in named else person.kind
        if person.kind is Kind.BOT or key in decided:
            continue
        decided.add(key)
        names &= readable_by(person, {n: accesses[n] for n in names}, directory)
        if not names:
            break
    return names


def _named(accesses: Mapping[str, CollectionAccess], directory: Directory) -> set[str]:
    """Every user an audience names, directly or through a group or channel."""
    named: set[str] = set()
    for members in (*directory.groups.values(), *directory.channels.values()):
        named |= members
    for access in accesses.values():
        for audience in access.audiences():
            named.update(audience.users)
    return named


def audience_names(accesses: Mapping[str, CollectionAccess]) -> tuple[set[str], set[str]]:
    """The groups and channels the audiences name: what the resolver must look up."""
    groups: set[str] = set()
    channels: set[str] = set()
    for access in accesses.values():
        for audience in access.audiences():
            groups.update(audience.groups)
            channels.update(audience.channels)
    return groups, channels
