"""The synced store: what `citebot sync` took from each source, kept beside the KB folder.

    sync_dir/
      handbook/                 one folder per source (its name in sources.yml)
        state.json              the cursor, and per document: version, readers, entry id
        entries/123456.json     one converted entry (sections, metadata) and who may read it

The index is built from the KB folder and this store together (`build_index(...,
synced_dir=...)`), so `citebot index` and `citebot sync` build the same index. Every
file is replaced atomically (write to a temporary name, then os.replace): a sync
killed half-way leaves each entry either as it was or as it is now, and the
state is saved every few documents, so the next run goes on from there and
takes nothing twice (an entry is keyed by its document's id).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kb_index.collection import CollectionAccess
from kb_index.entries import Entry, Section

STATE_FILE = "state.json"
ENTRIES = "entries"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class DocState:
    version: str
    readers: str  # the document's access part (kb_index.sources.sync.part_name): a change of readers shows here
    entry_id: str
    title: str = ""


@dataclass
class SourceState:
    cursor: str | None = None
    docs: dict[str, DocState] = field(default_factory=dict)
    # E-mail address -> Slack user id, as last looked up: when Slack cannot be asked, a reader keeps the id
    # Slack gave before (an id never changes), and an address never looked up reads nothing.
    people: dict[str, str] = field(default_factory=dict)
    synced_at: str | None = None


@dataclass(frozen=True)
class StoredEntry:
    entry: Entry
    access: CollectionAccess


class SyncedStore:
    def __init__(self, sync_dir: str | Path, source: str):
        self.root = Path(sync_dir) / source
        self.entries_dir = self.root / ENTRIES

    def load_state(self) -> SourceState:
        try:
            raw = json.loads((self.root / STATE_FILE).read_text())
        except FileNotFoundError:
            return SourceState()
        docs = {key: DocState(**value) for key, value in (raw.get("docs") or {}).items()}
        return SourceState(cursor=raw.get("cursor"), docs=docs, people=raw.get("people") or {},
                           synced_at=raw.get("synced_at"))

    def save_state(self, state: SourceState) -> None:
        payload = {"cursor": state.cursor, "synced_at": state.synced_at, "people": state.people,
                   "docs": {key: vars(value) for key, value in state.docs.items()}}
        _atomic_write(self.root / STATE_FILE, json.dumps(payload, separators=(",", ":")))

    def write(self, doc_id: str, stored: StoredEntry) -> None:
        _atomic_write(self._file(doc_id), json.dumps(_to_json(stored), ensure_ascii=False))

    def read(self, doc_id: str) -> StoredEntry | None:
        try:
            return _from_json(json.loads(self._file(doc_id).read_text()))
        except FileNotFoundError:
            return None

    def remove(self, doc_id: str) -> None:
        self._file(doc_id).unlink(missing_ok=True)

    def sweep(self, keep: Iterable[str]) -> list[str]:
        """Remove every stored entry whose document is not in `keep`; their file names."""
        kept = {file_name(doc_id) for doc_id in keep}
        gone = [p for p in self.entries_dir.glob("*.json") if p.stem not in kept] if self.entries_dir.is_dir() else []
        for path in gone:
            path.unlink(missing_ok=True)
        return [p.stem for p in gone]

    def forget(self) -> None:
        """Everything of this source: it left sources.yml."""
        shutil.rmtree(self.root, ignore_errors=True)

    def _file(self, doc_id: str) -> Path:
        return self.entries_dir / f"{file_name(doc_id)}.json"


def file_name(doc_id: str) -> str:
    return _UNSAFE.sub("_", doc_id)[:180]


def stored_entries(sync_dir: str | Path | None) -> Iterator[StoredEntry]:
    """Every synced entry of every source, in a stable order."""
    if sync_dir is None or not Path(sync_dir).is_dir():
        return
    for source in sorted(p for p in Path(sync_dir).iterdir() if p.is_dir()):
        entries = source / ENTRIES
        if not entries.is_dir():
            continue
        for path in sorted(entries.glob("*.json")):
            yield _from_json(json.loads(path.read_text()))


def sources_in(sync_dir: str | Path) -> list[str]:
    root = Path(sync_dir)
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def _to_json(stored: StoredEntry) -> dict:
    entry = stored.entry
    data = {k: v for k, v in entry.__dict__.items() if k not in ("sections", "cross_refs_line", "id_line")}
    data["sections"] = [[s.name, s.text, s.page] for s in entry.sections]
    data["access"] = stored.access.model_dump(mode="json", exclude_defaults=True)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


def _from_json(data: dict) -> StoredEntry:
    access = CollectionAccess.model_validate(data.pop("access", {}))
    sections = [Section(name, text, page) for name, text, page in data.pop("sections")]
    for key in ("tags", "legal_bases", "cross_refs"):
        data[key] = tuple(data.get(key) or ())
    return StoredEntry(Entry(sections=sections, **data), access)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
