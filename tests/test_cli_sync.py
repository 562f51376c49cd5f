"""`citebot sync` and doctor's `sources` lines as a user runs them, against the fake Confluence, Drive and Slack
servers over HTTP."""

from __future__ import annotations

import json
import os

import pytest

from bot.cli import main
from tests.fakes.confluence_server import FakeConfluence
from tests.fakes.drive_server import FakeDrive, domain, user
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import BOT_TOKEN
from tests.kb_fixtures import write_entry


@pytest.fixture
def servers():
    with FakeConfluence(deployment="data_center") as wiki, FakeDrive() as drive, \
            FakeSlackServer(token=BOT_TOKEN) as slack:
        yield wiki, drive, slack


@pytest.fixture
def setup(tmp_path, monkeypatch, servers):
    """A KB folder, a sources file naming one space and one folder, the variables it names, Slack's token."""
    wiki, drive, slack = servers
    monkeypatch.chdir(tmp_path)
    for var in [v for v in os.environ if v.startswith(("CITEBOT_", "SLACK_"))]:
        monkeypatch.delenv(var)
    write_entry(tmp_path / "kb", "public/welcome.md", {"id": "welcome", "title": "Welcome"},
                {"Welcome": "The office is open from eight to six."})
    wiki.add_user("ana", "ana@example.com")
    wiki.add_space("HR", groups=["staff"])
    wiki.add_page("HR", "Leave", body="<h2>Days</h2><p>Employees get 30 days of paid leave.</p>")
    folder = drive.add_folder("Policies")
    drive.add_doc("Travel", folder, "<h1>Travel</h1><p>Trains are booked by the travel office.</p>",
                  permissions=[domain("example.com")])
    drive.add_doc("Pay", folder, "<h1>Pay</h1><p>Salaries are paid on the 25th.</p>",
                  permissions=[user("ana@example.com")])
    sources = tmp_path / "sources.yml"
    sources.write_text(f"""\
sources:
  wiki:
    type: confluence
    url: {wiki.url}
    deployment: data_center
    spaces: [HR]
    collection: handbook
    credentials: {{token: WIKI_PAT}}
    groups: {{staff: everyone}}
  drive:
    type: google_drive
    folders: [{folder}]
    collection: policies
    domains: [example.com]
    credentials: {{service_account: DRIVE_KEY}}
    api_url: {drive.root}
""")
    slack.users["UANA"] = {"profile": {"email": "ana@example.com"}}
    env = {"CITEBOT_KB_DIR": tmp_path / "kb", "CITEBOT_INDEX_DIR": tmp_path / "index", "CITEBOT_SOURCES_FILE": sources,
           "CITEBOT_SYNC_DIR": tmp_path / "synced", "CITEBOT_EMBEDDER": "none", "WIKI_PAT": wiki.pat,
           "DRIVE_KEY": json.dumps(drive.service_account()), "SLACK_BOT_TOKEN": BOT_TOKEN,
           "CITEBOT_SLACK_API_URL": slack.url, "CITEBOT_REDIS_URL": "redis://127.0.0.1:1/0"}
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    return tmp_path, wiki, drive, slack


def test_sync_prints_a_summary_per_source_and_the_index_it_built(setup, capsys):
    assert main(["sync", "-q"]) == 0
    out = capsys.readouterr().out
    assert "drive: listed, 2 in scope, 2 fetched, 0 with new readers, 0 removed" in out
    assert "wiki: listed, 1 in scope, 1 fetched" in out
    assert "index built: 4 entries" in out
    # A second sync fetches nothing: Drive's change feed is empty, the wiki's page has the same version.
    assert main(["sync", "-q"]) == 0
    out = capsys.readouterr().out
    assert "drive: changes, 2 in scope, 0 fetched" in out and "wiki: listed, 1 in scope, 0 fetched" in out
    assert main(["search", "--json", "When are salaries paid?"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    pay = next(h for h in hits if h["title"] == "Pay")
    assert pay["collection"].startswith("policies~") and pay["collection"] != "policies~all"


def test_access_names_the_parts_of_a_synced_collection_someone_may_read(setup, capsys, monkeypatch, redis_url):
    monkeypatch.setenv("CITEBOT_REDIS_URL", redis_url)  # what Slack said is cached there
    assert main(["sync", "-q"]) == 0
    capsys.readouterr()
    assert main(["access", "--user", "UANA", "--json"]) == 0
    ana = json.loads(capsys.readouterr().out)
    assert main(["access", "--user", "UASKER", "--json"]) == 0
    other = json.loads(capsys.readouterr().out)
    readable = lambda report: {c["collection"] for c in report["collections"] if c["reads"]}  # noqa: E731
    restricted = {name for name in readable(ana) if name.startswith("policies~") and name != "policies~all"}
    assert len(restricted) == 1 and not restricted & readable(other)
    assert {"handbook~all", "policies~all"} <= readable(other)


def test_one_source_that_cannot_be_reached_fails_the_run_and_the_other_is_synced(setup, capsys, monkeypatch):
    monkeypatch.setenv("WIKI_PAT", "a token the wiki refuses")
    assert main(["sync", "-q"]) == 1
    captured = capsys.readouterr()
    assert "wiki: not synced" in captured.err and "drive: listed, 2 in scope, 2 fetched" in captured.out


def test_sync_without_a_sources_file_or_with_an_unknown_source_is_a_usage_error(setup, capsys, monkeypatch):
    assert main(["sync", "--source", "nope"]) == 2
    assert "no source named 'nope'" in capsys.readouterr().err
    monkeypatch.delenv("CITEBOT_SOURCES_FILE")
    assert main(["sync"]) == 2
    assert "CITEBOT_SOURCES_FILE is not set" in capsys.readouterr().err


def test_doctor_checks_each_source_and_the_email_scope(setup, capsys, monkeypatch):
    code = main(["doctor", "--json"])
    found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "sources"]
    by_source = {}
    for finding in found:
        by_source.setdefault(finding.get("source"), []).append((finding["status"], finding["detail"]))
    assert any(s == "warn" and "never synced yet" in d for s, d in by_source["wiki"])
    assert all(s != "fail" for s, _ in by_source["wiki"] + by_source["drive"]), by_source
    assert code == 1  # Redis is out of reach in this setup: the run fails on that, not on the sources
    servers_scopes = setup[3].scopes
    setup[3].scopes = [s for s in servers_scopes if s != "users:read.email"]
    monkeypatch.setenv("WIKI_PAT", "a token the wiki refuses")
    main(["doctor", "--json"])
    found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["check"] == "sources"]
    fails = [f["detail"] for f in found if f["status"] == "fail"]
    assert any("lacks users:read.email" in d for d in fails)
    assert any(d.startswith("wiki:") and "refused" in d for d in fails), fails
