"""Knowledge-base files -> entries with sections.

A KB is a folder; each top-level subfolder is a collection, files in the root
belong to `default`. Entries are Markdown with YAML front matter (the format of
docs/DESIGN.md 3.1); plain .md/.txt files, PDF, Word and HTML files are
accepted too, with an id derived from the path and metadata from the document
and its collection file (documents.py, collection.py). PDF, Word and HTML are
converted by kb_index.formats. Every `##` section of a Markdown entry, and
every section of a converted document, becomes one chunk or, when long, a few
(chunking.py).

Loading never stops at a bad file: each problem becomes a `LoadError` with the
file and line, and the entry is left out, so one typo does not take the whole
KB down with it. What does not cost an entry is a warning (an unknown
cross-ref) or a note that a file is not indexed (a type the KB does not read).
Which files are read at all (regular files inside the folder, no symbolic
links, FIFOs or devices, none over the size cap) is files.py's job.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from citebot_core.errors import Permanent
from kb_index import markdown
from kb_index.chunking import MAX_CHUNK_CHARS, split_long
from kb_index.collection import COLLECTION_FILE, NO_COLLECTION_FILE, Collection, CollectionError, parse_collection
from kb_index.documents import FileContext, document_sections, document_text
from kb_index.files import DRAFTS_FOLDER, Read, Skipped, read_collection_files, read_kb_files
from kb_index.results import EntryMetadata

__all__ = ["MAX_CHUNK_CHARS", "Entry", "LoadError", "LoadResult", "Section", "load_kb", "parse_entry"]

DEFAULT_COLLECTION = "default"

# Suffixes read as Markdown; the others of files.SUFFIXES go through kb_index.formats.
MARKDOWN_SUFFIXES = {".md", ".markdown", ".txt"}

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
STAND_PATTERN = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")

_LIST_FIELDS = ("tags", "legal_bases", "cross_refs")
_TEXT_FIELDS = ("title", "work", "chapter", "topic", "url", "source_role", "language")
KNOWN_FIELDS = {"id", "stand", *_LIST_FIELDS, *_TEXT_FIELDS}


@dataclass(frozen=True)
class LoadError:
    path: str  # relative to the KB folder
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    page: int | None = None  # the page the section starts on (PDF)


@dataclass(frozen=True)
class Entry(EntryMetadata):
    id: str
    title: str
    collection: str
    path: str
    language: str
    sections: list[Section]
    cross_refs_line: int = 1
    id_line: int = 1

    @property
    def content_hash(self) -> str:
        """Changes whenever anything that reaches the index changes."""
        payload = {k: v for k, v in self.__dict__.items() if k not in ("cross_refs_line", "id_line")}
        payload["sections"] = [(s.name, s.text, s.page) for s in self.sections]
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=list)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class LoadResult:
    entries: list[Entry] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)
    warnings: list[LoadError] = field(default_factory=list)  # the entry is indexed all the same
    not_indexed: list[LoadError] = field(default_factory=list)  # files of a type the KB does not read
    files: int = 0
    # Each collection's `_collection.yml` that parsed (a collection without one has the defaults).
    collections: dict[str, Collection] = field(default_factory=dict)
    # Collections whose `_collection.yml` is invalid: nobody knows their audience, so nobody may read them.
    unreadable_collections: set[str] = field(default_factory=set)
    # Established ids (see load_kb) whose file failed to load this time:
    # id -> that file. The index keeps their last good version.
    held: dict[str, str] = field(default_factory=dict)


def chunk_hash(entry_id: str, section: str, text: str) -> str:
    """Content address of one chunk: what an answer relied on, exactly."""
    return hashlib.sha256(f"{entry_id}\x00{section}\x00{text}".encode()).hexdigest()[:16]


class EntryError(Permanent):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


def load_kb(
    kb_dir: str | Path, language: str = "en", progress=None, established: Mapping[str, str] | None = None,
    on_error: Callable[[LoadError], None] | None = None,
) -> LoadResult:
    """Loads every entry; bad ones become errors. `progress(n)` is called per file, `on_error(error)` with each
    file that fails as soon as it has (so that a long read shows its first problem at once); the errors found
    only once every file is read (a duplicate id) are in the result alone.

    `established` maps the ids of the live index to the file that backs each
    one. On a duplicate id that file keeps the id (else the first by path), so
    a new file can never take over a live entry; and an established id whose
    file fails to load is `held` for its last good version.
    """
    kb_dir = Path(kb_dir)
    if not kb_dir.is_dir():
        raise FileNotFoundError(f"knowledge base folder not found: {kb_dir}")
    result = LoadResult()
    collections = result.collections = _collection_files(kb_dir, result)
    for rel, found in read_kb_files(kb_dir):
        if _is_collection_file(rel):
            continue  # read first, by _collection_files
        result.files += 1
        try:
            if (mistake := collection_file_mistake(rel)) is not None:
                result.unreadable_collections.add(_collection_of(rel))
                raise EntryError(1, mistake)
            if isinstance(found, Skipped) and not found.error:
                result.not_indexed.append(LoadError(rel, 1, found.reason))
            elif isinstance(found, Skipped):
                raise EntryError(1, found.reason)
            else:
                result.entries.append(_parse(found, _context(rel, found, collections, language)))
        except EntryError as exc:
            result.errors.append(LoadError(rel, exc.line, exc.message))
            if on_error is not None:
                on_error(result.errors[-1])
        if progress:
            progress(1)
    established = dict(established or {})
    failed = {e.path for e in result.errors}
    _drop_duplicates(result, established, failed)
    _warn_unknown_cross_refs(result)
    return result


# A name this close to "collection" (after the leading underscores) with a YAML suffix was meant as the collection
# file: `_colection.yml` is, `selection.yml` (0.74) and `connection.yml` (0.80) are not.
_LIKE_COLLECTION = 0.85


def collection_file_mistake(rel: str) -> str | None:
    """Why a file that was meant to say who may read a collection does not: a collection file below the top of
    its collection folder, or one whose name is not exactly COLLECTION_FILE (`_collection.yaml`,
    `_Collection.yml`, `collection.yml`). Its collection is closed until it is fixed, since whoever wrote it
    believes the collection restricted. None for any other file."""
    name = PurePosixPath(rel).name
    if name == COLLECTION_FILE:
        where = f"the top of the collection folder ({_collection_of(rel)}/)" if "/" in rel else "the top"
        return (f"a {COLLECTION_FILE} counts only at the top of a collection folder or of the knowledge base: "
                f"move it to {where} or delete it; until then nobody may read the collection")
    stem, _, suffix = name.casefold().lstrip("_-. ").partition(".")
    if suffix not in ("yml", "yaml"):
        return None
    if stem not in ("collection", "collections") and \
            difflib.SequenceMatcher(None, stem, "collection").ratio() < _LIKE_COLLECTION:
        return None
    return (f"looks like a collection file, but only one named exactly {COLLECTION_FILE} is read: rename it; "
            "until then nobody may read the collection")


def collection_file_problems(kb_dir: str | Path) -> list[LoadError]:
    """Every collection file that is invalid or misnamed, each with its line, without reading any entry:
    what `citebot doctor` says before a build would."""
    result = LoadResult()
    _collection_files(Path(kb_dir), result)
    for folder, subfolders, files in os.walk(kb_dir):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d != DRAFTS_FOLDER)
        base = Path(folder).relative_to(kb_dir).as_posix()
        for name in sorted(f for f in files if not f.startswith(".")):
            rel = name if base == "." else f"{base}/{name}"
            if not _is_collection_file(rel) and (mistake := collection_file_mistake(rel)) is not None:
                result.errors.append(LoadError(rel, 1, mistake))
    return result.errors


def _context(rel: str, found: Read, collections: dict[str, Collection], language: str) -> FileContext:
    collection = _collection_of(rel)
    return FileContext(rel, collection, collections.get(collection, NO_COLLECTION_FILE), found.mtime, language)


def _is_collection_file(rel: str) -> bool:
    return rel == COLLECTION_FILE or (rel.count("/") == 1 and rel.endswith("/" + COLLECTION_FILE))


def _collection_files(kb_dir: Path, result: LoadResult) -> dict[str, Collection]:
    """Each collection's `_collection.yml`; a bad one is one error line for its folder.

    Its files are loaded without it: the error keeps such a build from being
    switched in (without --keep-going), and one line says what to fix instead
    of one per file.
    """
    found: dict[str, Collection] = {}
    for rel, read in read_collection_files(kb_dir):
        try:
            if isinstance(read, Skipped):
                raise CollectionError(1, read.reason)
            found[_collection_of(rel)] = parse_collection(read.data)
        except CollectionError as exc:
            result.unreadable_collections.add(_collection_of(rel))
            result.errors.append(LoadError(rel, exc.line, f"invalid collection file: {exc.message}"))
    return found


def _parse(found: Read, context: FileContext) -> Entry:
    suffix = PurePosixPath(context.rel).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return parse_entry(found.data, context.rel, context.default_language, context=context)
    return _converted_entry(found.data, suffix, context)


def parse_entry(data: bytes, rel: str, language: str, *, context: FileContext | None = None) -> Entry:
    """The entry of one Markdown or text file's bytes; `rel` (its path in the KB) gives the collection."""
    context = context or FileContext(rel, _collection_of(rel), default_language=language)
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EntryError(1, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    raw = raw.replace("\r\n", "\n")
    if not raw.strip():
        raise EntryError(1, "empty file")
    name = PurePosixPath(rel)
    if name.suffix.lower() in (".md", ".markdown") and raw.startswith("---\n"):
        return _front_matter_entry(raw, context)
    return _plain_entry(raw, context, name.stem)


def _converted_entry(data: bytes, suffix: str, context: FileContext) -> Entry:
    """A PDF, Word or HTML file's entry, through kb_index.formats (imported only when one is met)."""
    from kb_index.formats import ConversionError, convert

    try:
        doc = convert(data, suffix)
    except ConversionError as exc:
        raise EntryError(1, f"not indexed: {exc.reason}" + (f": {exc.detail}" if exc.detail else "")) from exc
    sections = [Section(s.name, s.text, s.page) for s in document_sections(doc)]
    if not sections:
        raise EntryError(1, "not indexed: the document has no text")
    stem = PurePosixPath(context.rel).stem
    return Entry(
        id=path_id(context.rel),
        title=doc.title or _title_of_name(stem),
        collection=context.collection,
        path=context.rel,
        language=context.language(document_text(doc), doc.language),
        sections=sections,
        stand=context.stand(doc.stand),
        url=context.url(doc.url),
        source_role=context.source_role,
    )


def _collection_of(rel: str) -> str:
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else DEFAULT_COLLECTION


# Letters that Unicode does not decompose into a Latin letter and a mark, or that German writes out: before the
# decomposition, so that "Überstunden" becomes "ueberstunden", not "uberstunden".
_SPELLED_OUT = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "æ": "ae", "ø": "oe", "œ": "oe",
                              "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
PATH_HASH_CHARS = 8


def path_id(rel: str) -> str:
    """'hr/travel-policy.md' -> 'hr-travel-policy'; 'hr/Überstunden.md' -> 'hr-ueberstunden'; 'hr/Kündigung.md' ->
    'hr-kuendigung'; 'Café.md' -> 'cafe'. A file name with no Latin letter or digit left ('hr/会议.md') gets a short
    hash of its path ('hr-5d1c3a0e'): never empty, never the same id as its neighbour ('hr/规则.md')."""
    stem = unicodedata.normalize("NFC", rel.rsplit(".", 1)[0])
    folder, _, name = stem.rpartition("/")
    slug = _slug(name)
    if not slug:
        slug = hashlib.sha256(stem.encode()).hexdigest()[:PATH_HASH_CHARS]
    return "-".join(part for part in (_slug(folder), slug) if part)


def _slug(text: str) -> str:
    latin = unicodedata.normalize("NFKD", text.lower().translate(_SPELLED_OUT))
    ascii_only = latin.encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_only).strip("-")


# libyaml's parser where PyYAML has it: the same safe constructors, a tenth of the time per file (the front
# matter of 25,000 files was the largest part of reading a KB).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _python_yaml_error(text: str) -> yaml.YAMLError:
    """PyYAML's own parser's error for text libyaml refused: its line is the line at fault, not where libyaml
    noticed (for `id: [` the line of the bracket, not the end of the front matter)."""
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return exc
    except RecursionError:
        pass
    return yaml.YAMLError("invalid YAML")


def _front_matter_entry(raw: str, context: FileContext) -> Entry:
    lines = raw.split("\n")
    try:
        end = lines.index("---", 1)
    except ValueError:
        raise EntryError(1, "front matter starts with '---' but has no closing '---' line") from None
    try:
        meta = yaml.load("\n".join(lines[1:end]), Loader=SAFE_LOADER) or {}  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        exc = _python_yaml_error("\n".join(lines[1:end]))
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark else 1  # +1 for the opening '---', +1 to count from 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise EntryError(line, f"invalid YAML in front matter: {problem}") from exc
    if not isinstance(meta, dict):
        raise EntryError(2, "front matter must be a mapping of 'key: value' lines")

    def line_of(key: str) -> int:
        for i, text in enumerate(lines[1:end], start=2):
            if text.startswith(f"{key}:"):
                return i
        return 1

    entry_id = meta.get("id")
    if entry_id is None or str(entry_id).strip() == "":
        raise EntryError(1, "front matter has no 'id'")
    entry_id = str(entry_id).strip()
    if not ID_PATTERN.match(entry_id):
        raise EntryError(line_of("id"), f"id {entry_id!r} may only use letters, digits, '.', '_' and '-'")
    fields = {key: _text_field(meta, key, line_of) for key in _TEXT_FIELDS}
    lists = {key: _list_field(meta, key, line_of) for key in _LIST_FIELDS}
    body = "\n".join(lines[end + 1 :])
    title = fields["title"] or _first_heading(body) or entry_id
    sections = split_sections(body, title)
    if not sections:
        raise EntryError(end + 2, "entry has no text after the front matter")
    # The front matter says what it says; the collection file fills in the rest.
    return Entry(
        id=entry_id,
        title=title,
        collection=context.collection,
        path=context.rel,
        language=(fields["language"] or context.settings.language or context.default_language).lower(),
        sections=sections,
        stand=_stand(meta, line_of),
        work=fields["work"],
        chapter=fields["chapter"],
        topic=fields["topic"],
        url=context.url(fields["url"]),
        source_role=fields["source_role"] or context.source_role,
        cross_refs_line=line_of("cross_refs"),
        id_line=line_of("id"),
        **lists,
    )


def _text_field(meta: dict, key: str, line_of) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise EntryError(line_of(key), f"'{key}' must be a single value, not a {type(value).__name__}")
    return str(value).strip() or None


def _list_field(meta: dict, key: str, line_of) -> tuple[str, ...]:
    value = meta.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        value = [v for v in re.split(r"\s*,\s*", value) if v]
    if not isinstance(value, list) or any(isinstance(v, (dict, list)) for v in value):
        raise EntryError(line_of(key), f"'{key}' must be a list like [a, b]")
    return tuple(str(v).strip() for v in value if str(v).strip())


def _stand(meta: dict, line_of) -> str | None:
    value = meta.get("stand")
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return value.strftime("%Y-%m-%d")
    text = str(value).strip()
    if not STAND_PATTERN.match(text):
        raise EntryError(line_of("stand"), f"'stand' must be YYYY-MM or YYYY-MM-DD, got {text!r}")
    return text


def _plain_entry(raw: str, context: FileContext, stem: str) -> Entry:
    title = _first_heading(raw) or _title_of_name(stem)
    sections = split_sections(raw, title)
    if not sections:
        raise EntryError(1, "file has no text")
    return Entry(
        id=path_id(context.rel),
        title=title,
        collection=context.collection,
        path=context.rel,
        language=context.language(raw),
        sections=sections,
        stand=context.stand(),
        url=context.url(),
        source_role=context.source_role,
    )


def _title_of_name(stem: str) -> str:
    return stem.replace("-", " ").replace("_", " ").strip().capitalize()


def _first_heading(text: str) -> str | None:
    return next((u.text for u in markdown.units(text) if u.kind == "heading" and u.level == 1), None)


def split_sections(body: str, title: str) -> list[Section]:
    """`##` headings start sections; text before the first one is the 'Overview'.

    The body is parsed as CommonMark (kb_index.markdown), so a "## " inside a code
    block starts nothing, and each section's text is stored one unit per line: a
    hard-wrapped paragraph becomes one line, and nothing downstream splits it
    mid-sentence. `#` headings are the entry's title, not part of a section.
    """
    sections: list[Section] = []
    name = "Overview"
    buf: list[markdown.Unit] = []

    def flush() -> None:
        text = markdown.render(buf).strip()
        if text:
            sections.extend(_split_long(name, text))

    for unit in markdown.units(body):
        # Only "## " starts a section, as the KB format says; an underlined heading is text.
        if unit.kind == "heading" and unit.level == 2 and unit.atx and not unit.marker:
            flush()
            name, buf = unit.text, []
        elif not (unit.kind == "heading" and unit.level == 1):
            buf.append(unit)
    flush()
    return sections


def _split_long(name: str, text: str) -> list[Section]:
    return [Section(part_name, part) for part_name, part in split_long(name, text)]


def _drop_duplicates(result: LoadResult, established: dict[str, str], failed: set[str]) -> None:
    by_id: dict[str, list[Entry]] = {}
    for entry in result.entries:
        by_id.setdefault(entry.id, []).append(entry)
    # Established ids whose file failed to load keep their last good version:
    # a file claiming such an id is a duplicate of the live entry, not its heir.
    result.held = {eid: path for eid, path in established.items() if path in failed}
    kept = []
    for entry in result.entries:
        claimants = by_id[entry.id]
        owner = established.get(entry.id)
        if entry.id in result.held:
            winner_path = f"{owner}, which failed to load; its last good version stays in the index"
        else:
            winner = next((e for e in claimants if e.path == owner), claimants[0])
            if winner is entry:
                kept.append(entry)
                continue
            winner_path = winner.path
        result.errors.append(
            LoadError(entry.path, entry.id_line, f"duplicate id {entry.id!r} (already used by {winner_path})")
        )
    result.entries = kept


def _warn_unknown_cross_refs(result: LoadResult) -> None:
    """A cross-ref to an id the KB does not have is a warning: the entry is indexed all the same.

    The entry's own text is as good as ever, and dropping it for a stale
    reference (the other entry was renamed, or lives in a KB not indexed here)
    would cost answers; retrieval passes over a reference it cannot follow.
    """
    ids = {e.id for e in result.entries} | set(result.held)
    for entry in result.entries:
        unknown = [ref for ref in entry.cross_refs if ref not in ids]
        if unknown:
            names = ", ".join(repr(u) for u in unknown)
            result.warnings.append(
                LoadError(entry.path, entry.cross_refs_line, f"unknown cross-ref {names}: not followed")
            )
