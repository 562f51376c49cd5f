"""`_collection.yml`'s audience, guests and external: parsed strictly, kept in the index manifest."""

from __future__ import annotations

import pytest

from kb_index import build_index
from kb_index.collection import EVERY_MEMBER, NOBODY, Audience, CollectionAccess, CollectionError, parse_collection
from kb_index.index import current_generation, read_access
from tests.kb_fixtures import write_entry

PAYROLL = b"""language: de
audience:
  groups: [payroll-team, "@hr", S0PAYROLL]
  channels: [C0PAYROLL]
  users: [U0CFO]
guests: false
"""


def test_an_audience_names_groups_channels_and_users():
    settings = parse_collection(PAYROLL)
    assert settings.audience == Audience(groups=("payroll-team", "hr", "S0PAYROLL"), channels=("C0PAYROLL",),
                                         users=("U0CFO",))
    assert settings.access == CollectionAccess(audience=settings.audience)
    assert settings.language == "de"


def test_without_audience_every_full_member_reads_it_and_no_guest_nor_other_organization():
    assert parse_collection(b"language: en\n").access == EVERY_MEMBER
    assert EVERY_MEMBER.audience is None and not EVERY_MEMBER.guests and not EVERY_MEMBER.external
    opened = parse_collection(b"guests: true\nexternal: true\n").access
    assert opened.guests and opened.external and opened.audience is None


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("audience:\n  groups: [Payroll Team]\n", 1, "neither a user group ID"),
        ("audience:\n  channels: [payroll]\n", 1, "not a channel ID"),
        ("audience:\n  users: [cfo@example.com]\n", 1, "not a user ID"),
        ("audience: {}\n", 1, "names nobody"),
        ("audience:\n  teams: [T1]\n", 1, "unknown key (audience: groups, channels, users)"),
        ("language: de\nguests: yes please\n", 2, "true or false"),
        ("language: de\nexternal: 1\n", 2, "true or false"),
        ("audiences: [hr]\n", 1, "unknown key (known: base_url, source_role, language, audience, guests, external)"),
    ],
)
def test_a_wrong_audience_is_an_error_with_its_line(text, line, needle):
    with pytest.raises(CollectionError) as caught:
        parse_collection(text.encode())
    assert needle in caught.value.message and caught.value.line == line


def test_the_manifest_keeps_each_collections_access_and_an_invalid_file_closes_its_collection(tmp_path):
    kb = tmp_path / "kb"
    write_entry(kb, "payroll/a.md", {"id": "pay-01", "title": "Pay"}, {"S": "Salaries are paid on the 25th."})
    write_entry(kb, "public/b.md", {"id": "pub-01", "title": "Pub"}, {"S": "The canteen opens at noon."})
    write_entry(kb, "guests/c.md", {"id": "gst-01", "title": "Guests"}, {"S": "Guests sign in at the desk."})
    write_entry(kb, "broken/d.md", {"id": "brk-01", "title": "Broken"}, {"S": "Bonuses are secret."})
    (kb / "payroll" / "_collection.yml").write_bytes(PAYROLL)
    (kb / "guests" / "_collection.yml").write_text("guests: true\nexternal: true\n")
    # A typo in the audience must not leave the collection open to everyone with --keep-going.
    (kb / "broken" / "_collection.yml").write_text("audience:\n  group: [bonus-team]\n")
    report = build_index(kb, tmp_path / "index", keep_going=True)
    assert report.switched and report.errors
    access = read_access(current_generation(tmp_path / "index"))
    assert access["payroll"].audience == parse_collection(PAYROLL).audience
    assert access["public"] == EVERY_MEMBER
    assert access["guests"] == CollectionAccess(guests=True, external=True)
    assert access["broken"] == NOBODY
