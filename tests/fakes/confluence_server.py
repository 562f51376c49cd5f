"""A fake Confluence REST API (v1): real HTTP on 127.0.0.1, Confluence-shaped answers from memory, every call recorded.

Point the connector at `server.url` (the wiki's URL: the root plus `/wiki`, as
on Cloud). Served, under `{url}/rest/api/`:

    GET space?limit=N                        the spaces
    GET space/{key}[?expand=permissions]     a space, with its permissions in Cloud's v1 shape
    GET content/search?cql=…&expand=…        CQL search, paginated (see below)
    GET content/{id}?expand=…                a page or an attachment
    GET user?accountId=… | ?username=…       a user (404 if unknown)

and `{url}/download/attachments/{page id}/{file name}`: an attachment's bytes.

The CQL understood is what the connector sends, `space="KEY" and type=page`
(or `type=attachment`), and date filters `lastmodified >= "yyyy-MM-dd HH:mm"`
(also >, <, <=; a date alone works too), joined by `and`; anything else
answers 400 as Confluence does. `expand` is honoured per field (version,
ancestors, restrictions.read.restrictions.user / .group, metadata.labels,
history.lastUpdated, body.storage, container, space): what was not asked
for is not in the answer.

Pagination: at most `max_limit` results a call, whatever `limit` asks, and
the answer's `limit` says how many were served. On Cloud (`deployment="cloud"`)
a further page is in `_links.next` (with an opaque `cursor`); on Data Center
there is no next link: the client moves `start` on.

Auth: Cloud takes HTTP Basic with `email` and `api_token`, Data Center
`Authorization: Bearer <pat>`; anything else answers 401.

Who may read: a space's read permission names groups, users and anonymous
access; `hide_permissions(key)` leaves the permissions out of the answer,
`hide_permissions(key, "forbidden")` answers 403 to asking for them. A page's
view restriction names users (by account) and groups. A user's e-mail address
is shown everywhere (`email_shown="always"`), only by `GET user`
(`"lookup"`), or never (`"never"`).

Scripted failures, taken in order by the calls whose path (after the wiki's
context, e.g. "/rest/api/content/search") starts with the prefix:

    server.fail_next("/rest/api/content/search", 429, retry_after=7)
    server.fail_next("/rest/api/space/", 503, times=2)

Calls are recorded (`server.calls(prefix)`): method, path, query, status, auth scheme.

The store is indexed by space (pages and attachments in creation order), so
that 10,000 pages list in pages of `max_limit` without rescanning the space
for each page of results.
"""

from __future__ import annotations

import base64
import itertools
import json
import mimetypes
import re
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit

from tests.fakes.base import QuietHandler, ThreadedFake, send_body

API = "/rest/api/"
DOWNLOAD = "/download/attachments/"
# Where the fake's clock starts: each page created or edited without a time is a minute later than the last.
EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
EmailShown = Literal["always", "lookup", "never"]
_READ_SPACE = {"operation": "read", "targetType": "space"}
_CLAUSE = re.compile(r'\s*([A-Za-z]+)\s*(>=|<=|=|>|<)\s*("(?:[^"\\]|\\.)*"|[^\s"()]+)\s*')
_AND = re.compile(r"and\b", re.IGNORECASE)


@dataclass
class User:
    account_id: str
    email: str | None = None
    username: str | None = None  # Data Center's name for a user
    display_name: str = ""
    email_shown: EmailShown = "always"


@dataclass
class Space:
    key: str
    name: str
    groups: list[str] = field(default_factory=list)  # may view the space
    users: list[str] = field(default_factory=list)  # account ids that may view the space
    anonymous: bool = False
    permissions: Literal["shown", "absent", "forbidden"] = "shown"


@dataclass
class Page:
    id: str
    space: str
    title: str
    parent: str | None
    body: str
    version: int
    when: datetime
    labels: list[str] = field(default_factory=list)
    restrict_users: list[str] = field(default_factory=list)  # account ids: a view restriction
    restrict_groups: list[str] = field(default_factory=list)


@dataclass
class Attachment:
    id: str
    page: str
    filename: str
    data: bytes
    media_type: str
    version: int
    when: datetime


@dataclass(frozen=True)
class Call:
    method: str
    path: str  # after the wiki's context: "/rest/api/content/search", "/download/attachments/…"
    query: dict[str, str]
    status: int
    auth: str  # "basic", "bearer" or "" (the scheme the call carried)


@dataclass
class _Failure:
    prefix: str
    status: int
    retry_after: float | None
    times: int


@dataclass(frozen=True)
class Query:
    """A parsed CQL query."""

    space: str | None
    type: str | None
    modified: tuple[tuple[str, datetime], ...] = ()  # (operator, time)


class CQLError(ValueError):
    pass


class FakeConfluence(ThreadedFake):
    thread_name = "fake-confluence"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 deployment: Literal["cloud", "data_center"] = "cloud", email: str = "sync@example.com",
                 api_token: str = "api-token", pat: str = "pat-token", context: str = "/wiki", max_limit: int = 100):
        self.deployment = deployment
        self.email = email
        self.api_token = api_token
        self.pat = pat
        self.context = context.rstrip("/")
        self.max_limit = max_limit
        self.spaces: dict[str, Space] = {}
        self.pages: dict[str, Page] = {}
        self.attachments: dict[str, Attachment] = {}
        self.users: dict[str, User] = {}
        # Per space, ids in creation order (a dict as an ordered set: removal is O(1)).
        self._space_pages: dict[str, dict[str, None]] = {}
        self._space_attachments: dict[str, dict[str, None]] = {}
        self._children: dict[str | None, dict[str, None]] = {}
        # Search results per query, dropped on any change: paging through a large space stays linear.
        self._results: dict[Query, list[str]] = {}
        self._ids = itertools.count(1001)
        self._clock = itertools.count(1)
        self._failures: list[_Failure] = []
        self._calls: list[Call] = []
        self._lock = threading.RLock()
        self._bind(host, port, _handler_for(self))

    @property
    def url(self) -> str:
        """The wiki's URL, as sources.yml names it."""
        return self.root + self.context

    # -- building the wiki

    def add_user(self, account_id: str, email: str | None = None, *, username: str | None = None,
                 display_name: str = "", email_shown: EmailShown = "always") -> User:
        with self._lock:
            user = User(account_id, email, username or account_id, display_name or account_id, email_shown)
            self.users[account_id] = user
            return user

    def add_space(self, key: str, name: str | None = None, *, groups: Iterable[str] = (), users: Iterable[str] = (),
                  anonymous: bool = False) -> Space:
        with self._lock:
            space = Space(key, name or key, list(groups), list(users), anonymous)
            self.spaces[key] = space
            self._space_pages.setdefault(key, {})
            self._space_attachments.setdefault(key, {})
            self._changed()
            return space

    def hide_permissions(self, key: str, how: Literal["absent", "forbidden", "shown"] = "absent") -> None:
        with self._lock:
            self.spaces[key].permissions = how

    def add_page(self, space: str, title: str, *, parent: str | None = None, body: str = "", labels: Iterable[str] = (),
                 users: Iterable[str] = (), groups: Iterable[str] = (), when: datetime | str | None = None) -> str:
        """A new page (version 1); its id."""
        with self._lock:
            page_id = str(next(self._ids))
            page = Page(page_id, space, title, parent, body or f"<p>{title}</p>", 1, self._time(when),
                        list(labels), list(users), list(groups))
            self.pages[page_id] = page
            self._space_pages[space][page_id] = None
            self._children.setdefault(parent, {})[page_id] = None
            self._changed()
            return page_id

    def edit_page(self, page_id: str, *, body: str | None = None, title: str | None = None,
                  labels: Iterable[str] | None = None, when: datetime | str | None = None) -> int:
        """Changes a page as an edit does: its version goes up. Returns the new version."""
        with self._lock:
            page = self.pages[page_id]
            page.body = body if body is not None else page.body
            page.title = title if title is not None else page.title
            page.labels = list(labels) if labels is not None else page.labels
            page.version += 1
            page.when = self._time(when)
            self._changed()
            return page.version

    def restrict(self, page_id: str, *, users: Iterable[str] = (), groups: Iterable[str] = ()) -> None:
        """Sets the page's view restriction (none given: lifts it). As in Confluence, the version stays."""
        with self._lock:
            page = self.pages[page_id]
            page.restrict_users, page.restrict_groups = list(users), list(groups)
            self._changed()

    def move_page(self, page_id: str, *, parent: str | None = None, space: str | None = None) -> None:
        """Puts the page under `parent` (None: the space's top), into `space` with its descendants if given."""
        with self._lock:
            page = self.pages[page_id]
            self._children[page.parent].pop(page_id, None)
            page.parent = parent
            self._children.setdefault(parent, {})[page_id] = None
            if space is not None and space != page.space:
                for moved in [page_id, *self._descendants(page_id)]:
                    self._into_space(self.pages[moved], space)
            self._changed()

    def delete_page(self, page_id: str) -> None:
        """Deletes the page and its attachments; its children move up to its parent, as in Confluence."""
        with self._lock:
            page = self.pages.pop(page_id)
            self._space_pages[page.space].pop(page_id, None)
            self._children[page.parent].pop(page_id, None)
            for child in list(self._children.pop(page_id, {})):
                self.pages[child].parent = page.parent
                self._children.setdefault(page.parent, {})[child] = None
            for attachment_id in [a.id for a in self.attachments.values() if a.page == page_id]:
                self.delete_attachment(attachment_id)
            self._changed()

    def add_attachment(self, page_id: str, filename: str, data: bytes, *, media_type: str | None = None,
                       when: datetime | str | None = None) -> str:
        """A file attached to the page; its id ("att…")."""
        with self._lock:
            attachment_id = f"att{next(self._ids)}"
            guessed = mimetypes.guess_type(filename)[0] or "application/octet-stream"
            self.attachments[attachment_id] = Attachment(attachment_id, page_id, filename, data,
                                                         media_type or guessed, 1, self._time(when))
            self._space_attachments[self.pages[page_id].space][attachment_id] = None
            self._changed()
            return attachment_id

    def delete_attachment(self, attachment_id: str) -> None:
        with self._lock:
            attachment = self.attachments.pop(attachment_id)
            for ids in self._space_attachments.values():
                ids.pop(attachment.id, None)
            self._changed()

    # -- scripting and inspecting

    def fail_next(self, path_prefix: str, status: int, *, retry_after: float | None = None, times: int = 1) -> None:
        """The next `times` calls whose path starts with `path_prefix` answer `status` (with Retry-After)."""
        with self._lock:
            self._failures.append(_Failure(path_prefix, status, retry_after, times))

    def calls(self, path_prefix: str = "") -> list[Call]:
        with self._lock:
            return [c for c in self._calls if c.path.startswith(path_prefix)]

    def web_link(self, page_id: str) -> str:
        page = self.pages[page_id]
        return f"/spaces/{page.space}/pages/{page.id}/{quote_plus(page.title)}"

    # -- serving

    def handle(self, method: str, path: str, query: dict[str, str], authorization: str
               ) -> tuple[int, bytes, str, dict[str, str]]:
        """One request: (status, body, content type, headers). Runs on the server's threads."""
        with self._lock:
            status, body, content_type, headers = self._answer(method, path, query, authorization)
            self._calls.append(Call(method, path, query, status, authorization.split(" ")[0].lower()))
            return status, body, content_type, headers

    def _answer(self, method: str, path: str, query: dict[str, str], authorization: str
                ) -> tuple[int, bytes, str, dict[str, str]]:
        failure = self._failure_for(path)
        if failure is not None:
            headers = {"Retry-After": _seconds(failure.retry_after)} if failure.retry_after is not None else {}
            return failure.status, _json({"statusCode": failure.status, "message": "scripted failure"}), \
                "application/json", headers
        if not self._authorized(authorization):
            return 401, _json({"statusCode": 401, "message": "Client must be authenticated"}), "application/json", {
                "WWW-Authenticate": 'Basic realm="Protected"'}
        if method != "GET":
            return 405, _json({"statusCode": 405, "message": "Method not allowed"}), "application/json", {}
        if path.startswith(DOWNLOAD):
            return self._download(path[len(DOWNLOAD):])
        if not path.startswith(API):
            return _error(404, "Not found")
        try:
            status, payload = self._api(path[len(API):], query)
        except CQLError as exc:
            status, payload = 400, {"statusCode": 400, "message": f"Could not parse cql : {exc}"}
        return status, _json(payload), "application/json", {}

    def _failure_for(self, path: str) -> _Failure | None:
        for failure in self._failures:
            if path.startswith(failure.prefix):
                failure.times -= 1
                if failure.times <= 0:
                    self._failures.remove(failure)
                return failure
        return None

    def _authorized(self, authorization: str) -> bool:
        scheme, _, value = authorization.partition(" ")
        if self.deployment == "cloud":
            expected = base64.b64encode(f"{self.email}:{self.api_token}".encode()).decode()
            return scheme.lower() == "basic" and value.strip() == expected
        return scheme.lower() == "bearer" and value.strip() == self.pat

    def _api(self, route: str, query: dict[str, str]) -> tuple[int, Any]:
        expand = frozenset(filter(None, query.get("expand", "").split(",")))
        if route == "space":
            return 200, self._space_list(query)
        if route.startswith("space/"):
            return self._space(unquote(route[len("space/"):]), expand)
        if route == "content/search":
            return 200, self._search(query, expand)
        if route.startswith("content/"):
            return self._content(unquote(route[len("content/"):]), expand)
        if route == "user":
            return self._user(query)
        return 404, {"statusCode": 404, "message": f"No route for {route}"}

    def _space_list(self, query: dict[str, str]) -> Any:
        start, limit = int(query.get("start", 0)), min(int(query.get("limit", 25)), self.max_limit)
        spaces = list(self.spaces.values())[start:start + limit]
        return {"results": [self._space_json(s, frozenset()) for s in spaces], "start": start, "limit": limit,
                "size": len(spaces), "_links": self._links()}

    def _space(self, key: str, expand: frozenset[str]) -> tuple[int, Any]:
        space = self.spaces.get(key)
        if space is None:
            return 404, {"statusCode": 404, "message": f"No space with key : {key}"}
        if "permissions" in expand and space.permissions == "forbidden":
            return 403, {"statusCode": 403, "message": "Not permitted to view the space's permissions"}
        return 200, self._space_json(space, expand)

    def _space_json(self, space: Space, expand: frozenset[str]) -> dict[str, Any]:
        shown: dict[str, Any] = {"id": zlib.crc32(space.key.encode()), "key": space.key, "name": space.name,
                                 "type": "global", "status": "current",
                                 "_links": {"webui": f"/spaces/{space.key}", **self._links()}}
        if "permissions" in expand and space.permissions == "shown":
            shown["permissions"] = self._permissions(space)
        return shown

    def _permissions(self, space: Space) -> list[dict[str, Any]]:
        """Cloud's v1 shape: one entry per subject and operation; the space's editors' entries beside the reads."""
        entries: list[dict[str, Any]] = []
        for group in space.groups:
            subjects = {"group": {"results": [{"type": "group", "name": group, "id": f"g-{group}"}], "size": 1}}
            entries.append(_permission(subjects, _READ_SPACE))
            entries.append(_permission(subjects, {"operation": "create", "targetType": "page"}))
        for account_id in space.users:
            subjects = {"user": {"results": [self._user_json(account_id, lookup=False)], "size": 1}}
            entries.append(_permission(subjects, _READ_SPACE))
        if space.anonymous:
            entries.append({**_permission({}, _READ_SPACE), "anonymousAccess": True})
        return entries

    def _search(self, query: dict[str, str], expand: frozenset[str]) -> Any:
        cql = query.get("cql", "")
        parsed = parse_cql(cql)
        ids = self._matching(parsed)
        start = _cursor_start(query.get("cursor")) if query.get("cursor") else int(query.get("start", 0))
        limit = max(1, min(int(query.get("limit", 25)), self.max_limit))
        chosen = ids[start:start + limit]
        results = [self._content_json(i, expand) for i in chosen]
        links = self._links()
        answer: dict[str, Any] = {"results": results, "start": start, "limit": limit, "size": len(results),
                                  "cqlQuery": cql, "_links": links}
        more = start + len(chosen) < len(ids)
        if self.deployment == "cloud":
            if more:
                following = {**query, "start": str(start + limit), "cursor": _cursor(start + limit)}
                links["next"] = f"{API.rstrip('/')}/content/search?{urlencode(following)}"
        else:
            answer["totalSize"] = len(ids)
        return answer

    def _matching(self, query: Query) -> list[str]:
        """Ids of the content the query finds, in creation order; remembered until the next change."""
        cached = self._results.get(query)
        if cached is not None:
            return cached
        spaces = [query.space] if query.space is not None else list(self.spaces)
        ids: list[str] = []
        for key in spaces:
            if query.type in (None, "page"):
                ids += self._space_pages.get(key, {})
            if query.type in (None, "attachment"):
                ids += self._space_attachments.get(key, {})
        if query.modified:
            ids = [i for i in ids if all(_compare(self._when(i), op, t) for op, t in query.modified)]
        self._results[query] = ids
        return ids

    def _content(self, content_id: str, expand: frozenset[str]) -> tuple[int, Any]:
        if content_id not in self.pages and content_id not in self.attachments:
            return 404, {"statusCode": 404, "message": f"No content found with id : {content_id}"}
        shown = self._content_json(content_id, expand)
        shown["_links"].update(self._links())
        return 200, shown

    def _content_json(self, content_id: str, expand: frozenset[str]) -> dict[str, Any]:
        if content_id in self.attachments:
            return self._attachment_json(self.attachments[content_id], expand)
        page = self.pages[content_id]
        shown: dict[str, Any] = {"id": page.id, "type": "page", "status": "current", "title": page.title,
                                 "_links": {"webui": self.web_link(page.id), "self": f"{API}content/{page.id}",
                                            "tinyui": f"/x/{page.id}"}}
        if "version" in expand:
            shown["version"] = {"number": page.version, "when": _iso(page.when)}
        if "ancestors" in expand:
            shown["ancestors"] = [{"id": a.id, "type": "page", "status": "current", "title": a.title}
                                  for a in self._ancestors(page)]
        restrictions = {}
        if "restrictions.read.restrictions.user" in expand:
            users = [self._user_json(u, lookup=False) for u in page.restrict_users]
            restrictions["user"] = {"results": users, "start": 0, "limit": 200, "size": len(users)}
        if "restrictions.read.restrictions.group" in expand:
            groups = [{"type": "group", "name": g, "id": f"g-{g}"} for g in page.restrict_groups]
            restrictions["group"] = {"results": groups, "start": 0, "limit": 200, "size": len(groups)}
        if restrictions:
            shown["restrictions"] = {"read": {"operation": "read", "restrictions": restrictions}}
        if "metadata.labels" in expand:
            labels = [{"prefix": "global", "name": name, "id": f"l-{name}"} for name in page.labels]
            shown["metadata"] = {"labels": {"results": labels, "start": 0, "limit": 200, "size": len(labels)}}
        if "history.lastUpdated" in expand:
            shown["history"] = {"latest": True, "lastUpdated": {"number": page.version, "when": _iso(page.when)}}
        if "body.storage" in expand:
            shown["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        if "space" in expand:
            shown["space"] = {"key": page.space, "name": self.spaces[page.space].name}
        return shown

    def _attachment_json(self, attachment: Attachment, expand: frozenset[str]) -> dict[str, Any]:
        page = self.pages[attachment.page]
        download = f"{DOWNLOAD}{page.id}/{quote(attachment.filename)}?version={attachment.version}&api=v2"
        shown: dict[str, Any] = {
            "id": attachment.id, "type": "attachment", "status": "current", "title": attachment.filename,
            "metadata": {"mediaType": attachment.media_type},
            "extensions": {"mediaType": attachment.media_type, "fileSize": len(attachment.data)},
            "_links": {"download": download, "webui": f"{self.web_link(page.id)}?preview=/{page.id}/{attachment.id}"},
        }
        if "version" in expand:
            shown["version"] = {"number": attachment.version, "when": _iso(attachment.when)}
        if "container" in expand:
            shown["container"] = {"id": page.id, "type": "page", "status": "current", "title": page.title}
        return shown

    def _user(self, query: dict[str, str]) -> tuple[int, Any]:
        if self.deployment == "cloud":
            user = self.users.get(query.get("accountId", ""))
        else:
            user = next((u for u in self.users.values() if u.username == query.get("username")), None)
        if user is None:
            return 404, {"statusCode": 404, "message": "No user found"}
        return 200, self._user_json(user.account_id, lookup=True)

    def _user_json(self, account_id: str, *, lookup: bool) -> dict[str, Any]:
        """A user as restrictions and permissions show one (`lookup`: as `GET user` does)."""
        user = self.users.get(account_id) or User(account_id)
        shown = user.email_shown == "always" or (lookup and user.email_shown == "lookup")
        email = user.email if shown and user.email else ""
        if self.deployment == "cloud":
            return {"type": "known", "accountId": user.account_id, "accountType": "atlassian", "email": email,
                    "publicName": user.display_name, "displayName": user.display_name}
        return {"type": "known", "username": user.username, "userKey": f"key-{user.account_id}",
                "displayName": user.display_name, **({"email": email} if email else {})}

    def _download(self, rest: str) -> tuple[int, bytes, str, dict[str, str]]:
        page_id, _, filename = rest.partition("/")
        for attachment in self.attachments.values():
            if attachment.page == page_id and attachment.filename == unquote(filename):
                return 200, attachment.data, attachment.media_type, {}
        return _error(404, "No such attachment")

    def _links(self) -> dict[str, str]:
        return {"base": self.url, "context": self.context}

    # -- the store's bookkeeping

    def _changed(self) -> None:
        self._results.clear()

    def _time(self, when: datetime | str | None) -> datetime:
        if when is None:
            return EPOCH + timedelta(minutes=next(self._clock))
        if isinstance(when, str):
            parsed = datetime.fromisoformat(when)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        return when

    def _when(self, content_id: str) -> datetime:
        found = self.pages.get(content_id) or self.attachments[content_id]
        return found.when

    def _ancestors(self, page: Page) -> list[Page]:
        chain: list[Page] = []
        parent = page.parent
        while parent is not None and parent in self.pages and len(chain) < 1000:
            chain.append(self.pages[parent])
            parent = self.pages[parent].parent
        return chain[::-1]

    def _descendants(self, page_id: str) -> list[str]:
        found: list[str] = []
        todo = [page_id]
        while todo:
            children = list(self._children.get(todo.pop(), {}))
            found += children
            todo += children
        return found

    def _into_space(self, page: Page, space: str) -> None:
        self._space_pages[page.space].pop(page.id, None)
        page.space = space
        self._space_pages[space][page.id] = None
        for attachment in self.attachments.values():
            if attachment.page == page.id:
                for ids in self._space_attachments.values():
                    ids.pop(attachment.id, None)
                self._space_attachments[space][attachment.id] = None


def parse_cql(cql: str) -> Query:
    """`space = "KEY"`, `type = page|attachment` and `lastmodified` comparisons, joined by `and`."""
    space: str | None = None
    kind: str | None = None
    modified: list[tuple[str, datetime]] = []
    position = 0
    while True:
        clause = _CLAUSE.match(cql, position)
        if clause is None:
            raise CQLError(f"expected a clause at {position}: {cql[position:position + 40]!r}")
        name, operator, raw = clause.group(1).lower(), clause.group(2), clause.group(3)
        value = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\") if raw.startswith('"') else raw
        if name == "space" and operator == "=":
            space = value
        elif name == "type" and operator == "=":
            kind = value.lower()
        elif name == "lastmodified" and operator != "=":
            modified.append((operator, _cql_time(value)))
        else:
            raise CQLError(f"unsupported clause {clause.group(0).strip()!r}")
        position = clause.end()
        if position >= len(cql):
            return Query(space, kind, tuple(modified))
        joined = _AND.match(cql, position)
        if joined is None:
            raise CQLError(f"expected 'and' at {position}: {cql[position:position + 40]!r}")
        position = joined.end()


def _cql_time(value: str) -> datetime:
    for pattern in ("%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M", "%Y-%m-%d", "%Y/%m/%d"):
        try:
            return datetime.strptime(value, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise CQLError(f"not a date: {value!r}")


def _compare(when: datetime, operator: str, limit: datetime) -> bool:
    # CQL compares to the minute.
    when = when.replace(second=0, microsecond=0)
    return {">=": when >= limit, ">": when > limit, "<=": when <= limit, "<": when < limit}[operator]


def _permission(subjects: dict[str, Any], operation: dict[str, str]) -> dict[str, Any]:
    return {"subjects": subjects, "operation": operation, "anonymousAccess": False, "unlicensedAccess": False}


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _cursor(start: int) -> str:
    return base64.urlsafe_b64encode(f"start:{start}".encode()).decode()


def _cursor_start(cursor: str | None) -> int:
    try:
        return int(base64.urlsafe_b64decode((cursor or "").encode()).decode().removeprefix("start:"))
    except ValueError:
        return 0


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _error(status: int, message: str) -> tuple[int, bytes, str, dict[str, str]]:
    return status, _json({"statusCode": status, "message": message}), "application/json", {}


def _handler_for(server: FakeConfluence) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def _route(self, method: str) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            parts = urlsplit(self.path)
            path = parts.path  # still percent-encoded: a file name may hold a '/'
            if not path.startswith(server.context + "/"):
                send_body(self, 404, _json({"statusCode": 404, "message": "Not found"}), "application/json")
                return
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            status, body, content_type, headers = server.handle(
                method, path[len(server.context):], query, self.headers.get("Authorization", ""))
            send_body(self, status, body, content_type, headers)

    return Handler
