"""The documentation site's configuration and CLI references are written from the code (bot/reference.py)."""

from __future__ import annotations

import argparse

import pytest

from bot.cli import _parser
from bot.config import Settings
from bot.reference import cli_page, configuration_page, settings_rows


def test_every_setting_is_on_the_configuration_page_with_its_default_and_meaning() -> None:
    page = configuration_page()
    aliases = [f.validation_alias for f in Settings.model_fields.values()]
    assert len(settings_rows()) == len(aliases)
    for alias in aliases:
        assert f"| `{alias}` |" in page
    assert "| `CITEBOT_LLM` | `extractive` |" in page
    assert "| `CITEBOT_KB_DIR` | the bundled sample KB |" in page
    assert "| `CITEBOT_ANSWER_MODE` | `citations` |" in page


def test_every_command_and_argument_is_on_the_cli_page() -> None:
    page = cli_page(_parser())
    for heading in ("## `citebot index`", "## `citebot ask`", "### `citebot review gaps`", "### `citebot audit show`"):
        assert heading in page
    assert "| `--keep-going` |" in page
    assert "--visibility-timeout" not in page  # suppressed: tuning for tests


def test_an_argument_without_help_fails_the_page() -> None:
    parser = argparse.ArgumentParser(prog="citebot")
    sub = parser.add_subparsers()
    sub.add_parser("serve", help="the web process").add_argument("--port")
    with pytest.raises(ValueError, match="--port"):
        cli_page(parser)


def test_the_configuration_page_has_a_section_per_group_and_every_setting_in_one() -> None:
    from bot.reference import SETTING_GROUPS, setting_group

    page = configuration_page()
    groups = {setting_group(alias) for alias, _, _ in settings_rows()}
    assert "Other" not in groups  # a new setting belongs to a group: add its name to SETTING_GROUPS
    assert [line[3:] for line in page.splitlines() if line.startswith("## ")] == [
        title for title, _ in SETTING_GROUPS if title in groups]
    assert setting_group("CITEBOT_SYNC_DIR") == "Knowledge base, index and sources"
    assert setting_group("CITEBOT_JUDGE_URL") == "Entailment judge"
