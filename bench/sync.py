"""`citebot sync` at scale: the first sync of 10,000 pages, then one with 1 % of them changed, then one with none.

For a Confluence space and a Google Drive folder, each in its fake server (tests/fakes/) over real HTTP on this
machine, prints per sync: wall time, API calls (by kind), documents fetched, documents whose readers changed,
documents removed, sections (chunks) embedded of those in the index, and the peak memory (max RSS) of the
process that synced. Each sync runs in a child process of its own, so that its peak memory is its own, not the
fake server's.

    python bench/sync.py [--pages 10000] [--changed 0.01] [--source confluence|drive|both] [--embedder hash|local]

The change is a mix of what a week brings: of the changed pages, 70 % edited, 10 % restricted to one person,
10 % deleted, 10 % moved to a space that is not synced. `--embedder hash` (default) gives each section a
vector from its text's hash at no cost, so the count of sections embedded is measured, not the model's speed;
`local` embeds with the in-process model (minutes for the first sync on a small machine).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = 11
WORDS = ("leave salary contract travel expense office remote holiday notice period probation bonus pension "
         "insurance training laptop parking canteen overtime sick note parental allowance review payroll tax "
         "receipt approval manager team handbook policy request form deadline month year week day").split()


class HashEmbedder:
    """A vector from the text's hash: what is counted is how many sections are embedded, not how fast."""

    name = "bench-hash-64"
    dim = 64

    def __init__(self) -> None:
        self.embedded = 0

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.embedded += len(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_passages(texts)

    def _vector(self, text: str) -> np.ndarray:
        from tests.fakes.embed_server import hash_vector

        return hash_vector(text, self.dim)


def page_body(rng: random.Random, n: int) -> str:
    def sentence() -> str:
        words = rng.choices(WORDS, k=rng.randint(8, 16))
        return " ".join(words).capitalize() + f" ({n})."

    parts = []
    for heading in ("Overview", "Who it applies to", "How to apply"):
        paragraph = " ".join(sentence() for _ in range(rng.randint(3, 6)))
        parts.append(f"<h2>{heading}</h2><p>{paragraph}</p>")
    parts.append("<ul>" + "".join(f"<li>{sentence()}</li>" for _ in range(3)) + "</ul>")
    return "".join(parts)


class ConfluenceSpace:
    """A space of `pages` pages in a tree some levels deep, readable by every member (a mapped group)."""

    name = "confluence"

    def __init__(self) -> None:
        from tests.fakes.confluence_server import FakeConfluence

        self.server = FakeConfluence(max_limit=100).start()
        self.ids: list[str] = []

    def make(self, pages: int) -> None:
        rng = random.Random(SEED)
        wiki = self.server
        wiki.add_user("ana", "ana@example.com")
        wiki.add_space("HR", groups=["confluence-users"])
        wiki.add_space("ARCHIVE", groups=["confluence-users"])
        parents: list[str | None] = [None]
        for n in range(pages):
            page = wiki.add_page("HR", f"Policy {n:05d}", parent=rng.choice(parents[-50:]), body=page_body(rng, n))
            self.ids.append(page)
            if n % 20 == 0:
                parents.append(page)  # a tree some levels deep, as a handbook is

    def change(self, fraction: float) -> dict[str, int]:
        wiki = self.server
        parents = {p.parent for p in wiki.pages.values()}
        # Changing a leaf changes no other page's path (a page's path is the titles above it).
        leaves = [i for i in self.ids if i not in parents]
        return _changes(leaves, len(self.ids), fraction, {
            "edited": lambda p, rng: wiki.edit_page(p, body=page_body(rng, 99_999) + "<p>Changed this week.</p>"),
            "restricted": lambda p, rng: wiki.restrict(p, users=["ana"]),
            "deleted": lambda p, rng: wiki.delete_page(p),
            "moved": lambda p, rng: wiki.move_page(p, space="ARCHIVE"),
        })

    def sources(self) -> str:
        return (f"sources:\n  wiki:\n    type: confluence\n    url: {self.server.url}\n    spaces: [HR]\n"
                "    collection: handbook\n    attachments: false\n"
                "    credentials: {email: BENCH_CONFLUENCE_EMAIL, api_token: BENCH_CONFLUENCE_TOKEN}\n"
                "    groups: {confluence-users: everyone}\n")

    def env(self) -> dict[str, str]:
        return {"BENCH_CONFLUENCE_EMAIL": self.server.email, "BENCH_CONFLUENCE_TOKEN": self.server.api_token}

    def stop(self) -> None:
        self.server.stop()


class DriveFolder:
    """A folder of `pages` Google Docs in subfolders of 100, shared with the company's domain."""

    name = "drive"

    def __init__(self) -> None:
        from tests.fakes.drive_server import FakeDrive

        self.server = FakeDrive().start()
        self.key = self.server.service_account()
        self.ids: list[str] = []

    def make(self, pages: int) -> None:
        from tests.fakes.drive_server import domain

        rng = random.Random(SEED)
        drive = self.server
        self.root = drive.add_folder("Policies")
        self.outside = drive.add_folder("Old policies")
        folder = self.root
        for n in range(pages):
            if n % 100 == 0:
                folder = drive.add_folder(f"Area {n // 100:03d}", self.root)
            html = f"<html><body><h1>Policy {n:05d}</h1>{page_body(rng, n)}</body></html>"
            self.ids.append(drive.add_doc(f"Policy {n:05d}", folder, html, permissions=[domain("example.com")]))

    def change(self, fraction: float) -> dict[str, int]:
        from tests.fakes.drive_server import user

        drive = self.server

        def restrict(doc: str, rng: random.Random) -> None:
            drive.unshare(doc, "example.com")
            drive.share(doc, user("ana@example.com"))

        return _changes(self.ids, len(self.ids), fraction, {
            "edited": lambda d, rng: drive.edit(d, f"<html><body>{page_body(rng, 99_999)}</body></html>"),
            "restricted": restrict,
            "deleted": lambda d, rng: drive.trash(d),
            "moved": lambda d, rng: drive.move(d, self.outside),
        })

    def sources(self) -> str:
        return (f"sources:\n  drive:\n    type: google_drive\n    folders: [{self.root}]\n"
                "    collection: policies\n    domains: [example.com]\n"
                f"    credentials: {{service_account: BENCH_DRIVE_KEY}}\n    api_url: {self.server.root}\n")

    def env(self) -> dict[str, str]:
        return {"BENCH_DRIVE_KEY": json.dumps(self.key)}

    def stop(self) -> None:
        self.server.stop()


def _changes(candidates: list[str], total: int, fraction: float, actions: dict) -> dict[str, int]:
    """Of round(total * fraction) pages: 70 % edited, 10 % restricted, 10 % deleted, 10 % moved out of scope."""
    rng = random.Random(SEED + 1)
    chosen = rng.sample(candidates, max(1, round(total * fraction)))
    kinds = ("edited",) * 7 + ("restricted", "deleted", "moved")
    done = dict.fromkeys(actions, 0)
    for k, page in enumerate(chosen):
        what = kinds[k % len(kinds)]
        actions[what](page, rng)
        done[what] += 1
    return done


def child(args: argparse.Namespace) -> None:
    """One sync, in this process: prints its figures as JSON."""
    from kb_index import build_index
    from kb_index.sources.config import load_sources
    from kb_index.sources.runner import run_sync

    class People:
        def user_id(self, email: str) -> str | None:
            return {"ana@example.com": "UANA"}.get(email)

    work = Path(args.work)
    embedder = HashEmbedder() if args.embedder == "hash" else _local_embedder()
    started = time.perf_counter()
    run = run_sync(load_sources(work / "sources.yml"), work / "synced", People(),
                   lambda: build_index(work / "kb", work / "index", embedder=embedder, synced_dir=work / "synced"))
    seconds = time.perf_counter() - started
    report = run.reports[0]
    print(json.dumps({
        "seconds": seconds, "calls": report.calls.total, "by_kind": report.calls.counts, "fetched": report.fetched,
        "readers_changed": report.readers_changed, "removed": len(report.removed), "in_scope": report.in_scope,
        "embedded": run.build.embedded if run.build else 0, "chunks": run.build.chunks if run.build else 0,
        "switched": bool(run.build and run.build.switched), "failed": run.failed,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def _local_embedder():
    from kb_index.embedding import LocalE5Embedder

    return LocalE5Embedder()


def sync_once(work: Path, embedder: str, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", str(work), "--embedder", embedder],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the sync failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def line(name: str, figures: dict) -> str:
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(figures["by_kind"].items()))
    return (f"{name:<12} {figures['seconds']:7.1f} s  {figures['calls']:6d} API calls ({kinds})  "
            f"{figures['fetched']:6d} fetched  {figures['readers_changed']:4d} new readers  "
            f"{figures['removed']:4d} removed  {figures['embedded']:6d} of {figures['chunks']} sections embedded  "
            f"peak {figures['peak_mb']:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--source", choices=("confluence", "drive", "both"), default="both")
    parser.add_argument("--embedder", choices=("hash", "local"), default="hash")
    parser.add_argument("--child", metavar="WORK", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.work = args.child
        child(args)
        return
    kinds = {"confluence": [ConfluenceSpace], "drive": [DriveFolder], "both": [ConfluenceSpace, DriveFolder]}
    for scenario in kinds[args.source]:
        run_scenario(scenario(), args)


def run_scenario(scenario, args: argparse.Namespace) -> None:
    import os

    from tests.kb_fixtures import write_entry

    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            write_entry(work / "kb", "public/welcome.md", {"id": "welcome", "title": "Welcome"},
                        {"Welcome": "The office is open from eight to six."})
            made = time.perf_counter()
            scenario.make(args.pages)
            (work / "sources.yml").write_text(scenario.sources())
            print(f"{scenario.name}: {args.pages} pages made in {time.perf_counter() - made:.1f} s", flush=True)
            env = {**os.environ, **scenario.env()}
            first = sync_once(work, args.embedder, env)
            print(line("first sync", first), flush=True)
            changes = scenario.change(args.changed)
            print("changed: " + ", ".join(f"{v} {k}" for k, v in changes.items()), flush=True)
            again = sync_once(work, args.embedder, env)
            print(line("incremental", again), flush=True)
            quiet = sync_once(work, args.embedder, env)
            print(line("no change", quiet), flush=True)
            print(f"ratio incremental/first: API calls {again['calls'] / first['calls']:.3f}, "
                  f"sections embedded {again['embedded'] / max(1, first['embedded']):.3f}, "
                  f"time {again['seconds'] / first['seconds']:.2f}", flush=True)
    finally:
        scenario.stop()


if __name__ == "__main__":
    main()
