"""Which files a KB folder gives the indexer: only regular files inside it.

A symlink in the KB would otherwise publish any file on the host (the
bot's environment, /etc/passwd) as an answer source.
"""

from __future__ import annotations

import os
import threading

import pytest

from kb_index import Retriever, build_index, load_kb
from kb_index.files import MAX_FILE_BYTES
from tests.kb_fixtures import write_entry

SECRET = "SLACK_BOT_TOKEN=xoxb-secret-value"


@pytest.fixture
def outside(tmp_path):
    """A folder next to the KB holding what must never be read."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "environ.txt").write_text(f"{SECRET}\n")
    (folder / "notes.md").write_text(f"# Notes\n\n{SECRET}\n")
    return folder


@pytest.fixture
def kb(tmp_path):
    kb = tmp_path / "kb"
    write_entry(kb, "handbook/pto.md", {"id": "hb-pto-01", "title": "Leave"}, {"Carry-over": "You can carry over 5 days."})
    return kb


def errors_of(result) -> dict[str, str]:
    return {e.path: e.message for e in result.errors}


def all_text(result) -> str:
    return "\n".join(s.text for e in result.entries for s in e.sections)


def test_symlink_to_a_file_outside_the_kb_is_skipped_and_reported(kb, outside):
    (kb / "handbook" / "env.txt").symlink_to(outside / "environ.txt")
    result = load_kb(kb)
    assert SECRET not in all_text(result)
    assert [e.id for e in result.entries] == ["hb-pto-01"]
    message = errors_of(result)["handbook/env.txt"]
    assert "symbolic link" in message and str(outside / "environ.txt") in message


def test_symlink_to_a_system_file_never_reaches_the_index(kb, tmp_path):
    (kb / "handbook" / "env.txt").symlink_to("/proc/self/environ")
    (kb / "handbook" / "passwd.txt").symlink_to("/etc/passwd")
    report = build_index(kb, tmp_path / "ix", keep_going=True)
    assert {e.path for e in report.errors} == {"handbook/env.txt", "handbook/passwd.txt"}
    with Retriever(tmp_path / "ix") as r:
        assert r.search("root bin bash nologin") == []
        assert {h.entry_id for h in r.search("carry over days")} == {"hb-pto-01"}


def test_symlink_to_a_folder_outside_is_not_descended(kb, outside):
    (kb / "handbook" / "ext").symlink_to(outside, target_is_directory=True)
    (kb / "shared").symlink_to(outside, target_is_directory=True)
    result = load_kb(kb)
    assert SECRET not in all_text(result)
    assert set(errors_of(result)) == {"handbook/ext", "shared"}
    assert "symbolic link" in errors_of(result)["shared"]


def test_symlink_inside_the_kb_is_skipped_too(kb):
    # Decision (docs/knowledge-base.md): never followed, even when it stays inside the KB; a
    # link checked and then read leaves a window in which it can be re-pointed.
    (kb / "handbook" / "alias.md").symlink_to(kb / "handbook" / "pto.md")
    result = load_kb(kb)
    assert [e.path for e in result.entries] == ["handbook/pto.md"]
    assert "symbolic link" in errors_of(result)["handbook/alias.md"]


def test_hidden_symlinks_are_ignored_like_other_hidden_files(kb, outside):
    (kb / ".env.md").symlink_to(outside / "environ.txt")
    result = load_kb(kb)
    assert result.errors == [] and SECRET not in all_text(result)


def test_fifo_is_reported_and_does_not_block(kb):
    os.mkfifo(kb / "handbook" / "pipe.md")
    done = threading.Event()
    box = {}

    def load():
        box["result"] = load_kb(kb)
        done.set()

    # A daemon thread: if the loader blocks on the pipe, the test fails instead of hanging.
    threading.Thread(target=load, daemon=True).start()
    assert done.wait(timeout=10), "load_kb blocked on a FIFO"
    assert "not a regular file (a named pipe)" in errors_of(box["result"])["handbook/pipe.md"]


def test_symlink_to_a_device_is_skipped(kb):
    (kb / "handbook" / "zero.txt").symlink_to("/dev/zero")
    assert "symbolic link" in errors_of(load_kb(kb))["handbook/zero.txt"]


def test_file_larger_than_the_cap_is_reported(kb):
    big = kb / "handbook" / "big.txt"
    big.write_bytes(b"a" * (MAX_FILE_BYTES[".md"] + 1))
    message = errors_of(load_kb(kb))["handbook/big.txt"]
    assert "larger than" in message and "MB" in message


def test_file_name_that_is_not_utf8_is_reported_not_a_crash(kb, tmp_path):
    name = os.fsencode(kb / "handbook") + b"/caf\xe9.md"
    with open(name, "wb") as fh:
        fh.write(b"# Cafe\n\nCoffee is free.\n")
    result = load_kb(kb)
    [(path, message)] = errors_of(result).items()
    assert path == "handbook/caf\\xe9.md" and "not UTF-8" in message
    build_index(kb, tmp_path / "ix", keep_going=True)  # nothing unencodable reaches the index


def test_order_is_the_sorted_path_order(tmp_path):
    for rel in ("b.md", "a/z.md", "a.md", "a/b/c.md"):
        write_entry(tmp_path, rel, None, {"S": f"text of {rel}"})
    assert [e.path for e in load_kb(tmp_path).entries] == ["a/b/c.md", "a/z.md", "a.md", "b.md"]


def test_a_symlink_loop_is_reported_not_raised(kb):
    (kb / "handbook" / "loop.md").symlink_to(kb / "handbook" / "loop.md")
    (kb / "handbook" / "loop").symlink_to(kb / "handbook" / "loop")  # no entry suffix: passed over
    errors = errors_of(load_kb(kb))
    assert set(errors) == {"handbook/loop.md"} and "symbolic link" in errors["handbook/loop.md"]
