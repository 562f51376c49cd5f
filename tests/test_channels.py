"""Per-channel collections and language from CITEBOT_CHANNELS_FILE."""

from __future__ import annotations

import pytest

from bot.channels import ChannelsError, load_channels

FILE = """
default:
  collections: [handbook, it]
  language: en
dm:
  collections: [handbook, it, payroll]
channels:
  C0PAY:
    collections: [payroll]
    language: de
"""


def test_listed_channel_gets_its_own_policy(tmp_path):
    path = tmp_path / "channels.yml"
    path.write_text(FILE)
    cfg = load_channels(path)
    assert cfg.policy("C0PAY", is_dm=False).collections == ("payroll",)
    assert cfg.policy("C0PAY", is_dm=False).language == "de"


def test_unlisted_channel_gets_the_default(tmp_path):
    path = tmp_path / "channels.yml"
    path.write_text(FILE)
    policy = load_channels(path).policy("C0OTHER", is_dm=False)
    assert policy.collections == ("handbook", "it") and policy.language == "en"


def test_dm_policy_and_its_fallback(tmp_path):
    path = tmp_path / "channels.yml"
    path.write_text(FILE)
    assert load_channels(path).policy("D123", is_dm=True).collections == ("handbook", "it", "payroll")
    path.write_text("default:\n  collections: [handbook]\n")
    assert load_channels(path).policy("D123", is_dm=True).collections == ("handbook",)


def test_no_file_means_everything_everywhere():
    policy = load_channels(None).policy("C1", is_dm=False)
    assert policy.collections is None and policy.language is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("default: [", "invalid YAML"),
        ("default:\n  language: fr\n", "default.language"),
        ("defaults: {}\n", "defaults"),
        ("channels:\n  C1:\n    collection: [x]\n", "channels.C1.collection"),
        # the help-channel keys
        ("channels:\n  C1:\n    answer: always\n", "channels.C1.answer"),
        ("channels:\n  C1:\n    max_per_hour: 0\n", "channels.C1.max_per_hour"),
        ("channels:\n  C1:\n    escalate_to: [it-support]\n", "channels.C1.escalate_to"),
        ("dm:\n  escalate_to: [U1, 42]\n", "dm.escalate_to"),
    ],
)
def test_invalid_file_names_the_problem(tmp_path, text, needle):
    path = tmp_path / "channels.yml"
    path.write_text(text)
    with pytest.raises(ChannelsError, match=needle.replace(".", r"\.")):
        load_channels(path)


HELP = """
dm:
  escalate_to: S0HRTEAM
channels:
  C0IT:
    collections: [it]
    answer: questions
    max_per_hour: 30
    escalate_to: [S0ITSUPPORT, U0ONCALL]
"""


def test_help_channel_keys(tmp_path):
    path = tmp_path / "channels.yml"
    path.write_text(HELP)
    cfg = load_channels(path)
    it = cfg.policy("C0IT", is_dm=False)
    assert it.answers_questions and it.max_per_hour == 30 and it.escalate_to == ("S0ITSUPPORT", "U0ONCALL")
    assert cfg.policy("D1", is_dm=True).escalate_to == ("S0HRTEAM",)  # one ID may stand alone
    other = cfg.policy("C0OTHER", is_dm=False)
    # Today's behaviour is the default: mentions only, no cap, no hand-over.
    assert not other.answers_questions and other.max_per_hour is None and other.escalate_to == ()
