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


# ---------------------------------------------------------------- mistakes that close a collection

DEEP_FLOW = ("audience: " + "[" * 20_000 + "]" * 20_000 + "\n").encode()
DEEP_BLOCK = ("audience:\n" + "".join("  " * i + "k:\n" for i in range(1, 150))).encode()  # 22 kB


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        # The groups line commented out: `audience:` is left with no value, which YAML reads as "no audience".
        (b"language: de\naudience:\n#  groups: [payroll-team]\n", 2, "'audience': has no value"),
        (b"audience:\n", 1, "'audience': has no value"),
        (b"audience: ~\n", 1, "'audience': has no value"),
        # The whole audience commented out: the collection would open to every full member without a word.
        (b"language: de\n# audience:\n#   groups: [payroll-team]\n", 2, "'audience' is commented out"),
        (b"#audience: {groups: [payroll-team]}\n", 1, "'audience' is commented out"),
        # A second audience key: YAML keeps the last one silently.
        (b"audience:\n  groups: [payroll-team]\nguests: false\naudience:\n  groups: [everyone]\n", 4,
         "'audience' is given twice (first on line 1)"),
        (b"audience:\n  groups: [payroll-team]\n  groups: [everyone]\n", 3, "'groups' is given twice (first on line 2)"),
        (b"guests: false\nguests: true\n", 2, "'guests' is given twice"),
        (b"audience: &hr {groups: [payroll-team]}\nguests: *hr\n", 2, "an alias (*hr)"),
        (DEEP_FLOW, 1, "nested deeper than 8 levels"),
        (DEEP_BLOCK, 9, "nested deeper than 8 levels"),
    ],
)
def test_a_file_that_could_read_two_ways_is_an_error_with_its_line(text, line, needle):
    with pytest.raises(CollectionError) as caught:
        parse_collection(text)
    assert needle in caught.value.message and caught.value.line == line


# (file, its text): each mistake leaves payroll open to every full member unless it closes the collection.
MISTAKES = {
    "commented out": ("payroll/_collection.yml", "audience:\n#  groups: [payroll-team]\n"),
    "given twice": ("payroll/_collection.yml", "audience:\n  groups: [payroll-team]\naudience:\n  users: [U0ANYONE]\n"),
    "too deep": ("payroll/_collection.yml", DEEP_FLOW.decode()),
    "too large": ("payroll/_collection.yml", "audience:\n  groups: [payroll-team]\n" + "#" * 70_000 + "\n"),
    ".yaml": ("payroll/_collection.yaml", "audience:\n  groups: [payroll-team]\n"),
    "capital C": ("payroll/_Collection.yml", "audience:\n  groups: [payroll-team]\n"),
    "no underscore": ("payroll/collection.yml", "audience:\n  groups: [payroll-team]\n"),
    "a letter missing": ("payroll/_colection.yml", "audience:\n  groups: [payroll-team]\n"),
    "a subfolder": ("payroll/slips/_collection.yml", "audience:\n  groups: [payroll-team]\n"),
}


def _payroll_kb(root):
    kb = root / "kb"
    write_entry(kb, "payroll/a.md", {"id": "pay-01", "title": "Pay"}, {"S": "Salaries are paid on the 25th."})
    write_entry(kb, "payroll/slips/b.md", {"id": "pay-02", "title": "Slips"}, {"S": "Payslips come by mail."})
    write_entry(kb, "public/c.md", {"id": "pub-01", "title": "Pub"}, {"S": "The canteen opens at noon."})
    (kb / "payroll" / "_collection.yml").write_text("audience:\n  groups: [payroll-team]\n")
    return kb


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_collection_file_mistake_keeps_the_live_index_or_closes_the_collection(tmp_path, mistake):
    kb = _payroll_kb(tmp_path)
    assert build_index(kb, tmp_path / "index").switched
    live = current_generation(tmp_path / "index")
    rel, text = MISTAKES[mistake]
    if rel != "payroll/_collection.yml" and "slips" not in rel:
        (kb / "payroll" / "_collection.yml").unlink()  # renamed, not copied
    (kb / rel).write_text(text)
    refused = build_index(kb, tmp_path / "index")
    assert not refused.switched and current_generation(tmp_path / "index") == live
    assert [e.path for e in refused.errors] == [rel]
    assert read_access(live)["payroll"].audience == Audience(groups=("payroll-team",))
    kept_going = build_index(kb, tmp_path / "index", keep_going=True)
    assert kept_going.switched
    access = read_access(current_generation(tmp_path / "index"))
    assert access["payroll"] == NOBODY and access["public"] == EVERY_MEMBER


def test_index_and_doctor_name_each_mistaken_file_and_its_line_and_print_no_traceback(tmp_path, monkeypatch, capsys):
    from bot.cli import main

    kb = _payroll_kb(tmp_path)
    (kb / "payroll" / "_collection.yml").write_bytes(DEEP_FLOW)
    (kb / "public" / "collection.yaml").write_text("audience:\n  groups: [staff]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CITEBOT_KB_DIR", str(kb))
    monkeypatch.setenv("CITEBOT_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    assert main(["index", "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{kb / 'payroll' / '_collection.yml'}:1: invalid collection file: nested deeper than 8 levels" in err
    assert f"{kb / 'public' / 'collection.yaml'}:1: looks like a collection file" in err
    assert "Traceback" not in err
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"fail  access  {kb / 'payroll' / '_collection.yml'}:1: invalid collection file: nested deeper" in out
    assert f"fail  access  {kb / 'public' / 'collection.yaml'}:1: looks like a collection file" in out


def test_loading_a_deep_collection_file_without_slack_is_an_error_not_a_traceback(tmp_path):
    from kb_index.entries import load_kb

    kb = _payroll_kb(tmp_path)
    (kb / "payroll" / "_collection.yml").write_bytes(DEEP_BLOCK)
    result = load_kb(kb)
    assert [str(e) for e in result.errors] == ["payroll/_collection.yml:9: invalid collection file: nested deeper "
                                               "than 8 levels"]
    assert result.unreadable_collections == {"payroll"}


def test_names_that_are_not_collection_files_are_left_alone():
    from kb_index.entries import collection_file_mistake

    for rel in ("hr/selection.yml", "hr/connection.yml", "hr/collection-notes.md", "hr/_collection.yml.bak",
                "hr/recollections.txt", "ops/docker-compose.yaml"):
        assert collection_file_mistake(rel) is None, rel
