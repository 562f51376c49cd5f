"""A Confluence space synced, then a page edited, one deleted, one restricted and one moved away, and each seen in
the answers after the next `citebot sync`: signed Slack events into a running serve and worker, real Redis, a real
index, the fake Confluence and Slack servers over HTTP (docs/connectors.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.fakes.confluence_server import FakeConfluence
from tests.harness import ROOT, dm_event, mention_event, start_citebot
from tests.kb_fixtures import write_entry
from tests.polling import wait_until
from tests.redis_fixtures import TEST_REDIS_URL, flush, require_redis

pytestmark = pytest.mark.e2e

PAT = "pat-token"
# page -> (question, the fact only its text holds)
PAGES = {
    "Leave": ("How many days of paid leave do employees get?",
              "Employees get 30 days of paid leave each year.", "30 days"),
    "Bonus": ("When is the annual bonus paid out?", "The annual bonus is paid out in March.", "in March"),
    "Travel": ("Who books train tickets for business trips?",
               "Train tickets for business trips are booked by the travel office.", "travel office"),
    "Salary bands": ("Where does salary band B4 start?", "Salary band B4 starts at 61,000 euros a year.", "61,000"),
    "Parking": ("Who issues parking permits?", "Parking permits are issued by the facilities team.", "facilities team"),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    require_redis(TEST_REDIS_URL)
    flush(TEST_REDIS_URL)
    root = tmp_path_factory.mktemp("sync")
    kb = root / "kb"
    write_entry(kb, "public/welcome.md", {"id": "welcome", "title": "Welcome"},
                {"Welcome": "The office is open from eight to six."})
    wiki = FakeConfluence(deployment="data_center").start()
    wiki.add_user("ana", "ana@example.com")
    wiki.add_space("HR", groups=["confluence-users"])
    wiki.add_space("ARCHIVE", groups=["confluence-users"])
    home = wiki.add_page("HR", "Handbook", body="<p>The handbook of the company.</p>")
    pages = {title: wiki.add_page("HR", title, parent=home, body=f"<h2>{title}</h2><p>{text}</p>")
             for title, (_, text, _) in PAGES.items()}
    sources = root / "sources.yml"
    sources.write_text(f"""\
sources:
  wiki:
    type: confluence
    url: {wiki.url}
    deployment: data_center
    spaces: [HR]
    collection: handbook
    credentials: {{token: CONFLUENCE_PAT}}
    groups: {{confluence-users: everyone}}
""")
    bot = start_citebot(root / "logs", redis_url=TEST_REDIS_URL, index_dir=root / "index",
                        CITEBOT_LLM="extractive", CITEBOT_EMBEDDER="none", CITEBOT_KB_DIR=kb,
                        CITEBOT_SOURCES_FILE=sources, CITEBOT_SYNC_DIR=root / "synced", CITEBOT_SYNC_IN_WORKER="false")
    # Ana of the wiki is the payroll clerk in Slack.
    bot.slack.users["UPAYROLL"]["profile"] = {"email": "ana@example.com"}
    try:
        yield bot, wiki, pages
    finally:
        bot.stop()
        wiki.stop()
        flush(TEST_REDIS_URL)


def sync(bot) -> str:
    done = subprocess.run([sys.executable, "-m", "bot.cli", "sync", "-q"], cwd=ROOT, capture_output=True, text=True,
                          env={**bot.env, "CONFLUENCE_PAT": PAT}, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    time.sleep(0.3)  # the worker reads the new generation with its next question
    return done.stdout + done.stderr


def ask_in_dm(bot, asker: str, titles: list[str]) -> dict[str, str]:
    """Each page's question from `asker` in a DM of their own; the reply to each, as text, by the page asked about."""
    channel = f"D{asker[1:]}{len(bot.slack.messages())}"
    replies: dict[str, str] = {}
    for title in titles:
        before = len(bot.slack.messages(channel))
        assert bot.send_event(dm_event(PAGES[title][0], channel=channel, user=asker)).status_code == 200
        posted = wait_until(lambda b=before: (m := bot.slack.messages(channel)) and len(m) > b and m, 40,
                            f"the reply to {asker} about {title}")
        replies[title] = json.dumps(posted[before:], ensure_ascii=False)
    return replies


def facts(replies: dict[str, str]) -> dict[str, set[str]]:
    """The pages whose fact each reply shows."""
    return {asked: {title for title, (_, _, fact) in PAGES.items() if fact in text} for asked, text in replies.items()}


def test_a_synced_space_is_answered_and_each_change_shows_after_the_next_sync(world):
    bot, wiki, pages = world
    out = sync(bot)
    assert "wiki: listed, 6 in scope, 6 fetched" in out
    everyone = facts(ask_in_dm(bot, "UASKER", list(PAGES)))
    assert everyone == {title: {title} for title in PAGES}, everyone

    wiki.edit_page(pages["Bonus"], body="<h2>Bonus</h2><p>The annual bonus is paid out in April.</p>")
    wiki.delete_page(pages["Travel"])
    wiki.restrict(pages["Salary bands"], users=["ana"])
    wiki.move_page(pages["Parking"], space="ARCHIVE")
    out = sync(bot)
    # Only the edited page was fetched again; the restricted one changed its readers, not its text.
    assert "wiki: listed, 4 in scope, 1 fetched, 1 with new readers, 2 removed" in out, out

    replies = ask_in_dm(bot, "UASKER", ["Bonus", "Travel", "Salary bands", "Parking", "Leave"])
    assert facts(replies) == {"Bonus": set(), "Travel": set(), "Salary bands": set(), "Parking": set(),
                              "Leave": {"Leave"}}
    assert "in April" in replies["Bonus"]
    # The restricted page: to its reader in a DM, to nobody else, and never in a channel someone else reads.
    assert facts(ask_in_dm(bot, "UPAYROLL", ["Salary bands"])) == {"Salary bands": {"Salary bands"}}
    event = mention_event(PAGES["Salary bands"][0], channel="CGENERAL", user="UPAYROLL")
    assert bot.send_event(event).status_code == 200
    replies = wait_until(lambda: bot.replies("CGENERAL", event["event"]["ts"]), 40, "the channel's reply")
    assert "61,000" not in json.dumps(replies)


def test_a_restriction_lifted_opens_the_page_again_at_the_next_sync(world):
    bot, wiki, pages = world
    wiki.restrict(pages["Salary bands"], users=[])
    sync(bot)
    assert facts(ask_in_dm(bot, "UASKER", ["Salary bands"])) == {"Salary bands": {"Salary bands"}}
