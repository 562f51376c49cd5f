"""Every `citebot` command the README and docs/ show with its output is run here, on the embedded default (the
sample KB, the extractive backend, no Slack, no model server), and must print what the page shows: timings masked,
nothing else. An example that needs what a test here does not have (a model server, Slack) says so in the line
before its block, `<!-- not run: why -->`; one without either fails.

Forms found: a bash block whose command is followed by a plain block (its output), a bash block with the output
as `# ` lines under the command, a plain block of `$ citebot …` and its output, and prose of the form
`citebot ask "…"` prints `…`. The `citebot ask --json` object in getting-started.md and DESIGN.md is checked
for its keys.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.harness import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->")
COMMAND = re.compile(r"(citebot (?:ask|search|doctor)\b[^\n]*)")
PROSE = re.compile(r"`(citebot ask \"[^\"]+\")` prints `([^`]+)`")
TIMING = re.compile(r"\d+(?:\.\d+)?\s?(?:ms|s)\b")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    command: str
    output: str
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.command}"


def examples() -> list[Example]:
    found: list[Example] = []
    for path in PAGES:
        text = path.read_text()
        blocks = list(FENCE.finditer(text))
        for i, block in enumerate(blocks):
            lang, body = block.group(1), block.group(2)
            line = text.count("\n", 0, block.start()) + 1
            before = text[max(0, block.start() - 400):block.start()].rstrip().splitlines()[-1:] or [""]
            reason = m.group(1) if (m := NOT_RUN.search(before[0])) else None
            for example in _in_block(lang, body, blocks[i + 1] if i + 1 < len(blocks) else None, text, block):
                found.append(Example(path.name, line, example[0], example[1], reason))
        for match in PROSE.finditer(text):
            found.append(Example(path.name, text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2),
                                 None))
    return found


def _in_block(lang: str, body: str, following, text: str, block) -> list[tuple[str, str]]:
    lines = body.splitlines()
    if lang == "" and lines and lines[0].startswith("$ citebot"):
        return [(lines[0][2:], "\n".join(lines[1:]))]
    if lang != "bash":
        return []
    out: list[tuple[str, str]] = []
    for n, line in enumerate(lines):
        command = COMMAND.search(line)
        if command is None or "[" in command.group(1) or "QUESTION" in command.group(1):
            continue  # a synopsis, not an example
        comments = []
        for rest in lines[n + 1:]:
            if not rest.startswith("# "):
                break
            comments.append(rest[2:])
        gap = text[block.end():following.start()] if following is not None else "x"
        if comments:
            out.append((command.group(1), "\n".join(comments)))
        elif following is not None and following.group(1) == "" and len(gap) < 1500:
            # The output block may come a paragraph or two after its command (the README's quick start).
            out.append((command.group(1), following.group(2).rstrip("\n")))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`citebot …` as a newcomer runs it: the embedded default in a folder of its own, the index built once."""
    cwd = tmp_path_factory.mktemp("docs-examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
    env["CITEBOT_REDIS_URL"] = "redis://127.0.0.1:6379/15"

    def citebot(command: str) -> str:
        argv = shlex.split(command)
        done = subprocess.run([sys.executable, "-m", "bot.cli", *argv[1:]], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=300)
        return done.stdout

    return citebot


def mask(text: str) -> str:
    return "\n".join(TIMING.sub("<time>", line).rstrip() for line in text.strip().splitlines())


EXAMPLES = examples()


def test_the_docs_show_examples_and_each_one_is_run_or_says_why_not():
    assert len(EXAMPLES) >= 4, EXAMPLES
    assert any(e.page == "README.md" for e in EXAMPLES) and any(e.page == "getting-started.md" for e in EXAMPLES)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.not_run is None], ids=str)
def test_the_example_prints_what_the_page_shows(example, run):
    shown = mask(example.output)
    printed = mask(run(example.command))
    if example.command.startswith("citebot doctor"):
        # doctor's lines depend on what answers here (Redis, an index): each line the page shows must be printed.
        missing = [line for line in shown.splitlines() if line not in printed.splitlines()]
        assert not missing, f"{example}: not printed:\n" + "\n".join(missing) + f"\n--- printed:\n{printed}"
    else:
        assert printed == shown, f"{example}\n--- the page shows:\n{shown}\n--- printed:\n{printed}"


def test_the_json_examples_have_the_keys_citebot_ask_prints(run):
    printed = json.loads(run('citebot ask --json "Who may use the defibrillator?"'))
    for page in ("getting-started.md", "DESIGN.md"):
        text = (ROOT / "docs" / page).read_text()
        block = next(m.group(2) for m in FENCE.finditer(text)
                     if m.group(1) == "json" and '"question"' in m.group(2) and '"attempts"' in m.group(2))
        shown = json.loads(re.sub(r",\s*\.\.\.\s*}", "}", block))  # `, ...}`: the rest of an object left out
        assert set(shown) == set(printed), f"{page}: {sorted(set(printed) ^ set(shown))}"
        assert set(shown["attempts"][0]) == set(printed["attempts"][0]), page
        assert set(shown["sources"][0]) == set(printed["sources"][0]), page
        # Timings are milliseconds: the page's are of the order this run's are (machines differ, a thousandfold not).
        for stage, value in shown["timings_ms"].items():
            assert printed["timings_ms"][stage] / 30 <= value <= printed["timings_ms"][stage] * 30, (page, stage)
