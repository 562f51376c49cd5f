"""A build with errors never replaces a good live entry.

- On a duplicate id, the file that backs the id in the live index keeps it;
  the error names the other file.
- An entry whose file fails to load keeps its last good version.
- Without keep_going, a generation with errors is not switched in at all.
"""

from __future__ import annotations

import json

import pytest

from bot.answering.source_changes import changed_entries
from kb_index import Retriever, build_index, load_kb
from kb_index.index import current_generation, read_manifest
from tests.kb_fixtures import MINI_KB, write_entry, write_mini_kb

DUP = {"id": "hb-pto-01", "title": "Annual leave (draft)", "stand": "2026-03", "language": "en"}
DUP_TEXT = {"Carry-over": "Employees can carry over all 99 unused vacation days forever."}
BROKEN_YAML = "---\nid: hb-pto-01\ntitle: [unclosed\n---\n## Carry-over\nYou can carry over 40 days.\n"


@pytest.fixture
def kb(tmp_path):
    return write_mini_kb(tmp_path / "kb")


@pytest.fixture
def ix(tmp_path):
    return tmp_path / "ix"


def carry_over_hits(ix):
    with Retriever(ix) as r:
        return [(h.entry_id, h.text) for h in r.search("carry over unused vacation days", k=3) if not h.expanded]


def live_hashes(ix) -> dict[str, str]:
    return dict(read_manifest(current_generation(ix))["entries"])


# ---------------------------------------------------------------- duplicate ids


def test_a_new_file_with_a_live_id_does_not_take_it_over(kb, ix):
    build_index(kb, ix)
    before = live_hashes(ix)
    write_entry(kb, "handbook/hb-dup.md", DUP, DUP_TEXT)  # sorts before pto-01.md
    report = build_index(kb, ix, keep_going=True)
    [error] = report.errors
    assert error.path == "handbook/hb-dup.md"
    assert "duplicate id 'hb-pto-01'" in error.message and "handbook/pto-01.md" in error.message
    assert all("99" not in text for _, text in carry_over_hits(ix))
    assert live_hashes(ix) == before and not report.updated and not report.removed


def test_without_an_index_the_first_file_by_path_keeps_the_id_and_the_other_is_named(kb, ix):
    write_entry(kb, "handbook/hb-dup.md", DUP, DUP_TEXT)
    report = build_index(kb, ix, keep_going=True)
    [error] = report.errors
    assert error.path == "handbook/pto-01.md" and "handbook/hb-dup.md" in error.message


def test_load_kb_prefers_the_established_file_of_an_id(kb):
    write_entry(kb, "handbook/hb-dup.md", DUP, DUP_TEXT)
    result = load_kb(kb, established={"hb-pto-01": "handbook/pto-01.md"})
    assert [e.path for e in result.entries if e.id == "hb-pto-01"] == ["handbook/pto-01.md"]
    assert [e.path for e in result.errors] == ["handbook/hb-dup.md"]


def test_a_duplicate_of_a_broken_live_entry_does_not_take_it_over(kb, ix):
    build_index(kb, ix)
    before = live_hashes(ix)
    (kb / "handbook" / "pto-01.md").write_text(BROKEN_YAML)
    write_entry(kb, "handbook/hb-dup.md", DUP, DUP_TEXT)
    report = build_index(kb, ix, keep_going=True)
    errors = {e.path: e.message for e in report.errors}
    assert "invalid YAML" in errors["handbook/pto-01.md"]
    assert "duplicate id 'hb-pto-01'" in errors["handbook/hb-dup.md"]
    assert report.kept == ["hb-pto-01"]
    assert live_hashes(ix) == before
    assert all("99" not in text for _, text in carry_over_hits(ix))


# ---------------------------------------------------------------- last good versions


def test_a_broken_edit_keeps_the_last_good_version(kb, ix):
    build_index(kb, ix)
    before = live_hashes(ix)
    (kb / "handbook" / "pto-01.md").write_text(BROKEN_YAML)
    report = build_index(kb, ix, keep_going=True)
    assert report.kept == ["hb-pto-01"]
    [error] = report.errors
    assert error.path == "handbook/pto-01.md" and "last good version" in error.message
    assert ("hb-pto-01", MINI_KB["handbook/pto-01.md"][1]["Carry-over"]) in carry_over_hits(ix)
    # Nothing really changed: the manifest agrees, and no "source changed" note is due.
    assert live_hashes(ix) == before
    assert not report.updated and not report.removed and report.entries == len(MINI_KB)
    assert changed_entries(report, before) == ([], [])


def test_a_kept_entry_survives_a_full_rebuild_with_the_same_hash(kb, ix):
    build_index(kb, ix)
    before = live_hashes(ix)
    (kb / "handbook" / "pto-01.md").write_text(BROKEN_YAML)
    report = build_index(kb, ix, keep_going=True, rebuild=True)
    assert report.kept == ["hb-pto-01"]
    assert live_hashes(ix) == before
    assert changed_entries(report, before) == ([], [])
    with Retriever(ix) as r:
        [chunk] = [c for c in r.entry_chunks("hb-pto-01") if c.section == "Carry-over"]
        assert chunk.url == "https://wiki.example.com/pto" and chunk.stand == "2026-02"


def test_an_unknown_cross_ref_is_a_warning_and_the_new_version_goes_live(kb, ix):
    build_index(kb, ix)
    meta, _ = MINI_KB["handbook/pto-01.md"]
    write_entry(kb, "handbook/pto-01.md", dict(meta, cross_refs=["hb-nope-01"]), {"Carry-over": "Now 40 days."})
    report = build_index(kb, ix)  # no --keep-going: a warning does not hold the build back
    assert report.switched and report.errors == [] and report.kept == []
    [warning] = report.warnings
    assert warning.path == "handbook/pto-01.md" and "unknown cross-ref 'hb-nope-01'" in warning.message
    assert ("hb-pto-01", "Now 40 days.") in carry_over_hits(ix)


def test_a_fixed_file_is_indexed_again_as_a_change(kb, ix):
    build_index(kb, ix)
    (kb / "handbook" / "pto-01.md").write_text(BROKEN_YAML)
    build_index(kb, ix, keep_going=True)
    meta, _ = MINI_KB["handbook/pto-01.md"]
    write_entry(kb, "handbook/pto-01.md", meta, {"Carry-over": "You can carry over up to 7 unused vacation days."})
    report = build_index(kb, ix)
    assert report.errors == [] and report.kept == [] and report.updated == ["hb-pto-01"]
    assert any("7 unused" in text for _, text in carry_over_hits(ix))


def test_a_deleted_file_is_removed_not_kept(kb, ix):
    build_index(kb, ix)
    (kb / "handbook" / "cafe-01.md").unlink()
    report = build_index(kb, ix)
    assert report.removed == ["hb-cafe-01"] and report.kept == []


# ---------------------------------------------------------------- the switch


def test_a_build_with_errors_is_not_switched_in_without_keep_going(kb, ix):
    good = build_index(kb, ix)
    (kb / "handbook" / "broken.md").write_text("---\ntitle: no id\n---\n## S\nt\n")
    write_entry(kb, "handbook/gym-01.md", {"id": "hb-gym-01", "title": "Gym"}, {"Gym": "The gym subsidy is 30 EUR."})
    report = build_index(kb, ix)
    assert not report.switched and report.errors
    assert current_generation(ix).name == good.generation
    assert sorted(p.name for p in ix.glob("gen-*")) == [good.generation]
    with Retriever(ix) as r:
        assert r.search("gym subsidy") == []
    assert "not switched in" in report.summary()


def test_with_keep_going_it_is_switched_in(kb, ix):
    build_index(kb, ix)
    (kb / "handbook" / "broken.md").write_text("---\ntitle: no id\n---\n## S\nt\n")
    report = build_index(kb, ix, keep_going=True)
    assert report.switched and current_generation(ix).name == report.generation


def test_the_manifest_names_the_file_behind_each_entry(kb, ix):
    report = build_index(kb, ix)
    manifest = json.loads((ix / report.generation / "manifest.json").read_text())
    assert manifest["paths"]["hb-pto-01"] == "handbook/pto-01.md"


def test_an_index_without_paths_in_its_manifest_still_protects_its_ids(kb, ix):
    # Indexes built before the manifest named the files: the chunk store does.
    good = build_index(kb, ix)
    path = ix / good.generation / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["paths"]
    path.write_text(json.dumps(manifest))
    write_entry(kb, "handbook/hb-dup.md", DUP, DUP_TEXT)
    [error] = build_index(kb, ix, keep_going=True).errors
    assert error.path == "handbook/hb-dup.md"
