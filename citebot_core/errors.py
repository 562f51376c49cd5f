"""One error base for every package, and the two kinds a worker tells apart.

    CitebotError            base of every error citebot raises on purpose
     ├── Retryable          the same call may succeed later: a server down, a timeout,
     │                      a rate limit, Redis restarting. `retry_after` (seconds) is
     │                      what the other side asked for, or None
     └── Permanent          another try fails the same way: a refused request, bad
                            configuration, a broken file, a reply that is not one

What a worker (bot.jobs.consumer) does with a job whose handler raised:

    Retryable   the job goes back to the queue, after its `retry_after` if given, else
                after an exponential backoff; past its last try it is dead (below)
    Permanent   the job is dead at once: `on_dead` tells whoever waits (an apology in
                the asker's thread), and the job goes to the dead-letter list
    anything else is a bug, and is handled like Permanent: retrying a bug only
    delays the apology

Each package keeps its own tree below these (`LLMError`, `SlackError`,
`QueueError`, `EmbedderError`...), and its module docstring says what each
class means to the caller; the kind a class derives from says only whether
trying again can help. Third-party exceptions are translated once, at the
boundary where they arise, and re-raised `from` the original.
"""

from __future__ import annotations


class CitebotError(Exception):
    """Base of every error citebot raises on purpose."""

    # Requests sent before giving up, where something tried more than once
    # (citebot_core.http stamps it): for messages and the audit.
    attempts = 1


class Retryable(CitebotError):
    """Trying again later may succeed. `retry_after`: seconds the other side asked to wait, if it said."""

    def __init__(self, message: str = "transient failure", *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class Permanent(CitebotError):
    """Trying again fails the same way: the caller gives up at once."""


__all__ = ["CitebotError", "Permanent", "Retryable"]
