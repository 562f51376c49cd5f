"""Writes the generated reference pages while `mkdocs build` runs (the mkdocs-gen-files plugin)."""

from pathlib import Path

import mkdocs_gen_files

from bot.cli import _parser
from bot.reference import cli_page, configuration_page, slack_app_page

ROOT = Path(__file__).resolve().parent.parent

with mkdocs_gen_files.open("reference/configuration.md", "w") as page:
    page.write(configuration_page())
with mkdocs_gen_files.open("reference/cli.md", "w") as page:
    page.write(cli_page(_parser()))
# The Slack app page keeps markers where the manifest's scopes and events and the first start's .env go.
with mkdocs_gen_files.open("slack-app.md", "w") as page:
    page.write(slack_app_page((ROOT / "docs" / "slack-app.md").read_text(), (ROOT / "manifest.yml").read_text()))
