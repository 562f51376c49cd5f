"""What a source connector hands the sync: documents in scope, their readers, their content.

A connector (confluence.py, drive.py) speaks its API and nothing else. It says
who may read a document in the source's own terms (`Grant`: e-mail addresses,
the source's group names, the whole organization); the sync maps those to
Slack (sync.py), so that no connector needs to know Slack.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from citebot_core.errors import CitebotError, Permanent


@dataclass(frozen=True)
class Grant:
    """One permission layer: who it lets read, in the source's terms.

    A document is readable by a person only if every one of its grants lets
    them (Confluence: the space's permission, then each ancestor's and the
    page's own view restriction; Drive: the file's sharing).
    """

    everyone: bool = False  # the whole organization (Confluence: anonymous or a group mapped to everyone;
    #                          Drive: anyone with the link, the organization's domain)
    users: frozenset[str] = frozenset()  # e-mail addresses, lower case
    groups: frozenset[str] = frozenset()  # the source's group names (Confluence group, Drive group address)
    # Readers the connector saw but could not name by e-mail (a Confluence user whose address is hidden):
    # they are left out, which narrows the grant; the sync reports them.
    unnamed: int = 0

    @property
    def names_nobody(self) -> bool:
        return not (self.everyone or self.users or self.groups)


@dataclass(frozen=True)
class Listed:
    """A document in scope now, as the cheap listing shows it (no body)."""

    id: str  # stable in its source: a page id, an attachment id, a Drive file id
    version: str  # changes whenever its content changes (a page version, a Drive file's modifiedTime/md5)
    title: str
    # Every grant must let a person read it; empty means the permissions could not be read: not indexed.
    grants: tuple[Grant, ...]
    path: tuple[str, ...] = ()  # the titles above it (page tree, folder path), outermost first
    # Why its permissions could not be read, when they could not (reported, the document is not indexed).
    unreadable: str | None = None


@dataclass(frozen=True)
class Fetched:
    """A document's content, to be converted like a KB file of that type."""

    id: str
    title: str
    suffix: str  # ".html", ".pdf", ".docx": the converter it goes through (kb_index.formats)
    data: bytes
    url: str | None  # the web link a footnote points at
    stand: str | None  # YYYY-MM-DD: the last change in the source
    path: tuple[str, ...] = ()  # the titles above it: the start of each section's path


@dataclass(frozen=True)
class Changes:
    """What changed since a cursor, from a source with a change feed (Drive's changes.list)."""

    changed: tuple[Listed, ...]  # in scope now, and changed (content or permissions) since the cursor
    # ids deleted, trashed or moved out of scope; may hold ids never synced (a file changed outside the scope)
    removed: tuple[str, ...]
    cursor: str  # where the next increment starts


@dataclass(frozen=True)
class Failure:
    """One document the source could not give; reported, and the rest of the sync goes on."""

    id: str
    title: str
    reason: str


@dataclass
class Calls:
    """The API calls a connector made, by kind (`bench/sync.py` and the sync's summary print them)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class SourceError(CitebotError):
    """The source cannot be synced at all: credentials refused, a space that does not exist (until someone changes
    the configuration), or unreachable (http.SourceUnavailable, the Retryable one: the next sync may succeed)."""


class DocumentError(Permanent):
    """One document cannot be fetched or read; the sync reports it and goes on."""


class Connector(Protocol):
    """One source's API. Synchronous: the sync runs in the CLI or in a worker thread."""

    calls: Calls

    def listing(self) -> Iterator[Listed]:
        """Every document in scope now, with its version and grants. Raises SourceError when the source
        cannot be listed: the sync then changes nothing (a half listing would read as deletions)."""
        ...

    def changes(self, cursor: str | None) -> Changes | None:
        """What changed since `cursor`, or None when this source has no change feed (or no cursor yet):
        the sync lists everything instead."""
        ...

    def start_cursor(self) -> str | None:
        """The cursor of now, taken before a full listing so that nothing changed during it is missed."""
        ...

    def fetch(self, listed: Listed) -> Fetched:
        """The document's content. Raises DocumentError for this document alone."""
        ...

    def check(self) -> list[tuple[str, str]]:
        """For `citebot doctor`: (level, message) pairs, level one of ok/warn/fail: reachable, credentials
        accepted, each configured space, folder or drive found."""
        ...

    def close(self) -> None:
        ...
