"""The worker's source syncs (bot/answering/source_sync.py): each source on its own interval, one sync at a time
across workers by a Redis lock that its holder renews and frees, on real Redis."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from bot.answering.source_sync import SourceSchedule
from bot.config import Settings
from bot.store import keys
from kb_index.sources.runner import SyncRun

SOURCES = """\
sources:
  wiki:
    type: confluence
    url: https://wiki.example.com
    deployment: data_center
    spaces: [HR]
    collection: handbook
    credentials: {token: WIKI_TOKEN}
    every_minutes: 10
  drive:
    type: google_drive
    folders: [F1]
    collection: policies
    credentials: {service_account: DRIVE_KEY}
    every_minutes: 60
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Syncer:
    """Records which source each sync was for; `hold` keeps a sync running until released."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.hold = threading.Event()
        self.hold.set()
        self.started = threading.Event()
        self.fail = False

    def __call__(self, sources, name: str) -> SyncRun:
        self.started.set()
        self.hold.wait(10)
        self.ran.append(name)
        if self.fail:
            raise RuntimeError("the wiki answered nonsense")
        return SyncRun()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    path = tmp_path / "sources.yml"
    path.write_text(SOURCES)
    return Settings(CITEBOT_SOURCES_FILE=path, CITEBOT_INDEX_DIR=tmp_path / "index", CITEBOT_SYNC_DIR=tmp_path / "s")


async def test_each_source_is_synced_when_its_interval_has_passed(settings, redis):
    clock, syncer = Clock(), Syncer()
    schedule = SourceSchedule(settings, redis, syncer=syncer, clock=clock)
    assert await schedule.tick() == ["drive", "wiki"]  # never synced: both due
    assert await schedule.tick() == []
    clock.now += 11 * 60
    assert await schedule.tick() == ["wiki"]  # 10 minutes passed, not 60
    clock.now += 50 * 60
    assert await schedule.tick() == ["drive", "wiki"]
    assert await redis.get(keys.SYNC_LOCK) is None  # freed after each run


async def test_one_sync_at_a_time_across_workers_and_the_lock_outlives_its_ttl_while_held(settings, redis):
    clock, syncer = Clock(), Syncer()
    syncer.hold.clear()
    first = SourceSchedule(settings, redis, syncer=syncer, clock=clock, lock_ttl_s=0.3)
    second = SourceSchedule(settings, redis, syncer=syncer, clock=clock, lock_ttl_s=0.3)
    running = asyncio.create_task(first.tick())
    await asyncio.to_thread(syncer.started.wait, 5)
    # The sync runs for longer than the lock's lifetime: renewed by its holder, never taken by the other worker.
    for _ in range(4):
        await asyncio.sleep(0.25)
        assert await second.tick() == []
    syncer.hold.set()
    assert await running == ["drive", "wiki"]
    assert syncer.ran == ["drive", "wiki"]
    # Synced by the first: not due for the second either.
    assert await second.tick() == []


async def test_a_lock_left_by_a_killed_worker_expires_and_is_never_freed_by_another(settings, redis):
    clock, syncer = Clock(), Syncer()
    await redis.set(keys.SYNC_LOCK, "a worker that died", px=300)
    schedule = SourceSchedule(settings, redis, syncer=syncer, clock=clock)
    assert await schedule.tick() == []
    assert await redis.get(keys.SYNC_LOCK) == b"a worker that died"
    await asyncio.sleep(0.4)
    assert await schedule.tick() == ["drive", "wiki"]


async def test_a_failed_sync_is_logged_and_tried_again_at_the_next_interval(settings, redis, caplog):
    clock, syncer = Clock(), Syncer()
    syncer.fail = True
    schedule = SourceSchedule(settings, redis, syncer=syncer, clock=clock)
    assert await schedule.tick() == ["drive", "wiki"]
    assert "the wiki answered nonsense" in caplog.text
    assert await schedule.tick() == []
    clock.now += 10 * 60
    assert await schedule.tick() == ["wiki"]


async def test_a_broken_sources_file_syncs_nothing_and_says_so_once(settings, redis, caplog):
    settings.sources_file.write_text("sources:\n  wiki:\n    type: confluence\n    spaces: [HR]\n    spaces: [IT]\n")
    schedule = SourceSchedule(settings, redis, syncer=Syncer(), clock=Clock())
    assert await schedule.tick() == [] and await schedule.tick() == []
    assert caplog.text.count("given twice") == 1


async def test_a_worker_syncs_a_source_into_the_index_it_answers_from(tmp_path, redis, monkeypatch):
    from kb_index.index import current_generation, read_manifest
    from tests.fakes.confluence_server import FakeConfluence
    from tests.kb_fixtures import write_entry

    write_entry(tmp_path / "kb", "public/welcome.md", {"id": "welcome", "title": "Welcome"}, {"Hi": "Welcome."})
    with FakeConfluence(deployment="data_center") as wiki:
        wiki.add_space("HR", anonymous=True)
        page = wiki.add_page("HR", "Leave", body="<p>Employees get 30 days of paid leave.</p>")
        sources = tmp_path / "sources.yml"
        sources.write_text(f"sources:\n  wiki:\n    type: confluence\n    url: {wiki.url}\n    deployment: data_center\n"
                           "    spaces: [HR]\n    collection: handbook\n    credentials: {token: WIKI_PAT}\n")
        monkeypatch.setenv("WIKI_PAT", wiki.pat)
        settings = Settings(CITEBOT_SOURCES_FILE=sources, CITEBOT_KB_DIR=tmp_path / "kb", CITEBOT_EMBEDDER="none",
                            CITEBOT_INDEX_DIR=tmp_path / "index", CITEBOT_SYNC_DIR=tmp_path / "synced")
        assert await SourceSchedule(settings, redis).tick() == ["wiki"]
    entries = read_manifest(current_generation(tmp_path / "index"))["entries"]
    assert set(entries) == {"welcome", f"wiki-{page}"}
