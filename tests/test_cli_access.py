"""`citebot access`: which collections a person may read, in their DM or in a channel, and why; over HTTP
against the fake Slack Web API, with real Redis and a real index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.cli import main
from kb_index import build_index
from tests.fakes.slack_server import FakeSlackServer
from tests.kb_fixtures import write_entry


@pytest.fixture
def setup(tmp_path, monkeypatch, redis_url):
    monkeypatch.chdir(tmp_path)  # no stray .env
    for var in [v for v in os.environ if v.startswith(("CITEBOT_", "SLACK_"))]:
        monkeypatch.delenv(var)
    kb = tmp_path / "kb"
    write_entry(kb, "handbook/a.md", {"id": "hb-01", "title": "Canteen"}, {"S": "The canteen opens at noon."})
    write_entry(kb, "payroll/b.md", {"id": "pay-01", "title": "Pay"}, {"S": "Salaries are paid on the 25th."})
    write_entry(kb, "visitors/c.md", {"id": "vis-01", "title": "Visitors"}, {"S": "Visitors sign in at the desk."})
    (kb / "payroll" / "_collection.yml").write_text("audience:\n  groups: [payroll-team]\n")
    (kb / "visitors" / "_collection.yml").write_text("guests: true\n")
    build_index(kb, tmp_path / "index")
    with FakeSlackServer(token="xoxb-test") as slack:
        for name, value in {"CITEBOT_INDEX_DIR": str(tmp_path / "index"), "CITEBOT_REDIS_URL": redis_url,
                            "SLACK_BOT_TOKEN": "xoxb-test", "CITEBOT_SLACK_API_URL": slack.url}.items():
            monkeypatch.setenv(name, value)
        yield slack


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_it_says_what_a_person_reads_and_why(setup, capsys):
    code, out, _ = run(capsys, "access", "--user", "UPAYROLL")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "UPAYROLL (member):"
    assert any(line.split()[:2] == ["payroll", "reads"] and "member of the user group payroll-team" in line for line in lines)
    code, out, _ = run(capsys, "access", "--user", "UGUEST", "--json")
    report = json.loads(out)
    assert report["kind"] == "guest"
    assert {r["collection"]: r["reads"] for r in report["collections"]} == {
        "handbook": False, "payroll": False, "visitors": True}


def test_with_a_channel_it_names_who_keeps_a_collection_out(setup, capsys):
    code, out, _ = run(capsys, "access", "--user", "UPAYROLL", "--channel", "CGUESTS", "--json")
    rows = {r["collection"]: r for r in json.loads(out)["collections"]}
    assert rows["visitors"]["in_channel"] is True
    assert rows["payroll"]["in_channel"] is False and rows["payroll"]["channel_why"].startswith("UASKER may not read it")
    assert rows["handbook"]["channel_why"].startswith("UGUEST may not read it: a guest")
    code, out, _ = run(capsys, "access", "--user", "UPAYROLL", "--channel", "CSHARED")
    assert code == 0 and "shared with another organization" in out


def test_a_slack_error_is_one_line(setup, capsys):
    setup.fail(error="missing_scope", method="users.info")
    code, _, err = run(capsys, "access", "--user", "UPAYROLL")
    assert code != 0 and err.strip().startswith("citebot: Slack did not say who may read what: users.info")


def doctor_access(capsys) -> list[tuple[str, str]]:
    main(["doctor"])
    out = capsys.readouterr().out
    return [(line.split(None, 2)[0], line.split(None, 2)[2]) for line in out.splitlines() if line.split()[1:2] == ["access"]]


def test_doctor_lists_each_collections_audience_and_checks_the_scopes(setup, capsys, monkeypatch):
    monkeypatch.setenv("CITEBOT_LLM", "extractive")
    found = doctor_access(capsys)
    assert ("ok", "payroll: groups payroll-team; guests no; other organizations no") in found
    assert ("ok", "handbook: every full member; guests no; other organizations no") in found
    assert ("ok", "visitors: every full member; guests yes; other organizations no") in found
    assert ("ok", "the token has the scopes the access checks need") in found
    setup.scopes = [s for s in setup.scopes if s not in ("users:read", "usergroups:read")]
    found = doctor_access(capsys)
    assert any(status == "fail" and detail.startswith("the token lacks users:read, usergroups:read") for status, detail in found)


def test_doctor_fails_a_group_or_channel_that_slack_does_not_know(setup, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CITEBOT_LLM", "extractive")
    kb = tmp_path / "kb"
    (kb / "payroll" / "_collection.yml").write_text("audience:\n  groups: [payroll-tem]\n  channels: [C0GONE]\n")
    build_index(kb, tmp_path / "index")
    found = doctor_access(capsys)
    assert ("fail", "the user group payroll-tem an audience names is unknown to Slack: it grants nobody access") in found
    assert ("fail", "the channel C0GONE an audience names cannot be read (channel_not_found): it grants nobody access") in found


def test_index_names_a_group_or_channel_that_slack_does_not_know_in_an_error_line(setup, capsys, monkeypatch, tmp_path):
    kb = tmp_path / "kb"
    monkeypatch.setenv("CITEBOT_KB_DIR", str(kb))
    monkeypatch.setenv("CITEBOT_EMBEDDER", "none")
    code, _, err = run(capsys, "index", "-q")
    assert code == 0 and "unknown to Slack" not in err  # payroll-team is a group Slack knows
    from kb_index.index import current_generation

    live = current_generation(Path(os.environ["CITEBOT_INDEX_DIR"])).name
    (kb / "payroll" / "_collection.yml").write_text("audience:\n  groups: [payroll-tem]\n  channels: [C0GONE]\n")
    code, _, err = run(capsys, "index", "-q")
    # Checked before the switch: without --keep-going the live index stays as it was.
    assert current_generation(Path(os.environ["CITEBOT_INDEX_DIR"])).name == live
    assert "was not rebuilt" in err and "--keep-going" in err
    lines = [line for line in err.splitlines() if line.startswith(str(kb))]
    assert code == 1 and lines == [
        f"{kb / 'payroll' / '_collection.yml'}: the user group payroll-tem an audience names is unknown to Slack: "
        "it grants nobody access",
        f"{kb / 'payroll' / '_collection.yml'}: the channel C0GONE an audience names cannot be read "
        "(channel_not_found): it grants nobody access",
    ]
    # With --keep-going the index is switched in all the same, the error lines said and the exit code 1.
    code, _, err = run(capsys, "index", "-q", "--keep-going")
    assert code == 1 and "unknown to Slack" in err
    assert current_generation(Path(os.environ["CITEBOT_INDEX_DIR"])).name != live
