"""Writes the generated reference pages while `mkdocs build` runs (the mkdocs-gen-files plugin)."""

import mkdocs_gen_files

from bot.cli import _parser
from bot.reference import cli_page, configuration_page

with mkdocs_gen_files.open("reference/configuration.md", "w") as page:
    page.write(configuration_page())
with mkdocs_gen_files.open("reference/cli.md", "w") as page:
    page.write(cli_page(_parser()))
