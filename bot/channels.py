"""Which collections a channel may search, and in which language the bot speaks there.

CITEBOT_CHANNELS_FILE is YAML:

    default:                 # channels not listed below
      collections: [handbook, it]
      language: en
    dm:                      # direct messages with the bot
      collections: [handbook, it, payroll]
    channels:
      C0PAYROLL:
        collections: [payroll]
        language: de

`collections` missing means every collection; `language` missing means the
language of each question decides. Without a file every channel and DM may
search everything. A channel's limit is applied inside retrieval, so an
answer can never cite, nor a cross-ref pull in, a collection the channel may
not see.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from citebot_core.errors import Permanent
from citebot_core.languages import LANGUAGES


class ChannelsError(Permanent, ValueError):
    """The channels file is unreadable or invalid; the message names the file and the problem."""


class ChannelPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    collections: tuple[str, ...] | None = None  # None: every collection
    language: str | None = None  # None: follow the question

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
