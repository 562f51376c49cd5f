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


# The configuration page's sections, in order: a setting goes into the first whose names it starts with.
SETTING_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Slack", ("SLACK_", "CITEBOT_SOCKET_MODE_", "CITEBOT_SLACK_", "CITEBOT_REVIEW_CHANNEL", "CITEBOT_REVIEWERS",
               "CITEBOT_CHANNELS_FILE", "CITEBOT_ASSISTANT_PROMPTS", "CITEBOT_MAX_QUESTION_CHARS")),
    ("Redis", ("CITEBOT_REDIS_",)),
    ("Who may read what", ("CITEBOT_ACCESS_",)),
    ("Knowledge base, index and sources", ("CITEBOT_KB_DIR", "CITEBOT_INDEX_DIR", "CITEBOT_SOURCES_FILE",
                                           "CITEBOT_SYNC_", "CITEBOT_DRAFTS_DIR", "CITEBOT_LANGUAGE")),
    ("Language model and answers", ("CITEBOT_LLM", "CITEBOT_ANSWER_MODE", "CITEBOT_PROMPT_BUDGET_CHARS",
                                    "CITEBOT_QUESTION_BUDGET_S")),
    ("Entailment judge", ("CITEBOT_JUDGE",)),
    ("Search and embeddings", ("CITEBOT_TOP_K", "CITEBOT_EMBED", "CITEBOT_MIN_COSINE")),
)


def setting_group(alias: str) -> str:
    for title, prefixes in SETTING_GROUPS:
        if alias.startswith(prefixes):
            return title
    return "Other"


def configuration_page() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Every setting citebot reads, from the environment or from a `.env` file in the working directory.",
        "A missing or invalid setting stops the process at start with one line naming the variable.",
        "This page is generated from `bot/config.py`.",
    ]
    rows = settings_rows()
    titles = [title for title, _ in SETTING_GROUPS] + ["Other"]
    for title in titles:
        grouped = [row for row in rows if setting_group(row[0]) == title]
        if not grouped:
            continue
        lines += ["", f"## {title}", "", "| variable | default | meaning |", "|---|---|---|"]
        # docs/stylesheets/reference.css keeps the first column's names whole: a narrow column wraps the meaning.
        lines += [f"| `{alias}` | {_cell(default)} | {_cell(text)} |" for alias, default, text in grouped]
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


# ---------------------------------------------------------------- the Slack app page, from manifest.yml

# docs/slack-app.md names these markers; the build puts the lists in their place (docs/gen_reference.py), so the
# page can never list other scopes or events than the manifest asks for.
SCOPES_MARKER = "<!-- generated: the manifest's scopes -->"
EVENTS_MARKER = "<!-- generated: the manifest's events -->"
ENV_MARKER = "<!-- generated: the .env of a first start -->"
# The settings a first start in Slack needs, in the order the page's steps give them.
FIRST_START_SETTINGS = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "CITEBOT_REVIEW_CHANNEL", "CITEBOT_REVIEWERS",
                        "CITEBOT_REDIS_URL", "CITEBOT_KB_DIR")
_FIRST_START_EXAMPLES = {
    "SLACK_BOT_TOKEN": "xoxb-...", "SLACK_SIGNING_SECRET": "...", "CITEBOT_REVIEW_CHANNEL": "#citebot-review",
    "CITEBOT_REVIEWERS": "U0123ABCD,U0456EFGH", "CITEBOT_REDIS_URL": "redis://localhost:6379/0",
    "CITEBOT_KB_DIR": "/path/to/your/kb",
}


def manifest_lists(manifest_text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(bot scopes, bot events) of manifest.yml, each with the comment above it (or above its group).

    The events are read from the commented-out `event_subscriptions` block as they stand: it is commented out so
    that the manifest can be pasted before citebot runs, and it is still the list to subscribe to."""
    scopes: list[tuple[str, str]] = []
    events: list[tuple[str, str]] = []
    comment: list[str] = []
    section = None
    for raw in manifest_text.splitlines():
        line = raw.strip()
        if raw.startswith("    bot:") and section is None:
            section = "scopes"
            continue
        if line.startswith("#   bot_events:"):
            section, comment = "events", []
            continue
        if section == "scopes" and raw and not raw.startswith("      "):
            section = None
        if section == "events" and not raw.startswith("  #     "):
            section = None
        if section is None:
            continue
        text = line.lstrip("#").strip() if section == "events" else line
        if text.startswith("# "):
            comment.append(text[2:])
        elif text.startswith("- "):
            (scopes if section == "scopes" else events).append((text[2:].strip(), " ".join(comment)))
            comment = []
    return _shared_comments(scopes), _shared_comments(events)


def _shared_comments(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """An item without a comment of its own shares the one above it (channels:read and groups:read)."""
    out: list[tuple[str, str]] = []
    for name, comment in items:
        out.append((name, comment or (out[-1][1] if out else "")))
    return out


def _list_table(header: str, items: list[tuple[str, str]]) -> str:
    rows = [f"| {header} | what citebot does with it |", "|---|---|"]
    rows += [f"| `{name}` | {_cell(comment)} |" for name, comment in items]
    return "\n".join(rows)


def env_block() -> str:
    described = {alias: text for alias, _, text in settings_rows()}
    lines = ["```bash"]
    for name in FIRST_START_SETTINGS:
        first = described[name].split(". ")[0].rstrip(".")
        lines += [f"# {first}", f"{name}={_FIRST_START_EXAMPLES[name]}"]
    return "\n".join([*lines, "```"])


def slack_app_page(page_text: str, manifest_text: str) -> str:
    """docs/slack-app.md with the manifest's scopes and events and the first start's .env in place of the markers."""
    scopes, events = manifest_lists(manifest_text)
    for marker in (SCOPES_MARKER, EVENTS_MARKER, ENV_MARKER):
        if marker not in page_text:
            raise ValueError(f"docs/slack-app.md has lost its marker {marker}")
    return (page_text.replace(SCOPES_MARKER, _list_table("scope", scopes))
            .replace(EVENTS_MARKER, _list_table("bot event", events))
            .replace(ENV_MARKER, env_block()))
