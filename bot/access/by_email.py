"""Who a source's reader is in Slack: `users.lookupByEmail` (scope `users:read.email`).

`citebot sync` maps the e-mail addresses a Confluence page or a Drive file
names as its readers to Slack users with this. It runs in the sync's thread,
so it is the synchronous Web API client; Slack's rate limits are waited out
(slack_sdk's retry handler honours Retry-After). An address Slack does not know
is nobody (None); Slack failing otherwise is PeopleUnavailable, and the sync
keeps the id it found before, never a guess.
"""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler

from kb_index.sources.sync import PeopleUnavailable

NOT_FOUND = "users_not_found"


class SlackPeople:
    def __init__(self, token: str, api_url: str, *, timeout: int = 15):
        self._client = WebClient(
            token=token, base_url=api_url, timeout=timeout,
            retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=3), ConnectionErrorRetryHandler(max_retry_count=2)],
        )
        self._found: dict[str, str | None] = {}  # one lookup per address and sync
        self.lookups = 0

    def user_id(self, email: str) -> str | None:
        if email in self._found:
            return self._found[email]
        self.lookups += 1
        try:
            reply = self._client.users_lookupByEmail(email=email)
        except SlackApiError as exc:
            if exc.response.get("error") == NOT_FOUND:
                self._found[email] = None
                return None
            raise PeopleUnavailable(f"users.lookupByEmail: {exc.response.get('error')}") from exc
        except (SlackClientError, OSError) as exc:
            raise PeopleUnavailable(f"users.lookupByEmail: {exc}") from exc
        user = reply.get("user") or {}
        found = user.get("id") if not user.get("deleted") and not user.get("is_bot") else None
        self._found[email] = found
        return found
