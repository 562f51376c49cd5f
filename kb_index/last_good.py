"""What the live index already holds, for a build that must not break it.

A build reads the KB again from scratch, so without help one bad edit would
remove an entry employees rely on, and a new file with a live id would take it
over. From the live generation this module gives the build:

- which file backs each id (`established_paths`): on a duplicate id, that
  file keeps it;
- the last good version of an entry whose file fails to load now
  (`kept_entries`), rebuilt from the stored chunks so it can be carried into
  the new generation unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kb_index import docstore
from kb_index.entries import Entry, LoadError, Section
from kb_index.results import metadata_of


@dataclass(frozen=True)
class KeptEntry(Entry):
    """An entry carried over from the live generation.

    Its content hash is the one the live manifest recorded, not one computed
    from the stored chunks: then the build sees it as unchanged (not
    re-indexed, no "source changed" note), and the manifest stays as it was.
    """

    live_hash: str = ""

    @property
    def content_hash(self) -> str:
        return self.live_hash


def established_paths(live: dict | None) -> dict[str, str]:
    """Entry id -> the KB file that backs it in the live generation."""
    if live is None:
        return {}
    if "paths" in live:
        return dict(live["paths"])
    # A generation from before manifests named the files: its chunks do.
    return {doc["entry_id"]: doc["path"] for doc in _stored_docs(live["dir"]) if doc.get("path")}


def kept_entries(live: dict | None, held: dict[str, str]) -> list[Entry]:
    """The live versions of the `held` ids (those the live index has chunks for)."""
    if live is None or not held:
        return []
    docs: dict[str, list[dict]] = {}
    for doc in _stored_docs(live["dir"]):
        if doc["entry_id"] in held and doc["entry_id"] in live["entries"]:
            docs.setdefault(doc["entry_id"], []).append(doc)
    return [_entry(chunks, live["entries"][eid]) for eid, chunks in sorted(docs.items())]


def _entry(chunks: list[dict], live_hash: str) -> Entry:
    chunks = sorted(chunks, key=lambda d: d["position"])
    first = chunks[0]
    return KeptEntry(
        id=first["entry_id"],
        title=first["title"],
        collection=first["collection"],
        path=first["path"],
        language=first["language"],
        sections=[Section(d["section"], d["text"], d.get("page")) for d in chunks],
        **metadata_of(first),
        live_hash=live_hash,
    )


def _stored_docs(gen_dir: Path) -> Iterator[dict]:
    """Every live chunk's stored document (deleted ones are empty lines)."""
    with open(Path(gen_dir) / docstore.DOCS_FILE, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def with_kept_notes(errors: list[LoadError], kept: list[Entry]) -> list[LoadError]:
    """The load errors, each failed file whose entry was kept saying so."""
    by_path = {e.path: e.id for e in kept}
    return [
        LoadError(err.path, err.line, f"{err.message}; the index keeps the last good version of {by_path[err.path]!r}")
        if err.path in by_path and not err.message.startswith("duplicate id")
        else err
        for err in errors
    ]
