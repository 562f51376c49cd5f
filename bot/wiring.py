"""The composition root: builds and runs the two long-lived processes.

`run_web` is `citebot serve` (Slack events in, jobs into Redis); `run_worker`
is `citebot worker` (a Consumer that hands each job to the handler its kind registers in `job_handlers`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.access.gate import AccessGate
from bot.answer.backends import Backend, make_backend
from bot.answer.judge import JUDGE_OFF_WARNING, unjudged_model
from bot.answer.pipeline import Pipeline, make_pipeline
from bot.answer.probe import probe_model
from bot.answering.answerer import Answerer
from bot.answering.delivery import Deliveries, OwnReplies, Recorder
from bot.answering.private import PrivateAnswers
from bot.answering.share import Shares
from bot.answering.source_changes import note_source_changes
from bot.answering.source_sync import SourceSchedule
from bot.channels import load_channels
from bot.config import Settings
from bot.embedder import make_embedder
from bot.helpdesk.handover import Handover
from bot.helpdesk.learning import ESCALATION_KIND, Learning
from bot.home.publish import publish_home
from bot.inbound.intake import AppDeps
from bot.inbound.listeners import create_app
from bot.inbound.socket_mode import SocketModeWatch
from bot.inbound.web import EVENTS_PATH, SLACK_REDIS_BUDGET_S, create_metrics_app, create_web_app
from bot.jobs.consumer import Consumer
from bot.jobs.dispatch import Dispatcher
from bot.jobs.job import Job, JobKind
from bot.jobs.queue import JobQueue
from bot.review.desk import HomeRefresh, ReviewDesk
from bot.review.reviewers import missing_reviewers
from bot.slack.calls import make_client
from bot.slack.startup import check_app_token, check_bot_token, resolve_review_channel
from bot.slack.workspace import Workspace
from bot.store.audit import AuditTrail
from bot.store.connection import connect
from bot.store.escalations import Escalations
from bot.store.ledger import PostLedger
from bot.store.records import Records
from citebot_core.deadline import deadline_in
from kb_index import Retriever
from kb_index.index import IndexNotFound, current_generation, open_problem

log = logging.getLogger(__name__)

# Records and the audit trail share one client per process; a Slack-facing
# command must not hang on Redis longer than this.
REDIS_TIMEOUT_S = 5.0


async def health_report(redis, index_dir: Path) -> dict:
    report: dict = {"ok": True}
    try:
        await asyncio.wait_for(redis.ping(), timeout=1.0)
        report["redis"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means "not healthy", reported as such
        report.update(ok=False, redis=f"unavailable: {type(exc).__name__}")
    try:
        report["index"] = current_generation(index_dir).name
    except IndexNotFound as exc:
        report.update(ok=False, index=str(exc))
    return report


def _report_index(index_dir: Path) -> None:
    """One clear line at start when nothing can be answered yet; the process runs all the same, so
    that askers hear that the knowledge base is not ready instead of nothing, and a later
    `citebot index` is picked up without a restart."""
    problem = open_problem(index_dir)
    if problem is not None:
        log.error("the knowledge base is not ready: %s; until then every question gets 'the knowledge base is "
                  "not ready'", problem)


async def _migrate_keys(settings: Settings, redis) -> None:
    """An upgrade in place: the web process renames the untagged keys too, in case it starts
    before any new worker (bot.store.migrate). Redis down is no reason not to serve: the
    first worker does it then."""
    from redis.exceptions import RedisError

    from bot.store.migrate import migrate_untagged_keys
    from bot.store.redis_target import RedisMode

    if settings.redis.resolved_mode is RedisMode.CLUSTER:
        return
    try:
        await migrate_untagged_keys(redis)
    except (RedisError, OSError) as exc:
        log.warning("could not check Redis for keys of the old layout: %s", exc)


async def run_web(settings: Settings, *, host: str, port: int) -> None:
    """`citebot serve`: until SIGTERM or SIGINT."""
    _, signing_secret = settings.require_web()
    _report_index(settings.index_dir)
    channels = load_channels(settings.channels_file)
    settings = await _checked_with_slack(settings, socket_mode=settings.socket_mode)
    async with AsyncExitStack() as stack:
        queue = await stack.enter_async_context(JobQueue(settings.redis))
        redis = connect(settings.redis, timeout=REDIS_TIMEOUT_S)
        stack.push_async_callback(redis.aclose)
        await _migrate_keys(settings, redis)
        bolt = create_app(AppDeps(settings=settings, queue=queue, records=Records(redis), channels=channels))
        socket_watch = await _connect_socket_mode(stack, bolt, settings) if settings.socket_mode else None

        async def health() -> dict:
            report = await health_report(redis, settings.index_dir)
            if socket_watch is not None:
                socket = socket_watch.report()
                report.update(socket_mode=socket["socket_mode"], ok=report["ok"] and socket["ok"])
            return report

        web_app = create_web_app(bolt, signing_secret=signing_secret, health=health, queue=queue)
        runner = web.AppRunner(web_app, access_log=None)
        await runner.setup()
        stack.push_async_callback(runner.cleanup)
        await web.TCPSite(runner, host, port).start()
        if signing_secret:
            log.info("serving on http://%s:%d (Slack events and interactivity at %s)", host, port, EVENTS_PATH)
        else:
            log.info("serving /healthz and /metrics on http://%s:%d; Slack events come over Socket Mode", host, port)
        await _until_signalled()


async def _checked_with_slack(settings: Settings, *, socket_mode: bool) -> Settings:
    """The start-up checks of bot.slack.startup; the settings with the review channel as its ID."""
    slack = make_client(settings.require_bot_token(), settings.slack_api_url)
    identity = await check_bot_token(slack)
    if socket_mode and settings.slack_app_token:
        await check_app_token(slack, settings.slack_app_token)
    review_channel = await resolve_review_channel(slack, settings.review_channel, identity)
    if warning := missing_reviewers(settings):
        log.warning("%s", warning)
    return settings.model_copy(update={"review_channel": review_channel})


async def _connect_socket_mode(stack: AsyncExitStack, bolt: AsyncApp, settings: Settings) -> SocketModeWatch:
    from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

    class Handler(AsyncSocketModeHandler):
        async def handle(self, client, req) -> None:
            # Slack wants these acks within 3 s too: the same deadline as an HTTP request's (bot.inbound.web).
            with deadline_in(SLACK_REDIS_BUDGET_S):
                await super().handle(client, req)

    handler = Handler(bolt, settings.slack_app_token)
    watch = SocketModeWatch(handler.client.is_connected, grace_s=settings.socket_mode_grace_s)
    # The first connection is made in the background: slack_sdk retries it for
    # ever, and the watch (logs, metric, /healthz) is what says it is not up.
    connecting = asyncio.create_task(handler.connect_async(), name="socket-mode-connect")
    stack.push_async_callback(handler.close_async)
    stack.callback(connecting.cancel)
    watch.start()
    stack.push_async_callback(watch.stop)
    return watch


async def run_worker(settings: Settings, *, concurrency: int, metrics_port: int = 0, **consumer_options: Any) -> None:
    """`citebot worker`: until SIGTERM or SIGINT, then in-flight jobs get the Consumer's
    shutdown grace; `consumer_options` are the Consumer's keyword arguments."""
    settings = await _checked_with_slack(settings, socket_mode=False)
    async with AsyncExitStack() as stack:
        if metrics_port:
            await _serve_metrics(stack, metrics_port)
        embedder = make_embedder(settings)
        retriever = stack.enter_context(Retriever(settings.index_dir, embedder=embedder, min_cosine=settings.min_cosine))
        _report_index(settings.index_dir)
        backend = make_backend(settings)
        stack.push_async_callback(backend.aclose)
        redis = connect(settings.redis, timeout=REDIS_TIMEOUT_S)
        stack.push_async_callback(redis.aclose)
        ledger = PostLedger(settings.redis)
        stack.push_async_callback(ledger.close)
        slack = make_client(settings.slack_bot_token, settings.slack_api_url)
        records = Records(redis)
        pipeline = make_pipeline(settings, retriever, backend)
        if pipeline.judge is not None:
            stack.push_async_callback(pipeline.judge.aclose)
        access = AccessGate.of(slack, redis, settings.index_dir, cache_s=settings.access_cache_s)
        reviews = ReviewDesk(settings=settings, slack=slack, records=records, ledger=ledger, access=access,
                             refresh_home=_home_refresher(settings, slack, redis, access))
        handlers = job_handlers(settings, slack, pipeline, records, ledger, reviews, AuditTrail(redis), access)
        log.info(
            "worker started: %d jobs at once, index %s, LLM %s, judge %s, embedder %s",
            concurrency, retriever.generation, backend.name, settings.judge_kind,
            embedder.name if embedder else "none (BM25 only)",
        )
        if unjudged_model(settings):
            log.warning("%s", JUDGE_OFF_WARNING)
        # Questions are taken meanwhile: a model that is slow or down is reported, not waited for.
        probing = asyncio.create_task(_report_model(backend, settings), name="model-probe")
        stack.callback(probing.cancel)
        if settings.sources_file is not None and settings.sync_in_worker:
            syncing = asyncio.create_task(SourceSchedule(settings, redis).run_forever(), name="source-sync")
            stack.callback(syncing.cancel)
        consumer = Consumer(
            handlers.handle, on_dead=handlers.on_dead, redis_url=settings.redis, concurrency=concurrency,
            **consumer_options,
        )
        with _on_signals(consumer.stop):
            await consumer.run()


def job_handlers(settings: Settings, slack: AsyncWebClient, pipeline: Pipeline, records: Records, ledger: PostLedger,
                 reviews: ReviewDesk, audit: AuditTrail | None, access: AccessGate | None = None) -> Dispatcher:
    """What a worker does with each kind of job: one handler each, and the last word of a kind whose job failed
    for good. `access` is None only where a test of something else hands in a pipeline without an index."""
    escalations = Escalations(records.redis)
    handover = Handover(slack, ledger, escalations, settings.review_channel)
    learning = Learning(reviews, escalations)
    reviews.kinds.setdefault(ESCALATION_KIND, learning)  # decided as its kind says, on the desk's cards
    deliveries, recorder = Deliveries(slack, ledger), Recorder(audit)
    own = OwnReplies(deliveries, records, recorder)
    answerer = Answerer(settings, slack, pipeline, records, reviews, deliveries, own, recorder,
                        PrivateAnswers(settings, slack, pipeline, records, audit), access)
    shares = Shares(settings, slack, records, ledger, access)

    async def source_changed(job: Job) -> None:
        await note_source_changes(job, slack=slack, records=records, audit=audit)

    return Dispatcher(
        handlers={
            JobKind.ANSWER: answerer.answer,
            JobKind.HELP: own.help,
            JobKind.REVIEW_DECISION: reviews.decide,
            JobKind.FEEDBACK: reviews.feedback,
            JobKind.SOURCE_CHANGED: source_changed,
            JobKind.SHARE_ANSWER: shares.share,
            JobKind.HANDOVER: handover.run,
            JobKind.HANDOVER_REPLY: learning.person_answered,
        },
        last_words={
            JobKind.ANSWER: answerer.failed,
            JobKind.REVIEW_DECISION: reviews.decision_failed,
            JobKind.HANDOVER: lambda job, error: handover.failed(job),
        },
    )


async def _report_model(backend: Backend, settings: Settings) -> None:
    """The capability probe's one line (bot.answer.probe); it also leaves the backend knowing its
    structured-output form before the first claims question."""
    try:
        report = await probe_model(backend, settings.question_budget_s)
    except Exception:  # noqa: BLE001 - a report, never a reason for the worker to stop
        log.exception("the model probe failed")
        return
    if report.answers:
        log.info("%s", report.line())
    else:
        log.warning("%s", report.line())


async def _serve_metrics(stack: AsyncExitStack, port: int) -> None:
    runner = web.AppRunner(create_metrics_app(), access_log=None)
    await runner.setup()
    stack.push_async_callback(runner.cleanup)
    try:
        await web.TCPSite(runner, "0.0.0.0", port).start()
    except OSError as exc:
        # Two workers on one machine both default to the same port: the
        # second still answers questions, only without metrics.
        log.warning("metrics port %d is not free (%s): this worker runs without /metrics; "
                    "give each worker its own --metrics-port", port, exc.strerror)
        return
    log.info("metrics on port %d", port)


async def _until_signalled() -> None:
    stop = asyncio.Event()
    with _on_signals(stop.set):
        await stop.wait()


@contextmanager
def _on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """SIGTERM (Kubernetes, docker stop) and SIGINT (Ctrl-C) call `stop` instead of killing the process."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop)
    try:
        yield
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


def _home_refresher(settings: Settings, slack: AsyncWebClient, redis: aioredis.Redis, access: AccessGate
                    ) -> HomeRefresh:
    """The desk's way to publish a reviewer's Home tab again after a decision made there."""
    workspace = Workspace(slack)

    async def refresh(user: str) -> None:
        await publish_home(slack, user, settings=settings, redis=redis, workspace=workspace, access=access)

    return refresh
