"""The sync engine (kb_index/sources/sync.py) over a source scripted in memory, into a real index on disk.

The connectors' own tests (test_confluence.py, test_drive.py) and the end-to-end ones (test_sync_slack.py) run
over fake servers that speak HTTP; here the source is a plain object so that each case of the engine (readers
changed but not the page, a page that fails, a sync killed half-way) is set up in a line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kb_index import Retriever, build_index
from kb_index.collection import Audience, CollectionAccess
from kb_index.index import current_generation, read_access, read_manifest
from kb_index.sources import sync as sync_module
from kb_index.sources.config import parse_sources
from kb_index.sources.http import SourceUnavailable
from kb_index.sources.model import Calls, Changes, DocumentError, Fetched, Grant, Listed, SourceError
from kb_index.sources.runner import run_sync
from kb_index.sources.store import SyncedStore, stored_entries
from kb_index.sources.sync import PeopleUnavailable, part_name
from tests.kb_fixtures import write_entry

SOURCES = parse_sources(b"""\
sources:
  wiki:
    type: confluence
    url: https://wiki.example.com
    deployment: data_center
    spaces: [HR]
    collection: handbook
    credentials: {token: WIKI_TOKEN}
    groups: {hr-team: payroll-team, confluence-users: everyone}
""")
EVERYONE = Grant(everyone=True)


@dataclass
class Doc:
    title: str
    text: str
    version: int = 1
    grants: tuple[Grant, ...] = (EVERYONE,)
    unreadable: str | None = None
    broken: bool = False  # fetching it fails


@dataclass
class ScriptedSource:
    """A source whose documents a test edits between syncs; counts what the sync fetched."""

    docs: dict[str, Doc] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)
    calls: Calls = field(default_factory=Calls)
    feed: Changes | None = None
    listing_fails: bool = False
    die_after: int | None = None  # the sync is killed (KeyboardInterrupt) after this many fetches

    def listing(self):
        if self.listing_fails:
            raise SourceError("HR: HTTP 503 after 5 tries")
        for doc_id, doc in self.docs.items():
            yield Listed(doc_id, str(doc.version), doc.title, doc.grants, path=("Handbook",), unreadable=doc.unreadable)

    def changes(self, cursor):
        return self.feed

    def start_cursor(self):
        return "cursor-1"

    def fetch(self, listed: Listed) -> Fetched:
        if self.die_after is not None and len(self.fetched) >= self.die_after:
            raise KeyboardInterrupt
        doc = self.docs[listed.id]
        if doc.broken:
            raise DocumentError("HTTP 500 from the page")
        self.fetched.append(listed.id)
        html = f"<html><head><title>{doc.title}</title></head><body><h1>{doc.title}</h1><p>{doc.text}</p></body></html>"
        return Fetched(listed.id, doc.title, ".html", html.encode(), f"https://wiki.example.com/p/{listed.id}",
                       "2026-11-30", listed.path)

    def close(self):
        pass


class Directory:
    """Slack's users by e-mail, as users.lookupByEmail would answer."""

    def __init__(self, people: dict[str, str]):
        self.people = people
        self.down = False

    def user_id(self, email: str) -> str | None:
        if self.down:
            raise PeopleUnavailable("users.lookupByEmail: HTTP 503")
        return self.people.get(email)


@pytest.fixture
def place(tmp_path: Path):
    kb = tmp_path / "kb"
    write_entry(kb, "public/hello.md", {"id": "hello", "title": "Hello"}, {"Hello": "Welcome to the company."})
    return kb, tmp_path / "index", tmp_path / "synced"


def sync(place, source: ScriptedSource, people=None, **kwargs):
    kb, index, synced = place
    people = people or Directory({"ana@example.com": "UANA"})
    return run_sync(SOURCES, synced, people, lambda: build_index(kb, index, synced_dir=synced),
                    connector=lambda name, s: source, **kwargs)


def indexed(place) -> dict[str, str]:
    """Entry id -> its collection part, in the live index."""
    kb, index, synced = place
    manifest = read_manifest(current_generation(index))
    with Retriever(index) as retriever:
        return {eid: retriever.entry_chunks(eid)[0].collection for eid in manifest["entries"]}


ANA_ONLY = Grant(users=frozenset({"ana@example.com"}))


def test_each_document_goes_into_the_part_of_its_readers(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days of leave a year."),
                             "2": Doc("Salaries", "Salary bands are secret.", grants=(EVERYONE, ANA_ONLY))})
    run = sync(place, source)
    assert run.ok and run.reports[0].fetched == 2
    parts = indexed(place)
    restricted = CollectionAccess(audience=Audience(users=("UANA",)))
    assert parts == {"hello": "public", "wiki-1": "handbook~all", "wiki-2": part_name("handbook", restricted)}
    access = read_access(current_generation(place[1]))
    assert access[parts["wiki-2"]] == restricted
    assert access["handbook~all"] == CollectionAccess()
    # The page tree is the start of each section's path; the link and date come from the source.
    with Retriever(place[1]) as retriever:
        chunk = retriever.entry_chunks("wiki-1")[0]
    assert chunk.section == "Handbook › Leave" and chunk.url == "https://wiki.example.com/p/1"
    assert chunk.stand == "2026-11-30"


def test_only_what_changed_is_fetched_and_new_readers_alone_fetch_nothing(place):
    source = ScriptedSource({str(n): Doc(f"Page {n}", f"Text of page {n}.") for n in range(5)})
    sync(place, source)
    source.fetched.clear()
    source.docs["3"].version, source.docs["3"].text = 2, "Changed text of page 3."
    source.docs["4"].grants = (EVERYONE, ANA_ONLY)  # restricted at the source, not edited
    report = sync(place, source).reports[0]
    assert source.fetched == ["3"]
    assert (report.fetched, report.readers_changed, report.unchanged) == (1, 1, 3)
    assert indexed(place)["wiki-4"] != "handbook~all"
    with Retriever(place[1]) as retriever:
        assert "Changed text" in retriever.entry_chunks("wiki-3")[0].text


def test_a_deleted_or_moved_away_document_leaves_the_index(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days."), "2": Doc("Old", "Old rule.")})
    sync(place, source)
    del source.docs["2"]
    report = sync(place, source).reports[0]
    assert report.removed == ["Old"]
    assert "wiki-2" not in indexed(place)
    assert [s.entry.id for s in stored_entries(place[2])] == ["wiki-1"]


@pytest.mark.parametrize(("grants", "unreadable", "says"), [
    ((), "HTTP 403 on the space's permissions", "permissions could not be read"),
    ((EVERYONE, Grant(users=frozenset({"nobody@example.com"}))), None, "nobody its permissions name is known"),
    # A group sources.yml does not map grants nobody: never read as everyone.
    ((Grant(groups=frozenset({"finance"})),), None, "nobody its permissions name is known"),
])
def test_a_document_whose_readers_are_unknown_is_not_indexed_and_leaves_if_it_was(place, grants, unreadable, says):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days."), "2": Doc("Bonus", "Bonus rules.")})
    sync(place, source)
    source.docs["2"].grants, source.docs["2"].unreadable = grants, unreadable
    report = sync(place, source).reports[0]
    assert [p.id for p in report.not_indexed] == ["2"] and says in report.not_indexed[0].reason
    assert set(indexed(place)) == {"hello", "wiki-1"}


def test_a_mapped_group_and_everyone_groups(place):
    source = ScriptedSource({"1": Doc("Pay", "Pay days.", grants=(Grant(groups=frozenset({"confluence-users"})),
                                                                   Grant(groups=frozenset({"HR-Team"}))))})
    sync(place, source)
    access = read_access(current_generation(place[1]))[indexed(place)["wiki-1"]]
    assert access == CollectionAccess(audience=Audience(groups=("payroll-team",)))


def test_a_page_that_fails_is_skipped_keeps_its_last_good_text_but_never_its_old_readers(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days."), "2": Doc("Bonus", "Bonus is paid in March.")})
    sync(place, source)
    source.docs["2"].version, source.docs["2"].broken = 2, True
    source.docs["2"].grants = (EVERYONE, ANA_ONLY)
    source.docs["1"].version, source.docs["1"].text = 2, "Thirty-two days."
    run = sync(place, source)
    report = run.reports[0]
    assert [p.id for p in report.failed] == ["2"] and run.ok
    assert report.fetched == 1  # the other page went on
    parts = indexed(place)
    assert parts["wiki-2"] != "handbook~all"  # restricted now, with the text it had
    with Retriever(place[1]) as retriever:
        assert "March" in retriever.entry_chunks("wiki-2")[0].text


def test_a_listing_that_fails_changes_nothing(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days.")})
    sync(place, source)
    source.listing_fails = True
    run = sync(place, source)
    assert "503" in run.failed["wiki"] and not run.ok
    assert set(indexed(place)) == {"hello", "wiki-1"}  # not read as "every page deleted"


def test_slack_down_keeps_the_ids_it_gave_and_matches_nobody_new(place):
    source = ScriptedSource({"1": Doc("Salaries", "Secret.", grants=(EVERYONE, ANA_ONLY))})
    people = Directory({"ana@example.com": "UANA", "ben@example.com": "UBEN"})
    sync(place, source, people)
    people.down = True
    source.docs["1"].grants = (EVERYONE, Grant(users=frozenset({"ana@example.com", "ben@example.com"})))
    report = sync(place, source, people).reports[0]
    access = read_access(current_generation(place[1]))[indexed(place)["wiki-1"]]
    assert access.audience == Audience(users=("UANA",))  # Ben was never looked up: not let in on a guess
    assert any("HTTP 503" in note for note in report.notes)


def test_a_sync_killed_half_way_loses_nothing_and_takes_nothing_twice(place, monkeypatch):
    monkeypatch.setattr(sync_module, "CHECKPOINT_EVERY", 2)
    source = ScriptedSource({str(n): Doc(f"Page {n}", f"Text {n}.") for n in range(7)})
    source.die_after = 5
    with pytest.raises(KeyboardInterrupt):
        sync(place, source)
    source.die_after = None
    fetched_before = list(source.fetched)
    run = sync(place, source)
    # What was saved at the last checkpoint (4 pages) is not fetched again; the page fetched after it is.
    assert source.fetched[len(fetched_before):] == ["4", "5", "6"]
    assert run.ok and sorted(indexed(place)) == ["hello", *[f"wiki-{n}" for n in range(7)]]
    assert len(list(stored_entries(place[2]))) == 7


def test_the_change_feed_is_used_when_there_is_a_cursor(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days."), "2": Doc("Old", "Old rule.")})
    sync(place, source)
    assert SyncedStore(place[2], "wiki").load_state().cursor == "cursor-1"
    source.docs["1"].version, source.docs["1"].text = 2, "Thirty-one days."
    del source.docs["2"]
    source.feed = Changes(changed=(Listed("1", "2", "Leave", (EVERYONE,), ("Handbook",)),), removed=("2",),
                          cursor="cursor-2")
    source.fetched.clear()
    report = sync(place, source).reports[0]
    assert not report.listed and source.fetched == ["1"] and report.removed == ["Old"]
    assert SyncedStore(place[2], "wiki").load_state().cursor == "cursor-2"
    # --full lists and fetches everything again.
    source.fetched.clear()
    assert sync(place, source, full=True).reports[0].listed and source.fetched == ["1"]


def test_a_source_taken_out_of_the_file_takes_its_documents_along(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days.")})
    sync(place, source)
    kb, index, synced = place
    run = run_sync(parse_sources(b"sources: {}"), synced, Directory({}), lambda: build_index(kb, index, synced_dir=synced))
    assert run.forgotten == ["wiki"] and set(indexed(place)) == {"hello"}


def test_a_synced_collection_that_is_also_a_kb_folder_is_an_error(place):
    kb, index, synced = place
    write_entry(kb, "handbook/own.md", {"id": "own", "title": "Own"}, {"Own": "A page of the folder."})
    run = sync(place, ScriptedSource({"1": Doc("Leave", "Thirty days.")}))
    assert not run.build.switched
    assert "also a folder of the KB" in str(run.build.errors[0])


def test_a_source_that_goes_away_half_way_keeps_what_was_taken_and_the_next_sync_takes_the_rest(place):
    source = ScriptedSource({str(n): Doc(f"Page {n}", f"Text {n}.") for n in range(6)})
    real_fetch = source.fetch

    def flaky(listed):
        if len(source.fetched) == 3:
            raise SourceUnavailable("GET content/3: HTTP 503 after 5 tries")
        return real_fetch(listed)

    source.fetch = flaky
    run = sync(place, source)
    assert "503" in run.failed["wiki"] and run.build.switched  # the rest of the KB is still indexed
    assert sorted(SyncedStore(place[2], "wiki").load_state().docs) == ["0", "1", "2"]
    source.fetch = real_fetch
    run = sync(place, source)
    assert run.ok and source.fetched == ["0", "1", "2", "3", "4", "5"]  # nothing fetched twice


def test_an_entry_written_before_a_kill_whose_page_is_gone_does_not_stay(place):
    source = ScriptedSource({"1": Doc("Leave", "Thirty days.")})
    sync(place, source)
    store = SyncedStore(place[2], "wiki")
    orphan = store.read("1")
    store.write("9", orphan)  # written, then killed before the state named it; its page is deleted meanwhile
    sync(place, source)
    assert [s.entry.id for s in stored_entries(place[2])] == ["wiki-1"]


def test_readers_without_a_visible_address_are_left_out_and_counted(place):
    hidden = Grant(users=frozenset({"ana@example.com"}), unnamed=2)
    source = ScriptedSource({"1": Doc("Pay", "Pay days.", grants=(EVERYONE, hidden)),
                             "2": Doc("Secret", "Secret.", grants=(EVERYONE, Grant(unnamed=3)))})
    report = sync(place, source).reports[0]
    assert any(note.startswith("2 document(s) name readers") for note in report.notes)
    assert [p.id for p in report.not_indexed] == ["2"]  # named nobody Slack could be asked about
    access = read_access(current_generation(place[1]))[indexed(place)["wiki-1"]]
    assert access.audience == Audience(users=("UANA",))
