"""Prometheus metrics: what an operator graphs and alerts on.

Each process exposes its own registry: the web process on its /metrics route,
each worker on --metrics-port. Queue depth is read from Redis when /metrics is
scraped, so it is right even when no worker is running.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

REGISTRY = CollectorRegistry(auto_describe=True)

# Stage times are dominated by the LLM (seconds) while retrieval and
# verification take milliseconds: buckets span both.
_STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

QUESTIONS = Counter(
    "citebot_questions_total", "Questions answered, by outcome", ["outcome"], registry=REGISTRY
)
STAGE_SECONDS = Histogram(
    "citebot_stage_seconds", "Time per answering stage", ["stage"], buckets=_STAGE_BUCKETS, registry=REGISTRY
)
REGENERATIONS = Counter("citebot_regenerations_total", "Drafts regenerated after failed verification", registry=REGISTRY)
LLM_ERRORS = Counter("citebot_llm_errors_total", "LLM failures past the client's retries", ["kind"], registry=REGISTRY)
# "unavailable" is the one to alert on: the judge is configured but answers go out on the checks alone.
JUDGE_CALLS = Counter(
    "citebot_judge_calls_total", "Entailment judge calls, by result: passed, failed, unavailable", ["status"],
    registry=REGISTRY,
)
# By Slack's error code ("not_in_channel", "msg_too_long", "ratelimited", "http_503",
# "timeout"…): the codes that need an operator stand out from the ones a retry cures.
SLACK_ERRORS = Counter(
    "citebot_slack_errors_total", "Slack API failures past the client's retries, by error code", ["code"],
    registry=REGISTRY,
)
EVENTS = Counter(
    "citebot_events_total", "Slack events received by the web process", ["result"], registry=REGISTRY
)
QUEUE_JOBS = Gauge("citebot_queue_jobs", "Jobs in the queue, by state", ["state"], registry=REGISTRY)
WORKERS_ALIVE = Gauge("citebot_workers_alive", "Workers whose heartbeat has not expired", registry=REGISTRY)
REDIS_UP = Gauge("citebot_redis_up", "1 if Redis answered the last scrape's queue read", registry=REGISTRY)

SOCKET_MODE_CONNECTED = Gauge(
    "citebot_socket_mode_connected", "1 while the web process's Socket Mode connection to Slack is up",
    registry=REGISTRY,
)

CONTENT_TYPE = CONTENT_TYPE_LATEST


def observe_answer(outcome: str, timings_ms: dict[str, float], regenerations: int) -> None:
    QUESTIONS.labels(outcome=outcome).inc()
    for stage, ms in timings_ms.items():
        STAGE_SECONDS.labels(stage=stage).observe(ms / 1000)
    if regenerations:
        REGENERATIONS.inc(regenerations)


async def render(queue=None) -> bytes:
    """The exposition text; with a queue, its depth is read first."""
    if queue is not None:
        try:
            stats = await queue.stats()
            for state in ("waiting", "in_flight", "delayed", "dead"):
                QUEUE_JOBS.labels(state=state).set(getattr(stats, state))
            WORKERS_ALIVE.set(len(await queue.workers()))
            REDIS_UP.set(1)
        except Exception:  # noqa: BLE001 - a scrape must not fail because Redis is down: it says so instead
            REDIS_UP.set(0)
    return generate_latest(REGISTRY)
