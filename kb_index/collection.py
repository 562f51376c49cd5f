"""`_collection.yml`: what the files of one collection cannot say about themselves.

A PDF or a wiki export names no KB-ID, no link into the wiki and no source
role. The collection file at the top of a collection folder (or of the KB
folder, for `default`) says it once for all of its files:

    base_url: https://wiki.example.com/hr/   # file path -> the link in footnotes
    source_role: primary_answer_source
    language: de
    audience:                 # who may read it; left out: every full member
      groups: [hr-team, S0PAYROLL]   # Slack user groups, by handle or ID
      channels: [C0HR]               # members of these channels
      users: [U0CFO]                 # single people
    guests: false             # guests in the audience may read it too (default false)
    external: false           # may be used where people of another organization read (default false)

It is validated with pydantic and unknown keys are refused: a typo such as
`base-url` would otherwise leave every footnote of the collection without its
link and nobody would notice. Whatever could read two ways is refused too, as
it would open a restricted collection to everyone if read the wrong way: a key
given twice (YAML keeps the last one silently), `audience:` without a value
(its lines commented out), an `audience:` line commented out altogether,
anchors and aliases, and nesting deeper than any collection file needs. A
refused file closes its collection (NOBODY) when the index is built anyway.
"""

from __future__ import annotations

import re
from collections.abc import Collection as Sized, Hashable
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent

from citebot_core.errors import Permanent
from citebot_core.languages import LANGUAGES
from kb_index.files import COLLECTION_FILE

__all__ = ["COLLECTION_FILE", "Audience", "Collection", "CollectionAccess", "CollectionError", "load_strict_yaml",
           "parse_collection"]

# PDF and Word files are served as the files themselves (a file share, a
# SharePoint library): their link keeps the suffix. Markdown, text and HTML
# are pages of a wiki, whose addresses have none.
_LINKED_WITH_SUFFIX = {".pdf", ".docx"}


class CollectionError(Permanent, ValueError):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


_GROUP_ID = re.compile(r"S[A-Z0-9]{2,}")
_GROUP_HANDLE = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")
_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,}")
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")


class Audience(BaseModel):
    """Who may read a collection: members of these user groups or channels, and these users.

    Groups by ID (S…) or handle (`payroll`, `@payroll`: kept without the @);
    channels and users by ID only, as names change and IDs do not.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    groups: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    users: tuple[str, ...] = ()

    @field_validator("groups")
    @classmethod
    def _groups(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for value in values:
            name = value.removeprefix("@")
            if not (_GROUP_ID.fullmatch(name) or _GROUP_HANDLE.fullmatch(name)):
                raise ValueError(f"{value!r} is neither a user group ID (S…) nor a handle")
            out.append(name)
        return tuple(out)

    @field_validator("channels")
    @classmethod
    def _channels(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _CHANNEL_ID.fullmatch(value):
                raise ValueError(f"{value!r} is not a channel ID (C… or G…)")
        return values

    @field_validator("users")
    @classmethod
    def _users(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not _USER_ID.fullmatch(value):
                raise ValueError(f"{value!r} is not a user ID (U… or W…)")
        return values

    @model_validator(mode="after")
    def _names_someone(self) -> Audience:
        # An empty audience would read as "nobody" to one person and "everyone" to the next.
        if not (self.groups or self.channels or self.users):
            raise ValueError("names nobody: list groups, channels or users, or leave audience out for every full member")
        return self


def strict_bool(value: object) -> object:
    """A pydantic "before" validator: "yes", 1 or "on" would pass pydantic's lax bool; who may read payroll is said
    with true or false (the collection file, the sources file)."""
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def known_language(value: str | None) -> str | None:
    """A pydantic validator: one of citebot's languages, lower case."""
    if value is not None and value.lower() not in LANGUAGES:
        raise ValueError(f"must be one of {', '.join(LANGUAGES)}")
    return value.lower() if value else None


class CollectionAccess(BaseModel):
    """Who may read a collection: what the index manifest keeps of its collection file, and all the worker needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    audience: Audience | None = None  # None: every full member of the workspace
    guests: bool = False
    external: bool = False
    closed: bool = False  # nobody: the collection file is invalid, so its audience is unknown
    # Audiences that must each admit the reader too: a synced page's view restrictions (its own and its
    # ancestors') on top of its space's readers (kb_index/sources). A collection file never sets them.
    also: tuple[Audience, ...] = ()

    def audiences(self) -> tuple[Audience, ...]:
        """Every audience a reader must be in (none: only the kind of person counts)."""
        return ((self.audience,) if self.audience is not None else ()) + self.also


EVERY_MEMBER = CollectionAccess()
NOBODY = CollectionAccess(closed=True)


class Collection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(default=None, description="prefix of the link of each file in the collection")
    source_role: str | None = None
    language: str | None = None
    audience: Audience | None = None
    guests: bool = False
    external: bool = False

    @field_validator("audience", mode="before")
    @classmethod
    def _audience_given(cls, value: object) -> object:
        # `audience:` with nothing after it: the lines under it were commented out or lost. Read as "every full
        # member", a collection meant for a few would be open to all.
        if value is None:
            raise ValueError("has no value (were the lines under it commented out?): name groups, channels or "
                             "users, or delete the line for every full member")
        return value

    _strict = field_validator("guests", "external", mode="before")(strict_bool)

    @property
    def access(self) -> CollectionAccess:
        return CollectionAccess(audience=self.audience, guests=self.guests, external=self.external)

    _language = field_validator("language")(known_language)

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("https://", "http://")):
            raise ValueError("must start with https:// or http://")
        return value if value.endswith("/") else value + "/"

    def url_of(self, rel_in_collection: str) -> str | None:
        """The link of a file, from its path inside the collection folder."""
        if self.base_url is None:
            return None
        path = PurePosixPath(rel_in_collection)
        if path.suffix.lower() not in _LINKED_WITH_SUFFIX:
            path = path.with_suffix("")
        return self.base_url + quote(str(path))


NO_COLLECTION_FILE = Collection()

# A synced collection (kb_index/sources) comes in parts, one per set of readers: "handbook~all" for what every
# reader of the source may read, "handbook~3fa9c2d1" for the pages restricted alike. A part's name always has the
# separator, so a name without it in a list of what someone may read is a folder's collection, never a part.
PART_SEPARATOR = "~"


def collection_base(name: str) -> str:
    """'handbook~3fa9c2d1' -> 'handbook' (the name channels.yml and --collection use); a folder's name itself."""
    return name.split(PART_SEPARATOR, 1)[0]


def in_collections(name: str, names: Sized[str]) -> bool:
    """Whether the index's collection `name` is among `names`: by its own name, or a part of a synced collection
    that `names` names by its base. Never a part by another part: "handbook~all" does not admit "handbook~3fa9"."""
    return name in names or (PART_SEPARATOR in name and collection_base(name) in names)


# A collection file is at most three levels deep (audience: groups: [..]); so much deeper is a broken or hostile
# file, refused before PyYAML's recursive composer could overflow the stack on it.
MAX_DEPTH = 8
_COMMENTED_AUDIENCE = re.compile(r"^\s*#+\s*audience\s*:", re.IGNORECASE)


def parse_collection(data: bytes) -> Collection:
    """The collection file's settings; CollectionError with the line of the problem."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CollectionError(1, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    raw = load_strict_yaml(text)
    if raw is not None and not isinstance(raw, dict):
        raise CollectionError(1, "must be a mapping of 'key: value' lines")
    _check_audience_not_commented_out(text, raw or {})
    if raw is None:
        return NO_COLLECTION_FILE
    try:
        return Collection.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "?"
        known = "audience: groups, channels, users" if len(first["loc"]) > 1 else f"known: {', '.join(Collection.model_fields)}"
        message = f"unknown key ({known})" if first["type"] == "extra_forbidden" else first["msg"].removeprefix("Value error, ")
        return _raise_at(data, str(first["loc"][0]) if first["loc"] else key, f"'{key}': {message}")


def load_strict_yaml(text: str) -> Any:
    """YAML that can be read one way only: no key twice, no aliases, no deep nesting (CollectionError with the
    line). The sources file (kb_index/sources/config.py) is read the same way."""
    try:
        _check_shape(text)
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader that also refuses duplicate keys
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = str(getattr(exc, "problem", None) or exc)
        hint = " (a handle with @ is written in quotes: '@payroll')" if "'@'" in problem else ""
        raise CollectionError(mark.line + 1 if mark else 1, f"invalid YAML: {problem}{hint}") from exc
    except RecursionError:  # not reached after _check_shape; a traceback is never the answer to a bad file
        raise CollectionError(1, f"nested deeper than {MAX_DEPTH} levels") from None


def _check_shape(text: str) -> None:
    """Nesting depth and aliases, from PyYAML's event stream (made without recursion, unlike its documents)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, AliasEvent):
            raise CollectionError(_line(event),
                                  f"an alias (*{event.anchor}): write the value out, a collection file names "
                                  "its audience plainly")
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise CollectionError(_line(event), f"nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, CollectionEndEvent):
            depth -= 1


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 1


def _check_audience_not_commented_out(text: str, raw: dict[Any, Any]) -> None:
    """`# audience:` with no audience key: the restriction was switched off by a comment, perhaps for a test,
    perhaps by mistake. Either way the file no longer says what it seems to, so it is refused."""
    if "audience" in raw:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if _COMMENTED_AUDIENCE.match(line):
            raise CollectionError(number, "'audience' is commented out: remove the '#' to keep the collection "
                                          "restricted, or delete the line to open it to every full member")


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error, not the last one silently."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Hashable, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, Hashable):
            raise CollectionError(line, "a key must be a plain word")
        if key in seen:
            raise CollectionError(line, f"'{key}' is given twice (first on line {seen[key]}): "
                                        "YAML would keep only the last one; keep one")
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _raise_at(data: bytes, key: str, message: str) -> Collection:
    lines = data.decode("utf-8-sig", "replace").splitlines()
    line = next((i for i, text in enumerate(lines, start=1) if text.startswith(f"{key}:")), 1)
    raise CollectionError(line, message)
