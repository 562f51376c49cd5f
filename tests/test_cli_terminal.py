"""What the CLI prints from users, the model or KB files cannot drive the operator's terminal.

A question like "\\x1b]0;pwned\\x07\\x1b[2J" would otherwise retitle and clear the
terminal of whoever runs `citebot audit show`, and a newline in it would forge
an output line ("outcome answered").
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from bot.cli import main
from bot.models import Answer, Outcome, SlackQuestion, Violation
from bot.store.audit import AuditTrail, audit_entry
from bot.store.connection import connect
from bot.store.records import Records, ReviewRecord
from bot.terminal import clean
from kb_index import build_index
from tests.kb_fixtures import write_entry, write_mini_kb

# OSC title, clear screen, a C1 CSI (one byte: some terminals obey it), bell, DEL, a bidi override.
NASTY = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f\u202e"
FORGED = "Who is the CEO?\noutcome     answered (verified)"
CONTROL = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]] + ["\u202e"]


def assert_inert(text: str) -> None:
    found = sorted({f"U+{ord(ch):04X}" for ch in text if ch in CONTROL})
    assert found == [], f"control characters reach the terminal: {found}"


# ---------------------------------------------------------------- the helper


def test_clean_makes_control_characters_visible_and_inert():
    out = clean(f"a{NASTY}b")
    assert_inert(out)
    assert out == "a\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f\\u202eb"


def test_clean_keeps_line_breaks_and_tabs_only_where_lines_are_expected():
    assert clean("one\n\ttwo") == "one\n\ttwo"
    assert clean("one\r\ntwo", newlines=False) == "one\\r\\ntwo"
    assert clean("a\rb") == "a\\rb"  # a carriage return would overwrite the line on screen


def test_clean_leaves_ordinary_text_alone():
    text = "Altersteilzeit ab 55 · „Zitat“ – 1.538,50 € 🎉 日本"
    assert clean(text) == text and clean(text, newlines=False) == text


def test_clean_shows_undecodable_file_name_bytes_instead_of_failing():
    assert clean("caf\udce9.md") == "caf\\udce9.md"


# ---------------------------------------------------------------- commands


@pytest.fixture
def env(tmp_path, monkeypatch, redis_url):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CITEBOT_REDIS_URL", redis_url)
    monkeypatch.setenv("CITEBOT_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("CITEBOT_KB_DIR", str(tmp_path / "kb"))
    write_mini_kb(tmp_path / "kb")
    return tmp_path


def record(redis_url, *items) -> None:
    async def run():
        redis = connect(redis_url, timeout=5)
        for item in items:
            if isinstance(item, ReviewRecord):
                await Records(redis).save_review(item)
            else:
                await AuditTrail(redis).record(item)
        await redis.aclose()

    asyncio.run(run())


def nasty_entry(qid="C:1", outcome=Outcome.UNCERTAIN):
    q = SlackQuestion(text=FORGED + NASTY, id=qid, channel="CGENERAL", user="U1", ts="1700000001.000100")
    answer = Answer(
        question=q.text, answer="-", verified=False, refused=True, outcome=outcome, model=f"m{NASTY}",
        violations=[Violation(kind="NUMBER_NOT_IN_SOURCE", detail=f"{NASTY!s} is not stated")],
    )
    return audit_entry(q, answer)


def test_audit_show_prints_control_characters_inert_and_on_one_line(env, redis_url, capsys):
    record(redis_url, nasty_entry())
    assert main(["audit", "show", "C:1"]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert out.splitlines()[0].startswith("question    Who is the CEO?\\noutcome")
    assert [line for line in out.splitlines() if line.startswith("outcome")] == ["outcome     uncertain (not verified)"]
    assert main(["audit", "show", "C:1", "--json"]) == 0
    out = capsys.readouterr().out
    assert_inert(out)
    assert json.loads(out)["question"] == FORGED + NASTY  # JSON escapes, the value is intact


def test_review_gaps_prints_control_characters_inert(env, redis_url, capsys):
    record(redis_url, nasty_entry("C:1"), nasty_entry("C:2", Outcome.REFUSED))
    assert main(["review", "gaps"]) == 0
    out = capsys.readouterr().out
    assert_inert(out) and "2×" in out
    assert main(["review", "gaps", "--json"]) == 0
    assert_inert(capsys.readouterr().out)


def test_review_list_prints_control_characters_inert(env, redis_url, capsys):
    record(redis_url, ReviewRecord(question_id="C:1", question=FORGED + NASTY, channel=f"C{NASTY}", draft=NASTY))
    assert main(["review", "list"]) == 0
    out = capsys.readouterr().out
    assert_inert(out) and len(out.strip().splitlines()) == 1
    assert main(["review", "list", "--json"]) == 0
    assert_inert(capsys.readouterr().out)


def test_search_and_ask_print_kb_text_inert(env, capsys):
    write_entry(
        env / "kb", "handbook/evil.md", {"id": "hb-evil-01", "title": f"Parking{NASTY}"},
        {f"Rules{NASTY}": f"Parking permits cost nothing{NASTY} for employees."},
    )
    assert main(["index", "-q"]) == 0
    capsys.readouterr()
    assert main(["search", "parking permits employees"]) == 0
    out = capsys.readouterr().out
    assert "hb-evil-01" in out
    assert_inert(out)
    assert main(["ask", "Do parking permits cost anything for employees?"]) == 0
    captured = capsys.readouterr()
    assert "Parking permits" in captured.out
    assert_inert(captured.out + captured.err)


def test_index_errors_name_files_inert(env, capsys):
    (env / "kb" / f"bad{NASTY}.md").write_text("---\nid: [\n---\n## S\nt\n")
    with open(os.fsencode(env / "kb") + b"/caf\xe9.md", "wb") as fh:  # a name that is not UTF-8
        fh.write(b"# Cafe\n\nCoffee is free.\n")
    build_index(env / "kb", env / "index")  # the library itself does not print
    assert main(["index", "-q", "--keep-going"]) == 0
    captured = capsys.readouterr()
    assert "invalid YAML" in captured.err
    assert_inert(captured.out + captured.err)


def test_log_lines_carry_control_characters_escaped():
    import logging

    from bot.logs import JsonFormatter

    record = logging.makeLogRecord({"msg": "question %s", "args": (NASTY,), "name": "bot.answering.answerer", "levelname": "INFO"})
    line = JsonFormatter("worker").format(record)
    assert_inert(line)
    assert json.loads(line)["message"] == f"question {NASTY}"
