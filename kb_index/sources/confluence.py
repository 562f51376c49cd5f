"""Confluence (Cloud or Data Center) as a source: the pages of some spaces, their PDF and Word attachments,
and who may read each.

REST API v1 under `{url}/rest/api/`; Cloud with HTTP Basic (an account's
e-mail address and API token), Data Center with a personal access token.

Who may read a page is worked out the way Confluence decides it: a person
must be allowed to view the space, and must pass the view restriction of
every ancestor that has one and of the page itself (restrictions inherit
down the page tree). Each of those is one `Grant`. The space's permissions
come from `space/{key}?expand=permissions`; when they cannot be read, the
space's documents are listed as unreadable (never guessed open). The pages
come from one CQL search per space with their ancestors and restrictions;
a page excluded by label is left out, but its restriction still narrows its
children, so exclusion is done here and not in the CQL.

Restrictions and permissions name users by account; a user whose e-mail
address is not shown is looked up once per listing, and one still without
an address is counted in `Grant.unnamed` (left out: the grant only narrows).

Confluence has no change feed: every sync lists everything (`changes` is None).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

import httpx

from citebot_core.errors import Permanent
from kb_index.sources.config import EVERYONE, ConfluenceSource, secret
from kb_index.sources.confluence_storage import storage_to_html
from kb_index.sources.http import HTTPFailed, SourceHTTP
from kb_index.sources.model import Calls, DocumentError, Fetched, Grant, Listed, SourceError

PAGE_LIMIT = 100  # results asked for per search call; the server may serve fewer (its answer's `limit`)
MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024
_READ_RESTRICTIONS = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
_PAGE_EXPAND = f"version,ancestors,{_READ_RESTRICTIONS},metadata.labels,history.lastUpdated"
_ATTACHMENT_EXPAND = "version,container"
_FETCH_EXPAND = "body.storage,version,history.lastUpdated"
# The attachments that are synced, by file name suffix or media type.
_MEDIA_SUFFIXES = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
}
_SUFFIXES = frozenset(_MEDIA_SUFFIXES.values())
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")

Json = dict[str, Any]


class _Unreadable(Permanent):
    """A page's (or an ancestor's) restrictions could not be read: the page is listed unreadable."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class _SpaceAccess:
    """Who may view a space: its grant, or why that could not be read."""

    grant: Grant | None
    unreadable: str | None = None


@dataclass(frozen=True)
class _Attachment:
    """What fetching a listed attachment needs, kept from the listing."""

    download: str  # relative to the wiki's URL
    suffix: str
    stand: str | None


class ConfluenceConnector:
    """One Confluence source (sources.yml). Raises SourceError at once when a credential variable is unset."""

    def __init__(self, name: str, source: ConfluenceSource, *, sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None):
        self.name = name
        self.source = source
        auth, headers = _authentication(name, source)
        self._http = SourceHTTP(f"{source.url}/rest/api/", auth=auth, headers=headers, sleep=sleep,
                                transport=transport)
        self.calls: Calls = self._http.calls
        self._emails: dict[str, str | None] = {}  # "accountId:…" / "username:…" -> e-mail, None if not shown
        self._attachments: dict[str, _Attachment] = {}

    # -- the Connector protocol

    def listing(self) -> Iterator[Listed]:
        self._emails.clear()
        self._attachments.clear()
        for key in self.source.spaces:
            try:
                yield from self._list_space(key)
            except HTTPFailed as exc:
                raise SourceError(self._problem(f"listing space {key}", exc)) from exc
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise SourceError(f"source {self.name}: unexpected answer while listing space {key}: "
                                  f"{type(exc).__name__}: {exc}") from exc

    def changes(self, cursor: str | None) -> None:
        return None  # no change feed: the listing runs on every sync

    def start_cursor(self) -> None:
        return None

    def fetch(self, listed: Listed) -> Fetched:
        try:
            if self._is_attachment(listed.id):
                return self._fetch_attachment(listed)
            return self._fetch_page(listed)
        except HTTPFailed as exc:
            if exc.status == 401:
                raise SourceError(self._problem("fetching", exc)) from exc
            raise DocumentError(_document_problem(exc)) from exc
        except (ValueError, AttributeError, TypeError) as exc:  # not the JSON a content answer is
            raise DocumentError(f"unexpected answer from Confluence: {type(exc).__name__}: {exc}") from exc

    def check(self) -> list[tuple[str, str]]:
        try:
            self._http.get_json("space", params={"limit": 1}, kind="space")
        except HTTPFailed as exc:
            return [("fail", self._problem(self.source.url, exc))]
        except SourceError as exc:
            return [("fail", str(exc))]
        except ValueError:  # a login page or proxy, not the REST API
            return [("fail", f"{self.source.url}: the answer is not Confluence's REST API "
                             "(on Cloud the url ends in /wiki)")]
        findings = [("ok", f"{self.source.url}: credentials accepted")]
        for key in self.source.spaces:
            try:
                access = self._space_access(key)
            except SourceError as exc:
                findings.append(("fail", str(exc)))
                continue
            except ValueError:
                findings.append(("fail", f"space {key}: the answer is not Confluence's REST API"))
                continue
            if access.unreadable:
                findings.append(("warn", f"space {key}: {access.unreadable}; its documents would not be indexed"))
            else:
                findings.append(("ok", f"space {key}: found, its permissions readable"))
        return findings

    def close(self) -> None:
        self._http.close()

    # -- listing

    def _list_space(self, key: str) -> Iterator[Listed]:
        access = self._space_access(key)
        pages = {str(page["id"]): page for page in self._search(f"space={_cql_string(key)} and type=page",
                                                                 _PAGE_EXPAND)}
        restrictions = _Restrictions(pages, own=self._read_restriction, alone=self._content_restriction)
        listed_pages: dict[str, Listed] = {}
        for page in pages.values():
            if self._excluded(page):
                continue
            listed = self._listed_page(page, access, restrictions)
            listed_pages[listed.id] = listed
            yield listed
        if self.source.attachments:
            for attachment in self._search(f"space={_cql_string(key)} and type=attachment", _ATTACHMENT_EXPAND):
                found = self._listed_attachment(attachment, listed_pages)
                if found is not None:
                    yield found

    def _space_access(self, key: str) -> _SpaceAccess:
        """The space's view permission as a grant; SourceError when the space cannot be seen at all."""
        path = f"space/{quote(key, safe='')}"
        try:
            space = self._http.get_json(path, params={"expand": "permissions"}, kind="space")
        except HTTPFailed as exc:
            if exc.status != 403:
                raise SourceError(self._problem(f"space {key}", exc)) from exc
            # Its permissions may be what is refused: the space itself must still be visible, or
            # its listing would come back empty and read as every page deleted.
            try:
                self._http.get_json(path, kind="space")
            except HTTPFailed as again:
                raise SourceError(self._problem(f"space {key}", again)) from again
            return _SpaceAccess(None, "the space's permissions cannot be read (HTTP 403)")
        permissions = space.get("permissions") if isinstance(space, dict) else None
        if not isinstance(permissions, list):
            return _SpaceAccess(None, "the space's permissions are not shown to the sync's account")
        reads = [p for p in permissions if isinstance(p, dict) and _is_space_read(p)]
        if not reads:
            return _SpaceAccess(None, "the space's permissions show no view permission")
        users: list[Json] = []
        groups: list[Json] = []
        for permission in reads:
            subjects = permission.get("subjects") or {}
            users += _results(subjects.get("user"))
            groups += _results(subjects.get("group"))
        anonymous = any(p.get("anonymousAccess") is True for p in reads)
        return _SpaceAccess(self._grant(users, groups, everyone=anonymous))

    def _search(self, cql: str, expand: str) -> Iterator[Json]:
        """Every result of a CQL search: Cloud pages by `_links.next`, Data Center by start and limit."""
        params: dict[str, Any] = {"cql": cql, "expand": expand, "limit": PAGE_LIMIT, "start": 0}
        followed: set[str] = set()
        while True:
            answer = self._http.get_json("content/search", params=params, kind="list")
            results = answer.get("results") if isinstance(answer, dict) else None
            if not isinstance(results, list):
                raise SourceError(f"source {self.name}: a content search answered without results")
            yield from results
            if not results:
                return
            if self.source.deployment == "cloud":
                link = (answer.get("_links") or {}).get("next")
                if not link:
                    return
                if link in followed:
                    raise SourceError(f"source {self.name}: the search's next page repeats itself: {link}")
                followed.add(link)
                params = _next_params(link, params)
            else:
                # The server may serve fewer than asked for; its answer says how many a full page has.
                served = int(answer.get("limit") or params["limit"])
                if len(results) < served:
                    return
                params = {**params, "start": int(answer.get("start", params["start"])) + len(results)}

    def _excluded(self, page: Json) -> bool:
        if not self.source.exclude_labels:
            return False
        excluded = {label.lower() for label in self.source.exclude_labels}
        labels = _results((page.get("metadata") or {}).get("labels"))
        return any(str(label.get("name", "")).lower() in excluded for label in labels)

    def _listed_page(self, page: Json, access: _SpaceAccess, restrictions: _Restrictions) -> Listed:
        ancestors = [a for a in page.get("ancestors") or [] if isinstance(a, dict)]
        base = Listed(id=str(page["id"]), version=_version(page), title=str(page.get("title") or ""), grants=(),
                      path=tuple(str(a.get("title") or "") for a in ancestors))
        if access.grant is None:
            return dataclasses.replace(base, unreadable=access.unreadable or "the space's permissions cannot be read")
        try:
            layers = [restrictions.of(ancestor) for ancestor in ancestors] + [restrictions.own(page)]
        except _Unreadable as exc:
            return dataclasses.replace(base, unreadable=exc.reason)
        return dataclasses.replace(base, grants=(access.grant, *(g for g in layers if g is not None)))

    def _listed_attachment(self, attachment: Json, pages: Mapping[str, Listed]) -> Listed | None:
        """A PDF or Word attachment of a listed page, with that page's grants; None for any other."""
        filename = str(attachment.get("title") or "")
        suffix = _document_suffix(filename, _media_type(attachment))
        container = attachment.get("container") or {}
        page = pages.get(str(container.get("id", "")))
        if suffix is None or page is None:
            return None  # another kind of file, or on a page not synced (excluded, a blog post)
        download = (attachment.get("_links") or {}).get("download")
        if not download:
            return None
        listed = Listed(id=str(attachment["id"]), version=_version(attachment), title=filename,
                        grants=page.grants, path=(*page.path, page.title), unreadable=page.unreadable)
        self._attachments[listed.id] = _Attachment(str(download), suffix, _stand(attachment))
        return listed

    # -- who may read

    def _grant(self, users: list[Json], groups: list[Json], *, everyone: bool = False) -> Grant:
        emails: set[str] = set()
        unnamed = 0
        for user in users:
            email = self._email(user)
            if email:
                emails.add(email)
            else:
                unnamed += 1
        names = {str(g["name"]).lower() for g in groups if g.get("name")}
        everyone = everyone or any(self.source.groups.get(name) == EVERYONE for name in names)
        return Grant(everyone=everyone, users=frozenset(emails), groups=frozenset(names), unnamed=unnamed)

    def _email(self, user: Json) -> str | None:
        """The user's e-mail address: as shown, else looked up once per listing; None if it stays hidden."""
        shown = str(user.get("email") or "").strip().lower()
        if shown:
            return shown
        field = "accountId" if self.source.deployment == "cloud" else "username"
        ident = str(user.get(field) or "")
        if not ident:
            return None
        cached = f"{field}:{ident}"
        if cached not in self._emails:
            try:
                found = self._http.get_json("user", params={field: ident}, kind="user")
            except HTTPFailed:
                found = {}  # a user deleted or not visible: unnamed, which only narrows
            email = str(found.get("email") or "").strip().lower() if isinstance(found, dict) else ""
            self._emails[cached] = email or None
        return self._emails[cached]

    def _read_restriction(self, content: Json) -> Grant | None:
        """The content's own view restriction, None if it has none; _Unreadable if it was not in the answer."""
        restrictions = ((content.get("restrictions") or {}).get("read") or {}).get("restrictions")
        if not isinstance(restrictions, dict) or "user" not in restrictions or "group" not in restrictions:
            raise _Unreadable(f"the view restrictions of '{content.get('title') or content.get('id')}' "
                              "were not in Confluence's answer")
        users, groups = _results(restrictions.get("user")), _results(restrictions.get("group"))
        if not users and not groups:
            return None
        return self._grant(users, groups)

    def _content_restriction(self, content_id: str, title: str) -> Grant | None:
        """The view restriction of content not in the listing (a folder above pages, say), asked for alone."""
        try:
            content = self._http.get_json(f"content/{quote(content_id, safe='')}",
                                          params={"expand": _READ_RESTRICTIONS}, kind="restriction")
        except HTTPFailed as exc:
            raise _Unreadable(f"the view restrictions of '{title}' above it cannot be read "
                              f"(HTTP {exc.status})") from exc
        return self._read_restriction(content)

    # -- fetching

    def _is_attachment(self, document_id: str) -> bool:
        return document_id in self._attachments or document_id.startswith("att")

    def _fetch_page(self, listed: Listed) -> Fetched:
        content = self._http.get_json(f"content/{quote(listed.id, safe='')}", params={"expand": _FETCH_EXPAND},
                                      kind="page")
        storage = ((content.get("body") or {}).get("storage") or {}).get("value")
        if not isinstance(storage, str):
            raise DocumentError("Confluence's answer has no body in storage format")
        title = str(content.get("title") or listed.title)
        return Fetched(id=listed.id, title=title, suffix=".html", data=storage_to_html(storage, title).encode(),
                       url=self._web_link(content), stand=_stand(content), path=listed.path)

    def _fetch_attachment(self, listed: Listed) -> Fetched:
        attachment = self._attachments.get(listed.id) or self._attachment_of(listed)
        data = self._http.get_bytes(self._on_wiki(attachment.download), kind="attachment",
                                    max_bytes=MAX_ATTACHMENT_BYTES)
        return Fetched(id=listed.id, title=listed.title, suffix=attachment.suffix, data=data,
                       url=self._on_wiki(attachment.download), stand=attachment.stand, path=listed.path)

    def _attachment_of(self, listed: Listed) -> _Attachment:
        """An attachment not seen by this connector's listing: asked for alone."""
        content = self._http.get_json(f"content/{quote(listed.id, safe='')}",
                                      params={"expand": _ATTACHMENT_EXPAND}, kind="attachment")
        suffix = _document_suffix(str(content.get("title") or listed.title), _media_type(content))
        download = (content.get("_links") or {}).get("download")
        if suffix is None or not download:
            raise DocumentError("not a PDF or Word attachment with a download link")
        return _Attachment(str(download), suffix, _stand(content))

    def _on_wiki(self, link: str) -> str:
        """A link of the wiki's own as an absolute URL; a link elsewhere is refused (it would get our credentials)."""
        if link.startswith("/") and not link.startswith("//"):
            return self.source.url + link
        if link.startswith(self.source.url + "/"):
            return link
        raise DocumentError(f"its download link points outside the wiki: {link[:200]}")

    def _web_link(self, content: Json) -> str | None:
        links = content.get("_links") or {}
        webui = links.get("webui")
        if not webui:
            return None
        if urlsplit(webui).scheme:
            return str(webui)
        return str(links.get("base") or self.source.url).rstrip("/") + str(webui)

    def _problem(self, doing: str, exc: HTTPFailed) -> str:
        if exc.status == 401:
            return f"source {self.name}: credentials refused (HTTP 401)"
        if exc.status == 404:
            return f"source {self.name}: {doing}: not found (HTTP 404)"
        if exc.status == 403:
            return f"source {self.name}: {doing}: not allowed for the sync's account (HTTP 403)"
        return f"source {self.name}: {doing}: {exc}"


class _Restrictions:
    """The view restrictions of a space's pages, each worked out once however many pages lie below it.

    `own` reads a restriction from a listed page, `alone` asks for the restriction of an ancestor that is
    not in the listing (content id, title).
    """

    def __init__(self, pages: Mapping[str, Json], *, own: Callable[[Json], Grant | None],
                 alone: Callable[[str, str], Grant | None]):
        self._pages = pages
        self._read_own = own
        self._read_alone = alone
        self._known: dict[str, Grant | None | _Unreadable] = {}

    def own(self, page: Json) -> Grant | None:
        return self._remembered(str(page["id"]), lambda: self._read_own(page))

    def of(self, ancestor: Json) -> Grant | None:
        ancestor_id = str(ancestor["id"])
        page = self._pages.get(ancestor_id)
        if page is not None:
            return self.own(page)
        title = str(ancestor.get("title") or ancestor_id)
        return self._remembered(ancestor_id, lambda: self._read_alone(ancestor_id, title))

    def _remembered(self, content_id: str, read: Callable[[], Grant | None]) -> Grant | None:
        if content_id not in self._known:
            try:
                self._known[content_id] = read()
            except _Unreadable as exc:
                self._known[content_id] = exc
        known = self._known[content_id]
        if isinstance(known, _Unreadable):
            raise known
        return known


def _authentication(name: str, source: ConfluenceSource) -> tuple[httpx.Auth | None, dict[str, str] | None]:
    """Cloud: HTTP Basic with the account's e-mail and API token; Data Center: its personal access token."""
    credentials = source.credentials
    if source.deployment == "cloud":
        email = _required(secret(credentials.email, name), "email", name)
        token = _required(secret(credentials.api_token, name), "api_token", name)
        return httpx.BasicAuth(email, token), None
    pat = _required(secret(credentials.token, name), "token", name)
    return None, {"Authorization": f"Bearer {pat}"}


def _required(value: str | None, field: str, name: str) -> str:
    if not value:
        raise SourceError(f"source {name}: credentials.{field} is not given")
    return value


def _cql_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _next_params(link: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The query of a `_links.next`, with what the first call asked for where the link leaves it out."""
    following: dict[str, Any] = dict(parse_qsl(urlsplit(link).query, keep_blank_values=True))
    for name in ("cql", "expand", "limit"):
        following.setdefault(name, params[name])
    return following


def _results(value: object) -> list[Json]:
    """The `results` of a Confluence collection ({"results": [...], "size": n}), or []."""
    results = value.get("results") if isinstance(value, dict) else None
    return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []


def _is_space_read(permission: Json) -> bool:
    operation = permission.get("operation") or {}
    return operation.get("operation") == "read" and operation.get("targetType") == "space"


def _version(content: Json) -> str:
    version = content.get("version") or {}
    if version.get("number") is not None:
        return str(version["number"])
    # Without a number, the time of its last change still tells a change apart.
    return str(version.get("when") or ((content.get("history") or {}).get("lastUpdated") or {}).get("when") or "")


def _stand(content: Json) -> str | None:
    """YYYY-MM-DD of the content's last change."""
    when = (content.get("version") or {}).get("when") or (
        ((content.get("history") or {}).get("lastUpdated") or {}).get("when"))
    found = _DAY.match(str(when or ""))
    return found.group(0) if found else None


def _media_type(attachment: Json) -> str:
    return str((attachment.get("extensions") or {}).get("mediaType")
               or (attachment.get("metadata") or {}).get("mediaType") or "")


def _document_suffix(filename: str, media_type: str) -> str | None:
    """".pdf" or ".docx" for an attachment the KB reads (by its name, else its media type), else None."""
    suffix = PurePosixPath(filename).suffix.lower()
    if suffix in _SUFFIXES:
        return suffix
    return _MEDIA_SUFFIXES.get(media_type.split(";")[0].strip().lower())


def _document_problem(exc: HTTPFailed) -> str:
    if exc.status == 404:
        return "no longer there (deleted or moved since it was listed)"
    if exc.status == 403:
        return "not readable by the sync's account (HTTP 403)"
    if exc.status == 413:
        return f"larger than {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB"
    return str(exc)
