"""Access per synced document (docs/DESIGN.md 3.8): a page's readers are its space's readers narrowed by every
view restriction above it; each set of readers is a part of the source's collection ("handbook~3fa9c2d1").

The matrix: askers × parts, each decided by the same rules a collection is (bot/access/policy.py), then the names:
a channel's policy naming "handbook" admits every part, a part in someone's reach admits only itself.
"""

from __future__ import annotations

import pytest

from bot.access.policy import Directory, Kind, Person, may_read, readable_by_all
from bot.access.scope import Scope
from kb_index.collection import Audience, CollectionAccess, in_collections
from kb_index.sources.sync import part_name

SPACE = Audience(groups=("staff",))  # the space's readers
HR = Audience(groups=("hr",))  # an ancestor page restricted to HR
ANA = Audience(users=("UANA",))  # the page itself restricted to Ana (and HR above it)
DIRECTORY = Directory(groups={"staff": frozenset({"UANA", "UBEN", "UCARL"}), "hr": frozenset({"UANA", "UBEN"})})

PARTS = {
    "open": CollectionAccess(),  # every full member
    "space": CollectionAccess(audience=SPACE),
    "hr": CollectionAccess(audience=SPACE, also=(HR,)),
    "ana": CollectionAccess(audience=SPACE, also=(HR, ANA)),
    "ana-guests": CollectionAccess(audience=ANA, guests=True),
    "partners": CollectionAccess(audience=Audience(users=("UEXT",)), external=True),
}
# asker -> the parts they may read
MATRIX = {
    Person("UANA", Kind.MEMBER): {"open", "space", "hr", "ana", "ana-guests"},
    Person("UBEN", Kind.MEMBER): {"open", "space", "hr"},  # in HR, not Ana
    Person("UCARL", Kind.MEMBER): {"open", "space"},  # staff only
    Person("UDORA", Kind.MEMBER): {"open"},  # in no group
    Person("UANA", Kind.GUEST): {"ana-guests"},  # Ana as a guest: only where guests may read
    Person("UEXT", Kind.EXTERNAL): {"partners"},  # named, and external: true
    Person("UANA", Kind.DEACTIVATED): set(),
    Person("UANA", Kind.BOT): set(),
}


@pytest.mark.parametrize(("person", "expected"), list(MATRIX.items()), ids=lambda v: getattr(v, "id", None) or "")
def test_every_audience_of_a_part_must_admit_the_reader(person, expected):
    allowed = {name for name, access in PARTS.items() if may_read(person, access, DIRECTORY).allowed}
    assert allowed == expected


def test_the_reason_names_the_restriction_that_keeps_someone_out():
    decision = may_read(Person("UCARL", Kind.MEMBER), PARTS["hr"], DIRECTORY)
    assert not decision.allowed and decision.why == "not in its source's view restriction"
    decision = may_read(Person("UBEN", Kind.MEMBER), PARTS["hr"], DIRECTORY)
    assert decision.allowed and "staff" in decision.why and "hr" in decision.why


def test_a_conversation_reads_a_part_only_if_every_member_may():
    people = [Person("UANA", Kind.MEMBER), Person("UBEN", Kind.MEMBER)]
    assert readable_by_all(people, PARTS, DIRECTORY, shared_externally=False) == {"open", "space", "hr"}
    people.append(Person("UCARL", Kind.MEMBER))
    assert readable_by_all(people, PARTS, DIRECTORY, shared_externally=False) == {"open", "space"}


def test_a_policy_name_admits_every_part_but_a_part_admits_only_itself():
    restricted = part_name("handbook", PARTS["ana"])
    assert in_collections(restricted, ["handbook"])
    assert in_collections("handbook~all", ["handbook"])
    assert not in_collections(restricted, ["handbook~all"])  # someone who may read the open part only
    assert not in_collections("handbook", ["handbook~all"])
    assert not in_collections("handbooks~all", ["handbook"])
    # The scope narrows what a person may read by the channel's policy, part by part.
    scope = Scope(collections=frozenset({"handbook~all", "it"}), asker=frozenset({"handbook~all", restricted, "it"}))
    assert scope.within(["handbook"]) == ["handbook~all"]
    assert scope.within(None) == ["handbook~all", "it"]


def test_the_same_readers_give_the_same_part_and_other_readers_another():
    assert part_name("handbook", PARTS["open"]) == "handbook~all"
    assert part_name("handbook", PARTS["hr"]) == part_name("handbook", CollectionAccess(audience=SPACE, also=(HR,)))
    assert part_name("handbook", PARTS["hr"]) != part_name("handbook", PARTS["ana"])
    assert part_name("handbook", PARTS["space"]) != part_name("handbook", CollectionAccess(audience=SPACE, guests=True))
