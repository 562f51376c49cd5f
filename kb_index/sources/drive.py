"""Google Drive as a source: the Docs, PDFs and Word files under configured folders and shared drives.

Drive API v3, read-only, as a service account (google-auth signs the JWT; the
token request goes through httpx like every other call, so no second HTTP
library is needed). With domain-wide delegation the account acts as
`credentials.subject`; without it, it sees what was shared with it.

What is in scope: each configured folder and shared drive, walked
breadth-first, sub-folders included, minus `exclude_paths` (globs on the path
inside that folder or drive; a glob that matches a folder leaves out all of
it). Another configured folder met on the way is left to its own walk, so a
document's path (`Listed.path`) always starts with the name of its nearest
configured folder or shared drive, then the folders down to it.

Who may read a file is its sharing (one `Grant`): users and groups by address,
a domain permission counts as everyone when the domain is one of `domains`,
"anyone with the link" is everyone. Drive leaves `permissions` out of
files.list for files in shared drives and for files the account cannot share;
those are asked of permissions.list, and a file whose sharing cannot be read
at all is listed with no grants (and the reason): the sync does not index it.

Changes come from Drive's change feed. A changed file is placed by walking
its parents up to a configured folder; one that reaches none has left the
scope and counts as removed. A changed folder (moved, renamed, trashed) may
change the scope and the path of everything under it, so it makes the sync
list everything instead.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import google.auth.exceptions
import google.auth.transport
import httpx
from google.oauth2 import service_account

from kb_index.sources.config import EVERYONE, DriveSource, secret
from kb_index.sources.http import USER_AGENT, HTTPFailed, SourceHTTP, SourceUnavailable
from kb_index.sources.model import Calls, Changes, DocumentError, Fetched, Grant, Listed, SourceError

FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# What is taken, and the converter (kb_index.formats) each goes through.
SUFFIXES = {GOOGLE_DOC: ".html", PDF: ".pdf", DOCX: ".docx"}
SCOPES = ("https://www.googleapis.com/auth/drive.readonly",)
MAX_DOWNLOAD_BYTES = 50 * 1024 * 1024
TOKEN_TIMEOUT_S = 30.0

_PERMISSION = "permissions(type,role,emailAddress,domain)"
FILE_FIELDS = f"id,name,mimeType,modifiedTime,version,md5Checksum,size,webViewLink,parents,{_PERMISSION}"
LIST_FIELDS = f"nextPageToken,files({FILE_FIELDS})"
PERMISSION_FIELDS = f"nextPageToken,{_PERMISSION}"
CHANGE_FIELDS = f"nextPageToken,newStartPageToken,changes(changeType,driveId,fileId,removed,file({FILE_FIELDS},trashed))"
_ALL_DRIVES = {"supportsAllDrives": "true"}
_REASON = re.compile(r'"reason"\s*:\s*"(\w+)"')


@dataclass(frozen=True)
class _Root:
    """A configured folder or shared drive: where paths start."""

    id: str
    name: str
    drive_id: str | None  # the shared drive it is in (a shared drive's root is the drive itself)


@dataclass(frozen=True)
class _Folder:
    name: str
    parents: tuple[str, ...]


@dataclass(frozen=True)
class _Doc:
    """What fetch needs of a file, remembered from the listing or the change feed."""

    mime: str
    link: str | None
    modified: str  # RFC 3339
    size: int | None


class DriveConnector:
    """The Connector (kb_index.sources.model) of one `google_drive` source.

    Nothing is read or asked at construction: a missing or broken key shows on the first call
    (as SourceError), so that `check()` can report it like any other finding.
    """

    def __init__(self, name: str, source: DriveSource, *, sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None):
        self.name = name
        self.source = source
        self._http = SourceHTTP(source.api_url, auth=_Bearer(self._access_token), sleep=sleep, transport=transport)
        self.calls: Calls = self._http.calls
        self._token_client = httpx.Client(transport=transport, timeout=TOKEN_TIMEOUT_S,
                                          headers={"User-Agent": USER_AGENT})
        self._token_request = _TokenRequest(self._token_client, self.calls)
        self._token_lock = threading.Lock()
        self._credentials: service_account.Credentials | None = None
        self._everyone_groups = {g for g, slack in source.groups.items() if slack == EVERYONE}
        self._domains = {d.lower() for d in source.domains}
        # Per run (listing or changes): the configured roots, and the folders looked up above changed files.
        self._roots: dict[str, _Root] | None = None
        self._folders: dict[str, _Folder | None] = {}
        # Kept across runs: fetch follows the listing that named the file.
        self._docs: dict[str, _Doc] = {}

    # -- the Connector protocol

    def listing(self) -> Iterator[Listed]:
        self._new_run()
        seen: set[str] = set()  # a file in two configured folders is listed once
        for root in self._scope().values():
            yield from self._walk(root, seen)

    def start_cursor(self) -> str | None:
        try:
            answer = self._http.get_json("drive/v3/changes/startPageToken", kind="changes", params=_ALL_DRIVES)
        except HTTPFailed as exc:
            raise self._source_error("cannot read the change feed's start", exc) from exc
        if not answer.get("startPageToken"):
            raise SourceError(f"source {self.name}: the change feed gave no start token")
        return str(answer["startPageToken"])

    def changes(self, cursor: str | None) -> Changes | None:
        if cursor is None:
            return None
        self._new_run()
        feed = self._change_feed(cursor)
        if feed is None:
            return None
        latest, new_cursor = feed
        changed: list[Listed] = []
        removed: list[str] = []
        for file_id, change in latest.items():
            file = change.get("file")
            if file is not None and file.get("mimeType") == FOLDER:
                return None  # its scope or path may have changed, and with it everything under it
            listed = None if change.get("removed") or file is None or file.get("trashed") else self._placed(file)
            if listed is None:
                removed.append(file_id)
                self._docs.pop(file_id, None)
            else:
                changed.append(listed)
        return Changes(tuple(changed), tuple(removed), new_cursor)

    def fetch(self, listed: Listed) -> Fetched:
        doc = self._doc(listed)
        suffix = SUFFIXES.get(doc.mime)
        if suffix is None:
            raise DocumentError(f"{listed.title}: {doc.mime} is not a Google Doc, PDF or Word file")
        if doc.size is not None and doc.size > MAX_DOWNLOAD_BYTES:
            raise DocumentError(f"{listed.title}: larger than {MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB")
        path, kind, params = self._content_request(listed.id, doc.mime)
        try:
            data = self._http.get_bytes(path, kind=kind, params=params, max_bytes=MAX_DOWNLOAD_BYTES)
        except HTTPFailed as exc:
            if exc.status == 401:
                raise self._source_error("Drive", exc) from exc
            raise DocumentError(f"{listed.title}: {_failure(exc)}") from exc
        return Fetched(id=listed.id, title=listed.title, suffix=suffix, data=data, url=doc.link,
                       stand=doc.modified[:10] or None, path=listed.path)

    def check(self) -> list[tuple[str, str]]:
        try:
            self._access_token(renew=False)
        except SourceError as exc:
            return [("fail", str(exc))]
        subject = self._subject()
        findings = [("ok", f"credentials accepted: {self._account()}" + (f" acting as {subject}" if subject else ""))]
        self._new_run()
        for folder_id in self.source.folders:
            findings.append(self._check_root("folder", folder_id, self._folder_root))
        for drive_id in self.source.shared_drives:
            findings.append(self._check_root("shared drive", drive_id, self._drive_root))
        return findings

    def close(self) -> None:
        self._http.close()
        self._token_client.close()

    # -- credentials

    def _access_token(self, renew: bool) -> str:
        """A live bearer token: google-auth refreshes it when it is (nearly) expired, or when `renew`."""
        with self._token_lock:
            credentials = self._service_account()
            if renew or not credentials.valid:
                self._refresh(credentials)
            return str(credentials.token)

    def _service_account(self) -> service_account.Credentials:
        if self._credentials is None:
            env = self.source.credentials.service_account
            info = _key_info(secret(env, self.name) or "", env, self.name)
            try:
                self._credentials = service_account.Credentials.from_service_account_info(
                    info, scopes=list(SCOPES), subject=self._subject())
            except (ValueError, KeyError, TypeError) as exc:
                # The library's message may quote the key's fields; only a list of missing ones is safe to show.
                why = str(exc) if "missing fields" in str(exc) else "its private_key is not a PEM RSA private key"
                raise SourceError(f"source {self.name}: the service account key in {env} is not usable: {why}") \
                    from None
        return self._credentials

    def _subject(self) -> str | None:
        return secret(self.source.credentials.subject, self.name)

    def _refresh(self, credentials: service_account.Credentials) -> None:
        try:
            credentials.refresh(self._token_request)
        except google.auth.exceptions.TransportError as exc:
            raise SourceUnavailable(f"source {self.name}: the token endpoint did not answer: {exc}") from exc
        except google.auth.exceptions.RefreshError as exc:
            message = f"source {self.name}: the service account's token was refused: {_refusal(exc)}"
            if exc.retryable:
                raise SourceUnavailable(message) from exc
            raise SourceError(message) from exc
        except google.auth.exceptions.GoogleAuthError as exc:
            raise SourceError(f"source {self.name}: no token for the service account: {exc}") from exc

    def _account(self) -> str:
        email = self._credentials.service_account_email if self._credentials else None
        return f"service account {email}" if email else "the service account"

    # -- scope

    def _new_run(self) -> None:
        """A folder renamed or moved since the last run must be read anew."""
        self._roots = None
        self._folders = {}

    def _scope(self) -> dict[str, _Root]:
        """The configured folders and shared drives by id; SourceError for one that cannot be read."""
        if self._roots is None:
            roots = {folder_id: self._folder_root(folder_id) for folder_id in self.source.folders}
            roots.update({drive_id: self._drive_root(drive_id) for drive_id in self.source.shared_drives})
            self._roots = roots
        return self._roots

    def _folder_root(self, folder_id: str) -> _Root:
        try:
            meta = self._http.get_json(f"drive/v3/files/{quote(folder_id, safe='')}", kind="get",
                                       params={"fields": "id,name,mimeType,trashed,driveId", **_ALL_DRIVES})
        except HTTPFailed as exc:
            raise self._source_error(f"folder {folder_id}", exc) from exc
        name = str(meta.get("name") or folder_id)
        if meta.get("mimeType") != FOLDER:
            raise SourceError(f"source {self.name}: {folder_id} ({name}) is not a folder")
        if meta.get("trashed"):
            # Listed as it is, it would read as every document deleted.
            raise SourceError(f"source {self.name}: folder {folder_id} ({name}) is in the trash")
        return _Root(folder_id, name, meta.get("driveId"))

    def _drive_root(self, drive_id: str) -> _Root:
        try:
            meta = self._http.get_json(f"drive/v3/drives/{quote(drive_id, safe='')}", kind="get",
                                       params={"fields": "id,name"})
        except HTTPFailed as exc:
            raise self._source_error(f"shared drive {drive_id}", exc) from exc
        return _Root(drive_id, str(meta.get("name") or drive_id), drive_id)

    def _check_root(self, what: str, root_id: str, find: Callable[[str], _Root]) -> tuple[str, str]:
        try:
            root = find(root_id)
            empty = next(self._children(root, page_size=1), None) is None
        except SourceError as exc:
            return "fail", str(exc)
        if empty:
            return "warn", f"{what} '{root.name}' ({root_id}): found, but nothing in it is visible to {self._account()}"
        return "ok", f"{what} '{root.name}' ({root_id}): found and readable"

    def _excluded(self, path: tuple[str, ...]) -> bool:
        """`path` (inside its root) is excluded when a glob matches it or a folder above it."""
        globs = self.source.exclude_paths
        return any(fnmatch.fnmatchcase("/".join(path[:depth]), glob)
                   for depth in range(1, len(path) + 1) for glob in globs)

    def _taken(self, file: Mapping[str, Any], path: tuple[str, ...]) -> bool:
        return file.get("mimeType") in SUFFIXES and not self._excluded(path)

    # -- listing

    def _walk(self, root: _Root, seen: set[str]) -> Iterator[Listed]:
        """Breadth-first from `root`: folders are walked, the files taken are yielded."""
        queue: deque[tuple[str, tuple[str, ...]]] = deque([(root.id, ())])
        walked = {root.id}
        while queue:
            folder_id, inside = queue.popleft()
            for item in self._children(root, folder_id=folder_id):
                item_id, name = str(item["id"]), str(item.get("name", ""))
                path = (*inside, name)
                if item.get("mimeType") == FOLDER:
                    if item_id not in walked and item_id not in self._scope() and not self._excluded(path):
                        walked.add(item_id)
                        queue.append((item_id, path))
                elif item_id not in seen and self._taken(item, path):
                    seen.add(item_id)
                    yield self._listed(item, (root.name, *inside))

    def _children(self, root: _Root, *, folder_id: str | None = None, page_size: int = 1000) -> Iterator[dict[str, Any]]:
        """files.list of one folder, page after page; SourceError when a page cannot be had."""
        folder_id = folder_id or root.id
        escaped = folder_id.replace("\\", "\\\\").replace("'", "\\'")
        params: dict[str, Any] = {
            "q": f"'{escaped}' in parents and trashed = false", "fields": LIST_FIELDS, "pageSize": page_size,
            "includeItemsFromAllDrives": "true", **_ALL_DRIVES,
        }
        if root.drive_id:
            params.update(corpora="drive", driveId=root.drive_id)
        while True:
            try:
                page = self._http.get_json("drive/v3/files", kind="list", params=params)
            except HTTPFailed as exc:
                raise self._source_error(f"cannot list folder {folder_id}", exc) from exc
            yield from page.get("files", [])
            if not page.get("nextPageToken"):
                return
            params["pageToken"] = page["nextPageToken"]

    def _listed(self, file: Mapping[str, Any], path: tuple[str, ...]) -> Listed:
        file_id = str(file["id"])
        self._docs[file_id] = _doc_of(file)
        grants, unreadable = self._grants(file)
        return Listed(id=file_id, version=_version(file), title=str(file.get("name", "")), grants=grants,
                      path=path, unreadable=unreadable)

    # -- permissions

    def _grants(self, file: Mapping[str, Any]) -> tuple[tuple[Grant, ...], str | None]:
        """The file's one grant, or none and why when its sharing cannot be read."""
        permissions = file.get("permissions")
        if permissions is None:
            try:
                permissions = list(self._permission_list(str(file["id"])))
            except HTTPFailed as exc:
                if exc.status == 401:
                    raise self._source_error("Drive", exc) from exc
                return (), f"its sharing cannot be read: {_failure(exc)}"
        return (self._grant(permissions),), None

    def _permission_list(self, file_id: str) -> Iterator[dict[str, Any]]:
        params: dict[str, Any] = {"fields": PERMISSION_FIELDS, "pageSize": 100, **_ALL_DRIVES}
        while True:
            page = self._http.get_json(f"drive/v3/files/{quote(file_id, safe='')}/permissions",
                                       kind="permissions", params=params)
            yield from page.get("permissions", [])
            if not page.get("nextPageToken"):
                return
            params["pageToken"] = page["nextPageToken"]

    def _grant(self, permissions: list[dict[str, Any]]) -> Grant:
        """Every role can read, so each permission adds its readers whatever its role."""
        everyone = False
        users: set[str] = set()
        groups: set[str] = set()
        unnamed = 0
        for permission in permissions:
            kind = permission.get("type")
            address = str(permission.get("emailAddress") or "").lower()
            if kind == "anyone":
                everyone = True
            elif kind == "domain":
                # Another organization's domain lets in nobody of ours.
                everyone = everyone or str(permission.get("domain") or "").lower() in self._domains
            elif kind == "user" and address:
                users.add(address)
            elif kind == "group" and address:
                groups.add(address)
                everyone = everyone or address in self._everyone_groups
            elif kind in ("user", "group"):
                unnamed += 1  # Drive hides the address of some accounts: the grant narrows, the sync reports it
        return Grant(everyone=everyone, users=frozenset(users), groups=frozenset(groups), unnamed=unnamed)

    # -- changes

    def _change_feed(self, cursor: str) -> tuple[dict[str, dict[str, Any]], str] | None:
        """The last change of each file since `cursor`, and the next cursor; None when the whole scope
        must be listed instead (the cursor is no longer accepted, or a configured shared drive changed)."""
        latest: dict[str, dict[str, Any]] = {}
        params: dict[str, Any] = {"pageToken": cursor, "pageSize": 1000, "fields": CHANGE_FIELDS,
                                  "includeItemsFromAllDrives": "true", **_ALL_DRIVES}
        while True:
            try:
                page = self._http.get_json("drive/v3/changes", kind="changes", params=params)
            except HTTPFailed as exc:
                if params["pageToken"] == cursor and exc.status in (400, 404, 410):
                    return None  # a cursor too old or from elsewhere: a full listing starts afresh
                raise self._source_error("cannot read the change feed", exc) from exc
            for change in page.get("changes", []):
                if change.get("changeType") == "drive":
                    if change.get("driveId") in self.source.shared_drives:
                        return None  # renamed (every path under it) or its membership changed
                    continue
                if file_id := change.get("fileId"):
                    latest.pop(file_id, None)  # keep the order of the last change
                    latest[file_id] = change
            if page.get("newStartPageToken"):
                return latest, str(page["newStartPageToken"])
            if not page.get("nextPageToken"):
                raise SourceError(f"source {self.name}: the change feed ended without a next cursor")
            params["pageToken"] = page["nextPageToken"]

    def _placed(self, file: Mapping[str, Any]) -> Listed | None:
        """The changed file's Listed when it is in scope now, else None."""
        found = self._locate(tuple(file.get("parents") or ()))
        if found is None:
            return None
        root, inside = found
        if not self._taken(file, (*inside, str(file.get("name", "")))):
            return None
        return self._listed(file, (root.name, *inside))

    def _locate(self, parents: tuple[str, ...]) -> tuple[_Root, tuple[str, ...]] | None:
        """The configured root above these parents and the folder names between, walking up; None at the top."""
        roots = self._scope()
        for parent in parents:
            names: list[str] = []
            current: str | None = parent
            visited: set[str] = set()
            while current is not None and current not in roots and current not in visited:
                visited.add(current)
                folder = self._folder(current)
                if folder is None:
                    current = None
                    break
                names.append(folder.name)
                # A folder with several parents is a thing of the past in Drive: the first one places it.
                current = folder.parents[0] if folder.parents else None
            if current is not None and current in roots:
                return roots[current], tuple(reversed(names))
        return None

    def _folder(self, folder_id: str) -> _Folder | None:
        """A folder's name and parents, asked once a run; None when the account cannot see it."""
        if folder_id not in self._folders:
            try:
                meta = self._http.get_json(f"drive/v3/files/{quote(folder_id, safe='')}", kind="get",
                                           params={"fields": "id,name,parents", **_ALL_DRIVES})
            except HTTPFailed as exc:
                if exc.status not in (403, 404):
                    raise self._source_error(f"cannot read folder {folder_id}", exc) from exc
                self._folders[folder_id] = None
            else:
                self._folders[folder_id] = _Folder(str(meta.get("name", "")), tuple(meta.get("parents") or ()))
        return self._folders[folder_id]

    # -- content

    def _doc(self, listed: Listed) -> _Doc:
        """What fetch needs: remembered from the run that listed the file, else read again."""
        if (doc := self._docs.get(listed.id)) is not None:
            return doc
        try:
            meta = self._http.get_json(f"drive/v3/files/{quote(listed.id, safe='')}", kind="get",
                                       params={"fields": "id,name,mimeType,modifiedTime,webViewLink,size",
                                               **_ALL_DRIVES})
        except HTTPFailed as exc:
            raise DocumentError(f"{listed.title}: {_failure(exc)}") from exc
        self._docs[listed.id] = doc = _doc_of(meta)
        return doc

    @staticmethod
    def _content_request(file_id: str, mime: str) -> tuple[str, str, dict[str, str]]:
        """A Google Doc is exported as HTML (headings and lists survive); other files are downloaded."""
        path = f"drive/v3/files/{quote(file_id, safe='')}"
        if mime == GOOGLE_DOC:
            return f"{path}/export", "export", {"mimeType": "text/html"}
        return path, "download", {"alt": "media", **_ALL_DRIVES}

    def _source_error(self, what: str, exc: HTTPFailed) -> SourceError:
        if exc.status == 404:
            return SourceError(f"source {self.name}: {what}: not found, or not shared with {self._account()}")
        if exc.status in (401, 403):
            return SourceError(f"source {self.name}: {what}: access refused to {self._account()} ({_failure(exc)})")
        return SourceError(f"source {self.name}: {what}: {_failure(exc)}")


# -- google-auth over httpx


class _Bearer(httpx.Auth):
    """`Authorization: Bearer` on every Drive call; a 401 gets one more try with a fresh token."""

    def __init__(self, token: Callable[[bool], str]):
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token(False)}"
        response = yield request
        if response.status_code == 401:
            # Revoked or expired before its time: Google says so with 401, and a new token fixes it.
            request.headers["Authorization"] = f"Bearer {self._token(True)}"
            yield request


class _TokenResponse(google.auth.transport.Response):
    def __init__(self, response: httpx.Response):
        self._response = response

    @property
    def status(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def data(self) -> bytes:
        return self._response.content


class _TokenRequest(google.auth.transport.Request):
    """google-auth's transport for its token requests, over httpx; each request counts as a "token" call."""

    def __init__(self, client: httpx.Client, calls: Calls):
        self._client = client
        self._calls = calls

    def __call__(self, url: str, method: str = "GET", body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float | None = None,
                 **kwargs: Any) -> _TokenResponse:
        self._calls.add("token")
        try:
            response = self._client.request(method, url, content=body, headers=headers,
                                            timeout=timeout or TOKEN_TIMEOUT_S)
        except httpx.HTTPError as exc:
            raise google.auth.exceptions.TransportError(f"{type(exc).__name__}: {exc}") from exc
        return _TokenResponse(response)


# -- helpers


def _key_info(value: str, env: str, source: str) -> dict[str, Any]:
    """The key's JSON from the variable: the JSON itself, or the path of its file. No message quotes the key."""
    text = value.strip()
    if not text.startswith("{"):
        try:
            text = Path(text).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise SourceError(f"source {source}: {env} is neither a service account key's JSON nor a readable "
                              f"key file ({reason})") from None
    try:
        info = json.loads(text)
    except ValueError:
        raise SourceError(f"source {source}: the service account key in {env} is not valid JSON") from None
    if not isinstance(info, dict) or info.get("type") != "service_account":
        kind = info.get("type") if isinstance(info, dict) else None
        raise SourceError(f"source {source}: {env} holds no service account key (type: {kind!s:.40})")
    return info


def _refusal(exc: google.auth.exceptions.RefreshError) -> str:
    """The token endpoint's error and what usually causes it."""
    text = str(exc.args[0]) if exc.args else str(exc)
    if text.startswith("invalid_grant"):
        return f"{text} (a key deleted or revoked, or this machine's clock far off?)"
    if text.startswith("unauthorized_client"):
        return f"{text} (is domain-wide delegation granted to this client for the drive.readonly scope?)"
    return text


def _failure(exc: HTTPFailed) -> str:
    reason = _REASON.search(exc.detail or "")
    return f"HTTP {exc.status}" + (f" {reason.group(1)}" if reason else "")


def _version(file: Mapping[str, Any]) -> str:
    """modifiedTime, and what changes with the content even when modifiedTime is set back: the MD5 of a
    stored file; Google Docs have none, and their version number stands in (it also counts sharing changes:
    such a Doc is fetched once more, which is harmless)."""
    content = f"md5:{file['md5Checksum']}" if file.get("md5Checksum") else f"v{file.get('version', '')}"
    return f"{file.get('modifiedTime', '')}/{content}"


def _doc_of(file: Mapping[str, Any]) -> _Doc:
    size = file.get("size")
    return _Doc(mime=str(file.get("mimeType", "")), link=file.get("webViewLink"),
                modified=str(file.get("modifiedTime", "")), size=int(size) if size else None)
