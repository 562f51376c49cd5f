"""A fake Google Drive v3 API and its OAuth token endpoint: real HTTP on 127.0.0.1, served from memory.

What it serves (the calls kb_index/sources/drive.py makes, shaped as Google answers them):

    POST /token                                   a service account's JWT-bearer grant
    GET  /drive/v3/files?q='<id>' in parents ...  files.list, paged by pageToken
    GET  /drive/v3/files/<id>                     files.get (alt=media: the content)
    GET  /drive/v3/files/<id>/export              files.export (Google Docs only)
    GET  /drive/v3/files/<id>/permissions         permissions.list, paged
    GET  /drive/v3/drives/<id>                    drives.get
    GET  /drive/v3/changes/startPageToken         changes.getStartPageToken
    GET  /drive/v3/changes?pageToken=...          changes.list, paged

The token endpoint checks what Google checks: the assertion's RS256 signature
against the key the service account was registered with (`service_account()`),
its audience (Google's token endpoint), expiry and `scope`, and a `sub` (domain-wide delegation) only when
that subject was allowed (`allow_subject()`). It hands out a bearer token that
expires after `token_lifetime` seconds; every Drive route wants a live one.

As in Drive, `fields` selects what an answer carries, items of shared drives
are seen only with supportsAllDrives / includeItemsFromAllDrives, and their
files.list entries carry no `permissions` (permissions.list gives them, with
the drive's members). A file made with `permissions_hidden=True` is one the
service account cannot share: no `permissions` in files.list, and 403
insufficientFilePermissions from permissions.list.

Every change a helper makes (add, edit, rename, delete, trash, move, share,
unshare, rename_drive) is logged, and changes.list replays the log from a page token, each entry with
the file as it is now. Trouble is scripted by path prefix:

    drive.fail_next("/drive/v3/files", 429, retry_after=2)
    drive.fail_next("/drive/v3/changes", 403, reason="rateLimitExceeded", times=2)

In-process:

    with FakeDrive() as drive:
        key = drive.service_account()           # the key's JSON, token_uri pointing here
        folder = drive.add_folder("Policies")
        drive.add_doc("Leave", folder, "<p>30 days</p>", permissions=[user("ann@example.com")])
        ...
        drive.calls("/drive/v3/files")          # what was asked, with the answer's status
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.fakes.base import QuietHandler, ThreadedFake, send_body

FOLDER = "application/vnd.google-apps.folder"
GOOGLE_DOC = "application/vnd.google-apps.document"
GOOGLE_SHEET = "application/vnd.google-apps.spreadsheet"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
DRIVE_READONLY = "https://www.googleapis.com/auth/drive.readonly"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# The audience Google wants in a service account's assertion, whatever token_uri the key names.
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
TOKEN_PATH = "/token"
DRIVE_PREFIX = "/drive/v3/"
DEFAULT_OWNER = "owner@example.com"
# Drive's limits: files.list takes up to 1000 a page, permissions.list up to 100.
FILES_PAGE_MAX = 1000
PERMISSIONS_PAGE_MAX = 100
CHANGES_PAGE_MAX = 1000
_START = datetime(2024, 1, 1, tzinfo=UTC)
_CLOCK_SKEW_S = 300  # how far a JWT's iat may lie in the future, as Google allows


# -- permissions, as Drive writes them


def user(email: str, role: str = "reader") -> dict[str, Any]:
    return {"type": "user", "role": role, "emailAddress": email}


def group(email: str, role: str = "reader") -> dict[str, Any]:
    return {"type": "group", "role": role, "emailAddress": email}


def domain(name: str, role: str = "reader") -> dict[str, Any]:
    return {"type": "domain", "role": role, "domain": name}


def anyone(role: str = "reader") -> dict[str, Any]:
    return {"type": "anyone", "role": role}


# -- keys for tests


@functools.lru_cache(maxsize=4)
def rsa_key(slot: int = 0) -> rsa.RSAPrivateKey:
    """An RSA key for a test service account; `slot` tells keys apart, each made once per process (slow-ish)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def service_account_info(token_uri: str, *, key: rsa.RSAPrivateKey | None = None,
                         email: str = "citebot-sync@example-project.iam.gserviceaccount.com") -> dict[str, str]:
    """A service account key's JSON, as the Cloud console downloads it, with its private key in PEM."""
    key = key or rsa_key()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return {
        "type": "service_account",
        "project_id": "example-project",
        "private_key_id": hashlib.sha1(pem.encode()).hexdigest(),
        "private_key": pem,
        "client_email": email,
        "client_id": "100000000000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "universe_domain": "googleapis.com",
    }


# -- the fake's state


@dataclass
class Item:
    """A file or folder."""

    id: str
    name: str
    mime: str
    parents: list[str]
    modified: datetime
    version: int = 1
    content: bytes = b""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    drive_id: str | None = None  # the shared drive it lives in
    trashed: bool = False
    visible: bool = True  # False: not shared with the service account (files.get answers 404)
    permissions_hidden: bool = False  # the service account cannot share it: its permissions are not shown


@dataclass
class SharedDrive:
    id: str
    name: str
    members: list[dict[str, Any]]  # permissions every item of the drive inherits


@dataclass(frozen=True)
class Call:
    method: str  # GET, POST
    path: str
    params: dict[str, str]  # query and form fields (the last value of each)
    headers: dict[str, str]  # lower-case names
    status: int
    claims: dict[str, Any] | None = None  # a token call: the assertion's claims
    at: float = field(default_factory=time.time)

    @property
    def bearer(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth[7:] if auth.lower().startswith("bearer ") else None


@dataclass
class Failure:
    path_prefix: str
    status: int
    retry_after: float | None
    reason: str | None
    times: int


@dataclass(frozen=True)
class _Answer:
    status: int
    body: bytes
    content_type: str = "application/json; charset=UTF-8"
    headers: dict[str, str] = field(default_factory=dict)


class DriveError(Exception):
    """An answer in Drive's error shape, raised by a route."""

    def __init__(self, status: int, reason: str, message: str, location: str | None = None):
        super().__init__(message)
        self.status, self.reason, self.message, self.location = status, reason, message, location

    def answer(self) -> _Answer:
        detail: dict[str, Any] = {"domain": "global", "reason": self.reason, "message": self.message}
        if self.location:
            detail.update(locationType="parameter", location=self.location)
        body = {"error": {"code": self.status, "message": self.message, "errors": [detail]}}
        return _json(self.status, body)


class FakeDrive(ThreadedFake):
    thread_name = "fake-drive"

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, token_lifetime: int = 3600):
        self.token_lifetime = token_lifetime
        self.changes_page = CHANGES_PAGE_MAX  # changes.list: at most this many a page (a test lowers it)
        self._lock = threading.Lock()
        self._items: dict[str, Item] = {}
        self._children: dict[str, dict[str, None]] = {}  # parent id -> child ids, in insertion order
        self._drives: dict[str, SharedDrive] = {}
        self._log: list[tuple[str, str]] = []  # ("file" | "drive", id): what changed, oldest first
        self._keys: dict[str, rsa.RSAPublicKey] = {}  # client_email -> its public key
        self._subjects: set[str] = set()  # users the service account may act as
        self._tokens: dict[str, float] = {}  # bearer -> expiry (epoch seconds)
        self._failures: list[Failure] = []
        self._calls: list[Call] = []
        self._ids = itertools.count(1)
        self._clock = _START
        self._bind(host, port, _handler_for(self))

    @property
    def token_uri(self) -> str:
        return self.root + TOKEN_PATH

    # -- credentials

    def service_account(self, *, key: rsa.RSAPrivateKey | None = None,
                        email: str = "citebot-sync@example-project.iam.gserviceaccount.com") -> dict[str, str]:
        """Registers a service account (its public key) and returns its key's JSON, token_uri pointing here."""
        info = service_account_info(self.token_uri, key=key, email=email)
        self.register_key(email, key or rsa_key())
        return info

    def register_key(self, email: str, key: rsa.RSAPrivateKey) -> None:
        with self._lock:
            self._keys[email] = key.public_key()

    def allow_subject(self, email: str) -> None:
        """Domain-wide delegation: the service account may act as this user."""
        with self._lock:
            self._subjects.add(email)

    def expire_tokens(self) -> None:
        """Every bearer handed out so far is refused from now on (401), as after its expiry."""
        with self._lock:
            self._tokens.clear()

    # -- content

    def add_folder(self, name: str, parent: str | None = None, *, id: str | None = None,
                   visible: bool = True) -> str:
        return self._add(Item(id or self._new_id("folder"), name, FOLDER, _parents(parent), self._tick(),
                              visible=visible))

    def add_drive(self, name: str, *, id: str | None = None, members: list[dict[str, Any]] | None = None) -> str:
        """A shared drive; its id is also the id of its root folder."""
        drive_id = id or self._new_id("drive")
        with self._lock:
            self._drives[drive_id] = SharedDrive(drive_id, name, [self._with_id(p) for p in members or []])
        return drive_id

    def add_doc(self, name: str, parent: str, html: str = "<p>text</p>", **kwargs: Any) -> str:
        """A Google Doc; its HTML is what files.export gives."""
        return self.add_file(name, parent, html.encode(), GOOGLE_DOC, **kwargs)

    def add_file(self, name: str, parent: str, data: bytes, mime: str, *, id: str | None = None,
                 permissions: list[dict[str, Any]] | None = None, permissions_hidden: bool = False,
                 modified: datetime | None = None) -> str:
        """A file in `parent` (a folder or a shared drive). Without `permissions`: owned by DEFAULT_OWNER
        (in My Drive) or no permissions of its own (in a shared drive: the drive's members read it)."""
        drive_id = self._drive_of(parent)
        if permissions is None:
            permissions = [] if drive_id else [user(DEFAULT_OWNER, "owner")]
        item = Item(id or self._new_id("file"), name, mime, [parent], modified or self._tick(), content=data,
                    permissions=[self._with_id(p) for p in permissions], permissions_hidden=permissions_hidden)
        return self._add(item)

    def bulk(self, parent: str, count: int, *, mime: str = PDF, prefix: str = "doc") -> list[str]:
        """`count` small files in `parent`, readable by anyone: a large tree without a helper call each."""
        return [self.add_file(f"{prefix}-{n:05d}.pdf", parent, b"%PDF-1.4 " + str(n).encode(), mime,
                              permissions=[anyone()]) for n in range(count)]

    def item(self, item_id: str) -> Item:
        with self._lock:
            return self._items[item_id]

    # -- changes (each one logged for changes.list)

    def edit(self, item_id: str, data: bytes | str | None = None) -> None:
        """New content (HTML for a Google Doc): a new modifiedTime and version."""
        with self._lock:
            item = self._items[item_id]
            if data is not None:
                item.content = data.encode() if isinstance(data, str) else data
            item.modified = self._tick_locked()
            self._changed(item)

    def rename(self, item_id: str, name: str) -> None:
        with self._lock:
            item = self._items[item_id]
            item.name = name
            item.modified = self._tick_locked()
            self._changed(item)

    def trash(self, item_id: str) -> None:
        """To the trash: the item and (implicitly, as Drive does) what is under it."""
        with self._lock:
            for item in self._subtree(item_id):
                item.trashed = True
                self._changed(item)

    def delete(self, item_id: str) -> None:
        """Deleted for good, with everything under it: each one a `removed` change."""
        with self._lock:
            for item in reversed(self._subtree(item_id)):
                del self._items[item.id]
                for parent in item.parents:
                    self._children.get(parent, {}).pop(item.id, None)
                self._children.pop(item.id, None)
                self._log.append(("file", item.id))

    def move(self, item_id: str, new_parent: str) -> None:
        with self._lock:
            item = self._items[item_id]
            for parent in item.parents:
                self._children.get(parent, {}).pop(item_id, None)
            item.parents = [new_parent]
            self._children.setdefault(new_parent, {})[item_id] = None
            drive_id = self._drive_of_locked(new_parent)
            for moved in self._subtree(item_id):
                moved.drive_id = drive_id
            self._changed(item)

    def share(self, item_id: str, permission: dict[str, Any]) -> str:
        """A new permission (user(), group(), domain(), anyone()); its id. Sharing leaves modifiedTime alone."""
        with self._lock:
            item = self._items[item_id]
            granted = self._with_id(permission)
            item.permissions.append(granted)
            self._changed(item)
            return str(granted["id"])

    def unshare(self, item_id: str, who: str) -> None:
        """Takes away the permission with this id, e-mail address, domain or type ("anyone")."""
        with self._lock:
            item = self._items[item_id]
            kept = [p for p in item.permissions if who not in (p["id"], p.get("emailAddress"), p.get("domain"),
                                                               p["type"])]
            if len(kept) == len(item.permissions):
                raise KeyError(f"{item_id} has no permission for {who}")
            item.permissions = kept
            self._changed(item)

    def rename_drive(self, drive_id: str, name: str) -> None:
        with self._lock:
            self._drives[drive_id].name = name
            self._log.append(("drive", drive_id))

    # -- scripted trouble and the record

    def fail_next(self, path_prefix: str, status: int, *, retry_after: float | None = None,
                  reason: str | None = None, times: int = 1) -> None:
        """The next `times` calls under `path_prefix` answer `status` in Drive's error shape (reason e.g.
        rateLimitExceeded, defaulting to what Drive says for that status), with Retry-After if given."""
        with self._lock:
            self._failures.append(Failure(path_prefix, status, retry_after, reason, times))

    def calls(self, path_prefix: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if path_prefix is None or c.path.startswith(path_prefix)]

    # -- internals (the `_locked` ones, and the routes, run with the lock held)

    def _new_id(self, kind: str) -> str:
        return f"{kind}{next(self._ids):05d}"

    def _tick(self) -> datetime:
        with self._lock:
            return self._tick_locked()

    def _tick_locked(self) -> datetime:
        self._clock += timedelta(minutes=1)
        return self._clock

    def _with_id(self, permission: dict[str, Any]) -> dict[str, Any]:
        return {"id": f"perm{next(self._ids):05d}", "kind": "drive#permission", **permission}

    def _add(self, item: Item) -> str:
        """A new item: a change too, as in Drive (a file created after a cursor is in its changes)."""
        with self._lock:
            if item.id in self._items or item.id in self._drives:
                raise ValueError(f"id {item.id} is taken")
            item.drive_id = self._drive_of_locked(item.parents[0]) if item.parents else None
            self._items[item.id] = item
            for parent in item.parents:
                self._children.setdefault(parent, {})[item.id] = None
            self._log.append(("file", item.id))
        return item.id

    def _drive_of(self, parent: str) -> str | None:
        with self._lock:
            return self._drive_of_locked(parent)

    def _drive_of_locked(self, parent: str) -> str | None:
        if parent in self._drives:
            return parent
        owner = self._items.get(parent)
        return owner.drive_id if owner else None

    def _changed(self, item: Item) -> None:
        item.version += 1  # Drive's version counts every change, sharing ones too
        self._log.append(("file", item.id))

    def _subtree(self, item_id: str) -> list[Item]:
        """The item and everything under it, parents before children."""
        out, queue = [], [item_id]
        while queue:
            current = self._items[queue.pop(0)]
            out.append(current)
            queue.extend(self._children.get(current.id, {}))
        return out

    def _record(self, call: Call) -> None:
        self._calls.append(call)

    def _scripted(self, path: str) -> _Answer | None:
        for failure in self._failures:
            if path.startswith(failure.path_prefix) and failure.times > 0:
                failure.times -= 1
                self._failures = [f for f in self._failures if f.times > 0]
                reason = failure.reason or _REASONS.get(failure.status, "backendError")
                answer = DriveError(failure.status, reason, reason).answer()
                if failure.retry_after is not None:
                    answer.headers["Retry-After"] = _seconds(failure.retry_after)
                return answer
        return None

    # -- the token endpoint

    def _token(self, form: dict[str, str]) -> tuple[_Answer, dict[str, Any] | None]:
        if form.get("grant_type") != JWT_BEARER:
            return _oauth_error(400, "unsupported_grant_type", "Invalid grant_type."), None
        try:
            claims = self._verified_claims(form.get("assertion", ""))
        except _Refused as refused:
            return _oauth_error(refused.status, refused.error, refused.description), refused.claims
        token = f"ya29.fake-{next(self._ids):05d}"
        self._tokens[token] = time.time() + self.token_lifetime
        return _json(200, {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"}), claims

    def _verified_claims(self, assertion: str) -> dict[str, Any]:
        try:
            head_b64, body_b64, sig_b64 = assertion.split(".")
            header = json.loads(_b64decode(head_b64))
            claims = json.loads(_b64decode(body_b64))
            signature = _b64decode(sig_b64)
        except (ValueError, TypeError):
            raise _Refused(400, "invalid_grant", "Invalid JWT: not a signed JWT.") from None
        key = self._keys.get(str(claims.get("iss")))
        if header.get("alg") != "RS256" or key is None:
            raise _Refused(400, "invalid_grant", "Invalid JWT Signature.", claims)
        try:
            key.verify(signature, f"{head_b64}.{body_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise _Refused(400, "invalid_grant", "Invalid JWT Signature.", claims) from None
        now = time.time()
        if claims.get("aud") != GOOGLE_TOKEN_AUDIENCE:
            raise _Refused(400, "invalid_grant", "Invalid JWT: audience is not the token URI.", claims)
        if not (claims.get("iat", 0) - _CLOCK_SKEW_S <= now < claims.get("exp", 0)):
            raise _Refused(400, "invalid_grant", "Invalid JWT: Token must be a short-lived token.", claims)
        if DRIVE_READONLY not in str(claims.get("scope", "")).split():
            raise _Refused(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.", claims)
        if "sub" in claims and claims["sub"] not in self._subjects:
            raise _Refused(401, "unauthorized_client",
                           "Client is unauthorized to retrieve access tokens using this method.", claims)
        return claims

    def _authorized(self, bearer: str | None) -> bool:
        return bearer is not None and self._tokens.get(bearer, 0) > time.time()

    # -- Drive routes

    def _drive(self, path: str, params: dict[str, str]) -> _Answer:
        route = path[len(DRIVE_PREFIX):].split("/")
        match route:
            case ["files"]:
                return _json(200, _select(self._files_list(params), params.get("fields")))
            case ["files", file_id] if params.get("alt") == "media":
                return self._download(unquote(file_id), params)
            case ["files", file_id]:
                body = self._file_json(self._get(unquote(file_id), params), shared_listing=False)
                return _json(200, _select(body, params.get("fields"), default="kind,id,name,mimeType"))
            case ["files", file_id, "export"]:
                return self._export(unquote(file_id), params)
            case ["files", file_id, "permissions"]:
                return _json(200, _select(self._permissions(unquote(file_id), params), params.get("fields")))
            case ["drives", drive_id]:
                drive = self._drives.get(unquote(drive_id))
                if drive is None:
                    raise DriveError(404, "notFound", f"Shared drive not found: {drive_id}", "driveId")
                return _json(200, _select({"kind": "drive#drive", "id": drive.id, "name": drive.name},
                                          params.get("fields")))
            case ["changes", "startPageToken"]:
                return _json(200, {"kind": "drive#startPageToken", "startPageToken": str(len(self._log) + 1)})
            case ["changes"]:
                return _json(200, _select(self._changes(params), params.get("fields")))
        raise DriveError(404, "notFound", f"No route {path}")

    def _get(self, item_id: str, params: dict[str, str]) -> Item:
        """The item, as the service account may see it: shared drives' only with supportsAllDrives."""
        if item_id in self._drives:  # a shared drive's root folder
            drive = self._drives[item_id]
            return Item(drive.id, drive.name, FOLDER, [], _START, drive_id=drive.id)
        item = self._items.get(item_id)
        if item is None or not item.visible or item.drive_id and not _true(params, "supportsAllDrives"):
            raise DriveError(404, "notFound", f"File not found: {item_id}.", "fileId")
        return item

    def _files_list(self, params: dict[str, str]) -> dict[str, Any]:
        parent, trashed = _parse_query(params.get("q", ""))
        drive_id = self._drive_of_locked(parent)
        if drive_id and not (_true(params, "supportsAllDrives") and _true(params, "includeItemsFromAllDrives")):
            children: list[Item] = []  # Drive leaves shared drives' items out unless asked for them
        else:
            if params.get("corpora") == "drive" and params.get("driveId") != drive_id:
                raise DriveError(400, "invalid", "The driveId does not match the corpus.", "driveId")
            children = [self._items[c] for c in self._children.get(parent, {})]
            children = [c for c in children if c.visible and (trashed is None or c.trashed == trashed)]
        size = min(int(params.get("pageSize") or 100), FILES_PAGE_MAX)
        start = _offset(params.get("pageToken"))
        page = children[start:start + size]
        body: dict[str, Any] = {"kind": "drive#fileList", "incompleteSearch": False,
                                "files": [self._file_json(c, shared_listing=True) for c in page]}
        if start + size < len(children):
            body["nextPageToken"] = _token_of(start + size)
        return body

    def _file_json(self, item: Item, *, shared_listing: bool) -> dict[str, Any]:
        """The file resource. Drive shows `permissions` only to those who can share the file, and never
        in files.list for items of a shared drive; those are permissions.list's to give."""
        body: dict[str, Any] = {
            "kind": "drive#file", "id": item.id, "name": item.name, "mimeType": item.mime,
            "modifiedTime": _rfc3339(item.modified), "version": str(item.version), "parents": list(item.parents),
            "trashed": item.trashed, "webViewLink": _link(item),
        }
        if item.mime not in (FOLDER, GOOGLE_DOC, GOOGLE_SHEET):
            body["md5Checksum"] = hashlib.md5(item.content).hexdigest()
            body["size"] = str(len(item.content))
        if item.drive_id:
            body["driveId"] = item.drive_id
        hide = item.permissions_hidden or (item.drive_id is not None and shared_listing)
        if not hide:
            body["permissions"] = [dict(p) for p in self._all_permissions(item)]
        return body

    def _all_permissions(self, item: Item) -> list[dict[str, Any]]:
        inherited = self._drives[item.drive_id].members if item.drive_id else []
        return [*inherited, *item.permissions]

    def _permissions(self, item_id: str, params: dict[str, str]) -> dict[str, Any]:
        item = self._get(item_id, params)
        if item.permissions_hidden:
            raise DriveError(403, "insufficientFilePermissions",
                             "The user does not have sufficient permissions for this file.")
        permissions = self._all_permissions(item)
        size = min(int(params.get("pageSize") or PERMISSIONS_PAGE_MAX), PERMISSIONS_PAGE_MAX)
        start = _offset(params.get("pageToken"))
        body: dict[str, Any] = {"kind": "drive#permissionList",
                                "permissions": [dict(p) for p in permissions[start:start + size]]}
        if start + size < len(permissions):
            body["nextPageToken"] = _token_of(start + size)
        return body

    def _download(self, item_id: str, params: dict[str, str]) -> _Answer:
        item = self._get(item_id, params)
        if item.mime.startswith("application/vnd.google-apps."):
            raise DriveError(403, "fileNotDownloadable",
                             "Only files with binary content can be downloaded. Use Export with Docs Editors files.")
        return _Answer(200, item.content, item.mime)

    def _export(self, item_id: str, params: dict[str, str]) -> _Answer:
        item = self._get(item_id, params)
        if item.mime != GOOGLE_DOC:
            raise DriveError(403, "fileNotExportable", "Export only supports Docs Editors files.")
        wanted = params.get("mimeType", "")
        if wanted == "text/html":
            return _Answer(200, item.content, "text/html")
        if wanted == "text/plain":
            return _Answer(200, re.sub(rb"<[^>]+>", b"", item.content), "text/plain")
        raise DriveError(400, "badRequest", f"Unsupported export mimeType: {wanted}", "mimeType")

    def _changes(self, params: dict[str, str]) -> dict[str, Any]:
        """The log from the page token on, each entry with the file as it is now (or `removed`)."""
        token = params.get("pageToken", "")
        if not token.isdigit() or not 1 <= int(token) <= len(self._log) + 1:
            raise DriveError(400, "invalid", "Invalid Value", "pageToken")
        all_drives = _true(params, "supportsAllDrives") and _true(params, "includeItemsFromAllDrives")
        size = min(int(params.get("pageSize") or 100), self.changes_page)
        start = int(token) - 1
        entries = self._log[start:start + size]
        changes = [c for kind, item_id in entries if (c := self._change_json(kind, item_id, all_drives))]
        body: dict[str, Any] = {"kind": "drive#changeList", "changes": changes}
        if start + size < len(self._log):
            body["nextPageToken"] = str(start + size + 1)
        else:
            body["newStartPageToken"] = str(len(self._log) + 1)
        return body

    def _change_json(self, kind: str, item_id: str, all_drives: bool) -> dict[str, Any] | None:
        if kind == "drive":
            if not all_drives:
                return None
            drive = self._drives[item_id]
            return {"kind": "drive#change", "changeType": "drive", "driveId": drive.id, "removed": False,
                    "drive": {"id": drive.id, "name": drive.name}}
        item = self._items.get(item_id)
        if item is None:
            return {"kind": "drive#change", "changeType": "file", "fileId": item_id, "removed": True}
        if item.drive_id and not all_drives or not item.visible:
            return None
        return {"kind": "drive#change", "changeType": "file", "fileId": item_id, "removed": False,
                "time": _rfc3339(item.modified), "file": self._file_json(item, shared_listing=True)}


_REASONS = {429: "rateLimitExceeded", 403: "rateLimitExceeded", 500: "backendError", 502: "backendError",
            503: "backendError", 404: "notFound", 401: "authError"}


class _Refused(Exception):
    def __init__(self, status: int, error: str, description: str, claims: dict[str, Any] | None = None):
        super().__init__(description)
        self.status, self.error, self.description, self.claims = status, error, description, claims


# -- helpers


def _parents(parent: str | None) -> list[str]:
    return [parent] if parent else []


def _true(params: dict[str, str], name: str) -> bool:
    return params.get(name, "").lower() == "true"


_QUERY = re.compile(r"\s*'([^']+)'\s+in\s+parents(?:\s+and\s+trashed\s*=\s*(true|false))?\s*")


def _parse_query(q: str) -> tuple[str, bool | None]:
    """The forms of `q` this fake understands: "'<id>' in parents [and trashed = false]"."""
    match = _QUERY.fullmatch(q)
    if match is None:
        raise DriveError(400, "invalid", f"Invalid Value: q={q!r}", "q")
    trashed = match.group(2)
    return match.group(1), None if trashed is None else trashed == "true"


def _offset(token: str | None) -> int:
    if not token:
        return 0
    if not token.startswith("page-") or not token[5:].isdigit():
        raise DriveError(400, "invalid", "Invalid Value", "pageToken")
    return int(token[5:])


def _token_of(offset: int) -> str:
    return f"page-{offset}"


def _rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _link(item: Item) -> str:
    if item.mime == FOLDER:
        return f"https://drive.google.com/drive/folders/{item.id}"
    if item.mime == GOOGLE_DOC:
        return f"https://docs.google.com/document/d/{item.id}/edit?usp=drivesdk"
    return f"https://drive.google.com/file/d/{item.id}/view?usp=drivesdk"


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _b64decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _json(status: int, body: Any) -> _Answer:
    return _Answer(status, json.dumps(body).encode())


def _oauth_error(status: int, error: str, description: str) -> _Answer:
    return _json(status, {"error": error, "error_description": description})


def _parse_fields(text: str) -> dict[str, Any]:
    """"a,b(c,d(e))" -> {"a": None, "b": {"c": None, "d": {"e": None}}}."""
    tree: dict[str, Any] = {}
    stack = [tree]
    name = ""
    for char in text + ",":
        if char in ",()":
            if name.strip():
                stack[-1][name.strip()] = None
            if char == "(":
                sub: dict[str, Any] = {}
                stack[-1][name.strip()] = sub
                stack.append(sub)
            elif char == ")":
                stack.pop()
            name = ""
        else:
            name += char
    return tree


def _select(value: Any, fields: str | None, default: str | None = None) -> Any:
    """What `fields` asks for, as Drive answers partial responses; without it, `default` (or everything)."""
    wanted = fields or default
    if not wanted or wanted == "*":
        return value
    return _pick(value, _parse_fields(wanted))


def _pick(value: Any, tree: dict[str, Any] | None) -> Any:
    if tree is None:
        return value
    if isinstance(value, list):
        return [_pick(v, tree) for v in value]
    if isinstance(value, dict):
        return {k: _pick(value[k], sub) for k, sub in tree.items() if k in value}
    return value


def _handler_for(server: FakeDrive) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def _route(self, verb: str) -> None:
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            if raw and verb == "POST":
                params.update({k: v[-1] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()})
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server._lock:
                answer, claims = self._answer(verb, parts.path, params, headers)
                server._record(Call(verb, parts.path, params, headers, answer.status, claims))
            send_body(self, answer.status, answer.body, answer.content_type, answer.headers)

        def _answer(self, verb: str, path: str, params: dict[str, str],
                    headers: dict[str, str]) -> tuple[_Answer, dict[str, Any] | None]:
            if verb == "POST" and path == TOKEN_PATH:
                return server._token(params)
            if verb != "GET" or not path.startswith(DRIVE_PREFIX):
                return DriveError(404, "notFound", f"No route {verb} {path}").answer(), None
            if (scripted := server._scripted(path)) is not None:
                return scripted, None
            auth = headers.get("authorization", "")
            if not server._authorized(auth[7:] if auth.lower().startswith("bearer ") else None):
                return DriveError(401, "authError", "Request had invalid authentication credentials.").answer(), None
            try:
                return server._drive(path, params), None
            except DriveError as error:
                return error.answer(), None

    return Handler
