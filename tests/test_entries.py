"""Loading KB files: front matter, sections, plain files, and every kind of bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_index.entries import MAX_CHUNK_CHARS, load_kb, path_id
from tests.kb_fixtures import write_entry

GOOD = {"id": "lb-a-01", "title": "A", "stand": "2026-01", "language": "de"}


def errors_of(kb: Path) -> list[tuple[str, int, str]]:
    return [(e.path, e.line, e.message) for e in load_kb(kb).errors]


def test_front_matter_entry_becomes_sections_with_metadata(tmp_path):
    meta = dict(GOOD, legal_bases=["AltTZG § 2"], tags=["rente"], url="https://x.example/a")
    write_entry(tmp_path, "payroll/a.md", meta, {"Zusammenfassung": "Eins.", "Details": "Zwei."})
    [entry] = load_kb(tmp_path).entries
    assert entry.id == "lb-a-01"
    assert entry.collection == "payroll"
    assert entry.language == "de"
    assert entry.legal_bases == ("AltTZG § 2",)
    assert [(s.name, s.text) for s in entry.sections] == [("Zusammenfassung", "Eins."), ("Details", "Zwei.")]


def test_root_files_belong_to_default_collection(tmp_path):
    write_entry(tmp_path, "a.md", GOOD, {"S": "text"})
    assert load_kb(tmp_path).entries[0].collection == "default"


def test_stand_written_as_yaml_date_is_kept_as_text(tmp_path):
    (tmp_path / "a.md").write_text("---\nid: a\nstand: 2026-01-15\n---\n## S\ntext\n")
    assert load_kb(tmp_path).entries[0].stand == "2026-01-15"


def test_plain_markdown_gets_id_from_path_and_title_from_heading(tmp_path):
    (tmp_path / "hr").mkdir()
    (tmp_path / "hr" / "travel-policy.md").write_text("# Travel policy\n\nBook trains.\n\n## Hotels\nUp to 120 EUR.\n")
    [entry] = load_kb(tmp_path).entries
    assert entry.id == "hr-travel-policy"
    assert entry.title == "Travel policy"
    assert entry.collection == "hr"
    assert [s.name for s in entry.sections] == ["Overview", "Hotels"]


def test_plain_text_file_takes_title_from_file_name(tmp_path):
    (tmp_path / "office_hours.txt").write_text("The office opens at 8.\n")
    [entry] = load_kb(tmp_path).entries
    assert (entry.id, entry.title) == ("office-hours", "Office hours")


def test_html_file_goes_through_the_converter_keeps_headings_and_drops_scripts(tmp_path):
    (tmp_path / "it").mkdir()
    (tmp_path / "it" / "vpn.html").write_text(
        "<html><head><script>evil()</script></head><body><h1>VPN</h1><p>Install the client.</p>"
        "<h2>Support</h2><p>Call 1234 &amp; ask.</p></body></html>"
    )
    [entry] = load_kb(tmp_path).entries
    assert entry.title == "VPN"
    assert [(s.name, s.text) for s in entry.sections] == [("Overview", "Install the client."), ("Support", "Call 1234 & ask.")]
    assert all("evil" not in s.text for s in entry.sections)


def test_path_id_is_lowercase_and_dashed():
    assert path_id("HR/Travel Policy_2026.md") == "hr-travel-policy-2026"


def test_long_section_is_split_at_paragraphs(tmp_path):
    para = "Satz mit Inhalt. " * 40
    write_entry(tmp_path, "a.md", GOOD, {"Lang": "\n\n".join([para] * 12)})
    sections = load_kb(tmp_path).entries[0].sections
    assert len(sections) > 1
    assert all(len(s.text) <= MAX_CHUNK_CHARS for s in sections)
    assert sections[0].name == "Lang (1)"


def test_hidden_folders_are_passed_over_and_other_types_listed_as_not_indexed(tmp_path):
    write_entry(tmp_path, ".git/x.md", GOOD, {"S": "t"})
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    result = load_kb(tmp_path)
    assert result.files == 1 and not result.entries and not result.errors
    [other] = result.not_indexed
    assert other.path == "image.png" and "unknown type" in other.message


# ---------------------------------------------------------------- bad input


def test_bad_yaml_is_reported_with_its_line(tmp_path):
    (tmp_path / "bad.md").write_text("---\nid: x\ntitle: [unclosed\nstand: 2026-01\n---\n## S\nt\n")
    write_entry(tmp_path, "good.md", GOOD, {"S": "t"})
    result = load_kb(tmp_path)
    [(path, line, message)] = errors_of(tmp_path)
    assert path == "bad.md" and "invalid YAML" in message
    assert line in (3, 4, 5)  # the parser points at or just after the broken line
    assert [e.id for e in result.entries] == ["lb-a-01"]  # the rest still loads


def test_missing_id_is_reported(tmp_path):
    (tmp_path / "a.md").write_text("---\ntitle: No id\n---\n## S\nt\n")
    assert errors_of(tmp_path) == [("a.md", 1, "front matter has no 'id'")]


def test_duplicate_id_keeps_the_first_and_names_both_files(tmp_path):
    write_entry(tmp_path, "a.md", GOOD, {"S": "one"})
    write_entry(tmp_path, "b.md", GOOD, {"S": "two"})
    result = load_kb(tmp_path)
    assert [e.path for e in result.entries] == ["a.md"]
    [(path, line, message)] = errors_of(tmp_path)
    assert path == "b.md" and line == 2 and "duplicate id 'lb-a-01'" in message and "a.md" in message


def test_unknown_cross_ref_is_a_warning_on_its_line_and_the_entry_stays(tmp_path):
    write_entry(tmp_path, "a.md", dict(GOOD, cross_refs=["lb-nope-01"]), {"S": "t"})
    result = load_kb(tmp_path)
    assert not result.errors and [e.id for e in result.entries] == ["lb-a-01"]
    [warning] = result.warnings
    assert warning.path == "a.md" and warning.message.startswith("unknown cross-ref 'lb-nope-01'")
    assert (tmp_path / "a.md").read_text().splitlines()[warning.line - 1].startswith("cross_refs:")


def test_empty_file_is_reported(tmp_path):
    (tmp_path / "empty.md").write_text("  \n")
    assert errors_of(tmp_path) == [("empty.md", 1, "empty file")]


def test_front_matter_without_body_is_reported(tmp_path):
    (tmp_path / "a.md").write_text("---\nid: a\n---\n\n")
    [(path, _, message)] = errors_of(tmp_path)
    assert "no text" in message


def test_unclosed_front_matter_is_reported(tmp_path):
    (tmp_path / "a.md").write_text("---\nid: a\n## S\ntext\n")
    assert "no closing '---'" in errors_of(tmp_path)[0][2]


@pytest.mark.parametrize(
    ("front", "needle"),
    [
        ("id: has space", "may only use"),
        ("id: a\nstand: Januar", "'stand' must be YYYY-MM"),
        ("id: a\ntags: {a: 1}", "'tags' must be a list"),
        ("id: a\ntitle: [x, y]", "'title' must be a single value"),
        ("- just\n- a list", "must be a mapping"),
    ],
)
def test_invalid_fields_are_reported(tmp_path, front, needle):
    (tmp_path / "a.md").write_text(f"---\n{front}\n---\n## S\ntext\n")
    [(_, _, message)] = errors_of(tmp_path)
    assert needle in message


def test_non_utf8_file_is_reported(tmp_path):
    (tmp_path / "a.txt").write_bytes("Gebühr".encode("latin-1"))
    assert "not UTF-8" in errors_of(tmp_path)[0][2]


def test_missing_kb_folder_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_kb(tmp_path / "nope")


def test_content_hash_changes_with_text_only(tmp_path):
    write_entry(tmp_path, "a.md", GOOD, {"S": "one"})
    before = load_kb(tmp_path).entries[0].content_hash
    assert load_kb(tmp_path).entries[0].content_hash == before
    write_entry(tmp_path, "a.md", GOOD, {"S": "two"})
    assert load_kb(tmp_path).entries[0].content_hash != before


@pytest.mark.parametrize(("rel", "expected"), [
    ("hr/Überstunden.md", "hr-ueberstunden"),
    ("hr/Kündigung.md", "hr-kuendigung"),
    ("hr/Ku\u0308ndigung.md", "hr-kuendigung"),  # the same name as a Mac writes it (decomposed)
    ("Ü.md", "ue"),
    ("hr/Straße.pdf", "hr-strasse"),
    ("Café.md", "cafe"),
    ("Øresund/Æble.md", "oeresund-aeble"),
])
def test_an_id_from_a_file_name_spells_its_letters_out(rel, expected):
    assert path_id(rel) == expected


def test_a_file_name_without_latin_letters_gets_a_stable_hash_never_an_empty_or_shared_id(tmp_path):
    meeting, rules = path_id("hr/会议.md"), path_id("hr/规则.md")
    assert meeting.startswith("hr-") and len(meeting) == len("hr-") + 8
    assert meeting != rules and path_id("hr/会议.md") == meeting
    assert path_id("会议.md") and path_id("会议.md") != meeting
    for name in ("会议.md", "规则.md"):
        (tmp_path / "hr").mkdir(exist_ok=True)
        (tmp_path / "hr" / name).write_text("## Regeln\nDie Besprechung beginnt um neun Uhr.\n")
    loaded = load_kb(tmp_path)
    assert not loaded.errors and sorted(e.id for e in loaded.entries) == sorted([meeting, rules])


def test_two_files_that_spell_out_to_one_id_are_an_error_naming_both(tmp_path):
    (tmp_path / "hr").mkdir()
    (tmp_path / "hr" / "Überstunden.md").write_text("## Regeln\nÜberstunden werden ausgeglichen.\n")
    (tmp_path / "hr" / "Ueberstunden.md").write_text("## Regeln\nÜberstunden werden bezahlt.\n")
    loaded = load_kb(tmp_path)
    assert [e.id for e in loaded.entries] == ["hr-ueberstunden"]
    assert len(loaded.errors) == 1 and "duplicate id 'hr-ueberstunden'" in loaded.errors[0].message
    named = {loaded.errors[0].path, loaded.errors[0].message.split("already used by ")[1].rstrip(")")}
    assert named == {"hr/Überstunden.md", "hr/Ueberstunden.md"}
