"""The HTTP client every connector uses: retries what the server asks to retry, counts every call.

httpx, as everywhere in citebot. Confluence and Drive both answer an overload
with 429 (Drive also with 403 `rateLimitExceeded`) and a passing failure with
5xx; both may say how long to wait in Retry-After. That wait is honoured (up to
`max_wait_s`), else the wait doubles from one second; after `attempts` tries
the call fails with SourceUnavailable. Anything else that is not 2xx is an
HTTPFailed with its status, for the connector to decide: a 404 on one page is
that page's problem, a 401 on the first call is the whole source's.

Why not atlassian-python-api and google-api-python-client: the connectors use
a handful of read-only calls each (CQL search, a page, a download; files.list,
export, permissions, changes), and both clients bring requests and a retry of
their own that neither honours Retry-After the same way nor counts calls, and
google-api-python-client adds httplib2 and a discovery document. One small
client over httpx, which citebot already uses everywhere, retries both alike
and lets `bench/sync.py` count every call; google-auth still signs Drive's
service-account token, the one part worth a library.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from citebot_core.errors import Permanent, Retryable
from kb_index.sources.model import Calls, SourceError

RETRIED = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "citebot-sync"


class SourceUnavailable(SourceError, Retryable):
    """The server did not answer, or kept answering 429/5xx, through every try."""


class HTTPFailed(Permanent):
    """A status that is not retried (404, 403, 401...): the connector decides whose problem it is."""

    def __init__(self, status: int, url: str, detail: str = ""):
        super().__init__(f"HTTP {status} from {url}" + (f": {detail}" if detail else ""))
        self.status = status
        self.url = url
        self.detail = detail


def retry_after(response: httpx.Response, default: float) -> float:
    """Seconds the server asks to wait: Retry-After as seconds or as an HTTP date, else `default`."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    return max(0.0, when.timestamp() - time.time())


class SourceHTTP:
    """One source's HTTP client: a base URL, its auth, retries and the call count."""

    def __init__(self, base_url: str, *, auth: httpx.Auth | None = None, headers: Mapping[str, str] | None = None,
                 timeout: float = 30.0, attempts: int = 5, max_wait_s: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, transport: httpx.BaseTransport | None = None):
        self.calls = Calls()
        self.attempts = attempts
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self._client = httpx.Client(
            base_url=base_url, auth=auth, timeout=timeout, transport=transport, follow_redirects=True,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})},
        )

    def get_json(self, path: str, *, kind: str, params: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None) -> Any:
        return self.request("GET", path, kind=kind, params=params, headers=headers).json()

    def get_bytes(self, path: str, *, kind: str, params: Mapping[str, Any] | None = None,
                  max_bytes: int | None = None) -> bytes:
        """A file's bytes; HTTPFailed(413) as soon as it is known to be over `max_bytes`, before it is all read."""
        return self.request("GET", path, kind=kind, params=params, headers={"Accept": "*/*"},
                            max_bytes=max_bytes).content

    def request(self, method: str, path: str, *, kind: str, params: Mapping[str, Any] | None = None,
                headers: Mapping[str, str] | None = None, data: Mapping[str, str] | None = None,
                max_bytes: int | None = None) -> httpx.Response:
        wait = 1.0
        problem = ""
        for attempt in range(1, self.attempts + 1):
            self.calls.add(kind)
            try:
                response = self._send(method, path, params=params, headers=headers, data=data, max_bytes=max_bytes)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return response
                if not self._retried(response):
                    raise HTTPFailed(response.status_code, str(response.request.url), _detail(response))
                problem = f"HTTP {response.status_code}"
                wait = retry_after(response, wait)
            if attempt < self.attempts:
                self._sleep(min(wait, self.max_wait_s))
                wait = min(wait * 2, self.max_wait_s)
        raise SourceUnavailable(f"{method} {path}: {problem} after {self.attempts} tries")

    def _send(self, method: str, path: str, *, params: Mapping[str, Any] | None, headers: Mapping[str, str] | None,
              data: Mapping[str, str] | None, max_bytes: int | None) -> httpx.Response:
        """One request, its body read whole, or streamed and cut off past `max_bytes`: a runaway attachment never
        sits in memory whole."""
        with self._client.stream(method, path, params=params, headers=headers, data=data) as response:
            if max_bytes is None or response.status_code >= 300:
                response.read()
                return response
            too_large = HTTPFailed(413, str(response.request.url), f"larger than {max_bytes // (1024 * 1024)} MB")
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise too_large
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise too_large
            # The bytes are decoded already: the encoding headers would have them decoded a second time.
            kept = [(k, v) for k, v in response.headers.items() if k.lower() not in ("content-encoding", "content-length")]
            return httpx.Response(response.status_code, headers=kept, content=bytes(body), request=response.request)

    @staticmethod
    def _retried(response: httpx.Response) -> bool:
        if response.status_code in RETRIED:
            return True
        # Drive says "slow down" with 403 and a reason (rateLimitExceeded, userRateLimitExceeded), not always 429.
        return response.status_code == 403 and "RateLimitExceeded" in response.text[:2000].replace("rateLimit", "RateLimit")

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> SourceHTTP:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _detail(response: httpx.Response) -> str:
    text = response.text[:300].strip()
    return " ".join(text.split())
