"""The README's walk through the code names files and functions that exist, so it cannot drift from them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.harness import ROOT

SECTION = "## The life of a question, in the code"
# "`bot/x.py` `Name`" or "`bot/x.py` `Class.method`", and a bare "`Class.method`" after a file was named.
_FILE = re.compile(r"`((?:bot|kb_index)/[\w/]+\.py)`")
_NAME = re.compile(r"`([A-Za-z_][\w.]*)`")


def walkthrough() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return text[start:end]


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
        # A method may be inherited: `OpenAIBackend.generate` is defined on its base class in the same file.
        owner, _, method = name.rpartition(".")
        inherited = (not owner or owner in known) and any(k.endswith("." + method) for k in known)
        if name not in known and not inherited:
            missing.append(f"{file}: {name}")
    assert missing == []
