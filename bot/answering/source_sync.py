"""The worker's side of `citebot sync`: each source on its own interval, one sync at a time across workers.

Every worker looks every TICK_S seconds for a source whose `every_minutes`
have passed since its last sync (kept in Redis, so that workers agree). The
one that takes the Redis lock (SET NX with a token, renewed while the sync
runs, released only by its holder) syncs it in a thread: the event loop goes
on answering questions meanwhile, and the Retriever switches to the new
generation when the build switches it in. Answers citing a changed or removed
page get their note, as after `citebot index`. A failed sync is logged and
tried again at the next interval; it never stops the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot.access.by_email import SlackPeople
from bot.answering.source_changes import NotNotified, changed_entries, notify_source_changes
from bot.config import Settings
from bot.embedder import make_embedder
from bot.store import keys
from kb_index.index import BuildReport, build_index, current_generation, read_manifest
from kb_index.sources.config import SourcesError, SourcesFile, load_sources
from kb_index.sources.runner import SyncRun, run_sync
from kb_index.sources.sync import NoSlack, People

log = logging.getLogger(__name__)

TICK_S = 30.0
# Compare-and-expire / compare-and-delete: only the worker that holds the lock renews or frees it.
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"

Syncer = Callable[[SourcesFile, str], SyncRun]


class SourceSchedule:
    def __init__(self, settings: Settings, redis: Redis, *, syncer: Syncer | None = None,
                 clock: Callable[[], float] = time.time, lock_ttl_s: float = keys.SYNC_LOCK_TTL_S):
        self.settings = settings
        self.redis = redis
        self.syncer = syncer or self._sync
        self.clock = clock
        self.lock_ttl_s = lock_ttl_s
        self._warned: str | None = None
        self._renew_lock = redis.register_script(_RENEW)
        self._release_lock = redis.register_script(_RELEASE)

    async def run_forever(self, tick_s: float = TICK_S) -> None:
        while True:
            try:
                await self.tick()
            except RedisError as exc:
                log.warning("source sync: Redis: %s; tried again in %.0f s", exc, tick_s)
            await asyncio.sleep(tick_s)

    async def tick(self) -> list[str]:
        """Sync every source that is due, while this worker holds the lock; the names it synced."""
        sources = self._sources()
        synced: list[str] = []
        for name, source in sorted(sources.sources.items()):
            if not await self._due(name, source.every_minutes):
                continue
            token = uuid.uuid4().hex
            if not await self.redis.set(keys.SYNC_LOCK, token, nx=True, px=int(self.lock_ttl_s * 1000)):
                return synced  # another worker is syncing; this one looks again next tick
            renewing = asyncio.create_task(self._renew(token))
            try:
                # Due still? Another worker may have synced it between the look and the lock.
                if await self._due(name, source.every_minutes):
                    await self._run(sources, name)
                    synced.append(name)
            finally:
                renewing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewing
                await self._release_lock(keys=[keys.SYNC_LOCK], args=[token])
        return synced

    async def _run(self, sources: SourcesFile, name: str) -> None:
        previous = _live_hashes(self.settings.index_dir)
        try:
            run = await asyncio.to_thread(self.syncer, sources, name)
        except Exception:  # a sync must never stop the worker: logged, tried again next interval
            log.exception("source sync: %s failed", name)
            run = None
        await self.redis.set(keys.sync_last_key(name), str(self.clock()))
        if run is None:
            return
        for report in run.reports:
            log.info("source sync: %s", report.summary())
            for problem in report.not_indexed + report.failed:
                log.warning("source sync: %s: %s", report.source, problem)
        for failed, why in run.failed.items():
            log.warning("source sync: %s not synced: %s", failed, why)
        if run.build is not None:
            log.info("source sync: %s", run.build.summary())
            if run.build.switched:
                await self._notify(run.build, previous)

    async def _notify(self, build: BuildReport, previous: dict[str, str] | None) -> None:
        changed, removed = changed_entries(build, previous)
        if not (changed or removed):
            return
        try:
            await notify_source_changes(self.settings.redis, self.settings.index_dir, build.generation, changed, removed)
        except NotNotified as exc:
            log.warning("source sync: answers citing changed pages were not notified: %s", exc)

    async def _due(self, name: str, every_minutes: int) -> bool:
        last = await self.redis.get(keys.sync_last_key(name))
        return last is None or self.clock() - float(last) >= every_minutes * 60

    async def _renew(self, token: str) -> None:
        while True:
            await asyncio.sleep(self.lock_ttl_s / 3)
            await self._renew_lock(keys=[keys.SYNC_LOCK], args=[token, int(self.lock_ttl_s * 1000)])

    def _sources(self) -> SourcesFile:
        try:
            sources = load_sources(self.settings.sources_file)
        except SourcesError as exc:
            if str(exc) != self._warned:  # once per problem, not every tick
                log.error("source sync: %s (no source is synced until it is fixed)", exc)
                self._warned = str(exc)
            return SourcesFile()
        self._warned = None
        return sources

    def _sync(self, sources: SourcesFile, name: str) -> SyncRun:
        """One source, then the index: runs in a thread, with an embedder of its own (the answering one is the
        event loop's)."""
        settings = self.settings
        people: People = (SlackPeople(settings.slack_bot_token, settings.slack_api_url)
                          if settings.slack_bot_token else NoSlack())
        embedder = make_embedder(settings)

        def build() -> BuildReport:
            return build_index(settings.kb_dir, settings.index_dir, language=settings.language, embedder=embedder,
                               synced_dir=settings.sync_dir)

        return run_sync(sources, settings.sync_dir, people, build, only=name, language=settings.language)


def _live_hashes(index_dir: Path) -> dict[str, str] | None:
    try:
        return dict(read_manifest(current_generation(index_dir))["entries"])
    except (OSError, ValueError, KeyError):
        return None
