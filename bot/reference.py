"""The configuration and command-line references of the documentation site, written from the code.

The site's pages `reference/configuration.md` and `reference/cli.md` are generated from `Settings` and the
`citebot` argument parser when `mkdocs build` runs (docs/gen_reference.py), so they cannot drift from what
the program accepts: a setting without a description fails the build's test (tests/test_reference.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from bot.config import BUNDLED_KB_DIR, Settings

# Defaults that are paths of this installation are named, not printed.
_NAMED_DEFAULTS = {str(BUNDLED_KB_DIR): "the bundled sample KB"}


def _cell(text: str) -> str:
    """Text that stays inside one Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None or value == [] or value == ():
        return "–"
    if isinstance(value, tuple | list):
        value = ",".join(str(v) for v in value)
    value = getattr(value, "value", value)  # an enum's word
    text = str(value)
    return _NAMED_DEFAULTS.get(text, f"`{Path(text) if isinstance(value, Path) else text}`")


def settings_rows() -> list[tuple[str, str, str]]:
    """(environment variable, default, description) for every setting, in the class's order."""
    rows = []
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias if isinstance(field.validation_alias, str) else name.upper()
        if not field.description:
            raise ValueError(f"setting {alias} has no description (bot/config.py)")
        rows.append((alias, _default(field), field.description))
    return rows


def configuration_page() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Every setting citebot reads, from the environment or from a `.env` file in the working directory.",
        "A missing or invalid setting stops the process at start with one line naming the variable.",
        "This page is generated from `bot/config.py`.",
        "",
        "| variable | default | meaning |",
        "|---|---|---|",
    ]
    lines += [f"| `{alias}` | {_cell(default)} | {_cell(text)} |" for alias, default, text in settings_rows()]
    return "\n".join(lines) + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found += [(name, sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return found


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.metavar or action.dest}`"
        if not action.help:
            raise ValueError(f"{parser.prog} {name}: the argument has no help text (bot/cli.py)")
        text = action.help
        if action.choices and "choices" not in text:
            text += (" " if text else "") + "(one of " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        rows.append(f"| {name} | {_cell(text)} |")
    return rows


def _command_section(path: str, parser: argparse.ArgumentParser, summary: str, depth: int) -> list[str]:
    lines = [f"{'#' * depth} `{path}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    # One wide line per usage, whatever terminal the build runs in.
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=200)
    lines += ["```", parser.format_usage().strip().removeprefix("usage: "), "```", ""]
    rows = _argument_rows(parser)
    if rows:
        lines += ["| argument | meaning |", "|---|---|", *rows, ""]
    for name, sub, help_text in _subcommands(parser):
        lines += _command_section(f"{path} {name}", sub, help_text, depth + 1)
    return lines


def cli_page(parser: argparse.ArgumentParser) -> str:
    lines = [
        "# Command-line reference",
        "",
        "Every `citebot` command and its arguments. Each reads the settings once (environment and `.env`);",
        "a bad setting ends it with one line naming the variable and exit code 2.",
        "This page is generated from the argument parser in `bot/cli.py`.",
        "",
    ]
    for name, sub, help_text in _subcommands(parser):
        lines += _command_section(f"citebot {name}", sub, help_text, 2)
    return "\n".join(lines).rstrip() + "\n"
