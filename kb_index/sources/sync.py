"""`citebot sync`: bring each source's documents, and who may read them, into the index.

One source at a time:

1. What changed: the source's change feed since the cursor (Drive), else the
   whole listing (Confluence every time; Drive on the first sync and with
   --full). A listing names every document in scope, so what the store has
   and the listing does not was deleted, moved out of scope or lost to the
   sync's account: it is removed.
2. Who may read each changed document: its grants (model.Grant) become an
   access (kb_index.collection.CollectionAccess): e-mail addresses become
   Slack users (`People`), the source's groups the Slack user groups
   sources.yml maps them to, the whole organization every full member. A
   grant that admits nobody known to Slack, or permissions that could not be
   read, leave the document out of the index (reported): it is never
   indexed for more people than the source lets read it.
3. The documents whose version changed are fetched and converted like KB
   files (kb_index.formats); one that fails is reported and skipped, the
   rest goes on. A document whose readers changed but whose content did not
   is not fetched again: only its access is rewritten.
4. The index is built from the KB folder and the synced store together
   (build_index), re-embedding only sections whose text changed, and switched
   in only when the build succeeded.

Documents with the same readers form one part of the source's collection
(`handbook~all`, `handbook~3fa9c2d1`): the access rules that apply to a
collection apply to each part, so a conversation reads a restricted page only
when every member may.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from citebot_core.errors import Retryable
from kb_index.collection import PART_SEPARATOR, Audience, CollectionAccess
from kb_index.documents import FileContext, document_sections, document_text
from kb_index.entries import Entry, Section
from kb_index.files import MAX_FILE_BYTES
from kb_index.formats.model import DocSection
from kb_index.sources.config import EVERYONE, ConfluenceSource, DriveSource
from kb_index.sources.model import Calls, Connector, DocumentError, Fetched, Grant, Listed
from kb_index.sources.store import DocState, SourceState, StoredEntry, SyncedStore

ALL_READERS = "all"  # the part of a source's collection that every reader of the source may read
# The state is saved after this many documents: a sync killed half-way goes on from there.
CHECKPOINT_EVERY = 50
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class People(Protocol):
    """Who an e-mail address is in Slack (users.lookupByEmail): a user id, or None for nobody Slack knows.
    Raises PeopleUnavailable when Slack cannot be asked."""

    def user_id(self, email: str) -> str | None: ...


class PeopleUnavailable(Retryable):
    """Slack could not be asked who an e-mail address is (it may answer at the next sync)."""


class NoSlack:
    """Without a Slack token nobody can be matched: only documents the whole organization may read are indexed."""

    def user_id(self, email: str) -> str | None:
        return None


@dataclass
class Problem:
    id: str
    title: str
    reason: str

    def __str__(self) -> str:
        return f"{self.title or self.id} ({self.id}): {self.reason}"


@dataclass
class SourceReport:
    source: str
    listed: bool = False  # the whole scope was listed (else: the change feed)
    in_scope: int = 0
    fetched: int = 0
    readers_changed: int = 0  # documents whose readers changed, content not: access rewritten, nothing fetched
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    not_indexed: list[Problem] = field(default_factory=list)  # permissions unreadable, nobody known to Slack
    failed: list[Problem] = field(default_factory=list)  # fetch or conversion failed: skipped
    notes: list[str] = field(default_factory=list)
    calls: Calls = field(default_factory=Calls)
    seconds: float = 0.0

    def summary(self) -> str:
        how = "listed" if self.listed else "changes"
        return (f"{self.source}: {how}, {self.in_scope} in scope, {self.fetched} fetched, "
                f"{self.readers_changed} with new readers, {len(self.removed)} removed, "
                f"{len(self.not_indexed)} not indexed, {len(self.failed)} failed, {self.calls.total} API calls, "
                f"{self.seconds:.1f}s")


Source = ConfluenceSource | DriveSource
Progress = Callable[[str, int, int | None], None]


def part_name(collection: str, access: CollectionAccess) -> str:
    """The collection part a document with `access` goes into: the same readers, the same part, every sync."""
    if not access.audiences():
        return f"{collection}{PART_SEPARATOR}{ALL_READERS}"
    blob = json.dumps(access.model_dump(mode="json"), sort_keys=True)
    return f"{collection}{PART_SEPARATOR}{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def entry_id(source: str, doc_id: str) -> str:
    return f"{source}-{_ID_UNSAFE.sub('-', doc_id).strip('-')}"


class SourceSync:
    """One source's sync into its store; the caller builds the index afterwards."""

    def __init__(self, name: str, source: Source, connector: Connector, store: SyncedStore, people: People, *,
                 default_language: str = "en", progress: Progress | None = None):
        self.name = name
        self.source = source
        self.connector = connector
        self.store = store
        self.people = people
        self.default_language = default_language
        self.progress = progress
        self.report = SourceReport(name)
        self._unmapped_groups: set[str] = set()
        self._slack_problems: set[str] = set()
        self._unnamed_in = 0  # documents with readers the source named without an e-mail address

    def run(self, *, full: bool = False) -> SourceReport:
        started = time.perf_counter()
        state = self.store.load_state()
        cursor, changed, removed = self._what_changed(state, full)
        for doc_id in removed:
            self._remove(state, doc_id)
        self._take_all(state, changed, refetch=full)
        # An entry written just before a kill, whose state was never saved, is not in `state.docs`: the next
        # sync could not know to remove it, so it goes now (and is taken again if it is still in scope).
        self.store.sweep(keep=state.docs)
        self.report.notes += self._notes()
        if not self.report.listed:
            self.report.in_scope = len(state.docs)
        state.cursor = cursor
        state.synced_at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.store.save_state(state)
        self.report.calls = self.connector.calls
        self.report.seconds = time.perf_counter() - started
        return self.report

    def _what_changed(self, state: SourceState, full: bool) -> tuple[str | None, Sequence[Listed], list[str]]:
        """The cursor to keep, the documents to bring up to date, the ids to remove: from the change feed, else
        from a listing of everything (a SourceError then leaves the store as it is: a half listing would read as
        deletions)."""
        changes = None if full or state.cursor is None else self.connector.changes(state.cursor)
        if changes is not None:
            return changes.cursor, changes.changed, list(changes.removed)
        cursor = self.connector.start_cursor()  # before the listing: nothing changed during it is missed
        listed = list(self.connector.listing())
        self.report.listed = True
        self.report.in_scope = len(listed)
        in_scope = {doc.id for doc in listed}
        return cursor, listed, [doc_id for doc_id in state.docs if doc_id not in in_scope]

    def _take_all(self, state: SourceState, changed: Sequence[Listed], *, refetch: bool) -> None:
        tick = self._stage(len(changed))
        unsaved = 0
        try:
            for doc in changed:
                unsaved += self._take(state, doc, refetch=refetch)
                tick()
                if unsaved >= CHECKPOINT_EVERY:
                    self.store.save_state(state)
                    unsaved = 0
        except Exception:
            # The source went away half-way: what was taken so far is kept (the cursor is not moved on).
            self.store.save_state(state)
            raise

    def _notes(self) -> list[str]:
        notes = []
        if self._unmapped_groups:
            notes.append("source groups sources.yml does not map to Slack (they grant nobody): "
                         + ", ".join(sorted(self._unmapped_groups)))
        if self._unnamed_in:
            notes.append(f"{self._unnamed_in} document(s) name readers whose e-mail address the source does not "
                         "show: they were left out of those documents' readers")
        if self._slack_problems:
            notes.append("Slack could not say who some readers are, so they were matched as at the last sync or "
                         "not at all: " + "; ".join(sorted(self._slack_problems)))
        return notes

    # -- one document -----------------------------------------------------------------------------------------

    def _take(self, state: SourceState, doc: Listed, *, refetch: bool) -> bool:
        """Bring one listed document up to date; whether the store changed (the state is then saved soon)."""
        access, why_not = self._access(doc, state)
        if access is None:
            self.report.not_indexed.append(Problem(doc.id, doc.title, why_not))
            return self._remove(state, doc.id, count=False)
        part = part_name(self.source.collection, access)
        known = state.docs.get(doc.id)
        if known is not None and known.version == doc.version and not refetch:
            if known.readers == part:
                self.report.unchanged += 1
                return False
            if self._move(doc.id, part, access):
                known.readers = part
                self.report.readers_changed += 1
                return True
        try:
            entry = self._entry(self.connector.fetch(doc), part)
        except DocumentError as exc:
            self.report.failed.append(Problem(doc.id, doc.title, str(exc)))
            # Its last good content stays, but never with readers the source no longer gives.
            if known is None or known.readers == part:
                return False
            if not self._move(doc.id, part, access):
                return self._remove(state, doc.id, count=False)
            known.readers = part
            return True
        self.store.write(doc.id, StoredEntry(entry, access))
        state.docs[doc.id] = DocState(version=doc.version, readers=part, entry_id=entry.id, title=doc.title)
        self.report.fetched += 1
        return True

    def _move(self, doc_id: str, part: str, access: CollectionAccess) -> bool:
        """Rewrite a stored entry's readers without fetching it again; False when there is none."""
        stored = self.store.read(doc_id)
        if stored is None:
            return False
        self.store.write(doc_id, StoredEntry(replace(stored.entry, collection=part), access))
        return True

    def _remove(self, state: SourceState, doc_id: str, *, count: bool = True) -> bool:
        """Whether there was anything to remove."""
        known = state.docs.pop(doc_id, None)
        self.store.remove(doc_id)
        if count and known is not None:
            self.report.removed.append(known.title or doc_id)
        return known is not None

    # -- readers ----------------------------------------------------------------------------------------------

    def _access(self, doc: Listed, state: SourceState) -> tuple[CollectionAccess | None, str]:
        if doc.unreadable is not None or not doc.grants:
            return None, f"its permissions could not be read: {doc.unreadable or 'the source gave none'}"
        audiences = []
        self._unnamed_in += any(grant.unnamed for grant in doc.grants)
        for grant in doc.grants:
            if grant.everyone or any(self.source.groups.get(g.lower()) == EVERYONE for g in grant.groups):
                continue
            audience = self._audience(grant, state)
            if audience is None:
                return None, "nobody its permissions name is known to Slack (by e-mail or a mapped group)"
            audiences.append(audience)
        audiences = sorted(set(audiences), key=lambda a: a.model_dump_json())
        return CollectionAccess(
            audience=audiences[0] if audiences else None, also=tuple(audiences[1:]),
            guests=self.source.guests, external=self.source.external,
        ), ""

    def _audience(self, grant: Grant, state: SourceState) -> Audience | None:
        users = sorted({uid for email in grant.users if (uid := self._slack_user(email, state))})
        groups = set()
        for group in grant.groups:
            mapped = self.source.groups.get(group.lower())
            if mapped is None:
                self._unmapped_groups.add(group)
            else:
                groups.add(mapped)
        if not users and not groups:
            return None
        return Audience(users=tuple(users), groups=tuple(sorted(groups)))

    def _slack_user(self, email: str, state: SourceState) -> str | None:
        email = email.lower()
        try:
            found = self.people.user_id(email)
        except PeopleUnavailable as exc:
            # Slack could not be asked: the id it gave before, if any; an address never matched reads nothing.
            self._slack_problems.add(str(exc))
            return state.people.get(email)
        if found is None:
            state.people.pop(email, None)
        else:
            state.people[email] = found
        return found

    # -- content ----------------------------------------------------------------------------------------------

    def _entry(self, fetched: Fetched, part: str) -> Entry:
        from kb_index.formats import ConversionError, convert

        cap = MAX_FILE_BYTES.get(fetched.suffix.lower())
        if cap is None:
            raise DocumentError(f"not indexed: a {fetched.suffix or 'file without a suffix'} is not read")
        if len(fetched.data) > cap:
            raise DocumentError(f"not indexed: larger than {cap // (1024 * 1024)} MB")
        try:
            doc = convert(fetched.data, fetched.suffix)
        except ConversionError as exc:
            raise DocumentError(f"not indexed: {exc.reason}" + (f": {exc.detail}" if exc.detail else "")) from exc
        doc = replace(doc, sections=[_under(s, fetched.path, fetched.title) for s in doc.sections])
        sections = [Section(s.name, s.text, s.page) for s in document_sections(doc)]
        if not sections:
            raise DocumentError("not indexed: the document has no text")
        context = FileContext(self._path(fetched.id, part), part, default_language=self.default_language)
        language = self.source.language or context.language(document_text(doc), doc.language)
        return Entry(
            id=entry_id(self.name, fetched.id), title=fetched.title or doc.title or fetched.id, collection=part,
            path=context.rel, language=language, sections=sections, stand=fetched.stand or doc.stand,
            url=fetched.url, source_role=self.source.source_role or context.source_role,
        )

    def _path(self, doc_id: str, part: str) -> str:
        # Where the entry shows in listings: its collection, the source, the document's id in it.
        return f"{part.split(PART_SEPARATOR)[0]}/@{self.name}/{doc_id}"

    def _stage(self, total: int) -> Callable[[], None]:
        done = 0

        def tick() -> None:
            nonlocal done
            done += 1
            if self.progress is not None:
                self.progress(f"sync {self.name}", done, total)

        return tick



def _under(section: DocSection, path: tuple[str, ...], title: str) -> DocSection:
    """A converted section with the page tree in front of its heading path: "HR › Leave › Eligibility"; the text
    before the first heading is named by the tree and the page's title."""
    if not path:
        return section
    own = section.path if (section.path or section.page) else (title,)
    return replace(section, path=(*path, *own))
