"""The documentation's walk through the code (docs/contributing/life-of-a-question.md) names files and functions
that exist, in the order the code runs them, so it cannot drift from the code; the README stays short, and no
relative link in it or in docs/ points at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.callgraph import CallGraph
from tests.harness import ROOT

WALK = ROOT / "docs" / "contributing" / "life-of-a-question.md"
# "`bot/x.py` `Name`" or "`bot/x.py` `Class.method`", and a bare "`Class.method`" after a file was named.
_FILE = re.compile(r"`((?:bot|kb_index)/[\w/]+\.py)`")
_NAME = re.compile(r"`([A-Za-z_][\w.]*)`")


def walkthrough() -> str:
    return WALK.read_text()


def defined_names(path: Path) -> set[str]:
    """Functions, classes and methods (as Class.method) defined in a module."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
            names.update(
                f"{node.name}.{item.name}" for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
    return names


def named_steps() -> list[tuple[str, str]]:
    """(file, name) for each name written right after a file: "`f.py` `a` / `b` → `C.d`"."""
    pairs: list[tuple[str, str]] = []
    current, last_end = None, 0
    text = walkthrough()
    for token in re.finditer(r"`[^`]+`", text):
        gap = text[last_end:token.start()]
        last_end = token.end()
        file = _FILE.fullmatch(token.group())
        if file:
            current = file.group(1)
            continue
        name = _NAME.fullmatch(token.group())
        if current and name and re.fullmatch(r"\s*(/|→|or|,)?\s*", gap):
            pairs.append((current, name.group(1)))
        else:
            current = None
    return pairs


def test_the_walkthrough_exists_and_names_a_function_per_step():
    steps = re.findall(r"^\d+\. ", walkthrough(), re.MULTILINE)
    assert len(steps) >= 12
    assert len(named_steps()) >= 20


def test_every_file_and_function_the_walkthrough_names_exists():
    missing = []
    for file, name in named_steps():
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
            continue
        known = defined_names(path)
        # A method may be inherited: a subclass's `generate` is defined on its base class in the same file.
        owner, _, method = name.rpartition(".")
        inherited = (not owner or owner in known) and any(k.endswith("." + method) for k in known)
        if name not in known and not inherited:
            missing.append(f"{file}: {name}")
    assert missing == []


# ------------------------------------------------------------------ the order of the steps


class Step:
    """One numbered step: its function is the first file and name it writes; "Via" says what calls it."""

    def __init__(self, number: int, text: str):
        self.number, self.text = number, text
        self.via = text.startswith("Via ")
        self.file, self.name = next(iter(_pairs(text)))

    def __repr__(self) -> str:
        return f"step {self.number} ({self.file} {self.name})"


def _pairs(text: str) -> list[tuple[str, str]]:
    """(file, name) pairs of `text`, as named_steps reads them."""
    pairs: list[tuple[str, str]] = []
    current, last_end = None, 0
    for token in re.finditer(r"`[^`]+`", text):
        gap, last_end = text[last_end:token.start()], token.end()
        if file := _FILE.fullmatch(token.group()):
            current = file.group(1)
        elif current and (name := _NAME.fullmatch(token.group())) and re.fullmatch(r"\s*(/|→|or|,)?\s*", gap):
            pairs.append((current, name.group(1)))
        else:
            current = None
    return pairs


def walk_parts() -> list[list[Step]]:
    """The steps under each bold heading ("**In a worker**"): a part runs in one process, in order."""
    parts: list[list[Step]] = []
    for block in re.split(r"^\*\*.+$", walkthrough(), flags=re.MULTILINE)[1:]:
        steps = re.findall(r"^(\d+)\. (.+?)(?=^\d+\. |\Z)", block, re.MULTILINE | re.DOTALL)
        parts.append([Step(int(n), " ".join(text.split())) for n, text in steps])
    return parts


def broken_links(graph: CallGraph, parts: list[list[Step]]) -> list[str]:
    """Each step whose function neither the previous step's function reaches, nor a caller of that one calls
    after it. A step that starts with "Via" is called by what it names (Bolt, the queue), not by the code."""
    broken = []
    for steps in parts:
        for before, step in zip(steps, steps[1:], strict=False):
            if step.via:
                continue
            first, then = graph.resolve(before.file, before.name), graph.resolve(step.file, step.name)
            if not (graph.reaches(first, then) or graph.comes_before(first, then)):
                broken.append(f"{before} does not lead to {step}")
    return broken


@cache
def graph() -> CallGraph:
    return CallGraph(ROOT)  # parsing every module once is enough for all the tests here


def test_the_walkthrough_is_in_parts_and_every_step_names_a_function_that_exists():
    parts = walk_parts()
    assert [len(steps) for steps in parts] == [5, 14, 1, 2]
    for step in (s for steps in parts for s in steps):
        assert graph().resolve(step.file, step.name), step


def test_each_step_of_the_walkthrough_leads_to_the_next():
    assert broken_links(graph(), walk_parts()) == []


def test_two_steps_swapped_break_the_walk():
    parts = walk_parts()
    worker = parts[1]
    prompt = next(i for i, s in enumerate(worker) if s.name == "build_evidence")
    worker[prompt], worker[prompt + 1] = worker[prompt + 1], worker[prompt]  # generate before the prompt
    assert any("does not lead to step 11" in b for b in broken_links(graph(), parts))


def test_a_step_the_previous_one_does_not_reach_breaks_the_walk():
    parts = walk_parts()
    worker = parts[1]
    after = next(i for i, s in enumerate(worker) if s.name == "build_answer")
    worker.insert(after + 1, Step(99, "`bot/commands/doctor.py` `cmd_doctor`: nothing of the answer calls it."))
    assert broken_links(graph(), parts) == [
        f"{worker[after]} does not lead to step 99 (bot/commands/doctor.py cmd_doctor)",
        f"step 99 (bot/commands/doctor.py cmd_doctor) does not lead to {worker[after + 2]}",
    ]


# ------------------------------------------------------------------ the README and the links

README_LIMIT = 10 * 1024  # what a newcomer reads in five minutes; the rest is in docs/
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(path: Path) -> list[str]:
    """The link targets of a Markdown file that point into the repository (no scheme, no bare anchor), outside
    code blocks and code spans."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]


def dead_links(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}: {target}"
        for target in relative_links(path)
        if not (path.parent / target.split("#", 1)[0]).exists()
    ]


def test_the_readme_is_short():
    assert (ROOT / "README.md").stat().st_size < README_LIMIT


def test_every_relative_link_of_the_readme_and_the_docs_points_at_a_file():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    # The reference pages are written while mkdocs builds; a link to one is good when its generator is there.
    generated = {"reference/configuration.md", "reference/cli.md"}
    dead = [d for page in pages for d in dead_links(page) if not any(d.endswith(g) for g in generated)]
    assert dead == []
    assert len(relative_links(ROOT / "README.md")) >= 5  # the README links into the docs


def test_a_link_to_a_missing_page_is_found(tmp_path: Path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text("[a](there.md) [b](missing.md#part) [c](https://example.com) [d](#anchor) `[e](nope.md)`")
    assert relative_links(page) == ["there.md", "missing.md#part"]
    assert [t for t in relative_links(page) if not (tmp_path / t.split("#")[0]).exists()] == ["missing.md#part"]
