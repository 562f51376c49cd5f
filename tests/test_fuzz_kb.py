"""Fuzzing the KB loader and the index build with odd folders and files.

Whatever a KB folder holds (broken front matter, HTML, other encodings, odd
bytes, symbolic links out of the folder, FIFOs, duplicate ids), `load_kb` and
`build_index` return errors instead of raising, never read a file outside the
folder, and never switch in a build with errors unless told to.

Bounded: few examples, a deadline per example, no example database, so the
module stays within a few seconds.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import string
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from kb_index import Retriever, build_index, load_kb
from kb_index.index import current_generation, read_manifest

SECRET = "zqxsecretmarker"  # one token, so any leak of it is searchable and greppable
FUZZ = settings(
    max_examples=25,
    deadline=3000,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

IDS = st.sampled_from(["hb-pto-01", "hb-sick-01", "lb-atz-01", "x", "has space", "", "ünï-01"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
    st.text(max_size=30), st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2100, 1, 1)),
)
YAML_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)
KEYS = st.sampled_from(["id", "title", "stand", "language", "tags", "cross_refs", "url", "source_role", "work", "legal_bases", "zzz"])

TEXT_PIECES = st.sampled_from([
    "## Section\n", "# Title\n", "##\n", "###  x ###\n", "\n\n", "---\n", "<h2>H</h2>", "<script>x()</script>",
    "<p>para &amp; &#0; &#x110000; &bogus;</p>", "<!-- c", "]]>", "[link](https://x.example/a)", "<https://x|y>",
    "<!channel>", "\x1b[2J", "\x00", "\ufeff", "\u202e", "€", "ß", "日本", "\r\n", "\r", "\t", "30 Tage. ",
])
BODY = st.lists(st.one_of(TEXT_PIECES, st.text(max_size=40)), max_size=12).map("".join)


@st.composite
def front_matter(draw) -> str:
    meta = draw(st.dictionaries(KEYS, YAML_VALUES, max_size=6))
    if draw(st.booleans()):
        meta["id"] = draw(IDS)
    try:
        text = yaml.safe_dump(meta, allow_unicode=True)
    except yaml.YAMLError:
        text = "id: x\n"
    if draw(st.booleans()):
        text = draw(st.sampled_from(["id: [\n", "id: x\ntitle: 'unclosed\n", ":\n-", "- a\n- b\n", "id: !!python/object:os.system x\n"]))
    return f"---\n{text}" + ("---\n" if draw(st.booleans()) else "")


ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1", "cp1252"])


@st.composite
def file_bytes(draw) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200))
    text = (draw(front_matter()) if draw(st.booleans()) else "") + draw(BODY)
    return text.encode(draw(ENCODINGS), errors="replace")


NAMES = st.one_of(
    st.sampled_from(["a.md", "B.MD", "c.txt", "d.html", "e.htm", "f.markdown", ".hidden.md", "g.png", "h", "x y.md", "ü.md"]),
    st.text(alphabet=string.ascii_letters + string.digits + "-_. äé\x1b", min_size=1, max_size=12).map(lambda s: s + ".md"),
)
FOLDERS = st.sampled_from(["", "handbook/", "payroll/", "a/b/", ".git/", "it/deep/er/"])
SPECIALS = st.sampled_from(["link-out-file", "link-out-dir", "link-in", "link-dangling", "link-loop", "fifo", "link-fifo"])


@st.composite
def kb_layout(draw):
    files = draw(st.lists(st.tuples(FOLDERS, NAMES, file_bytes()), max_size=8))
    specials = draw(st.lists(st.tuples(FOLDERS, NAMES, SPECIALS), max_size=4))
    return files, specials


def write_kb(root: Path, layout) -> Path:
    outside = root / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.md").write_text(f"---\nid: leaked-01\n---\n## S\n{SECRET}\n")
    kb = root / "kb"
    kb.mkdir(exist_ok=True)
    files, specials = layout
    for folder, name, data in files:
        path = kb / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_dir() and not path.is_symlink():
            path.write_bytes(data)
    for folder, name, kind in specials:
        path = kb / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(path):
            continue
        if kind == "link-out-file":
            path.symlink_to(outside / "secret.md")
        elif kind == "link-out-dir":
            path.symlink_to(outside, target_is_directory=True)
        elif kind == "link-in":
            path.symlink_to(kb)
        elif kind == "link-dangling":
            path.symlink_to(root / "nowhere.md")
        elif kind == "link-loop":
            path.symlink_to(path)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            if not os.path.lexists(outside / "pipe"):
                os.mkfifo(outside / "pipe")
            path.symlink_to(outside / "pipe")
    return kb


def assert_read_only_inside(kb: Path, result) -> None:
    """Every entry comes from a regular file reached without a symbolic link, and
    nothing from outside the folder (the secret, its id) got in."""
    for entry in result.entries:
        path = kb
        for part in Path(entry.path).parts:
            path = path / part
            assert not path.is_symlink(), entry.path
        assert path.is_file() and path.resolve().is_relative_to(kb.resolve())
        assert SECRET not in json.dumps(entry.__dict__, default=str, ensure_ascii=False)
        assert entry.id != "leaked-01"
    for error in result.errors:
        assert not Path(error.path).is_absolute() and ".." not in Path(error.path).parts


@FUZZ
@given(kb_layout())
def test_load_kb_never_raises_and_reads_only_inside_the_folder(layout):
    with tempfile.TemporaryDirectory() as tmp:
        kb = write_kb(Path(tmp), layout)
        result = load_kb(kb)
        assert_read_only_inside(kb, result)
        assert len({e.id for e in result.entries}) == len(result.entries)  # ids stay unique


@settings(FUZZ, max_examples=12, deadline=10000)
@given(kb_layout(), kb_layout(), st.booleans())
def test_build_index_never_raises_and_keeps_a_good_index_live(first, second, keep_going):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        kb = write_kb(root, first)
        report = build_index(kb, root / "ix", keep_going=True)
        live = current_generation(root / "ix").name
        before = read_manifest(root / "ix" / live)["entries"]
        kb2 = write_kb(root / "two", second)
        report = build_index(kb2, root / "ix", keep_going=keep_going)
        now = current_generation(root / "ix")
        if report.errors and not keep_going:
            assert now.name == live and not report.switched
        else:
            assert now.name == report.generation
            # Nothing the live index had is lost to a file that failed this time.
            assert set(report.kept) <= set(before)
        with Retriever(root / "ix") as r:
            assert r.search(SECRET) == []
            assert r.entry_chunks("leaked-01") == []
        assert_read_only_inside(kb2, load_kb(kb2))
