"""Which collections a question may draw on, where its answer is shown (docs/DESIGN.md, section 3.8).

Shown to the asker alone (a DM, the assistant panel, /citebot's ephemeral
reply): what the asker may read. Posted in a conversation: what every person
in it may read (bots are no readers), and the asker too; in a channel shared
with another organization only `external: true` collections. Each set is then
narrowed by the channel's policy in channels.yml, never widened.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.access.policy import Kind, Person, readable_by, readable_by_all
from bot.access.resolver import AccessResolver
from kb_index.collection import CollectionAccess, in_collections
from kb_index.index import IndexNotFound, current_generation, read_access


@dataclass(frozen=True)
class Scope:
    collections: frozenset[str]  # what the answer shown here may draw on
    asker: frozenset[str]  # what the asker may read (more than `collections` in a channel: offer a private answer)
    shared_externally: bool = False  # a channel shared with another organization

    def within(self, policy: list[str] | None) -> list[str]:
        """The question's collections: the channel policy's (None: all) narrowed to this scope."""
        allowed = self.collections if policy is None else {c for c in self.collections if in_collections(c, policy)}
        return sorted(allowed)

    @property
    def more_for_asker(self) -> frozenset[str]:
        return self.asker - self.collections


class Accesses:
    """Who may read each collection of the live index: its manifest's `access`, read again when it switches."""

    def __init__(self, index_dir: Path):
        self.index_dir = Path(index_dir)
        self._cached: tuple[str, dict[str, CollectionAccess]] | None = None

    def current(self) -> dict[str, CollectionAccess]:
        gen_dir = current_generation(self.index_dir)
        if self._cached is None or self._cached[0] != gen_dir.name:
            try:
                self._cached = (gen_dir.name, read_access(gen_dir))
            except (FileNotFoundError, json.JSONDecodeError) as exc:
                raise IndexNotFound(f"the index in {self.index_dir} has no readable manifest: {exc}") from exc
        return self._cached[1]


async def private_scope(resolver: AccessResolver, accesses: Mapping[str, CollectionAccess], user: str | None) -> Scope:
    """For a reply only `user` sees."""
    asker = await _asker(resolver, user)
    directory = await resolver.directory(accesses)
    reads = frozenset(readable_by(asker, accesses, directory))
    return Scope(collections=reads, asker=reads)


async def conversation_scope(resolver: AccessResolver, accesses: Mapping[str, CollectionAccess], user: str | None,
                             channel: str, *, bot_user_id: str | None) -> Scope:
    """For a reply posted in `channel`, asked by `user`."""
    asker = await _asker(resolver, user)
    reads = frozenset(readable_by(asker, accesses, await resolver.directory(accesses)))
    everyone, shared_externally = await channel_reads(resolver, accesses, channel, bot_user_id=bot_user_id)
    return Scope(collections=everyone & reads, asker=reads, shared_externally=shared_externally)


async def channel_reads(resolver: AccessResolver, accesses: Mapping[str, CollectionAccess], channel: str, *,
                        bot_user_id: str | None = None) -> tuple[frozenset[str], bool]:
    """What every member of `channel` may read (bots aside), and whether it is shared with another organization."""
    directory = await resolver.directory(accesses)
    kind = await resolver.channel(channel)
    members = await resolver.channel_members(channel)
    if not members:
        return frozenset(), kind.shared_externally  # nobody known to be in it: nothing is known to be safe there
    people = await resolver.channel_people(channel, members - {bot_user_id or ""})
    everyone = readable_by_all(people, accesses, directory, shared_externally=kind.shared_externally)
    return frozenset(everyone), kind.shared_externally


async def _asker(resolver: AccessResolver, user: str | None) -> Person:
    return await resolver.person(user) if user else Person(id="", kind=Kind.UNKNOWN)
