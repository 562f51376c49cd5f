"""How long to wait before trying again: exponential backoff, and a server's Retry-After.

Every retry loop of the project takes its delays from here (the HTTP loop of
the embedders and the LLM backends in citebot_core.http, the job consumer, the
Slack calls); each keeps its own numbers, because each waits for a different
thing: an embedding inside a question may wait two seconds, a job whose model
is down a minute.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from datetime import UTC


def backoff_delay(retry: int, *, base: float, cap: float, jitter: float = 0.0) -> float:
    """Seconds to wait before retry number `retry` (0 for the first retry).

    The delay doubles per retry from `base` up to `cap`. With `jitter`, up to
    that fraction of it is added at random, or taken off when negative
    (-0.5: between half of it and all of it), so that clients that failed
    together do not all come back in the same instant.
    """
    delay = min(cap, base * 2**retry)
    return delay * (1 + random.uniform(0, jitter)) if jitter else delay


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """A Retry-After header as seconds from `now`, never negative; None when absent or unreadable.

    HTTP allows a number of seconds or a date (RFC 9110, 10.2.3); a date in
    the past means "now".
    """
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        return _seconds_until(value, time.time() if now is None else now)
    # float() also reads "nan" and "inf": no delay a server means, and an
    # endless one would park a job for good.
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _seconds_until(http_date: str, now: float) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # "-0000": UTC, says RFC 5322, as HTTP dates always are
    return max(0.0, when.timestamp() - now)
