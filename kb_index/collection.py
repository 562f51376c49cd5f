"""`_collection.yml`: what the files of one collection cannot say about themselves.

A PDF or a wiki export names no KB-ID, no link into the wiki and no source
role. The collection file at the top of a collection folder (or of the KB
folder, for `default`) says it once for all of its files:

    base_url: https://wiki.example.com/hr/   # file path -> the link in footnotes
    source_role: primary_answer_source
    language: de

It is validated with pydantic and unknown keys are refused: a typo such as
`base-url` would otherwise leave every footnote of the collection without its
link and nobody would notice.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import quote

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from citebot_core.errors import Permanent
from citebot_core.languages import LANGUAGES
from kb_index.files import COLLECTION_FILE

__all__ = ["COLLECTION_FILE", "Collection", "CollectionError", "parse_collection"]

# PDF and Word files are served as the files themselves (a file share, a
# SharePoint library): their link keeps the suffix. Markdown, text and HTML
# are pages of a wiki, whose addresses have none.
_LINKED_WITH_SUFFIX = {".pdf", ".docx"}


class CollectionError(Permanent, ValueError):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


class Collection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(default=None, description="prefix of the link of each file in the collection")
    source_role: str | None = None
    language: str | None = None

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        if value is not None and value.lower() not in LANGUAGES:
            raise ValueError(f"must be one of {', '.join(LANGUAGES)}")
        return value.lower() if value else None

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


def parse_collection(data: bytes) -> Collection:
    """The collection file's settings; CollectionError with the line of the problem."""
    try:
        raw = yaml.safe_load(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise CollectionError(1, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise CollectionError(mark.line + 1 if mark else 1, f"invalid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if raw is None:
        return NO_COLLECTION_FILE
    if not isinstance(raw, dict):
        raise CollectionError(1, "must be a mapping of 'key: value' lines")
    try:
        return Collection.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "?"
        message = "unknown key (known: base_url, source_role, language)" if first["type"] == "extra_forbidden" else first["msg"]
        return _raise_at(data, key, f"'{key}': {message}")


def _raise_at(data: bytes, key: str, message: str) -> Collection:
    lines = data.decode("utf-8-sig", "replace").splitlines()
    line = next((i for i, text in enumerate(lines, start=1) if text.startswith(f"{key}:")), 1)
    raise CollectionError(line, message)
