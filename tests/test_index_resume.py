"""A large KB indexes once: problems are listed before any embedding, and no vector is computed twice.

Real files on disk (broken ones as a real company folder has them), a real
Whoosh index and vector store, and `citebot index` as a real process against
a fake embedding server over HTTP, killed or interrupted half-way.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bot.commands.build_output import Progress
from kb_index import build_index
from kb_index.embedding import EmbedderError
from kb_index.index import current_generation
from kb_index.vector_store import STORE_FILE, VectorStore
from kb_index.vectors import Vectors
from tests.fakes.embed_server import FakeEmbeddings
from tests.harness import ROOT
from tests.kb_fixtures import zip_bytes
from tests.polling import wait_until
from tests.test_vectors import CountingEmbedder

FILES, SECTIONS = 40, 4  # one chunk per section: 160 chunks, ten batches of 16
CHUNKS = FILES * SECTIONS
WORDS = "leave salary contract travel expense office remote holiday notice period probation bonus pension".split()


def write_kb(kb: Path, files: int = FILES) -> Path:
    """Plain Markdown files as people write them: no front matter, the id from the file name, the title from the
    first heading."""
    for f in range(files):
        write_policy(kb, f"handbook/policy-{f:02d}.md", f"Policy {f}", {
            f"Part {s}": " ".join(WORDS[(f + s + w) % len(WORDS)] for w in range(30)) + f" (rule {f}.{s})."
            for s in range(SECTIONS)
        })
    return kb


def write_policy(kb: Path, rel: str, title: str, sections: dict[str, str]) -> None:
    path = kb / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {title}\n\n" + "".join(f"## {name}\n\n{text}\n\n" for name, text in sections.items()))


# What a real folder holds besides good files, as the users' report listed them.
BROKEN = {
    "handbook/latin1.md": "---\ntitle: Übersicht\n---\n## Teil\nÄrger über Größe.\n".encode("latin-1"),
    "handbook/noise.md": bytes(range(256)) * 8,
    "handbook/empty.md": b"",
    "handbook/bad-yaml.md": b"---\ntitle: [unclosed\n---\n## Part\nText.\n",
    "handbook/fake.pdf": b"this is a text file named .pdf",
    "handbook/not-a-zip.docx": b"this is not a zip",
}


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return zip_bytes({"[Content_Types].xml": b"<Types/>", "word/document.xml": 200_000_000})


def add_broken(kb: Path, bomb: bytes) -> list[str]:
    for rel, data in {**BROKEN, "handbook/bomb.docx": bomb}.items():
        (kb / rel).write_bytes(data)
    return sorted([*BROKEN, "handbook/bomb.docx"])


class Recorder:
    """progress and on_problems of one build, in the order they came."""

    def __init__(self):
        self.events: list[str] = []

    def progress(self, stage, done, total):
        if not self.events or self.events[-1] != stage:
            self.events.append(stage)

    def problems(self, report):
        self.events.append(f"problems:{len(report.errors)}")

    def error(self, error):
        self.events.append("error")


# ---------------------------------------------------------------- in-process builds


def test_a_folder_with_problems_stops_before_anything_is_indexed_or_embedded(tmp_path, bomb):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    live = build_index(kb, ix).generation
    broken = add_broken(kb, bomb)
    embedder, seen = CountingEmbedder(), Recorder()
    started = time.perf_counter()
    report = build_index(kb, ix, embedder=embedder, progress=seen.progress, on_problems=seen.problems,
                         on_error=seen.error)
    assert time.perf_counter() - started < 10  # seconds, however large the KB's embedding would be
    assert report.stopped and not report.switched
    assert sorted(e.path for e in report.errors) == broken
    assert embedder.passages == []
    # Each broken file said as it was read (they come first by name), before the good files after them were read;
    # then the whole list, and no "index" or "embed".
    assert seen.events[:2] == ["error", "load"] and seen.events.count("error") == len(broken)
    assert seen.events[-2:] == ["load", f"problems:{len(broken)}"]
    assert "index" not in seen.events and "embed" not in seen.events
    assert current_generation(ix).name == live and sorted(p.name for p in ix.glob("gen-*")) == [live]
    assert "not switched in" in report.summary() and "nothing indexed or embedded" in report.summary()


def test_with_keep_going_the_problems_come_before_the_long_work(tmp_path, bomb):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    broken = add_broken(kb, bomb)
    seen = Recorder()
    report = build_index(kb, ix, embedder=CountingEmbedder(), keep_going=True, progress=seen.progress,
                         on_problems=seen.problems)
    assert report.switched and report.embedded == CHUNKS
    assert seen.events.index(f"problems:{len(broken)}") < seen.events.index("index") < seen.events.index("embed")


class FailsAfter(CountingEmbedder):
    """The embedding server goes away after `batches` batches."""

    def __init__(self, batches: int):
        super().__init__()
        self.batches = batches

    def embed_passages(self, texts):
        if self.batches == 0:
            raise EmbedderError("http://embed: connection refused")
        self.batches -= 1
        return super().embed_passages(texts)


def test_a_failed_build_keeps_its_vectors_and_the_next_one_embeds_only_the_rest(tmp_path):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    first = FailsAfter(batches=4)
    with pytest.raises(EmbedderError):
        build_index(kb, ix, embedder=first)
    assert not (ix / "CURRENT").exists()
    with VectorStore(ix / STORE_FILE) as store:
        assert store.count() == 4 * 16
    second = CountingEmbedder()
    report = build_index(kb, ix, embedder=second)
    assert report.switched and report.embedded == CHUNKS - 4 * 16
    assert not set(first.passages) & set(second.passages)  # nothing computed twice


def test_renamed_moved_and_reformatted_files_embed_nothing(tmp_path):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    build_index(kb, ix, embedder=CountingEmbedder())
    (kb / "handbook" / "policy-00.md").rename(kb / "handbook" / "Überstunden-Regeln.md")
    (kb / "archive").mkdir()
    (kb / "handbook" / "policy-01.md").rename(kb / "archive" / "policy-01.md")
    reformatted = kb / "handbook" / "policy-02.md"
    reformatted.write_text(reformatted.read_text().replace(" ", "  ").replace("\n## ", "\n\n\n## "))
    embedder = CountingEmbedder()
    report = build_index(kb, ix, embedder=embedder)
    assert report.switched and len(report.added) == 2 and report.embedded == 0 and embedder.passages == []


def test_vectors_no_generation_uses_are_removed_with_the_old_generations(tmp_path):
    kb, ix = write_kb(tmp_path / "kb", files=4), tmp_path / "ix"
    write_policy(kb, "handbook/gone.md", "Gone", {"Only": "A text that is removed later on."})
    build_index(kb, ix, embedder=CountingEmbedder())
    (kb / "handbook" / "gone.md").unlink()
    build_index(kb, ix, embedder=CountingEmbedder())
    with VectorStore(ix / STORE_FILE) as store:
        assert store.count() == 4 * SECTIONS + 1  # the previous generation still uses it: a reader may be on it
    build_index(kb, ix, embedder=CountingEmbedder())
    with VectorStore(ix / STORE_FILE) as store:
        assert store.count() == 4 * SECTIONS
    assert sum(1 for k in Vectors.load(current_generation(ix)).keys if k) == 4 * SECTIONS  # b'': a deleted docnum


def test_progress_without_a_terminal_says_rate_and_time_left_every_30_seconds(capsys):
    now = [0.0]
    progress = Progress(enabled=True, bars=False, clock=lambda: now[0])
    for done in range(16, 20_001, 16):  # 20,000 chunks at 8 a second
        now[0] = done / 8
        progress("embed", done, 20_000)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "citebot: embedding 20000 chunks (only new or changed ones; this can take a while)…"
    assert len(lines) - 1 == pytest.approx(2500 / 30, abs=2)
    assert lines[1] == "citebot: embedding chunks: 256 of 20000 chunks (1 %), 8.0 chunks/s, about 41 min left"
    assert lines[-1].endswith("19936 of 20000 chunks (99 %), 8.0 chunks/s, about 8 s left")


def test_progress_on_a_terminal_is_a_bar_with_rate_and_time_left(capsys):
    with Progress(enabled=True, bars=True) as progress:
        for done in range(16, 161, 16):
            progress("embed", done, 160)
    err = capsys.readouterr().err
    assert "embedding chunks:" in err and "/160 [" in err and " chunks/s]" in err


# ---------------------------------------------------------------- `citebot index` as a process


def cli_env(kb: Path, ix: Path, server: FakeEmbeddings | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    env |= {"CITEBOT_KB_DIR": str(kb), "CITEBOT_INDEX_DIR": str(ix), "CITEBOT_EMBEDDER": "none"}
    if server is not None:
        env |= {"CITEBOT_EMBEDDER": "openai", "CITEBOT_EMBED_URL": server.root, "CITEBOT_EMBED_MODEL": "hash-64"}
    return env


def index(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", "index", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def embedded(done: subprocess.CompletedProcess) -> int:
    found = re.search(r"(\d+) chunks embedded with", done.stdout)
    assert found, done.stdout + done.stderr
    return int(found.group(1))


def start_index(env: dict[str, str]) -> subprocess.Popen:
    # Ctrl-C as at a terminal: a test run started in the background inherits SIGINT ignored, and Python keeps it so.
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "index"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_a_killed_build_loses_at_most_the_batch_it_was_computing(tmp_path):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    with FakeEmbeddings(dim=32, delay_s=0.15) as server:
        env = cli_env(kb, ix, server)
        proc = start_index(env)
        wait_until(lambda: server.texts >= CHUNKS // 2, timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        time.sleep(0.3)  # the request in flight when it was killed is still answered (and counted)
        served = server.texts
        assert proc.returncode == -signal.SIGKILL and served < CHUNKS
        assert not (ix / "CURRENT").exists()
        with VectorStore(ix / STORE_FILE) as store:
            kept = store.count()
        assert served - 16 <= kept <= served  # at most the batch in flight is lost
        server.delay_s = 0
        done = index(env)
        assert done.returncode == 0, done.stderr
        assert embedded(done) == CHUNKS - kept == server.texts - served


def test_ctrl_c_says_what_was_kept_and_leaves_the_live_index(tmp_path):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    assert index(cli_env(kb, ix, None)).returncode == 0  # a live BM25-only index
    with FakeEmbeddings(dim=32, delay_s=0.15) as server:
        env = cli_env(kb, ix, server)
        proc = start_index(env)
        wait_until(lambda: server.texts >= CHUNKS // 4, timeout=60)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        note = err.strip().splitlines()[-1]
        assert re.fullmatch(
            r"citebot: interrupted: the live index \(gen-000001\) is unchanged; the (\d+) chunk vectors this run "
            r"computed are kept \((\d+) in the vector store\), so the next run embeds only the (\d+) it had not done",
            note), note
        assert (ix / "CURRENT").read_text().strip() == "gen-000001"
        assert sorted(p.name for p in ix.glob("gen-*")) == ["gen-000001"]
        kept = int(re.search(r"the (\d+) chunk vectors", note).group(1))
        server.delay_s = 0
        assert embedded(index(env)) == CHUNKS - kept


def test_the_cli_lists_every_problem_before_it_embeds(tmp_path, bomb):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    broken = add_broken(kb, bomb)
    with FakeEmbeddings(dim=32) as server:
        env = cli_env(kb, ix, server)
        refused = index(env)
        assert refused.returncode == 1 and server.texts == 0
        problems = [line for line in refused.stderr.splitlines() if re.match(rf"{re.escape(str(kb))}/handbook/\S+:\d+: ", line)]
        assert sorted(line.split(str(kb) + "/")[1].split(":")[0] for line in problems) == broken
        assert "nothing was indexed or embedded" in refused.stderr and not (ix / "CURRENT").exists()

        going = index(env, "--keep-going")
        assert going.returncode == 0 and embedded(going) == CHUNKS
        lines = going.stderr.splitlines()
        first_embedding = next(i for i, line in enumerate(lines) if line.startswith("citebot: embedding"))
        assert all(lines.index(p) < first_embedding for p in problems)


def test_check_lists_the_problems_and_what_is_left_to_embed_and_changes_nothing(tmp_path, bomb):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    with FakeEmbeddings(dim=32) as server:
        env = cli_env(kb, ix, server)
        assert index(env).returncode == 0
        write_policy(kb, "handbook/new.md", "New", {"One": "A new rule.", "Two": "Another new rule."})
        broken = add_broken(kb, bomb)
        before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in ix.rglob("*")}
        served = server.texts
        check = index(env, "--check")
        assert check.returncode == 1
        assert sum(str(kb / rel) in check.stderr for rel in broken) == len(broken)
        assert re.search(rf"check: {FILES + 1} entries, {CHUNKS + 2} chunks, 2 of them not embedded yet with hash-64; "
                         rf"{len(broken)} file\(s\) with problems", check.stdout), check.stdout
        assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in ix.rglob("*")} == before
        assert server.texts == served
        for rel in broken:
            (kb / rel).unlink()
        assert index(env, "--check").returncode == 0


def test_store_rows_match_the_generation(tmp_path):
    """What a generation holds is what the store holds: the matrix rows are the stored vectors."""
    kb, ix = write_kb(tmp_path / "kb", files=3), tmp_path / "ix"
    build_index(kb, ix, embedder=CountingEmbedder())
    vectors = Vectors.load(current_generation(ix))
    with VectorStore(ix / STORE_FILE) as store:
        stored = store.get("bow-a", [bytes(k) for k in vectors.keys])
    assert len(stored) == len(vectors.keys)
    for i, key in enumerate(vectors.keys):
        assert np.array_equal(stored[bytes(key)], np.asarray(vectors.matrix[i]))


def test_what_a_killed_build_left_half_written_goes_and_the_index_live_before_stays(tmp_path):
    kb, ix = write_kb(tmp_path / "kb"), tmp_path / "ix"
    with FakeEmbeddings(dim=32, delay_s=0.5) as server:
        env = cli_env(kb, ix, server)
        assert index(cli_env(kb, ix, None)).returncode == 0  # gen-000001, BM25 only
        proc = start_index(env)  # gen-000002: killed while it embeds
        wait_until(lambda: server.requests >= 1, timeout=60)  # of ten
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert sorted(p.name for p in ix.glob("gen-*")) == ["gen-000001", "gen-000002"]
        server.delay_s = 0
        assert index(env).returncode == 0  # gen-000003
    assert (ix / "CURRENT").read_text().strip() == "gen-000003"
    assert sorted(p.name for p in ix.glob("gen-*")) == ["gen-000001", "gen-000003"]
