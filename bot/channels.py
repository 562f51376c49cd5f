"""Which collections a channel may search, and in which language the bot speaks there.

CITEBOT_CHANNELS_FILE is YAML:

    default:                 # channels not listed below
      collections: [handbook, it]
      language: en
    dm:                      # direct messages with the bot
      collections: [handbook, it, payroll]
      escalate_to: [S0HRTEAM]  # "Still need help?" in a DM asks this group
    channels:
      C0PAYROLL:
        collections: [payroll]
        language: de
      C0ITHELP:              # a help channel: every question answered, no mention needed
        collections: [it]
        answer: questions
        max_per_hour: 30
        escalate_to: [S0ITSUPPORT, U0ONCALL]

`collections` missing means every collection; `language` missing means the
language of each question decides. `answer` is `mention` (the default: only
a mention, a DM, /citebot or the shortcut asks) or `questions` (every
top-level message that asks something, bot.helpdesk.asks, is answered in its
thread); `max_per_hour` caps those answers per channel (mentions are never
capped); `escalate_to` (user group IDs S…, user IDs U…/W…) puts a "Still need
help?" button under every reply there (bot.helpdesk.handover). Without a file every channel and DM may
search everything. A channel's limit is applied inside retrieval, so an
answer can never cite, nor a cross-ref pull in, a collection the channel may
not see.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from citebot_core.errors import Permanent
from citebot_core.languages import LANGUAGES


class ChannelsError(Permanent, ValueError):
    """The channels file is unreadable or invalid; the message names the file and the problem."""


# A user group (S…) or a user (U…, or W… in an Enterprise Grid): what a hand-over mentions.
_SLACK_ID = re.compile(r"[SUW][A-Z0-9]{2,}")


class ChannelPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    collections: tuple[str, ...] | None = None  # None: every collection
    language: str | None = None  # None: follow the question
    # Help channels (bot.helpdesk): who asks without a mention, how often, and whom a hand-over asks.
    answer: Literal["mention", "questions"] = "mention"
    max_per_hour: int | None = None  # None: no cap on the answers to messages without a mention
    escalate_to: tuple[str, ...] = ()  # user group and user IDs; empty: no "Still need help?" button

    @field_validator("max_per_hour")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("must be 1 or more (leave it out for no cap)")
        return value

    @field_validator("escalate_to", mode="before")
    @classmethod
    def _slack_ids(cls, value: object) -> object:
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list | tuple):
            for item in items:
                if not isinstance(item, str) or not _SLACK_ID.fullmatch(item):
                    raise ValueError(f"{item!r} is no user group ID (S…) or user ID (U…, W…)")
        return items

    @property
    def answers_questions(self) -> bool:
        """Every question in the channel is answered, not only those that mention the bot."""
        return self.answer == "questions"

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        if value is not None and value not in LANGUAGES:
            raise ValueError(f"must be one of {', '.join(LANGUAGES)}")
        return value


class ChannelsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default: ChannelPolicy = ChannelPolicy()
    dm: ChannelPolicy | None = None  # None: DMs follow `default`
    channels: dict[str, ChannelPolicy] = {}

    def policy(self, channel: str | None, *, is_dm: bool) -> ChannelPolicy:
        if is_dm:
            return self.dm or self.default
        return self.channels.get(channel or "", self.default)


def load_channels(path: Path | None) -> ChannelsConfig:
    if path is None:
        return ChannelsConfig()
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as exc:
        raise ChannelsError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ChannelsError(f"{path}: invalid YAML: {exc}") from exc
    try:
        return ChannelsConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ChannelsError(f"{path}: {where}: {first['msg']}") from exc
