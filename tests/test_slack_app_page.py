"""docs/slack-app.md and manifest.yml cannot disagree: the page's scope and event lists and its first .env are made
from the manifest and Settings when the site is built (bot/reference.py), and what the page says by hand may name
the manifest's scopes and events only all or none."""

from __future__ import annotations

import re

import pytest
import yaml

from bot.reference import ENV_MARKER, EVENTS_MARKER, SCOPES_MARKER, manifest_lists, slack_app_page
from tests.harness import ROOT

PAGE = ROOT / "docs" / "slack-app.md"
MANIFEST = ROOT / "manifest.yml"


def manifest_scopes_and_events() -> tuple[list[str], list[str]]:
    """Read as Slack reads them: the scopes from the YAML, the events from the commented block once uncommented."""
    text = MANIFEST.read_text()
    scopes = yaml.safe_load(text)["oauth_config"]["scopes"]["bot"]
    block = [line[4:] if line.startswith("  # ") else line[3:] for line in text.splitlines()
             if line.startswith(("  # ", "  #")) and not line.startswith("  # Step")]
    start = next(i for i, line in enumerate(block) if line.startswith("event_subscriptions:"))
    subscriptions = yaml.safe_load("\n".join(block[start:]))
    return scopes, subscriptions["event_subscriptions"]["bot_events"]


# The scope of an app-level token (Socket Mode), not a bot scope: the page names it, the manifest cannot.
APP_LEVEL_SCOPES = {"connections:write"}
# A paragraph that names this many of them is a list of them, and a list by hand must be whole.
LIST = 4


def named(text: str, names: list[str]) -> set[str]:
    """The names the text shows in backticks."""
    return {n for n in names if f"`{n}`" in text}


def hand_lists(text: str, names: list[str]) -> list[set[str]]:
    """Each paragraph of the page that names LIST or more of `names`: a list written by hand."""
    return [found for paragraph in re.split(r"\n\s*\n", text) if len(found := named(paragraph, names)) >= LIST]


def test_the_built_page_lists_exactly_the_manifests_scopes_and_events_each_with_why():
    scopes, events = manifest_scopes_and_events()
    listed_scopes, listed_events = manifest_lists(MANIFEST.read_text())
    assert [name for name, _ in listed_scopes] == scopes
    assert [name for name, _ in listed_events] == events
    assert all(why for _, why in listed_scopes + listed_events)
    built = slack_app_page(PAGE.read_text(), MANIFEST.read_text())
    for name in scopes + events:
        assert f"| `{name}` |" in built, name
    assert "CITEBOT_REVIEWERS=" in built and "SLACK_SIGNING_SECRET=" in built


def test_the_page_by_hand_names_only_the_manifests_scopes_and_lists_none_partly():
    scopes, events = manifest_scopes_and_events()
    by_hand = PAGE.read_text()
    for marker in (SCOPES_MARKER, EVENTS_MARKER, ENV_MARKER):
        assert marker in by_hand
    scope_like = set(re.findall(r"`([a-z_]+:[a-z_.]+)`", by_hand)) - APP_LEVEL_SCOPES
    assert scope_like <= set(scopes), sorted(scope_like - set(scopes))
    for names in (scopes, events):
        assert all(found == set(names) for found in hand_lists(by_hand, names)), hand_lists(by_hand, names)


def test_a_page_that_lists_the_scopes_by_hand_and_misses_one_fails():
    # The page as it was before its lists were made from the manifest: 13 of the scopes, none of the access events.
    scopes, events = manifest_scopes_and_events()
    old = ("The manifest asks for `app_mentions:read`, `commands`, `chat:write`, `reactions:write`, `assistant:write`, "
           "`channels:history`, `groups:history`, `im:history`, `mpim:history`, `channels:read` and `groups:read`, "
           "`usergroups:read` and `users:read`.\n\nSubscribe to the bot events `app_mention`, `message.im`, "
           "`app_home_opened`, `assistant_thread_started`, `assistant_thread_context_changed`, `message.channels` "
           "and `message.groups`.")
    assert [len(found) for found in hand_lists(old, scopes)] == [13]
    assert [len(found) for found in hand_lists(old, events)] == [7]
    assert not all(found == set(scopes) for found in hand_lists(old, scopes))


def test_a_marker_lost_from_the_page_fails_the_build():
    with pytest.raises(ValueError, match="lost its marker"):
        slack_app_page(PAGE.read_text().replace(EVENTS_MARKER, ""), MANIFEST.read_text())
