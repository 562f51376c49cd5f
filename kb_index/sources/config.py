"""`sources.yml`: where the KB is synced from, what to take, and whose keys to use.

    sources:
      handbook:                          # the source's name: `citebot sync --source handbook`
        type: confluence
        url: https://example.atlassian.net/wiki
        deployment: cloud                # or data_center
        spaces: [HR, IT]
        exclude_labels: [draft, archived]
        collection: handbook             # the collection its pages fill
        credentials:                     # names of environment variables, never the secrets
          email: CONFLUENCE_EMAIL
          api_token: CONFLUENCE_API_TOKEN
        groups:                          # a source group -> a Slack user group (handle or S…), or everyone
          confluence-users: everyone
          hr-team: payroll
        every_minutes: 60                # how often the worker syncs it

      policies:
        type: google_drive
        folders: [1AbCdEf]               # folder ids, or
        shared_drives: [0AbCdEf]         # shared drive ids
        exclude_paths: ["Archive/**"]
        collection: policies
        credentials:
          service_account: GOOGLE_SERVICE_ACCOUNT_JSON   # the key's JSON, or the path of the key file
        domains: [example.com]           # shared with the whole domain -> every full member
        groups: {hr@example.com: payroll}

Read like `_collection.yml` (kb_index/collection.py): strict YAML (no key
twice, no aliases), pydantic with unknown keys refused, each problem with its
line. A credential that looks like a secret instead of a variable's name is
refused too: the file is meant to be committed, its secrets are not.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from citebot_core.errors import Permanent
from kb_index.collection import CollectionError, known_language, load_strict_yaml, strict_bool
from kb_index.sources.model import SourceError

# A source's and a collection's name: also a file name in the synced store and the start of each entry's id.
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
_SLACK_GROUP = re.compile(r"S[A-Z0-9]{2,}|[a-z0-9][a-z0-9._-]{0,79}")
EVERYONE = "everyone"


class SourcesError(Permanent, ValueError):
    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


def _env_name(value: object) -> object:
    if isinstance(value, str) and not _ENV_NAME.fullmatch(value):
        raise ValueError("must be the NAME of an environment variable (A-Z, 0-9, _), never the secret itself")
    return value


EnvName = Annotated[str, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConfluenceCredentials(_Strict):
    email: EnvName | None = None  # Cloud: the account's e-mail address
    api_token: EnvName | None = None  # Cloud: an API token of that account
    token: EnvName | None = None  # Data Center: a personal access token

    _names = field_validator("email", "api_token", "token", mode="before")(_env_name)


class DriveCredentials(_Strict):
    service_account: EnvName  # the service account key: its JSON, or the path of the JSON file
    subject: EnvName | None = None  # with domain-wide delegation: the user it acts as

    _names = field_validator("service_account", "subject", mode="before")(_env_name)


class _Source(_Strict):
    collection: str
    groups: dict[str, str] = {}
    every_minutes: int = Field(60, ge=1)
    guests: bool = False
    external: bool = False
    language: str | None = None
    source_role: str | None = None

    @field_validator("collection")
    @classmethod
    def _collection_name(cls, value: str) -> str:
        if not NAME.fullmatch(value):
            raise ValueError("must be lower-case letters, digits, '-' or '_' (it names the collection)")
        return value

    @field_validator("groups")
    @classmethod
    def _slack_groups(cls, value: dict[str, str]) -> dict[str, str]:
        out = {}
        for source_group, slack in value.items():
            name = str(slack).removeprefix("@")
            if name != EVERYONE and not _SLACK_GROUP.fullmatch(name):
                raise ValueError(f"{source_group}: {slack!r} is neither a Slack user group (handle or S…) "
                                 f"nor '{EVERYONE}'")
            out[str(source_group).lower()] = name
        return out

    _strict = field_validator("guests", "external", mode="before")(strict_bool)
    _language = field_validator("language")(known_language)


class ConfluenceSource(_Source):
    type: Literal["confluence"]
    url: str
    deployment: Literal["cloud", "data_center"] = "cloud"
    spaces: tuple[str, ...] = Field(min_length=1)
    exclude_labels: tuple[str, ...] = ()
    attachments: bool = True
    credentials: ConfluenceCredentials

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("must start with https:// or http://")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _credentials_of_deployment(self) -> ConfluenceSource:
        c = self.credentials
        if self.deployment == "cloud" and not (c.email and c.api_token) or self.deployment == "cloud" and c.token:
            raise ValueError("credentials: Confluence Cloud takes 'email' and 'api_token' (no 'token')")
        if self.deployment == "data_center" and (not c.token or c.email or c.api_token):
            raise ValueError("credentials: Confluence Data Center takes 'token' (a personal access token) alone")
        return self


class DriveSource(_Source):
    type: Literal["google_drive"]
    folders: tuple[str, ...] = ()
    shared_drives: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    credentials: DriveCredentials
    api_url: str = "https://www.googleapis.com"  # only a proxy (or a test) changes it

    @field_validator("domains")
    @classmethod
    def _lower_case(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(d.lower().lstrip("@") for d in value)

    @model_validator(mode="after")
    def _scope_given(self) -> DriveSource:
        if not (self.folders or self.shared_drives):
            raise ValueError("names no folders and no shared_drives: nothing would be synced")
        return self


Source = Annotated[ConfluenceSource | DriveSource, Field(discriminator="type")]
_SOURCE = TypeAdapter(Source)


class SourcesFile(_Strict):
    sources: dict[str, Source] = {}

    @field_validator("sources")
    @classmethod
    def _names(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if not NAME.fullmatch(str(name)):
                raise ValueError(f"{name!r}: a source's name is lower-case letters, digits, '-' or '_'")
        return value


def load_sources(path: Path | None) -> SourcesFile:
    """The sources file, or none when `path` is None; SourcesError with the line of the first problem."""
    if path is None:
        return SourcesFile()
    where = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourcesError(where, 1, f"cannot read: {exc.strerror}") from exc
    return parse_sources(data, where)


def parse_sources(data: bytes, where: str = "sources.yml") -> SourcesFile:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourcesError(where, 1, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        raw = load_strict_yaml(text)
    except CollectionError as exc:
        raise SourcesError(where, exc.line, exc.message) from exc
    if raw is None:
        return SourcesFile()
    if not isinstance(raw, dict):
        raise SourcesError(where, 1, "must be a mapping with a 'sources' key")
    try:
        return SourcesFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(p) for p in first["loc"]]
        # The discriminated union puts the type's name into the location ("sources.x.confluence.url").
        loc = [p for p in loc if p not in ("confluence", "google_drive")]
        key = ".".join(loc) or "?"
        if first["type"] == "extra_forbidden":
            message = "unknown key"
        elif first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            message = "'type' must be confluence or google_drive"
        else:
            message = first["msg"].removeprefix("Value error, ")
        raise SourcesError(where, _line_of(text, loc), f"{key}: {message}") from exc


def _line_of(text: str, loc: list[str]) -> int:
    """The line of the deepest key of `loc` that the text names, searched in order below the ones before."""
    lines = text.splitlines()
    start = 0
    found = 1
    for key in loc:
        pattern = re.compile(rf"^\s*['\"]?{re.escape(key)}['\"]?\s*:")
        for number in range(start, len(lines)):
            if pattern.match(lines[number]):
                found, start = number + 1, number + 1
                break
    return found


def secret(name: str | None, source: str) -> str | None:
    """The value of a credential's environment variable; SourceError when it is named and unset."""
    if name is None:
        return None
    value = os.environ.get(name, "")
    if not value:
        raise SourceError(f"source {source}: the environment variable {name} is not set")
    return value
