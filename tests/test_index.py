"""Index builds: generations, atomic switch, incremental update, hot reload."""

from __future__ import annotations

import threading

import pytest

from kb_index import IndexNotFound, Retriever, build_index
from kb_index.index import CURRENT_FILE, current_generation, read_manifest
from tests.kb_fixtures import MINI_KB, write_entry, write_mini_kb


@pytest.fixture
def kb(tmp_path):
    return write_mini_kb(tmp_path / "kb")


def rewrite(kb, rel, **sections):
    meta, old = MINI_KB[rel]
    write_entry(kb, rel, meta, sections or old)


def test_first_build_reports_counts(kb, tmp_path):
    report = build_index(kb, tmp_path / "ix")
    assert report.full_rebuild
    assert report.entries == len(MINI_KB)
    assert report.chunks == sum(len(sections) for _, sections in MINI_KB.values())
    assert report.skipped == 0
    assert "7 entries" in report.summary()


def test_unchanged_entries_are_not_reindexed(kb, tmp_path):
    build_index(kb, tmp_path / "ix")
    rewrite(kb, "payroll/efz-01.md", Anspruch="Die Fortzahlung des Lohns dauert bis zu acht Wochen.")
    indexed = []
    report = build_index(kb, tmp_path / "ix", progress=lambda stage, done, total: indexed.append((stage, total)))
    assert report.updated == ["lb-efz-01"]
    assert report.added == [] and report.removed == []
    assert report.unchanged == len(MINI_KB) - 1
    assert ("index", 1) in indexed  # one entry went through the writer
    with Retriever(tmp_path / "ix") as r:
        assert "acht Wochen" in r.search("Fortzahlung des Lohns", k=1)[0].text
        assert r.doc_count == report.chunks


def test_removed_and_added_entries(kb, tmp_path):
    build_index(kb, tmp_path / "ix")
    (kb / "handbook" / "cafe-01.md").unlink()
    write_entry(kb, "handbook/gym-01.md", {"id": "hb-gym-01", "title": "Gym"}, {"Gym": "The gym subsidy is 30 EUR."})
    report = build_index(kb, tmp_path / "ix")
    assert report.removed == ["hb-cafe-01"] and report.added == ["hb-gym-01"]
    with Retriever(tmp_path / "ix") as r:
        assert [h.entry_id for h in r.search("gym subsidy")] == ["hb-gym-01"]
        assert r.search("coffee dishwasher") == []


def test_nothing_changed_still_switches_to_an_equal_generation(kb, tmp_path):
    first = build_index(kb, tmp_path / "ix")
    second = build_index(kb, tmp_path / "ix")
    assert second.unchanged == len(MINI_KB) and not second.updated
    assert second.generation != first.generation
    assert read_manifest(current_generation(tmp_path / "ix"))["entries"] == read_manifest(
        tmp_path / "ix" / second.generation
    )["entries"]


def test_rebuild_flag_reindexes_everything(kb, tmp_path):
    build_index(kb, tmp_path / "ix")
    report = build_index(kb, tmp_path / "ix", rebuild=True)
    assert report.full_rebuild and len(report.added) == len(MINI_KB)


def test_old_generations_are_cleaned_but_the_previous_one_is_kept(kb, tmp_path):
    for _ in range(4):
        last = build_index(kb, tmp_path / "ix")
    gens = sorted(p.name for p in (tmp_path / "ix").glob("gen-*"))
    assert gens == ["gen-000003", "gen-000004"] and last.generation == "gen-000004"


def test_previous_generation_stays_readable_after_an_update(kb, tmp_path):
    # The new generation is made of hard links to the old files; updating it must not touch them.
    first = build_index(kb, tmp_path / "ix")
    old_reader = Retriever(tmp_path / "ix")
    rewrite(kb, "payroll/efz-01.md", Anspruch="Die Fortzahlung des Lohns dauert bis zu acht Wochen.")
    build_index(kb, tmp_path / "ix")
    (tmp_path / "ix" / CURRENT_FILE).write_text(first.generation + "\n")
    assert "sechs Wochen" in old_reader.search("Fortzahlung des Lohns", k=1)[0].text
    old_reader.close()


def test_long_lived_retriever_follows_a_rebuild(kb, tmp_path):
    build_index(kb, tmp_path / "ix")
    with Retriever(tmp_path / "ix") as r:
        before = r.generation
        assert r.search("gym subsidy") == []
        write_entry(kb, "handbook/gym-01.md", {"id": "hb-gym-01", "title": "Gym"}, {"Gym": "The gym subsidy is 30 EUR."})
        build_index(kb, tmp_path / "ix")
        assert [h.entry_id for h in r.search("gym subsidy")] == ["hb-gym-01"]
        assert r.generation != before


def test_searches_during_rebuilds_always_see_a_whole_index(kb, tmp_path):
    build_index(kb, tmp_path / "ix")
    errors, results = [], []
    stop = threading.Event()

    def search_loop():
        with Retriever(tmp_path / "ix") as r:
            while not stop.is_set():
                try:
                    hits = r.search("Altersteilzeit Lebensjahr", k=3)
                    results.append(tuple(h.entry_id for h in hits))
                except Exception as exc:  # noqa: BLE001 - the test collects every failure
                    errors.append(exc)

    threads = [threading.Thread(target=search_loop) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(6):
            rewrite(kb, "payroll/efz-01.md", Anspruch=f"Fortzahlung des Lohns, Fassung {i}.")
            build_index(kb, tmp_path / "ix")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert results and set(results) == {results[0]}
    assert results[0][0] == "lb-atz-01"


def test_loader_errors_are_reported_and_the_rest_is_built(kb, tmp_path):
    (kb / "payroll" / "broken.md").write_text("---\nid: [\n---\n## S\nt\n")
    report = build_index(kb, tmp_path / "ix")
    assert report.skipped == 1 and report.entries == len(MINI_KB)
    assert str(report.errors[0]).startswith("payroll/broken.md:2: invalid YAML")


def test_failed_build_leaves_the_live_generation_alone(kb, tmp_path, monkeypatch):
    good = build_index(kb, tmp_path / "ix")

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("kb_index.index._write_manifest", boom)
    with pytest.raises(RuntimeError):
        build_index(kb, tmp_path / "ix")
    assert current_generation(tmp_path / "ix").name == good.generation
    assert sorted(p.name for p in (tmp_path / "ix").glob("gen-*")) == [good.generation]


def test_missing_index_says_what_to_do(tmp_path):
    with pytest.raises(IndexNotFound, match="run 'citebot index' first"):
        Retriever(tmp_path / "nothing")


def test_an_index_of_another_version_is_refused_and_rebuilt_in_full(kb, tmp_path):
    import json as _json

    from kb_index import IndexOutdated
    from kb_index.index import MANIFEST_FILE

    first = build_index(kb, tmp_path / "ix")
    manifest_path = tmp_path / "ix" / first.generation / MANIFEST_FILE
    manifest = _json.loads(manifest_path.read_text())
    manifest_path.write_text(_json.dumps(manifest | {"schema_version": 1}))
    with pytest.raises(IndexOutdated, match="run 'citebot index'"):
        Retriever(tmp_path / "ix")
    report = build_index(kb, tmp_path / "ix")
    assert report.full_rebuild and len(report.added) == len(MINI_KB)
    with Retriever(tmp_path / "ix") as r:
        assert r.search("Altersteilzeit")[0].entry_id == "lb-atz-01"
