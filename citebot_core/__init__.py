"""The floor both citebot packages stand on: the error base, HTTP retries and the deadline, the languages.

Why a package of its own, and not `kb_index`'s lowest modules: `kb_index` knows nothing of Slack, LLMs or Redis
(docs/DESIGN.md 2), yet `bot` needs an error base its workers act on and a retry loop shared with the embedders.
Put into `kb_index`, the worker's error kinds would become part of the indexer; put into `bot`, `kb_index` could
not use them without importing the bot. So both import this package, and it imports neither: a test
(tests/test_floor.py) keeps it that way. Redis is the bot's alone: its connection and targets live in bot/store.

Modules, one noun each:
    errors      CitebotError, and its two kinds Retryable / Permanent: what a worker does with each
    retry       backoff_delay() and parse_retry_after(): every retry loop's delays
    deadline    the deadline a piece of work (a question) gives every request made within it
    http        the HTTP retry loop and the helpers both model clients and embedders share
    languages   LANGUAGES: the languages citebot indexes, answers and speaks
"""
