"""The files of a KB folder, read only from inside it.

A KB folder is edited by many people, and whatever the indexer reads can come
out of the bot as an answer. So it reads regular files below the folder and
nothing else:

- a symbolic link is never followed, wherever it points: a link to
  /proc/self/environ or /etc/passwd would publish the host's secrets, and a
  link that is checked first and read afterwards can be re-pointed in between.
  Links inside the KB are skipped too (copy the file instead);
- FIFOs, sockets and devices are skipped (opening a FIFO blocks until someone
  writes to it; a device can stream forever);
- a file larger than the cap of its type (MAX_FILE_BYTES) is skipped: one
  runaway export must not fill the memory of the build. PDF and Word files
  carry images and fonts besides their text, so theirs is higher; the
  converter bounds what it extracts on its own (kb_index.formats.Limits).

Each skipped file is reported with the reason. The walk opens every folder and
file relative to the folder above it with O_NOFOLLOW, so nothing swapped for a
link while the build runs is followed either. Hidden names (".git") are
passed over silently: they are tools' files, not the KB's. A file of another
type ("logo.png") is not read, but listed as not indexed (`Skipped.error`
false), so that nobody wonders why the bot never cites it. So is a folder
named DRAFTS_FOLDER: reviewers' answers saved as draft entries wait there,
unread, until someone checks one and moves it into the KB.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_MB = 1024 * 1024
# The most bytes read per file type. Real KB pages are a few kB; 5 MB is far
# beyond any of them. A saved HTML page inlines its styles and scripts, and a
# PDF or Word file its images and fonts: the text is a small part of them.
MAX_FILE_BYTES = {
    ".md": 5 * _MB,
    ".markdown": 5 * _MB,
    ".txt": 5 * _MB,
    ".html": 20 * _MB,
    ".htm": 20 * _MB,
    ".pdf": 50 * _MB,
    ".docx": 50 * _MB,
}
SUFFIXES = frozenset(MAX_FILE_BYTES)

# The collection file (kb_index/collection.py): read like an entry, never indexed.
COLLECTION_FILE = "_collection.yml"
MAX_COLLECTION_FILE_BYTES = 64 * 1024

# Draft entries (bot.review.drafts): not indexed until someone moves them out.
DRAFTS_FOLDER = "_drafts"
DRAFTS_SKIPPED = "drafts folder: its entries are not indexed until someone moves them out of it"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: should a FIFO slip past the type check (swapped in after the
# folder was listed), opening it returns at once instead of waiting for a writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

_KINDS = {
    stat.S_ISFIFO: "a named pipe",
    stat.S_ISSOCK: "a socket",
    stat.S_ISCHR: "a device",
    stat.S_ISBLK: "a device",
    stat.S_ISDIR: "a folder",
}


@dataclass(frozen=True)
class Skipped:
    """A file (or folder) that was not read, and why.

    `error`: it looked like KB content and could not be read (a build with it
    is not switched in without --keep-going); false for a file of a type the
    KB does not index, which is only listed.
    """

    reason: str
    error: bool = True


@dataclass(frozen=True)
class Read:
    """A file's bytes and its modification time (the `stand` of a file that names no date)."""

    data: bytes
    mtime: float


def is_entry_name(name: str) -> bool:
    return Path(name).suffix.lower() in SUFFIXES


def _cap(name: str) -> int:
    if name == COLLECTION_FILE:
        return MAX_COLLECTION_FILE_BYTES
    return MAX_FILE_BYTES[Path(name).suffix.lower()]


def read_kb_files(kb_dir: str | Path) -> Iterator[tuple[str, Read | Skipped]]:
    """(path relative to the KB, its bytes or why it was skipped), in sorted path order.

    The KB folder itself may be a symbolic link: it is the operator's setting,
    not something a KB editor controls.
    """
    root = os.open(kb_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        info = os.fstat(root)
        yield from _walk(root, "", {(info.st_dev, info.st_ino)})
    finally:
        os.close(root)


def printable_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 shown as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _walk(dir_fd: int, prefix: str, seen: set[tuple[int, int]]) -> Iterator[tuple[str, Read | Skipped]]:
    with os.scandir(dir_fd) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if entry.name.startswith("."):
            continue
        rel = prefix + printable_name(entry.name)
        if entry.is_symlink():
            folder = _points_to_folder(entry)
            read = folder or is_entry_name(entry.name) or entry.name == COLLECTION_FILE
            yield rel, _link_skipped(entry.name, dir_fd, folder=folder, error=read)
        elif entry.is_dir(follow_symlinks=False):
            if entry.name == DRAFTS_FOLDER:
                yield rel, Skipped(DRAFTS_SKIPPED, error=False)
                continue
            if rel != prefix + entry.name:
                yield rel, Skipped("folder name is not UTF-8: skipped with everything in it")
                continue
            yield from _subfolder(dir_fd, entry.name, rel, seen)
        elif is_entry_name(entry.name) or entry.name == COLLECTION_FILE:
            if rel != prefix + entry.name:
                yield rel, Skipped("file name is not UTF-8: skipped")
                continue
            yield rel, _read(dir_fd, entry.name)
        else:
            suffix = Path(entry.name).suffix.lower()
            kind = f"{suffix} files" if suffix else "files without a suffix"
            yield rel, Skipped(f"unknown type: {kind} are not indexed", error=False)


def _points_to_folder(entry: os.DirEntry) -> bool:
    """Only for the message: the link is not followed to read anything."""
    try:
        return entry.is_dir()
    except OSError:  # a loop, or a target we may not look at
        return False


def _link_skipped(name: str, dir_fd: int, *, folder: bool, error: bool) -> Skipped:
    try:
        target = printable_name(os.readlink(name, dir_fd=dir_fd))
    except OSError:
        target = "?"
    what = "a folder" if folder else "a file"
    return Skipped(
        f"symbolic link to {what} ({target}) not followed: "
        "only regular files inside the knowledge base folder are read",
        error,
    )


def _subfolder(dir_fd: int, name: str, rel: str, seen: set[tuple[int, int]]):
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        yield rel, Skipped(f"folder cannot be read: {exc.strerror or exc}")
        return
    try:
        info = os.fstat(fd)
        key = (info.st_dev, info.st_ino)
        if key in seen:  # a bind mount of a folder above: walking on would never end
            yield rel, Skipped("folder is a second path to a folder already read: skipped")
            return
        yield from _walk(fd, rel + "/", seen | {key})
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str) -> Read | Skipped:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == getattr(os, "ELOOP", None):  # became a symbolic link after the listing
            return Skipped("symbolic link not followed: only regular files inside the knowledge base folder are read")
        return Skipped(f"cannot be read: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((label for test, label in _KINDS.items() if test(info.st_mode)), "a special file")
            return Skipped(f"not a regular file ({kind}): skipped")
        cap = _cap(name)
        if info.st_size > cap:
            return _too_large(info.st_size, cap)
        data = _read_at_most(fd, cap + 1)
    except OSError as exc:
        return Skipped(f"cannot be read: {exc.strerror or exc}")
    finally:
        os.close(fd)
    if len(data) > cap:  # it grew after fstat, or reports no size (a /proc file)
        return _too_large(len(data), cap)
    if data and info.st_size == 0:
        # Regular files that claim size 0 and still have content are kernel
        # pseudo-files (/proc, /sys reached through a mount): host state, not KB text.
        return Skipped("not a regular file (a /proc or /sys file): skipped")
    return Read(data, info.st_mtime)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _too_large(size: int, cap: int) -> Skipped:
    limit = f"{cap // _MB} MB" if cap >= _MB else f"{cap // 1024} kB"
    return Skipped(f"too large: the file is larger than {limit} ({size / _MB:.1f} MB): split it into smaller files")


def read_collection_files(kb_dir: str | Path) -> Iterator[tuple[str, Read | Skipped]]:
    """The collection files (COLLECTION_FILE) of the KB folder and of each top-level folder.

    Read before the walk, which meets a folder's files in name order and so
    some of them before the folder's collection file. The same rules as for
    entries: no symbolic links, regular files only.
    """
    root = os.open(kb_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with os.scandir(root) as listing:
            names = sorted(e.name for e in listing if not e.name.startswith(".") and e.name != DRAFTS_FOLDER and e.is_dir(follow_symlinks=False))
        yield from _collection_file(root, "")
        for name in names:
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=root)
            except OSError:
                continue  # the walk reports the folder
            try:
                yield from _collection_file(fd, printable_name(name) + "/")
            finally:
                os.close(fd)
    finally:
        os.close(root)


def _collection_file(dir_fd: int, prefix: str) -> Iterator[tuple[str, Read | Skipped]]:
    try:
        info = os.stat(COLLECTION_FILE, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        yield prefix + COLLECTION_FILE, Skipped("symbolic link not followed: copy the collection file instead")
        return
    yield prefix + COLLECTION_FILE, _read(dir_fd, COLLECTION_FILE)
