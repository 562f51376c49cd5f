"""Sync the sources of a sources file, then build the index once: what `citebot sync` and the worker run."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kb_index.index import BuildReport
from kb_index.sources.config import SourcesFile
from kb_index.sources.http import SourceUnavailable
from kb_index.sources.model import Connector, SourceError
from kb_index.sources.store import SyncedStore, sources_in
from kb_index.sources.sync import People, Progress, Source, SourceReport, SourceSync

# type -> "module:class" of its connector, imported only when a source of that type is synced.
CONNECTORS = {
    "confluence": "kb_index.sources.confluence:ConfluenceConnector",
    "google_drive": "kb_index.sources.drive:DriveConnector",
}


def make_connector(name: str, source: Source, *, sleep: Callable[[float], None] = time.sleep) -> Connector:
    module, cls = CONNECTORS[source.type].split(":")
    connector: Connector = getattr(importlib.import_module(module), cls)(name, source, sleep=sleep)
    return connector


@dataclass
class SyncRun:
    reports: list[SourceReport] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # source -> why it could not be synced at all
    forgotten: list[str] = field(default_factory=list)  # sources no longer in the file: their documents removed
    build: BuildReport | None = None

    @property
    def ok(self) -> bool:
        return not self.failed and (self.build is None or self.build.switched)


def run_sync(sources: SourcesFile, sync_dir: Path, people: People, build: Callable[[], BuildReport], *,
             only: str | None = None, full: bool = False, language: str = "en",
             progress: Progress | None = None, connector: Callable[[str, Source], Connector] = make_connector
             ) -> SyncRun:
    """Sync each source (or `only` that one), each on its own: one that cannot be reached is reported and the
    others go on; then build the index from the KB folder and the synced store."""
    run = SyncRun()
    names = [only] if only is not None else sorted(sources.sources)
    for name in names:
        source = sources.sources[name]
        try:
            client = connector(name, source)
        except SourceError as exc:
            run.failed[name] = str(exc)
            continue
        try:
            run.reports.append(SourceSync(name, source, client, SyncedStore(sync_dir, name), people,
                                          default_language=language, progress=progress).run(full=full))
        except (SourceError, SourceUnavailable) as exc:
            run.failed[name] = str(exc)
        finally:
            client.close()
    if only is None:
        # A source taken out of the file takes its documents with it.
        for gone in sorted(set(sources_in(sync_dir)) - set(sources.sources)):
            SyncedStore(sync_dir, gone).forget()
            run.forgotten.append(gone)
    run.build = build()
    return run
