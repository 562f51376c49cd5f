"""`citebot index` and `citebot search` as a user runs them."""

from __future__ import annotations

import json

import pytest

from bot.cli import main
from tests.kb_fixtures import write_mini_kb


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no stray .env from the developer's folder
    kb = write_mini_kb(tmp_path / "kb")
    monkeypatch.setenv("CITEBOT_KB_DIR", str(kb))
    monkeypatch.setenv("CITEBOT_INDEX_DIR", str(tmp_path / "index"))
    return tmp_path


def test_index_prints_a_summary_and_exits_zero(env, capsys):
    assert main(["index", "-q"]) == 0
    out = capsys.readouterr().out
    assert "index built: 7 entries" in out and "0 skipped" in out


def test_index_with_a_broken_file_exits_one_unless_keep_going(env, capsys):
    (env / "kb" / "handbook" / "broken.md").write_text("---\ntitle: no id\n---\n## S\nt\n")
    assert main(["index", "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{env / 'kb' / 'handbook' / 'broken.md'}:1: front matter has no 'id'" in err
    assert "--keep-going" in err
    assert main(["index", "-q", "--keep-going"]) == 0


def test_index_of_a_missing_folder_is_a_usage_error(env, capsys):
    assert main(["index", "--kb", str(env / "nope")]) == 2
    assert "knowledge base folder not found" in capsys.readouterr().err


def test_search_json_lists_hits_with_the_contract_keys(env, capsys):
    main(["index", "-q"])
    capsys.readouterr()
    assert main(["search", "Altersteilzeit Lebensjahr", "-k", "1", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    hits = found["hits"]
    assert [(h["entry_id"], h["expanded"]) for h in hits] == [("lb-atz-01", False), ("lb-atz-02", True)]
    assert {"entry_id", "section", "title", "collection", "score", "expanded"} <= set(hits[0])
    decision = found["answerability"]
    assert decision["answerable"] is True and decision["entry_id"] == "lb-atz-01"
    assert {"score", "threshold", "signal", "reason"} <= set(decision)


def test_search_shows_the_answerability_decision(env, capsys):
    main(["index", "-q"])
    capsys.readouterr()
    main(["search", "vacation carry over"])
    out = capsys.readouterr().out
    assert out.startswith("answerable (")
    assert "[hb-pto-01] Annual leave · Carry-over · Stand 2026-02" in out
    main(["search", "What is the share price of ACME today?"])
    assert capsys.readouterr().out.startswith("not covered: would be refused before the model (")
    assert main(["search", "What is the share price of ACME today?", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["answerability"]["answerable"] is False and found["answerability"]["reason"]


def test_search_without_an_index_says_how_to_build_one(env, capsys):
    assert main(["search", "x"]) == 2
    assert "run 'citebot index' first" in capsys.readouterr().err


def test_invalid_setting_is_one_line_naming_the_variable(env, capsys, monkeypatch):
    monkeypatch.setenv("CITEBOT_LANGUAGE", "fr")
    assert main(["index"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CITEBOT_LANGUAGE" in err[0]


def test_index_with_errors_leaves_the_live_index_unless_keep_going(env, capsys, monkeypatch):
    from kb_index.index import current_generation

    assert main(["index", "-q"]) == 0
    live = current_generation(env / "index").name
    (env / "kb" / "handbook" / "pto-01.md").write_text("---\nid: hb-pto-01\ntitle: [unclosed\n---\n## S\nt\n")
    notified = []
    monkeypatch.setattr("bot.commands.kb.note_source_changes", lambda *a: notified.append(a))
    capsys.readouterr()
    assert main(["index", "-q"]) == 1
    captured = capsys.readouterr()
    assert "not switched in" in captured.out + captured.err and live in captured.out + captured.err
    assert current_generation(env / "index").name == live and notified == []
    assert main(["index", "-q", "--keep-going"]) == 0
    captured = capsys.readouterr()
    assert "last good version of 'hb-pto-01'" in captured.err
    assert current_generation(env / "index").name != live
