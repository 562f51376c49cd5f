"""The floor every citebot package stands on: Redis connections, the error base, HTTP retries and the deadline,
the languages.

Why a package of its own, and not `kb_index`'s lowest modules: `kb_index` knows nothing of Slack, LLMs or Redis
(docs/DESIGN.md 2), yet `bot` needs a Redis connection, an error base its workers act on and a retry loop shared
with the embedders. Put into `kb_index`, the Redis client and the worker's error kinds would become part of the
indexer; put into `bot`, `kb_index` could not use them without importing the bot. So both import this package,
and it imports neither: a test (tests/test_floor.py) keeps it that way. It depends only on the standard library,
httpx and redis-py, which both sides install anyway.

Modules, one noun each:
    errors      CitebotError, and its two kinds Retryable / Permanent: what a worker does with each
    connection  connect() and redis_location(): one way to open a client, one way to name it in messages
    retry       backoff_delay() and parse_retry_after(): every retry loop's delays
    deadline    the deadline a piece of work (a question) gives every request made within it
    http        the HTTP retry loop and the helpers both model clients and embedders share
    languages   LANGUAGES: the languages citebot indexes, answers and speaks
"""
