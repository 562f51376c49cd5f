"""The one owner of the Whoosh schema: build, update, switch, open.

An index folder holds generations:

    index_dir/
      CURRENT          name of the live generation, replaced atomically
      gen-000007/      a complete Whoosh index, the arrays and chunk store derived
                       from it (impacts-*.npy, docs.jsonl), manifest.json
      gen-000006/      the previous one, kept for readers still on it

`build_index` never writes into the live generation. It copies it (hard links:
Whoosh segment files are never modified in place), applies only the entries
whose content hash changed, derives the scoring arrays, and only then points
CURRENT at the new folder with os.replace. A reader therefore sees the old
index or the new one, never half of one.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Set
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from whoosh import index as whoosh_index
from whoosh.fields import ID, STORED, TEXT, Schema

from citebot_core.errors import Permanent
from citebot_core.languages import LANGUAGES
from kb_index import docstore, impacts, last_good, vector_store, vectors
from kb_index.analysis import analyzer, subword_analyzer
from kb_index.collection import EVERY_MEMBER, NOBODY, Collection, CollectionAccess, collection_base
from kb_index.entries import Entry, LoadError, LoadResult, chunk_hash, load_kb
from kb_index.sources.store import stored_entries

# Bump when the schema, the analyzers or the stored document change: an index
# of another version is rebuilt from scratch instead of updated.
SCHEMA_VERSION = 6  # 6: a chunk's page
CURRENT_FILE = "CURRENT"
MANIFEST_FILE = "manifest.json"
LOCK_FILE = ".build.lock"

# Which Whoosh fields carry which text. Subword grams only for German, whose
# compounds ("Altersteilzeit") hide the words people search for ("Teilzeit").
TITLE, META, BODY, SUBWORDS = "title", "meta", "body", "sub"


def field_name(kind: str, language: str) -> str:
    return f"{kind}_{language}"


def make_schema() -> Schema:
    fields = {
        "chunk_id": ID(stored=True, unique=True),
        "entry_id": ID(stored=True),
        "collection": ID(stored=True),
        "doc": STORED(),
    }
    for lang in LANGUAGES:
        for kind in (TITLE, META, BODY):
            fields[field_name(kind, lang)] = TEXT(analyzer=analyzer(lang), phrase=False)
    fields[field_name(SUBWORDS, "de")] = TEXT(analyzer=subword_analyzer("de"), phrase=False)
    return Schema(**fields)


@dataclass
class BuildReport:
    index_dir: Path
    generation: str
    entries: int = 0
    chunks: int = 0
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    errors: list[LoadError] = field(default_factory=list)
    warnings: list[LoadError] = field(default_factory=list)  # indexed all the same (an unknown cross-ref)
    not_indexed: list[LoadError] = field(default_factory=list)  # files of a type the KB does not read
    kept: list[str] = field(default_factory=list)  # failed entries whose last good version was carried over
    full_rebuild: bool = False
    seconds: float = 0.0
    switched: bool = False  # did the new generation go live?
    live: str | None = None  # the live generation the build started from
    embedder: str | None = None  # the model the chunk vectors came from; None: BM25 only
    embedded: int = 0  # chunks embedded by this build (the rest were reused)
    reembedded: bool = False  # the embedding model changed, so every chunk was embedded again
    stopped: bool = False  # problems were found and the build stopped before indexing or embedding anything
    to_embed: int | None = None  # --check: chunks no generation or stored vector has yet (None: no embedder)

    @property
    def skipped(self) -> int:
        return len(self.errors)

    def summary(self) -> str:
        if self.stopped:
            return (f"index not built: {self.entries} entries, {self.chunks} chunks read, {self.skipped} file(s) with "
                    f"problems, nothing indexed or embedded, {self.seconds:.1f}s; not switched in: the live index "
                    f"stays {self.live or '(none)'}")
        kind = "built" if self.full_rebuild else "updated"
        kept = f" ({len(self.kept)} kept at their last good version)" if self.kept else ""
        if self.switched:
            outcome = f"-> {self.generation}"
        else:
            outcome = f"not switched in: the live index stays {self.live or '(none)'}"
        if self.embedder is None:
            vectors_note = "no embeddings (BM25 only)"
        else:
            why = ", model changed" if self.reembedded else ""
            vectors_note = f"{self.embedded} chunks embedded with {self.embedder}{why}"
        warnings = f", {len(self.warnings)} warning(s)" if self.warnings else ""
        other = f", {len(self.not_indexed)} file(s) of other types not indexed" if self.not_indexed else ""
        return (
            f"index {kind}: {self.entries} entries, {self.chunks} chunks "
            f"({len(self.added)} added, {len(self.updated)} changed, {len(self.removed)} removed, "
            f"{self.unchanged} unchanged), {self.skipped} skipped{kept}{other}{warnings}, {vectors_note}, "
            f"{self.seconds:.1f}s {outcome}"
        )


class IndexNotFound(Permanent, FileNotFoundError):
    pass


class IndexOutdated(IndexNotFound):
    """The index was built by another version of citebot; `citebot index` rebuilds it."""


class IndexEmpty(IndexNotFound):
    """The index holds no chunk: no file of the KB could be indexed. Nothing can be answered from it."""


def build_index(
    kb_dir: str | Path,
    index_dir: str | Path,
    *,
    language: str = "en",
    rebuild: bool = False,
    keep_going: bool = False,
    embedder=None,
    seed_vectors: Path | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    synced_dir: Path | None = None,
    on_problems: Callable[[BuildReport], None] | None = None,
    on_error: Callable[[LoadError], None] | None = None,
) -> BuildReport:
    """Build or update the index of `kb_dir` in `index_dir` and switch to it.

    Every file is read, converted and cut into chunks first, `on_error(error)`
    called with each file that fails as it does; `on_problems(report)` is then
    called with the report's errors, warnings and other files known, before the
    long work. A KB with errors stops there (`report.stopped`) unless
    `keep_going`: nothing is indexed or embedded and the live index stays.

    `progress(stage, done, total)` is called as work advances. Entries whose
    content did not change are not re-indexed unless `rebuild` is set. With an
    `embedder` (kb_index.embedding), every chunk also gets a vector; a chunk whose
    text some earlier build already embedded with that model is not embedded again
    (kb_index/vector_store.py keeps them, also from builds that never switched in).
    `seed_vectors` is a folder of vectors shipped with the KB (vectors.write_seed):
    chunks whose text and model match are taken from there instead of embedded.
    `synced_dir` is the synced store of `citebot sync` (kb_index/sources/store.py):
    its entries are indexed with the KB's, each with the access its source gave it.

    A file that fails to load never costs the live index its entry: the id
    stays with the file that backs it there, and an entry that fails keeps its
    last good version (last_good.py), when the build goes on with `keep_going`.
    """
    started = time.perf_counter()
    index_dir = Path(index_dir)
    index_dir.mkdir(parents=True, exist_ok=True)
    with _build_lock(index_dir):
        live = _current_manifest(index_dir)
        was_live = _live_name(index_dir)  # also one of another schema, which an older reader may still be on
        read = _read_kb(kb_dir, index_dir, live, language, synced_dir, progress, on_error)
        report = read.report
        report.generation = _next_generation(index_dir)
        if on_problems is not None:
            on_problems(report)
        if report.errors and not keep_going:
            report.stopped = True
            report.seconds = time.perf_counter() - started
            return report
        previous = None if rebuild else live
        gen_dir = index_dir / report.generation
        report.full_rebuild = previous is None
        try:
            _write_generation(gen_dir, read.entries, previous, report, progress)
            if embedder is not None:
                _write_vectors(gen_dir, live, embedder, report, progress, seed_vectors)
            report.entries = len(read.entries)
            report.seconds = time.perf_counter() - started
            _write_manifest(gen_dir, read.entries, report, language, Path(kb_dir), read.access)
            _switch(index_dir, report.generation)
            report.switched = True
        except BaseException:
            # Ctrl-C can come a moment after the switch: a generation that went live stays.
            if _live_name(index_dir) != report.generation:
                shutil.rmtree(gen_dir, ignore_errors=True)
            raise
        _remove_old_generations(index_dir, keep={report.generation, was_live})
    return report


def check_index(
    kb_dir: str | Path,
    index_dir: str | Path,
    *,
    language: str = "en",
    embedder=None,
    progress: Callable[[str, int, int | None], None] | None = None,
    synced_dir: Path | None = None,
    on_error: Callable[[LoadError], None] | None = None,
) -> BuildReport:
    """What `build_index` would find, changing nothing: every file read, converted and cut into chunks, the
    problems listed, and (with an `embedder`) how many chunks no earlier build has embedded yet."""
    started = time.perf_counter()
    index_dir = Path(index_dir)
    live = _current_manifest(index_dir)
    read = _read_kb(kb_dir, index_dir, live, language, synced_dir, progress, on_error)
    report = read.report
    report.stopped = True
    if embedder is not None:
        passages = [entry_passage(e, s) for e in read.entries for s in e.sections]
        old = vectors.Vectors.load(live["dir"]) if live is not None else None
        stored = index_dir / vector_store.STORE_FILE
        store = vector_store.VectorStore(stored) if stored.exists() else None
        try:
            report.to_embed = vectors.missing(passages, embedder.name, (old,), store)
        finally:
            if store is not None:
                store.close()
    report.seconds = time.perf_counter() - started
    return report


@dataclass
class _Read:
    """A KB read for a build: the entries to index, who may read each collection, the report so far."""

    entries: list[Entry]
    access: dict[str, CollectionAccess]
    report: BuildReport


def _read_kb(kb_dir, index_dir: Path, live: dict | None, language: str, synced_dir: Path | None, progress,
             on_error) -> _Read:
    """Every file of the KB and the synced store read, converted and cut into chunks: all a build's problems."""
    established = last_good.established_paths(live)
    loaded = load_kb(kb_dir, language=language, progress=_stage(progress, "load", None), established=established,
                     on_error=on_error)
    kept = last_good.kept_entries(live, loaded.held)
    synced, synced_access = synced_entries(synced_dir, loaded)
    entries = loaded.entries + kept + synced
    report = BuildReport(
        index_dir=index_dir, generation="", errors=last_good.with_kept_notes(loaded.errors, kept),
        warnings=loaded.warnings, not_indexed=loaded.not_indexed,
    )
    report.kept = sorted(e.id for e in kept)
    report.live = live["dir"].name if live else None
    report.entries = len(entries)
    report.chunks = sum(len(e.sections) for e in entries)
    access = {**access_of(loaded.entries + kept, loaded.collections, loaded.unreadable_collections), **synced_access}
    return _Read(entries, access, report)


def entry_passage(entry: Entry, section) -> dict:
    """What vectors.passage_text reads of a chunk, straight from its entry."""
    return {"title": entry.title, "section": section.name, "text": section.text}


def _write_generation(gen_dir: Path, entries: list[Entry], previous: dict | None, report: BuildReport, progress):
    new_hashes = {e.id: e.content_hash for e in entries}
    if previous is None:
        gen_dir.mkdir()
        ix = whoosh_index.create_in(str(gen_dir), make_schema())
        to_index = entries
        stale: list[str] = []
    else:
        _link_copy(previous["dir"], gen_dir)
        ix = whoosh_index.open_dir(str(gen_dir))
        old_hashes = previous["entries"]
        to_index = [e for e in entries if old_hashes.get(e.id) != e.content_hash]
        stale = [eid for eid in old_hashes if eid not in new_hashes or old_hashes[eid] != new_hashes[eid]]
        report.removed = sorted(eid for eid in old_hashes if eid not in new_hashes)
        report.unchanged = len(entries) - len(to_index)
    report.added = sorted(e.id for e in to_index if previous is None or e.id not in previous["entries"])
    report.updated = sorted(e.id for e in to_index if previous is not None and e.id in previous["entries"])

    if to_index or stale:
        writer = ix.writer(limitmb=256)
        try:
            for eid in stale:
                writer.delete_by_term("entry_id", eid)
            tick = _stage(progress, "index", len(to_index))
            for entry in to_index:
                for doc in entry_documents(entry):
                    writer.add_document(**doc)
                tick(1)
        except BaseException:
            writer.cancel()
            raise
        writer.commit()
    with ix.reader() as reader:
        report.chunks = reader.doc_count()
        impacts.build(reader, progress=_stage(progress, "score", None)).save(gen_dir)
        docstore.write(reader, gen_dir, progress=_stage(progress, "store", reader.doc_count_all()))
    ix.close()


def _write_vectors(
    gen_dir: Path, live: dict | None, embedder, report: BuildReport, progress, seed_dir: Path | None
) -> None:
    """Chunk vectors for the new generation, reusing the previous generation's and the vector store's where
    the text is the same.

    A `--rebuild` re-indexes everything but still reuses them: embedding is the
    slow part, and a vector depends only on the text and the model, both of
    which the stored keys check.
    """
    old = vectors.Vectors.load(live["dir"]) if live is not None else None
    chunks = docstore.DocStore(gen_dir)
    try:
        docs = [chunks.get_live(i) for i in range(len(chunks))]
    finally:
        chunks.close()
    seeds = (vectors.Vectors.load(seed_dir),) if seed_dir is not None else ()
    with vector_store.VectorStore(gen_dir.parent / vector_store.STORE_FILE) as store:
        report.embedded, report.reembedded = vectors.build(docs, embedder, old, gen_dir, progress, seeds, store)
    report.embedder = embedder.name


def entry_documents(entry: Entry) -> list[dict]:
    """The Whoosh documents of one entry: one per section."""
    lang = entry.language if entry.language in LANGUAGES else "en"
    meta_text = " ".join(
        filter(None, [entry.topic, entry.chapter, entry.work, " ".join(entry.tags), " ".join(entry.legal_bases)])
    )
    docs = []
    for position, section in enumerate(entry.sections):
        chunk_id = f"{entry.id}#{position}"
        stored = {
            "chunk_id": chunk_id,
            "entry_id": entry.id,
            "section": section.name,
            "text": section.text,
            "page": section.page,
            "title": entry.title,
            **entry.stored_metadata(),
            "collection": entry.collection,
            "language": lang,
            "path": entry.path,
            "position": position,
            "content_hash": chunk_hash(entry.id, section.name, section.text),
        }
        doc = {
            "chunk_id": chunk_id,
            "entry_id": entry.id,
            "collection": entry.collection,
            "doc": stored,
            field_name(TITLE, lang): entry.title,
            field_name(META, lang): f"{section.name} {meta_text}",
            field_name(BODY, lang): section.text,
        }
        if lang == "de":
            doc[field_name(SUBWORDS, lang)] = f"{entry.title} {section.name} {section.text}"
        docs.append(doc)
    return docs


# ---------------------------------------------------------------- generations


def current_generation(index_dir: str | Path) -> Path:
    """The live generation's folder; IndexNotFound if there is none yet."""
    index_dir = Path(index_dir)
    name = _live_name(index_dir)
    if name is None:
        raise IndexNotFound(f"no index in {index_dir}: run 'citebot index' first")
    gen_dir = index_dir / name
    if not gen_dir.is_dir():
        raise IndexNotFound(f"index {index_dir} names generation {name!r}, which is missing: rebuild it")
    return gen_dir


def read_manifest(gen_dir: Path) -> dict:
    return json.loads((gen_dir / MANIFEST_FILE).read_text())


def built_from(gen_dir: Path) -> Path | None:
    """The knowledge base folder a generation was built from (None if unknown)."""
    try:
        kb_dir = read_manifest(gen_dir).get("kb_dir")
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return Path(kb_dir) if kb_dir else None


def check_generation(gen_dir: Path) -> None:
    """Raises IndexOutdated unless `gen_dir` was built with this version's layout."""
    try:
        version = read_manifest(gen_dir).get("schema_version")
    except (FileNotFoundError, json.JSONDecodeError):
        version = None
    if version != SCHEMA_VERSION:
        raise IndexOutdated(
            f"the index in {gen_dir.parent} was built by another version of citebot: run 'citebot index' to rebuild it"
        )


def open_problem(index_dir: str | Path) -> IndexNotFound | None:
    """Why nothing can be answered from the index in `index_dir` (missing, outdated, empty), or None."""
    try:
        gen_dir = current_generation(index_dir)
        check_generation(gen_dir)
        chunks = read_manifest(gen_dir).get("chunks")
    except IndexNotFound as exc:
        return exc
    if chunks == 0:
        return IndexEmpty(
            f"the index in {index_dir} ({gen_dir.name}) holds no entries: no file of the knowledge base "
            "could be indexed; run 'citebot index' to see why"
        )
    return None


def _live_name(index_dir: Path) -> str | None:
    """The name CURRENT gives, or None without one (the generation need not exist)."""
    try:
        return (index_dir / CURRENT_FILE).read_text().strip()
    except FileNotFoundError:
        return None


def _current_manifest(index_dir: Path) -> dict | None:
    try:
        gen_dir = current_generation(index_dir)
        manifest = read_manifest(gen_dir)
    except (IndexNotFound, FileNotFoundError, json.JSONDecodeError):
        return None
    if manifest.get("schema_version") != SCHEMA_VERSION:
        return None
    manifest["dir"] = gen_dir
    return manifest


def _next_generation(index_dir: Path) -> str:
    numbers = [int(p.name[4:]) for p in index_dir.glob("gen-*") if p.name[4:].isdigit()]
    return f"gen-{max(numbers, default=0) + 1:06d}"


def access_of(entries: list[Entry], files: Mapping[str, Collection], unreadable: Set[str] = frozenset()
              ) -> dict[str, CollectionAccess]:
    """Who may read each collection of the index: its collection file's audience, else every full member; nobody
    for a collection whose file is invalid (built with --keep-going), as its audience cannot be known."""
    names = {e.collection for e in entries} | set(files) | set(unreadable)

    def of(name: str) -> CollectionAccess:
        if name in unreadable:
            return NOBODY
        return files[name].access if name in files else EVERY_MEMBER

    return {name: of(name) for name in sorted(names)}


def synced_entries(synced_dir: Path | None, loaded: LoadResult) -> tuple[list[Entry], dict[str, CollectionAccess]]:
    """The synced store's entries and the access of each of their collection parts.

    A synced entry never takes the place of a KB file: one whose collection is also a folder of the KB (its
    `_collection.yml` would say one thing, the source another) or whose id a KB file has is an error line.
    """
    folders = {e.collection for e in loaded.entries} | set(loaded.collections) | set(loaded.unreadable_collections)
    ids = {e.id for e in loaded.entries}
    entries: list[Entry] = []
    accesses: dict[str, CollectionAccess] = {}
    for stored in stored_entries(synced_dir):
        entry = stored.entry
        if collection_base(entry.collection) in folders:
            loaded.errors.append(LoadError(entry.path, 1, f"the synced collection {collection_base(entry.collection)!r} "
                                           "is also a folder of the KB: give the source a collection of its own"))
        elif entry.id in ids:
            loaded.errors.append(LoadError(entry.path, 1, f"id {entry.id!r} is also a KB file's: not indexed"))
        else:
            ids.add(entry.id)
            entries.append(entry)
            accesses[entry.collection] = stored.access
    return entries, accesses


def read_access(gen_dir: Path) -> dict[str, CollectionAccess]:
    """Who may read each collection of a generation. A collection the manifest does not name (an index built
    before audiences existed) reads as every full member's, never as open to guests or other organizations."""
    raw = read_manifest(gen_dir).get("access") or {}
    return {name: CollectionAccess.model_validate(value) for name, value in raw.items()}


def _write_manifest(gen_dir: Path, entries: list[Entry], report: BuildReport, language: str, kb_dir: Path,
                    access: Mapping[str, CollectionAccess]) -> None:
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "kb_dir": str(kb_dir.resolve()),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "language": language,
        "entries": {e.id: e.content_hash for e in entries},
        # The file behind each id: on a duplicate id, the next build keeps it with this file.
        "paths": {e.id: e.path for e in entries},
        "chunks": report.chunks,
        "skipped": [str(err) for err in report.errors],
        # Every file that is not in the index, and why: `citebot doctor` lists them.
        "not_indexed": [{"path": e.path, "line": e.line, "reason": e.message, "error": True} for e in report.errors]
        + [{"path": e.path, "line": e.line, "reason": e.message, "error": False} for e in report.not_indexed],
        "warnings": [str(w) for w in report.warnings],
        "embedder": report.embedder,
        # Who may read each collection (kb_index.collection): the worker filters retrieval by it.
        "access": {name: a.model_dump(mode="json", exclude_defaults=True) for name, a in access.items()},
    }
    _atomic_write(gen_dir / MANIFEST_FILE, json.dumps(manifest, indent=1, sort_keys=True))


def _switch(index_dir: Path, generation: str) -> None:
    _atomic_write(index_dir / CURRENT_FILE, generation + "\n")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _link_copy(src: Path, dst: Path) -> None:
    """Copies a generation by hard links (same disk) or real copies (elsewhere)."""

    def link_or_copy(s, d):
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)

    derived = (
        f"{impacts.ARRAY_PREFIX}*",
        impacts.META_FILE,
        docstore.DOCS_FILE,
        docstore.OFFSETS_FILE,
        vectors.VECTORS_FILE,
        vectors.KEYS_FILE,
        vectors.LANG_FILE,
        vectors.META_FILE,
    )
    ignore = shutil.ignore_patterns(MANIFEST_FILE, *derived, "*.lock", "MAIN_WRITELOCK")
    shutil.copytree(src, dst, copy_function=link_or_copy, ignore=ignore)


def _remove_old_generations(index_dir: Path, keep: Set[str | None]) -> None:
    """Removes every generation but the new live one and the one live before it (a reader may still be on it),
    so also what a killed build left half-written; then the stored vectors no generation left uses."""
    for gen_dir in index_dir.glob("gen-*"):
        if gen_dir.is_dir() and gen_dir.name not in keep:
            shutil.rmtree(gen_dir, ignore_errors=True)
    if (index_dir / vector_store.STORE_FILE).exists():
        with vector_store.VectorStore(index_dir / vector_store.STORE_FILE) as store:
            store.keep_only(vectors.keys_in_use(p for p in index_dir.glob("gen-*") if p.is_dir()))


@contextmanager
def _build_lock(index_dir: Path):
    """One build at a time per index folder: two would race for the same generation number."""
    with open(index_dir / LOCK_FILE, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _stage(progress, stage: str, total: int | None):
    if progress is None:
        return lambda n: None
    done = 0

    def tick(n: int):
        nonlocal done
        done += n
        progress(stage, done, total)

    return tick
