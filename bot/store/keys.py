"""Every Redis key citebot writes, with how long it lives and why.

One place, so that an operator reading Redis, or a developer adding a key,
sees the whole picture. bot.jobs.queue's docstring explains the delivery protocol
the queue keys implement; their lifetimes are set there and in bot.jobs.consumer,
next to the other queue timings.

Where an answer was posted (channel and message ts) is written twice, for two
uses with two lifetimes, and read from one place per use:

- the post record (POSTED_PREFIX, bot.store.ledger `PostLedger`) makes
  posting exactly-once: the next run of a job reads it and does not post
  again. It is needed only while a job may still run: POSTED_TTL_S.
- the audit entry (AUDIT_STREAM, bot.store.audit) copies channel and ts from
  the post record right after the post, and keeps them AUDIT_HORIZON_S. It is
  the record of where an answer went for everything after its job: `citebot
  audit show`, and the note on an answer whose source changed
  (bot.answering.source_changes), which may come up to CITED_BY_WINDOW_S later.

The answer record (ANSWER_PREFIX) does not hold where it was posted.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS as SLOTS, key_slot

PREFIX = "citebot:"

# ---------------------------------------------------------------- hash tags (Redis Cluster)

# A cluster runs a script or a MULTI only on keys of one hash slot, and the
# slot of a key is that of the part between its first "{" and "}" (its hash
# tag) when it has one. So every group of keys one step touches together
# carries one tag, chosen by what the step is about:
#
# - per queue shard, "{q<n>}": a shard's stream, its delayed retries, its
#   dead letters and the dedupe keys of the jobs enqueued into it. Enqueue
#   (SET NX the dedupe key + XADD) and finish (XACK + ZADD/XADD/LPUSH) are
#   one script each, so these must share a slot. Tagging per question instead
#   would put every question's dedupe key in its own slot, away from the
#   stream its job goes into.
# - per post key, "{<post key>}": the post record, its claim and its attempt
#   (the claim script reads the record and sets the claim; a release deletes
#   claim and attempt). Per question, so posts spread over the whole cluster.
# - "{audit}": the audit stream, its question index and cited-by sets, written
#   by one script so that an index never points at nothing. One slot: the
#   audit is read as one stream in time order (`citebot review gaps`), and an
#   entry per answered question is not enough writes to make one node hot.
# - "{reviews}": a review record and the sorted set of open reviews, written
#   together. Reviews are a few a day.
# - "{workers}": the heartbeats, so that one SCAN and one MGET read them all.
# - "{access}": what Slack said about people, groups and channels (bot.access), read with one MGET.
#
# The queue spreads over the cluster by its shards: a job goes to the shard
# its dedupe id hashes to (a stable CRC32, so a Slack retry of an event goes
# to the shard that has its dedupe key), and every worker reads every shard.
# One stream per cluster would put every enqueue and every take on one node,
# the one thing a cluster is bought to avoid. 16 shards spread over up to 16
# masters: the tag of shard i is chosen so that its slot lies in the i-th
# sixteenth of the slot range, which any even split of the slots among the
# masters (redis-cli --cluster create makes one) spreads evenly;
# the count is fixed per mode, not a setting, because the web process and the
# workers must agree on it: a job in a shard no worker reads would never run.
# On one server (or a Sentinel-managed one) one shard is the whole queue, so
# nothing changes there but the names; the tags cost nothing outside a cluster.
CLUSTER_QUEUE_SHARDS = 16
SINGLE_QUEUE_SHARDS = 1

# ---------------------------------------------------------------- the job queue

# The consumer group all workers read through, the same on every shard; its
# PEL is what makes delivery at-least-once.
WORKERS_GROUP = "citebot-workers"


@lru_cache(maxsize=256)
def _shard_tag(index: int, count: int) -> str:
    # "q<i>", or "q<i>-<j>" with the first j that lands in the shard's part of
    # the slot range: computed, so the names never depend on a table kept by hand.
    for j in range(10_000):
        name = f"q{index}" if j == 0 else f"q{index}-{j}"
        if key_slot(name.encode()) * count // SLOTS == index:
            return "{" + name + "}"
    raise AssertionError("unreachable: CRC16 covers every part of the slot range")


@dataclass(frozen=True)
class QueueShard:
    """The keys of one queue shard (of `count`), all in the slot of its hash tag."""

    index: int
    count: int = 1

    @property
    def tag(self) -> str:
        return _shard_tag(self.index, self.count)

    @property
    def stream(self) -> str:
        # Jobs waiting or in flight. Entries are deleted when acked, so
        # XLEN - pending = jobs nobody has taken yet.
        return f"{PREFIX}{self.tag}:jobs"

    @property
    def delayed(self) -> str:
        # Retries waiting out their backoff: member = job JSON, score = due time (ms).
        return f"{PREFIX}{self.tag}:jobs:delayed"

    @property
    def dead(self) -> str:
        # Jobs that failed for good, newest first, for operators and replays.
        return f"{PREFIX}{self.tag}:jobs:dead"

    def dedupe_key(self, dedupe_id: str) -> str:
        return f"{PREFIX}{self.tag}:dedupe:{dedupe_id}"


def queue_shards(count: int) -> list[QueueShard]:
    return [QueueShard(i, count) for i in range(count)]


def shard_of(dedupe_id: str, count: int) -> QueueShard:
    """Where a job with this dedupe id goes: the same shard for every process and every retry."""
    return QueueShard(zlib.crc32(dedupe_id.encode()) % count, count)


# The one shard of a single server: what tests and tools on one Redis read.
JOBS_STREAM = QueueShard(0).stream
DELAYED_ZSET = QueueShard(0).delayed
DEAD_LIST = QueueShard(0).dead
DEDUPE_PREFIX = f"{PREFIX}{QueueShard(0).tag}:dedupe:"  # + dedupe id (Slack event id)
HEARTBEAT_PREFIX = PREFIX + "{workers}:worker:"  # + worker id

# ---------------------------------------------------------------- posting once (bot.store.ledger, bot.slack.posting)

# The post key is a question id, or a review card's or decision's key; it is
# the hash tag of its three keys.
POSTED_PREFIX = PREFIX + "posted:"  # + {post key}: the post that was made
POST_CLAIM_PREFIX = PREFIX + "post-claim:"  # + {post key}: a post is being made
# + {post key}: until when the message of its last chat.postMessage may still
# show up in Slack, when that post's outcome is unknown (a timeout, a 5xx).
POST_ATTEMPT_PREFIX = PREFIX + "post-attempt:"
# Redelivery comes within minutes, but an operator may replay a dead letter
# days later: the post record must outlive that. Past the job, the audit
# entry says where the answer went (see the docstring).
POSTED_TTL_S = 7 * 24 * 3600

# ---------------------------------------------------------------- records

# A posted answer: what the Sources button and feedback need. Slack keeps the
# message; a month covers the questions people still click on.
ANSWER_PREFIX = PREFIX + "answer:"  # + answer id
ANSWER_TTL_S = 30 * 24 * 3600

# A rejected draft waiting for a reviewer, and the marker that makes the first
# click the only one that decides. Unreviewed drafts expire after 90 days.
REVIEW_PREFIX = PREFIX + "{reviews}:review:"  # + review id
REVIEW_DECISION_PREFIX = PREFIX + "review-decision:"  # + review id
REVIEW_TTL_S = 90 * 24 * 3600
OPEN_REVIEWS_ZSET = PREFIX + "{reviews}:open"  # member review id, score created_at

# When the first model call for a question began: its time budget
# (CITEBOT_QUESTION_BUDGET_S) counts from there over all its tries. A day
# outlives any question's retries.
QUESTION_STARTED_PREFIX = PREFIX + "question-started:"  # + question id
QUESTION_STARTED_TTL_S = 24 * 3600

# The uncertain answer of a try whose judge could not judge its draft: a later
# try that finds the question's time spent, or the last try failing on the
# model, still ends "not sure" with that draft on the review card instead of the
# apology (nothing unjudged is posted, and nothing judged is lost). As long as
# the question's start.
UNJUDGED_PREFIX = PREFIX + "unjudged:"  # + question id

# 👍/👎 votes and reasons: a stream, bounded so it cannot grow without end.
FEEDBACK_STREAM = PREFIX + "feedback"
FEEDBACK_MAXLEN = 100_000

# ---------------------------------------------------------------- audit trail (bot.store.audit)

# One entry per question that got an answer, a refusal, the uncertain message
# or the apology: what it relied on (cited entries with the content hash of
# each chunk), how it was checked, how long it took. Trimmed twice on every
# write: to AUDIT_HORIZON_S by entry id (ids are millisecond timestamps), and
# to about AUDIT_MAXLEN entries, so a busy month cannot fill Redis (an entry
# is 1-3 kB: the cap is well under a gigabyte).
AUDIT_STREAM = PREFIX + "{audit}"
AUDIT_MAXLEN = 200_000
AUDIT_HORIZON_S = 90 * 24 * 3600
# Channels Slack said were shared with another organization (channel_shared), channel -> when (a sorted set):
# `citebot audit shared` and `citebot doctor` list the restricted answers already posted in each (bot.store.
# shared_history). A channel leaves it on channel_unshared; the key lives as long as the entries it points at.
SHARED_CHANNELS = PREFIX + "{audit}:shared-channels"
# Question id -> its entry's stream id, for `citebot audit show` in O(1).
# Lives as long as the stream keeps entries (AUDIT_HORIZON_S).
AUDIT_QUESTION_PREFIX = PREFIX + "{audit}:q:"  # + question id
# Entry id -> the questions whose answers cited it (sorted set, score = when
# answered), for the note on answers whose source changed (bot.answering.source_changes).
# Members older than CITED_BY_WINDOW_S are trimmed on every write and the key
# expires that long after its last write: past the window the answer record
# that holds the posted message (ANSWER_TTL_S) is gone too.
CITED_BY_PREFIX = PREFIX + "{audit}:cited-by:"  # + entry id
CITED_BY_WINDOW_S = 30 * 24 * 3600
# Held while one worker rewrites an answer's source notes (chat.update of the
# stored message): two notes for the same answer must not overwrite each
# other. Short: a worker that dies holding it blocks the next try for this long.
SOURCE_NOTE_LOCK_PREFIX = PREFIX + "source-note-lock:"  # + question id
SOURCE_NOTE_LOCK_TTL_S = 30


# `citebot sync` in the workers (bot.answering.source_sync): one sync at a time across all workers. The lock
# lives SYNC_LOCK_TTL_S and is renewed while its sync runs, so a worker killed mid-sync frees it within that time.
SYNC_LOCK = PREFIX + "sync:lock"
SYNC_LOCK_TTL_S = 120
SYNC_LAST_PREFIX = PREFIX + "sync:last:"  # + source name: when it was last synced (epoch seconds), no TTL


def sync_last_key(source: str) -> str:
    return SYNC_LAST_PREFIX + source


def answer_key(answer_id: str) -> str:
    return ANSWER_PREFIX + answer_id


def review_key(review_id: str) -> str:
    return REVIEW_PREFIX + review_id


def review_decision_key(review_id: str) -> str:
    return REVIEW_DECISION_PREFIX + review_id


def question_started_key(question_id: str) -> str:
    return QUESTION_STARTED_PREFIX + question_id


def unjudged_key(question_id: str) -> str:
    return UNJUDGED_PREFIX + question_id


def dedupe_key(dedupe_id: str, shards: int = SINGLE_QUEUE_SHARDS) -> str:
    return shard_of(dedupe_id, shards).dedupe_key(dedupe_id)


def heartbeat_key(worker_id: str) -> str:
    return HEARTBEAT_PREFIX + worker_id


def posted_key(post_key: str) -> str:
    return POSTED_PREFIX + "{" + post_key + "}"


def post_claim_key(post_key: str) -> str:
    return POST_CLAIM_PREFIX + "{" + post_key + "}"


def post_attempt_key(post_key: str) -> str:
    return POST_ATTEMPT_PREFIX + "{" + post_key + "}"


def audit_question_key(question_id: str) -> str:
    return AUDIT_QUESTION_PREFIX + question_id


def cited_by_key(entry_id: str) -> str:
    return CITED_BY_PREFIX + entry_id


def source_note_lock_key(question_id: str) -> str:
    return SOURCE_NOTE_LOCK_PREFIX + question_id

# ---------------------------------------------------------------- the Home tab (bot.store.asked)

# User id -> the questions they asked (sorted set, member = JSON of question id
# and text, score = when asked), for the asker's own list on their Home tab.
# The audit trail records no user id on purpose (it is for operators); this
# index is what lets a user, and only that user, find their own questions.
# Written by the web process when it enqueues a question, so a question still
# being answered is listed too. Trimmed to the newest ASKED_MAX on every write;
# the key lives as long as the audit entries it points to (AUDIT_HORIZON_S)
# after the user's last question.
ASKED_PREFIX = PREFIX + "asked:"  # + user id
ASKED_MAX = 20
ASKED_TTL_S = AUDIT_HORIZON_S


def asked_key(user_id: str) -> str:
    return ASKED_PREFIX + user_id

# ---------------------------------------------------------------- the assistant panel (bot.store.assistant_threads)

# (DM channel, thread ts) -> the panel thread's context: JSON of the channel the
# panel was open beside (Slack's thread context) and the event_ts it came with,
# so that a late retry of an older context change cannot undo a newer one.
# Written on assistant_thread_started and _context_changed, read on every
# question in the thread to pick the collections of that channel. Its presence
# is also what tells a panel thread from an ordinary thread in the DM. People
# come back to a panel thread for weeks (Slack lists them under History): the
# key lives ASSISTANT_THREAD_TTL_S after the last change.
ASSISTANT_THREAD_PREFIX = PREFIX + "assistant:thread:"  # + channel + ":" + thread ts
ASSISTANT_THREAD_TTL_S = AUDIT_HORIZON_S
# The greeting of a panel thread, claimed before it is posted, so that Slack's
# retry of assistant_thread_started greets once. Released when the greeting
# fails, so that the retry tries again; it only needs to outlive Slack's
# retries (minutes), a day is plenty.
ASSISTANT_GREETED_PREFIX = PREFIX + "assistant:greeted:"  # + channel + ":" + thread ts
ASSISTANT_GREETED_TTL_S = 24 * 3600


def assistant_thread_key(channel: str, thread_ts: str) -> str:
    return f"{ASSISTANT_THREAD_PREFIX}{channel}:{thread_ts}"


def assistant_greeted_key(channel: str, thread_ts: str) -> str:
    return f"{ASSISTANT_GREETED_PREFIX}{channel}:{thread_ts}"


# ---------------------------------------------------------------- who may read what (bot.access)

# What Slack said about a user (users.info), a user group's members, a channel's members and kind
# (conversations.members / .info), the workspace's groups by handle. Cached so that a question costs no
# Slack call once its people are known; short-lived, so that someone removed from a group loses access
# within minutes even if Slack's event is lost (the web process drops the entry on the event itself).
# + user:<id> | group:<id> | members:<channel> | people:<channel> (its members' kinds, one read) | channel:<channel>
# | groups | epoch (bumped on every user_change: a channel's people made before it are read again)
# One hash tag for all of them: a question reads its people with one MGET (and a channel's list beside the
# epoch), which a cluster runs only on keys of one slot. Small, short-lived values: one node holds them well.
ACCESS_PREFIX = PREFIX + "{access}:"
ACCESS_TTL_S = 300  # the default of CITEBOT_ACCESS_CACHE_S (bot.config), which sets it
# A person told once why citebot does not answer in a channel shared with another organization.
ACCESS_TOLD_PREFIX = PREFIX + "access-told:"  # + <channel>:<user>
ACCESS_TOLD_TTL_S = 30 * 24 * 3600
# A question answered in a channel whose asker was offered "Answer privately": the question (JSON) the button
# asks again from the asker's own access. A day to click it.
PRIVATE_OFFER_PREFIX = PREFIX + "private-offer:"  # + question id
PRIVATE_OFFER_TTL_S = 24 * 3600


# ---------------------------------------------------------------- help channels (bot.helpdesk, bot.store.escalations)

# Channel -> the messages answered there without a mention in the last hour
# (sorted set, member = message ts, score = when), for a channel's
# `max_per_hour`. A sliding hour, trimmed on every check; the member is the
# message, so Slack's retry of an event is not counted twice. Lives an hour
# after the channel's last such answer.
AUTO_ANSWERED_PREFIX = PREFIX + "auto-answered:"  # + channel
AUTO_ANSWERED_WINDOW_S = 3600

# A question handed over to people ("Still need help?"): its record (JSON), the
# sorted set of all hand-overs by time (`citebot review list`, `review gaps`)
# and, per thread people answer in, the question it belongs to. One tag: the
# click's claim writes all three in one script, so the first click is the only
# one. Kept as long as the audit trail keeps the answer it hands over.
ESCALATION_PREFIX = PREFIX + "{escalations}:q:"  # + question id
ESCALATIONS_ZSET = PREFIX + "{escalations}:all"  # member question id, score when handed over
ESCALATED_THREAD_PREFIX = PREFIX + "{escalations}:thread:"  # + channel + ":" + thread ts -> question id
# A thread's one hand-over: the asker's thread (a channel's, a panel's) is handed over once, whichever of
# its replies' buttons is clicked; a question asked outside a thread (a DM's) claims only itself.
ESCALATION_CLAIM_PREFIX = PREFIX + "{escalations}:claim:"  # + channel + ":" + thread ts, or the question id
ESCALATION_TTL_S = AUDIT_HORIZON_S


def auto_answered_key(channel: str) -> str:
    return AUTO_ANSWERED_PREFIX + channel


def escalation_key(question_id: str) -> str:
    return ESCALATION_PREFIX + question_id


def escalated_thread_key(channel: str, thread_ts: str) -> str:
    return f"{ESCALATED_THREAD_PREFIX}{channel}:{thread_ts}"


def escalation_claim_key(channel: str, thread_ts: str | None, question_id: str) -> str:
    return ESCALATION_CLAIM_PREFIX + (f"{channel}:{thread_ts}" if thread_ts else question_id)
