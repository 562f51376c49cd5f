"""`citebot doctor` on help channels: which answer without a mention, that the bot is in them, that every
escalate_to is known to Slack. Against the fake Slack Web API and real Redis."""

from __future__ import annotations

import json
import os

from bot.cli import main
from tests.fakes.slack_server import DEFAULT_CHANNELS, FakeSlackServer
from tests.harness import BOT_TOKEN

CHANNELS = """
dm:
  escalate_to: [S0HR]
channels:
  CGENERAL:
    answer: questions
    max_per_hour: 20
    escalate_to: [S0IT, U0ONCALL, U0GONE]
  CNOTIN:
    answer: questions
"""


def help_findings(tmp_path, monkeypatch, redis_url, capsys, slack) -> tuple[int, list[tuple[str, str]]]:
    monkeypatch.chdir(tmp_path)
    for var in [v for v in os.environ if v.startswith(("CITEBOT_", "SLACK_"))]:
        monkeypatch.delenv(var)
    channels = tmp_path / "channels.yml"
    channels.write_text(CHANNELS)
    for name, value in {"CITEBOT_REDIS_URL": redis_url, "CITEBOT_INDEX_DIR": str(tmp_path / "no-index"),
                        "SLACK_BOT_TOKEN": BOT_TOKEN, "CITEBOT_SLACK_API_URL": slack.url,
                        "SLACK_SIGNING_SECRET": "s", "CITEBOT_CHANNELS_FILE": str(channels)}.items():
        monkeypatch.setenv(name, value)
    code = main(["doctor", "--json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    return code, [(f["status"], f["detail"]) for f in findings if f["check"] == "help"]


def test_doctor_lists_help_channels_membership_and_whom_they_hand_over_to(tmp_path, monkeypatch, redis_url, capsys):
    channels = {**DEFAULT_CHANNELS, "CNOTIN": {"name": "it-help", "is_member": False, "is_private": False}}
    with FakeSlackServer(token=BOT_TOKEN, channels=channels) as slack:
        slack.usergroups = {"S0IT": {"handle": "it-support"}, "S0HR": {"handle": "hr"}}
        slack.users = {"U0ONCALL": {"name": "oncall"}}
        code, found = help_findings(tmp_path, monkeypatch, redis_url, capsys, slack)
    assert code == 1  # a hand-over that would mention nobody cannot work
    assert found == [
        ("ok", 'dm: "Still need help?" hands over to the user group S0HR'),
        ("ok", "#general (CGENERAL) answers every question without a mention, at most 20 an hour"),
        ("ok", 'CGENERAL: "Still need help?" hands over to the user group S0IT'),
        ("ok", 'CGENERAL: "Still need help?" hands over to the user U0ONCALL'),
        ("fail", "CGENERAL: escalate_to names the user U0GONE, which Slack does not know: a hand-over would "
                 "mention nobody"),
        ("warn", "#it-help (CNOTIN) is set to answer every question, but the bot is not a member: it never sees "
                 "the channel's messages; /invite @citebot there"),
    ]


def test_a_missing_scope_is_a_warning_that_names_it(tmp_path, monkeypatch, redis_url, capsys):
    with FakeSlackServer(token=BOT_TOKEN) as slack:
        slack.users = {"U0ONCALL": {"name": "oncall"}, "U0GONE": {"name": "gone"}}
        slack.fail(error="missing_scope", method="usergroups.list", times=10)
        code, found = help_findings(tmp_path, monkeypatch, redis_url, capsys, slack)
    assert ("warn", "dm: escalate_to S0HR not checked: missing_scope (the check needs the usergroups:read scope)") in found
    assert all(status != "fail" for status, _ in found)
