"""Every Redis key citebot writes, with how long it lives and why.

One place, so that an operator reading Redis, or a developer adding a key,
sees the whole picture. The queue's own keys are in bot.queue (its module
docstring explains the delivery protocol they implement) and re-exported here.
"""

from __future__ import annotations

PREFIX = "citebot:"

# A posted answer: what the Sources button and feedback need. Slack keeps the
# message; a month covers the questions people still click on.
ANSWER_PREFIX = PREFIX + "answer:"  # + answer id
ANSWER_TTL_S = 30 * 24 * 3600

# A rejected draft waiting for a reviewer, and the marker that makes the first
# click the only one that decides. Unreviewed drafts expire after 90 days.
REVIEW_PREFIX = PREFIX + "review:"  # + review id
REVIEW_DECISION_PREFIX = PREFIX + "review-decision:"  # + review id
REVIEW_TTL_S = 90 * 24 * 3600
OPEN_REVIEWS_ZSET = PREFIX + "reviews:open"  # member review id, score created_at

# 👍/👎 votes and reasons: a stream, bounded so it cannot grow without end.
FEEDBACK_STREAM = PREFIX + "feedback"
FEEDBACK_MAXLEN = 100_000


def answer_key(answer_id: str) -> str:
    return ANSWER_PREFIX + answer_id


def review_key(review_id: str) -> str:
    return REVIEW_PREFIX + review_id


def review_decision_key(review_id: str) -> str:
    return REVIEW_DECISION_PREFIX + review_id
