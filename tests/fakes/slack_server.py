"""A fake Slack Web API: real HTTP on 127.0.0.1, Slack-shaped answers, every call recorded.

Point slack_sdk's client (or plain httpx) at `server.url`, which ends in `/api/`
like Slack's own base URL. Bodies may be JSON (slack_sdk sends chat.postMessage,
chat.update and views.* as JSON), form-encoded, or query parameters (GET
conversations.replies, reactions.add); all three are merged into one `body`, and
form-encoded `blocks`/`view`/`attachments` are decoded from their JSON strings.

Methods (those citebot and its tests call): chat.postMessage, chat.update,
chat.postEphemeral, chat.delete, views.open, views.publish, reactions.add, reactions.remove,
auth.test, conversations.replies, conversations.history, conversations.info,
conversations.list (over `channels`, by default the harness's review channel,
#general and the directory's channels), apps.connections.open (hands out `socket_url`, see
tests/fakes/socket_mode.py; only for an `xapp-` token) and the assistant
panel's assistant.threads.setStatus, .setSuggestedPrompts and .setTitle (what each
thread shows now: `assistant_thread(channel, thread_ts)`; a bot post into the
thread clears its status, as Slack does). Anything else answers
HTTP 404 `unknown_method`, as Slack does. A call without a token answers
`not_authed`; with `token=` set, a different token answers `invalid_auth`.

Who is who (bot.access): users.info over `users` (DIRECTORY_USERS: a full member,
a multi-channel guest, a user of another organization, a deactivated user, a bot,
a payroll group member; any other U… id answers as a full member of this team, so
that tests about something else need not list their users; a test that sets `users`
whole names the whole workspace, anyone else being user_not_found), users.list over
the same people of this team, 200 a page
(another organization's are not listed); usergroups.list and
usergroups.users.list over `usergroups` (DIRECTORY_GROUPS), conversations.members
over each channel's `members` (default: the bot, UASKER and UREVIEWER), at most
`members_page` per page with Slack's cursor, and conversations.info, whose channel
carries is_ext_shared / is_shared as given (the shared channel CSHARED).

Response URLs: what Slack puts in a slash command's or a shortcut's payload
(`server.response_url()`, under /commands/ as Slack's own, or /app/ for a
shortcut). A POST there needs no token; its JSON (response_type, text, blocks,
replace_original) is recorded as a call of method "response_url" with the URL's
`path`. As Slack documents, one URL takes up to 5 messages (then 404 used_url),
and a body with neither text nor blocks answers 400 no_text.

Scripted trouble, taken in order by the calls it matches (`method=None`: any):

    server.rate_limit(times=2, retry_after=1, method="chat.postMessage")  # 429 + Retry-After
    server.fail(status=500)                                             # HTTP 500
    server.fail(error="channel_not_found", method="chat.postMessage")   # 200 {"ok": false}
    server.fail(delay=3.0)                                              # answer normally, 3 s late

In-process:

    with FakeSlackServer() as slack:
        client = AsyncWebClient(token="xoxb-test", base_url=slack.url)
        await client.chat_postMessage(channel="C1", text="hi")
        [call] = slack.calls("chat.postMessage")
        call.body["text"], call.token

`wait_for` blocks: in an async test, run it in a thread (asyncio.to_thread)
so the event loop can send the calls it waits for.

Out of process (next to `citebot serve` / `citebot worker`; tests/fakes/remote.py
is its client):

    python -m tests.fakes.slack_server --port 0
    -> prints "listening on http://127.0.0.1:PORT/api/", serves until SIGTERM/SIGINT

Control routes: GET /_calls[?method=M] lists the calls; POST /_script takes
{"failures": [{"status": 429, "retry_after": 1, "times": 2, "method": "..."}],
 "replies": [{"channel": "C1", "thread_ts": "1.0", "messages": [...]}]}.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.base import QuietHandler, ThreadedFake, send_body, serve_until_signalled, server_arguments

API_PREFIX = "/api/"
BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T0000001"
# Slack's ts: seconds.microseconds, unique per channel; ours are unique per server.
_TS_EPOCH = 1_700_000_000
_TS_STEP_US = 100
# Fields Slack accepts as JSON strings in a form-encoded body.
_JSON_FIELDS = ("blocks", "attachments", "view", "metadata")
# Not an API method: the calls to a response URL are recorded under this name.
RESPONSE_URL = "response_url"
RESPONSE_URL_PREFIXES = ("/commands/", "/actions/", "/app/")
# Slack: "use a response_url up to five times within 30 minutes".
RESPONSE_URL_USES = 5



@dataclass(frozen=True)
class Call:
    method: str  # the API method, e.g. "chat.postMessage"
    body: dict[str, Any]  # query, form and JSON fields merged; JSON-string fields decoded
    headers: dict[str, str]  # lower-case names
    http_method: str = "POST"
    content_type: str = ""
    path: str = ""  # the URL's path, for calls to a response URL
    status: int = 200  # what the fake answered: 200, 429, 500 …
    error: str | None = None  # the `error` of an ok:false answer
    at: float = field(default_factory=time.time)

    @property
    def token(self) -> str | None:
        """The token the call carried: `Authorization: Bearer …`, else a `token` field."""
        auth = self.headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return self.body.get("token")

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.error is None


@dataclass
class Failure:
    """One scripted trouble, used by the next `times` calls it matches."""

    status: int = 200
    error: str | None = None  # with status 200: {"ok": false, "error": error}
    retry_after: int | None = None  # sent as Retry-After (whole seconds, as Slack sends it)
    method: str | None = None  # None: any method
    times: int = 1
    delay: float = 0.0  # seconds to wait before answering

    @classmethod
    def parse(cls, item: Failure | dict[str, Any]) -> Failure:
        return item if isinstance(item, Failure) else cls(**item)


class Scripting:
    """Scripted trouble, in the fake's process or from another (tests/fakes/remote.py): both send `script`."""

    def script(self, *failures: Failure | dict[str, Any]) -> None:
        raise NotImplementedError

    def fail(
        self,
        *,
        status: int = 200,
        error: str | None = None,
        retry_after: int | None = None,
        method: str | None = None,
        times: int = 1,
        delay: float = 0.0,
    ) -> None:
        """The next `times` calls (of `method`, or any) answer `status`, or ok:false `error`."""
        if status == 200 and error is None and not delay:
            raise ValueError("a failure needs a status other than 200, an error or a delay")
        self.script(Failure(status, error, retry_after, method, times, delay))

    def rate_limit(self, *, times: int = 1, retry_after: int = 1, method: str | None = None) -> None:
        """HTTP 429 with Retry-After and Slack's `ratelimited` body for the next `times` calls."""
        self.script(Failure(429, "ratelimited", retry_after, method, times))


class Hold:
    """One answer of a method made and then held in flight: `made` is set once Slack's answer is computed
    (from the state at that moment), and it is sent only after `release()`. A race between a slow reply and an
    event, forced in that order and not left to timing."""

    def __init__(self, method: str):
        self.method = method
        self.made = threading.Event()
        self.released = threading.Event()

    def release(self) -> None:
        self.released.set()

    def in_flight(self, stopping: threading.Event) -> None:
        self.made.set()
        while not self.released.wait(0.05) and not stopping.is_set():
            pass

    def wait_made(self, timeout: float = 10.0) -> None:
        if not self.made.wait(timeout):
            raise TimeoutError(f"no {self.method} call came in {timeout} s")


class FakeSlackServer(Scripting, ThreadedFake):
    thread_name = "fake-slack"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        bot_user_id: str = BOT_USER_ID,
        bot_id: str = BOT_ID,
        team_id: str = TEAM_ID,
        channels: dict[str, dict[str, Any]] | None = None,
        app_token: str | None = None,
        socket_url: str | None = None,
    ):
        self.token = token  # if set, only this token is accepted
        # conversations.info / .list: id -> {"name", "is_member", "is_private"}
        self.channels = {cid: {"id": cid, **info} for cid, info in (channels or DEFAULT_CHANNELS).items()}
        # apps.connections.open: the Socket Mode endpoint it hands out, and the app token it takes (if set)
        self.app_token, self.socket_url = app_token, socket_url
        self.bot_user_id, self.bot_id, self.team_id = bot_user_id, bot_id, team_id
        self._lock = threading.Condition()
        self._ts_counter = 0
        self._view_counter = 0
        self._response_urls = 0
        self._response_uses: dict[str, int] = {}  # path of each URL handed out -> messages sent to it
        self._calls: list[Call] = []
        self._failures: list[Failure] = []
        self._holds: list[Hold] = []
        self._messages: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, ts) -> message
        self._threads: dict[tuple[str, str], list[dict[str, Any]]] = {}  # scripted conversations.replies
        self._reactions: set[tuple[str, str, str]] = set()  # (channel, ts, name)
        # auth.test's `url`: the workspace's address, which permalinks start with (default: this server).
        self.workspace_url: str | None = None
        self.home_enabled = True  # the manifest's app_home.home_tab_enabled; off: views.publish answers not_enabled
        self._home_views: dict[str, dict[str, Any]] = {}  # user id -> the Home tab views.publish last set
        # (channel, thread_ts) -> what an assistant thread shows: status, title, prompts
        self._assistant_threads: dict[tuple[str, str], dict[str, Any]] = {}
        # users.info: id -> the user object (a test may change it: the next lookup sees it). Anyone not
        # listed is a full member of this team, unless a test sets `users` itself: then that is the whole
        # workspace and anyone else is user_not_found (a help channel's escalate_to naming nobody).
        self._users: dict[str, dict[str, Any]] = {uid: {"id": uid, **info} for uid, info in DIRECTORY_USERS.items()}
        self.users_complete = False
        # usergroups.*: id -> {"handle", "users", optionally "name"}
        self.usergroups: dict[str, dict[str, Any]] = {gid: dict(g) for gid, g in DIRECTORY_GROUPS.items()}
        self.members_page = 100  # conversations.members: at most this many per page
        self.scopes: list[str] = list(DEFAULT_SCOPES)  # the X-OAuth-Scopes header: what the token was granted
        self._bind(host, port, _handler_for(self))

    @property
    def users(self) -> dict[str, dict[str, Any]]:
        return self._users

    @users.setter
    def users(self, users: dict[str, dict[str, Any]]) -> None:
        self._users = users
        self.users_complete = True

    @property
    def url(self) -> str:
        """The Web API base URL, for CITEBOT_SLACK_API_URL or AsyncWebClient(base_url=...)."""
        return f"{self.root}{API_PREFIX}"

    def response_url(self, kind: str = "commands") -> str:
        """A fresh response URL as Slack hands out with a command ("commands") or a shortcut ("app")."""
        with self._lock:
            self._response_urls += 1
            n = self._response_urls
            path = f"/{kind}/{self.team_id}/{n:010d}/secret{n}"
            self._response_uses[path] = 0
        return f"{self.root}{path}"

    # -- scripting

    def script(self, *failures: Failure | dict[str, Any]) -> None:
        parsed = [Failure.parse(f) for f in failures]
        with self._lock:
            self._failures.extend(parsed)

    def set_replies(self, channel: str, thread_ts: str, messages: list[dict[str, Any]]) -> None:
        """What conversations.replies returns for this thread (plus what the bot posts into it)."""
        with self._lock:
            self._threads[(channel, thread_ts)] = [dict(m) for m in messages]

    # -- inspecting

    def calls(self, method: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if method is None or c.method == method]

    def wait_for(self, method: str | None = None, count: int = 1, timeout: float = 5.0) -> list[Call]:
        """The calls of `method`, once there are at least `count`; AssertionError after `timeout`."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._matching(method)) >= count, timeout):
                got = [c.method for c in self._calls]
                raise AssertionError(f"expected {count} {method or 'any'} calls within {timeout}s; got {got}")
            return self._matching(method)

    def _matching(self, method: str | None) -> list[Call]:
        return [c for c in self._calls if method is None or c.method == method]

    def messages(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Messages posted (as last updated), oldest first, each with its `channel`."""
        with self._lock:
            found = [dict(m, channel=ch) for (ch, _), m in self._messages.items() if channel in (None, ch)]
        return sorted(found, key=lambda m: float(m["ts"]))

    # -- handling a call (called from the HTTP handler threads)

    def hold(self, method: str) -> Hold:
        """The next call of `method` is answered at once and the answer held until `Hold.release()`."""
        held = Hold(method)
        with self._lock:
            self._holds.append(held)
        return held

    def _handle(self, method: str, body: dict[str, Any], call: Call) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            held = next((h for h in self._holds if h.method == method), None)
            if held is not None:
                self._holds.remove(held)
                answer = self._answer(method, body, call)  # made now, from the state of now
            failure = None if held is not None else self._take_failure(method)
        if held is not None:
            held.in_flight(self._stopping)
        elif failure is not None and failure.delay:
            self._stopping.wait(failure.delay)
        if failure is not None and (failure.status != 200 or failure.error):
            status, payload, headers = _failure_answer(failure)
        else:
            if held is None:
                with self._lock:
                    answer = self._answer(method, body, call)
            # As Slack does: the token's scopes on every answer (read from auth.test's).
            (status, payload), headers = answer, {"X-OAuth-Scopes": ",".join(self.scopes)}
        with self._lock:
            self._calls.append(_replace(call, status=status, error=None if payload.get("ok") else payload.get("error")))
            self._lock.notify_all()
        return status, payload, headers

    def _take_failure(self, method: str) -> Failure | None:
        for failure in self._failures:
            if failure.method in (None, method):
                failure.times -= 1
                if failure.times <= 0:
                    self._failures.remove(failure)
                return failure
        return None

    def _answer(self, method: str, body: dict[str, Any], call: Call) -> tuple[int, dict[str, Any]]:
        if method == RESPONSE_URL:
            return self._respond(call.path, body)
        handler = _METHODS.get(method)
        if handler is None:
            return 404, {"ok": False, "error": "unknown_method", "req_method": method}
        token = call.token
        if not token:
            return 200, {"ok": False, "error": "not_authed"}
        if method == "apps.connections.open":
            # Slack takes only an app-level token here, and only an app token elsewhere is refused.
            if not token.startswith("xapp-"):
                return 200, {"ok": False, "error": "not_allowed_token_type"}
            if self.app_token is not None and token != self.app_token:
                return 200, {"ok": False, "error": "invalid_auth"}
        elif self.token is not None and token != self.token:
            return 200, {"ok": False, "error": "invalid_auth"}
        return 200, handler(self, body)

    def _next_ts(self) -> str:
        self._ts_counter += 1
        micros = self._ts_counter * _TS_STEP_US
        return f"{_TS_EPOCH + micros // 1_000_000}.{micros % 1_000_000:06d}"

    # -- the methods (called with the lock held)

    def _respond(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """A message to a response URL: no token, the URL is the credential."""
        if path not in self._response_uses:
            return 404, _error("no_active_hooks")
        if self._response_uses[path] >= RESPONSE_URL_USES:
            return 404, _error("used_url")
        if not body.get("text") and not body.get("blocks") and not body.get("delete_original"):
            return 400, _error("no_text")
        self._response_uses[path] += 1
        return 200, {"ok": True}

    def _post_message(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = body.get("channel")
        if not channel:
            return _error("channel_not_found")
        if not body.get("text") and not body.get("blocks") and not body.get("attachments"):
            return _error("no_text")
        ts = self._next_ts()
        message = self._bot_message(body, ts)
        self._messages[(channel, ts)] = message
        if (thread := self._assistant_threads.get((channel, body.get("thread_ts") or ""))) is not None:
            thread["status"] = ""  # Slack: the app's reply in the thread clears its status
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _bot_message(self, body: dict[str, Any], ts: str) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "team": self.team_id,
            "text": body.get("text", ""),
            "ts": ts,
        }
        for key in ("blocks", "attachments", "metadata"):
            if key in body:
                message[key] = body[key]
        if body.get("thread_ts"):
            message["thread_ts"] = body["thread_ts"]
        return message

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        channel, ts = body.get("channel"), body.get("ts")
        if not channel:
            return _error("channel_not_found")
        message = self._messages.get((channel, ts or ""))
        if message is None:
            return _error("message_not_found")
        for key in ("text", "blocks", "attachments", "metadata"):
            if key in body:
                message[key] = body[key]
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        return {"ok": True, "channel": channel, "ts": ts, "text": message.get("text", ""), "message": message}

    def _delete(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (body.get("channel") or "", body.get("ts") or "")
        if self._messages.pop(key, None) is None:
            return _error("message_not_found")
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _post_ephemeral(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("channel"):
            return _error("channel_not_found")
        if not body.get("user"):
            return _error("user_not_in_channel")
        if not body.get("text") and not body.get("blocks") and not body.get("attachments"):
            return _error("no_text")
        return {"ok": True, "message_ts": self._next_ts()}

    def _open_view(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("trigger_id"):
            return _error("invalid_arguments")
        view = body.get("view")
        if not isinstance(view, dict) or "type" not in view:
            return _error("invalid_arguments")
        self._view_counter += 1
        view_id = f"V{self._view_counter:08d}"
        opened = {**view, "id": view_id, "team_id": self.team_id, "state": {"values": {}}, "hash": f"h{view_id}"}
        return {"ok": True, "view": opened}

    def home_view(self, user: str) -> dict[str, Any] | None:
        """The Home tab `user` sees now: the view of the last views.publish for them."""
        with self._lock:
            return self._home_views.get(user)

    def _publish_view(self, body: dict[str, Any]) -> dict[str, Any]:
        """views.publish (user_id and view required, hash optional): Slack answers
        not_enabled while the Home tab is off, and invalid_arguments for a view that is
        not a `home` view of 1 to 100 blocks."""
        user, view = body.get("user_id"), body.get("view")
        if not user or not isinstance(view, dict):
            return _error("invalid_arguments")
        if not self.home_enabled:
            return _error("not_enabled")
        blocks = view.get("blocks")
        if view.get("type") != "home" or not isinstance(blocks, list) or not 0 < len(blocks) <= 100:
            return _error("invalid_arguments")
        if len(json.dumps(view)) > 250_000:
            return _error("view_too_large")
        self._view_counter += 1
        view_id = f"V{self._view_counter:08d}"
        published = {**view, "id": view_id, "team_id": self.team_id, "hash": f"h{view_id}"}
        self._home_views[user] = published
        return {"ok": True, "view": published}

    def assistant_thread(self, channel: str, thread_ts: str) -> dict[str, Any]:
        """What an assistant thread shows now: `status` ("" when cleared), `title`, `prompts`
        (and the prompts' `prompts_title`); {} for a thread no assistant method was called for."""
        with self._lock:
            return dict(self._assistant_threads.get((channel, thread_ts), {}))

    def _thread_state(self, body: dict[str, Any], *required: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The thread's state, or Slack's error: invalid_arguments for a missing argument (what
        is missing in response_metadata.messages, as the Web API says it), channel_not_found for
        a channel that is no DM (assistant threads live in the app's DM with a user)."""
        missing = [name for name in ("channel_id", *required) if body.get(name) is None
                   or (body.get(name) == "" and name != "status")]  # an empty status clears it
        if missing:
            messages = [f"[ERROR] missing required field: {name}" for name in missing]
            return None, {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": messages}}
        channel = str(body["channel_id"])
        if not channel.startswith("D"):
            return None, _error("channel_not_found")
        key = (channel, str(body.get("thread_ts") or ""))
        return self._assistant_threads.setdefault(key, {}), {"ok": True}

    def _set_status(self, body: dict[str, Any]) -> dict[str, Any]:
        """channel_id, thread_ts and status required ("" clears it); up to 10 loading_messages."""
        loading = body.get("loading_messages")
        if loading is not None and (not isinstance(loading, list) or len(loading) > 10):
            return _error("invalid_arguments")
        thread, answer = self._thread_state(body, "thread_ts", "status")
        if thread is not None:
            thread["status"] = str(body["status"])
        return answer

    def _set_title(self, body: dict[str, Any]) -> dict[str, Any]:
        """channel_id, thread_ts and title, all required."""
        thread, answer = self._thread_state(body, "thread_ts", "title")
        if thread is not None:
            thread["title"] = str(body["title"])
        return answer

    def _set_suggested_prompts(self, body: dict[str, Any]) -> dict[str, Any]:
        """channel_id and prompts required (thread_ts and title optional): up to four prompts, each
        with its title and message."""
        if isinstance(body.get("prompts"), str):
            with contextlib.suppress(ValueError):
                body = {**body, "prompts": json.loads(body["prompts"])}
        thread, answer = self._thread_state(body, "prompts")
        if thread is None:
            return answer
        prompts = body["prompts"]
        if not isinstance(prompts, list) or not 0 < len(prompts) <= 4 or not all(
            isinstance(p, dict) and isinstance(p.get("title"), str) and p["title"]
            and isinstance(p.get("message"), str) and p["message"] for p in prompts
        ):
            return _error("invalid_arguments")
        thread["prompts"] = [{"title": p["title"], "message": p["message"]} for p in prompts]
        thread["prompts_title"] = body.get("title")
        return answer

    def _add_reaction(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (body.get("channel") or "", body.get("timestamp") or "", body.get("name") or "")
        if not all(key):
            return _error("invalid_arguments")
        if key in self._reactions:
            return _error("already_reacted")
        self._reactions.add(key)
        return {"ok": True}

    def _remove_reaction(self, body: dict[str, Any]) -> dict[str, Any]:
        key = (body.get("channel") or "", body.get("timestamp") or "", body.get("name") or "")
        if key not in self._reactions:
            return _error("no_reaction")
        self._reactions.discard(key)
        return {"ok": True}

    def _auth_test(self, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": self.workspace_url or f"{self.root}/",
            "team": "Fake Team",
            "user": "citebot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _connections_open(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.socket_url is None:
            return _error("not_allowed")  # Socket Mode is off for this app
        return {"ok": True, "url": self.socket_url}

    def _conversation_info(self, body: dict[str, Any]) -> dict[str, Any]:
        channel = self.channels.get(body.get("channel") or "")
        return {"ok": True, "channel": _shown(channel)} if channel else _error("channel_not_found")

    def _users_info(self, body: dict[str, Any]) -> dict[str, Any]:
        uid = str(body.get("user") or "")
        user = self.users.get(uid)
        if user is None and uid[:1] in ("U", "W") and not self.users_complete:
            user = {"id": uid, "team_id": self.team_id}  # anyone else: a full member of this team
        if user is None:
            return _error("user_not_found")
        full = {"name": uid.lower(), "deleted": False, "is_bot": False, "is_restricted": False,
                "is_ultra_restricted": False, "team_id": self.team_id, **user}
        return {"ok": True, "user": full}

    def _users_lookup_by_email(self, body: dict[str, Any]) -> dict[str, Any]:
        """users.lookupByEmail over the `users` a test gave a `profile.email` (case as Slack: ignored)."""
        email = str(body.get("email") or "").lower()
        for uid, user in self.users.items():
            if str((user.get("profile") or {}).get("email") or "").lower() == email and email:
                return {"ok": True, "user": {"id": uid, **self._users_info({"user": uid})["user"]}}
        return _error("users_not_found")

    def _users_list(self, body: dict[str, Any]) -> dict[str, Any]:
        """This team's people, `limit` per page (at most 200, as Slack advises), the cursor the next page's offset:
        those in `users` of this team and, unless `users` was set whole, every other U… member of a channel.
        People of another organization are not listed (users.info still answers for them)."""
        ids = [uid for uid, u in self.users.items() if u.get("team_id", self.team_id) == self.team_id
               and not u.get("is_stranger")]
        if not self.users_complete:
            ids += sorted({m for c in self.channels.values() for m in c.get("members", DEFAULT_MEMBERS)
                           if m[:1] in ("U", "W") and m not in self.users})
        limit = min(int(body.get("limit") or 200), 200)
        start = int(body.get("cursor") or 0)
        page = [self._users_info({"user": uid})["user"] for uid in ids[start:start + limit]]
        more = start + limit < len(ids)
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _usergroups_list(self, body: dict[str, Any]) -> dict[str, Any]:
        groups = [{"id": gid, "handle": g["handle"], "name": g.get("name", g["handle"]), "team_id": self.team_id}
                  for gid, g in self.usergroups.items()]
        return {"ok": True, "usergroups": groups}

    def _usergroups_users(self, body: dict[str, Any]) -> dict[str, Any]:
        group = self.usergroups.get(str(body.get("usergroup") or ""))
        if group is None:
            return _error("no_such_subteam")
        return {"ok": True, "users": list(group.get("users", []))}

    def _conversation_members(self, body: dict[str, Any]) -> dict[str, Any]:
        """A channel's members, `limit` (capped at `members_page`) per page, the cursor the next page's offset."""
        channel = self.channels.get(body.get("channel") or "")
        if channel is None:
            return _error("channel_not_found")
        members = list(channel.get("members", DEFAULT_MEMBERS))
        limit = min(int(body.get("limit") or 100), self.members_page)
        start = int(body.get("cursor") or 0)
        more = start + limit < len(members)
        return {"ok": True, "members": members[start:start + limit],
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _conversation_list(self, body: dict[str, Any]) -> dict[str, Any]:
        """Every known channel, `limit` per page, the cursor being the next page's offset."""
        limit = int(body.get("limit") or 100)
        start = int(body.get("cursor") or 0)
        channels = list(self.channels.values())
        page = [_shown(c) for c in channels[start:start + limit]]
        more = start + limit < len(channels)
        return {"ok": True, "channels": page, "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _replies(self, body: dict[str, Any]) -> dict[str, Any]:
        """The scripted thread plus what was posted into it, oldest first. An unknown
        thread is not an error here: a question that starts a thread has no replies yet."""
        channel, ts = body.get("channel") or "", body.get("ts") or ""
        if not channel or not ts:
            return _error("invalid_arguments")
        scripted = [dict(m) for m in self._threads.get((channel, ts), [])]
        posted = [dict(m) for (ch, _), m in self._messages.items() if ch == channel and m.get("thread_ts") == ts]
        seen = {m.get("ts") for m in scripted}
        messages = sorted(scripted + [m for m in posted if m["ts"] not in seen], key=lambda m: float(m.get("ts", 0)))
        return {"ok": True, "messages": messages, "has_more": False, "response_metadata": {"next_cursor": ""}}

    def _history(self, body: dict[str, Any]) -> dict[str, Any]:
        """What was posted at the top level of a channel (thread replies stay in their thread), newest first."""
        channel = body.get("channel") or ""
        if not channel:
            return _error("channel_not_found")
        limit = int(body.get("limit") or 100)
        top = [dict(m) for (ch, _), m in self._messages.items() if ch == channel and m.get("thread_ts") in (None, m["ts"])]
        messages = sorted(top, key=lambda m: float(m["ts"]), reverse=True)[:limit]
        return {"ok": True, "messages": messages, "has_more": False, "response_metadata": {"next_cursor": ""}}


# Who is in the tests' workspace (users.info); any other U… id is a full member of TEAM_ID.
OTHER_TEAM_ID = "T0OTHER1"
DIRECTORY_USERS: dict[str, dict[str, Any]] = {
    "UASKER": {"team_id": TEAM_ID},  # a full member
    "UREVIEWER": {"team_id": TEAM_ID},
    "UPAYROLL": {"team_id": TEAM_ID},  # a full member in the payroll group
    "UGUEST": {"team_id": TEAM_ID, "is_restricted": True},  # a multi-channel guest
    "UEXTERNAL": {"team_id": OTHER_TEAM_ID, "is_stranger": True},  # a user of another organization
    "UGONE": {"team_id": TEAM_ID, "deleted": True},  # a deactivated user
    "UOTHERBOT": {"team_id": TEAM_ID, "is_bot": True},  # another app's bot user
    BOT_USER_ID: {"team_id": TEAM_ID, "is_bot": True},
}
DIRECTORY_GROUPS: dict[str, dict[str, Any]] = {
    "S0PAYROLL": {"handle": "payroll-team", "users": ["UPAYROLL"]},
}
# The token's scopes (the X-OAuth-Scopes header): manifest.yml's.
DEFAULT_SCOPES = ("app_mentions:read", "commands", "chat:write", "reactions:write", "assistant:write",
                  "channels:history", "groups:history", "im:history", "mpim:history", "channels:read",
                  "groups:read", "mpim:read", "users:read", "usergroups:read", "users:read.email")
# conversations.members of a channel that lists none.
DEFAULT_MEMBERS = (BOT_USER_ID, "UASKER", "UREVIEWER")

# The channels the tests' workspace has: the review channel the harness configures, with the bot in it.
DEFAULT_CHANNELS: dict[str, dict[str, Any]] = {
    "CREVIEW": {"name": "citebot-review", "is_member": True, "is_private": False},
    "CGENERAL": {"name": "general", "is_member": True, "is_private": False},
    "CHANDBOOK": {"name": "handbook", "is_member": True, "is_private": False},
    "CFAULTS": {"name": "faults", "is_member": True, "is_private": False},
    "CBENCH": {"name": "bench", "is_member": True, "is_private": False},
    "CFAILOVER": {"name": "failover", "is_member": True, "is_private": False},  # tests/test_redis_failover.py
    # Help channels (tests/test_help_channels.py): questions answered without a mention.
    "CHELP": {"name": "help", "is_member": True, "is_private": False},
    "CHELPCAP": {"name": "help-capped", "is_member": True, "is_private": False},
    # The payroll group's own channel.
    "CPAYROLL": {"name": "payroll", "is_member": True, "is_private": True, "members": [BOT_USER_ID, "UPAYROLL"]},
    # A public channel with a guest in it.
    "CGUESTS": {"name": "visitors", "is_member": True, "is_private": False,
                "members": [BOT_USER_ID, "UASKER", "UPAYROLL", "UGUEST"]},
    # Slack Connect: shared with another organization.
    "CSHARED": {"name": "partner-project", "is_member": True, "is_private": False, "is_shared": True,
                "is_ext_shared": True, "members": [BOT_USER_ID, "UASKER", "UPAYROLL", "UEXTERNAL"]},
}

_METHODS = {
    "chat.postMessage": FakeSlackServer._post_message,
    "chat.update": FakeSlackServer._update,
    "chat.delete": FakeSlackServer._delete,
    "chat.postEphemeral": FakeSlackServer._post_ephemeral,
    "views.open": FakeSlackServer._open_view,
    "views.publish": FakeSlackServer._publish_view,
    "reactions.add": FakeSlackServer._add_reaction,
    "reactions.remove": FakeSlackServer._remove_reaction,
    "auth.test": FakeSlackServer._auth_test,
    "conversations.replies": FakeSlackServer._replies,
    "conversations.history": FakeSlackServer._history,
    "conversations.info": FakeSlackServer._conversation_info,
    "conversations.list": FakeSlackServer._conversation_list,
    "conversations.members": FakeSlackServer._conversation_members,
    "users.info": FakeSlackServer._users_info,
    "users.list": FakeSlackServer._users_list,
    "users.lookupByEmail": FakeSlackServer._users_lookup_by_email,
    "usergroups.list": FakeSlackServer._usergroups_list,
    "usergroups.users.list": FakeSlackServer._usergroups_users,
    "apps.connections.open": FakeSlackServer._connections_open,
    "assistant.threads.setStatus": FakeSlackServer._set_status,
    "assistant.threads.setTitle": FakeSlackServer._set_title,
    "assistant.threads.setSuggestedPrompts": FakeSlackServer._set_suggested_prompts,
}


def _shown(channel: dict[str, Any]) -> dict[str, Any]:
    """A channel as conversations.info and .list show it: its members are conversations.members' to list."""
    return {k: v for k, v in channel.items() if k != "members"}


def _error(code: str) -> dict[str, Any]:
    return {"ok": False, "error": code}


def _failure_answer(failure: Failure) -> tuple[int, dict[str, Any], dict[str, str]]:
    headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
    if failure.status == 200:
        return 200, _error(failure.error or "fatal_error"), headers
    default = {429: "ratelimited"}.get(failure.status, "fatal_error")
    return failure.status, _error(failure.error or default), headers


def _replace(call: Call, **changes: Any) -> Call:
    return Call(**{**asdict(call), **changes})


# -- parsing requests


def parse_body(raw: bytes, content_type: str, query: str) -> dict[str, Any]:
    """Query, form and JSON fields merged (body over query), as Slack reads them."""
    body: dict[str, Any] = _flat(parse_qs(query, keep_blank_values=True))
    kind = content_type.split(";")[0].strip().lower()
    if raw and kind == "application/json":
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("a JSON body must be an object")
        body.update(data)
    elif raw and kind in ("application/x-www-form-urlencoded", ""):
        body.update(_flat(parse_qs(raw.decode("utf-8"), keep_blank_values=True)))
    for name in _JSON_FIELDS:
        if isinstance(body.get(name), str):
            # Slack would answer invalid_blocks; the recorded call keeps the string to show why.
            with contextlib.suppress(ValueError):
                body[name] = json.loads(body[name])
    return body


def _flat(values: dict[str, list[str]]) -> dict[str, Any]:
    return {k: v[0] if len(v) == 1 else v for k, v in values.items()}


def _handler_for(server: FakeSlackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def _route(self, verb: str) -> None:
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if parts.path.startswith(API_PREFIX):
                self._api(verb, parts.path[len(API_PREFIX) :], raw, parts.query)
            elif verb == "POST" and parts.path.startswith(RESPONSE_URL_PREFIXES):
                self._api(verb, RESPONSE_URL, raw, "", path=parts.path)
            elif parts.path.startswith("/_"):
                self._control(verb, parts.path, raw, parts.query)
            else:
                self._send(404, {"ok": False, "error": "not_found"})

        def _api(self, verb: str, method: str, raw: bytes, query: str, path: str = "") -> None:
            content_type = self.headers.get("Content-Type", "")
            try:
                body = parse_body(raw, content_type, query)
            except (ValueError, UnicodeDecodeError):
                self._send(200, {"ok": False, "error": "invalid_json"})
                return
            call = Call(
                method=method,
                body=body,
                headers={k.lower(): v for k, v in self.headers.items()},
                http_method=verb,
                content_type=content_type,
                path=path,
            )
            status, payload, headers = server._handle(method, body, call)
            self._send(status, payload, headers)

        def _control(self, verb: str, path: str, raw: bytes, query: str) -> None:
            params = _flat(parse_qs(query))
            if verb == "GET" and path == "/_calls":
                calls = server.calls(params.get("method"))
                self._send(200, {"ok": True, "calls": [asdict(c) for c in calls]})
            elif verb == "POST" and path == "/_script":
                self._script(raw)
            else:
                self._send(404, {"ok": False, "error": "not_found"})

        def _script(self, raw: bytes) -> None:
            try:
                data = json.loads(raw or b"{}")
                server.script(*data.get("failures", []))
                for thread in data.get("replies", []):
                    server.set_replies(thread["channel"], thread["thread_ts"], thread["messages"])
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                self._send(400, {"ok": False, "error": f"bad script: {exc}"})
                return
            self._send(200, {"ok": True})

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            send_body(self, status, json.dumps(payload).encode(), "application/json; charset=utf-8", headers)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = server_arguments("python -m tests.fakes.slack_server", __doc__.split("\n")[0])
    parser.add_argument("--token", help="accept only this token (others answer invalid_auth)")
    parser.add_argument("--socket-url", help="what apps.connections.open hands out (Socket Mode)")
    args = parser.parse_args(argv)
    server = FakeSlackServer(args.host, args.port, token=args.token, socket_url=args.socket_url)
    serve_until_signalled(server, server.url)
    sys.exit(0)


if __name__ == "__main__":
    main()
