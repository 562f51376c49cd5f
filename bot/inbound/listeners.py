"""The web process: Bolt listeners that parse, dedupe, enqueue, and return.

Slack wants an answer within 3 seconds and retries an event it did not get an
ack for. So nothing slow happens here: a question becomes a job in Redis, and
the worker does the rest. The ack is sent only after the job is safely in
Redis (process_before_response): if Redis is down, Slack gets an error and
retries later, and the question is not lost. A retry of an event that was
enqueued is dropped by the queue's dedupe on the event id.

The only Slack calls made here are `views.open` for the Sources and feedback
modals, because their trigger_id expires 3 seconds after the click, and
`views.publish` for the Home tab (bot.home.data says why it is read here),
with one auth.test per process for the links on it (bot.slack.workspace).
The assistant panel's greeting is the other one (bot.inbound.assistant).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.access.gate import AccessGate
from bot.home.publish import publish_home
from bot.i18n import Key, message
from bot.inbound.access_events import register_access_events
from bot.inbound.assistant import register_assistant
from bot.inbound.help_channels import on_channel_message, register_handover
from bot.inbound.intake import (
    AppDeps,
    _string,
    bot_user_id_of,
    enqueue_question,
    feedback_dedupe_id,
    is_question_in_dm,
    make_question,
)
from bot.inbound.surfaces import register_surfaces
from bot.jobs.job import FeedbackPayload, Job, ReviewDecisionPayload
from bot.review import reviewers
from bot.slack import replies, review_card
from bot.slack.calls import make_client
from bot.slack.workspace import Workspace
from bot.store.records import AnswerRecord, shown_collections

log = logging.getLogger(__name__)


def create_app(deps: AppDeps) -> AsyncApp:
    settings = deps.settings
    app = AsyncApp(
        client=make_client(settings.slack_bot_token, settings.slack_api_url),
        signing_secret=settings.slack_signing_secret,
        process_before_response=True,
        # The bot's own user id comes from auth.test on the first request.
        ignoring_self_events_enabled=True,
    )
    register_events(app, deps)
    register_access_events(app, deps.records.redis)
    if deps.access is None:
        deps.access = AccessGate.of(app.client, deps.records.redis, settings.index_dir,
                                   cache_s=settings.access_cache_s)
    register_actions(app, deps)
    register_home(app, deps)
    register_assistant(app, deps)
    register_surfaces(app, deps)
    register_handover(app, deps)
    return app


# ---------------------------------------------------------------- events


def register_events(app: AsyncApp, deps: AppDeps) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        bot = bot_user_id_of(context, body)
        await enqueue_question(make_question(event, deps, is_dm=False, bot_user_id=bot), body, deps, bot_user_id=bot)

    @app.event("message")
    async def on_message(event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        if event.get("channel_type") in ("channel", "group"):
            # Help channels answer without a mention (bot.helpdesk); elsewhere a mention is an app_mention.
            await on_channel_message(event, body, context, deps)
            return
        if event.get("channel_type") != "im":
            return
        bot = bot_user_id_of(context, body)
        if is_question_in_dm(event, bot):
            await enqueue_question(make_question(event, deps, is_dm=True, bot_user_id=bot), body, deps, bot_user_id=bot)


# ---------------------------------------------------------------- the Home tab


def register_home(app: AsyncApp, deps: AppDeps) -> None:
    workspace = Workspace(app.client)

    @app.event("app_home_opened")
    async def on_home_opened(event: dict[str, Any], client: AsyncWebClient) -> None:
        user = _string(event.get("user"))
        if event.get("tab") != "home" or not user:
            return  # the Messages tab opens the DM; nothing to publish
        # A Slack retry publishes the view again: the same user's current state, harmless.
        await publish_home(client, user, settings=deps.settings, redis=deps.records.redis, workspace=workspace,
                           access=deps.access)


# ---------------------------------------------------------------- actions


def register_actions(app: AsyncApp, deps: AppDeps) -> None:
    settings, records = deps.settings, deps.records

    @app.action(replies.ACTION_SOURCES)
    async def on_sources(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        answer = await records.answer(body["actions"][0]["value"])
        # The record names where the answer was posted: a button can only open
        # the sources of an answer in the channel it was clicked in.
        if answer is None or answer.channel != _channel_of(body):
            log.warning("sources click for an unknown answer or from another channel ignored")
            return
        view = await sources_view_for(body["user"]["id"], answer, deps)
        await client.views_open(trigger_id=body["trigger_id"], view=view)

    @app.action(replies.ACTION_FEEDBACK_UP)
    async def on_feedback_up(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        if answer_id := _feedback_answer_id(body):
            await records.add_feedback(answer_id, body["user"]["id"], "up")

    @app.action(replies.ACTION_FEEDBACK_DOWN)
    async def on_feedback_down(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        answer_id = _feedback_answer_id(body)
        if not answer_id:
            return
        await records.add_feedback(answer_id, body["user"]["id"], "down")
        record = await records.answer(answer_id)
        language = record.language if record else settings.language
        await client.views_open(trigger_id=body["trigger_id"], view=replies.feedback_reason_modal(answer_id, language=language))

    @app.view(replies.CALLBACK_FEEDBACK_REASON)
    async def on_feedback_reason(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        await ack()
        reason = replies.feedback_reason_from(view)
        answer_id, user = view.get("private_metadata", ""), body["user"]["id"]
        await records.add_feedback(answer_id, user, "reason", reason)
        if reason:
            job = Job.of(FeedbackPayload(answer_id=answer_id, user=user, reason=reason))
            # The same reason from the same user is one job, whichever web process saw the click.
            await deps.queue.enqueue(job, dedupe_id=feedback_dedupe_id(answer_id, user, reason))

    async def decide(body: dict[str, Any], decision: str, text: str = "", save_draft: bool = False) -> None:
        review_id = body["actions"][0]["value"] if "actions" in body else body["view"]["private_metadata"]
        user = body["user"]["id"]
        if not await may_decide(review_id, user):
            return
        if not await records.claim_decision(review_id, user):
            return  # another reviewer, or a double click, was first
        job = Job.of(ReviewDecisionPayload(review_id=review_id, decision=decision, reviewer=user, text=text,
                                          save_draft=save_draft))
        try:
            # The claim above lets one click through; a key per job, not per
            # review, so that a click after a decision Slack refused (and the
            # worker undid) is not taken for a duplicate.
            await deps.queue.enqueue(job, dedupe_id=f"review:{review_id}:{job.id}")
        except Exception:
            await records.release_decision(review_id)
            raise

    def may_review(body: dict[str, Any]) -> bool:
        return reviewers.may_triage(settings, body)

    async def may_decide(review_id: str, user: str) -> bool:
        """A restricted review (its card shows neither draft nor buttons) is decided only by a reviewer who may
        read every collection it shows: a click from anyone else (a stale Home tab, a forged payload) does
        nothing. A Slack error resolving the clicker raises: nothing is decided on a guess."""
        record = await records.review(review_id)
        if record is None or not record.restricted or deps.access is None:
            return True
        if shown_collections(record) <= await deps.access.user_reads(user):
            return True
        log.warning("decision on restricted review %s by %s refused: not open to them", review_id, user)
        return False

    @app.action(review_card.ACTION_REVIEW_APPROVE)
    async def on_approve(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        if may_review(body):
            await decide(body, "approve")

    @app.action(review_card.ACTION_REVIEW_DISMISS)
    async def on_dismiss(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        if may_review(body):
            await decide(body, "dismiss")

    @app.action(review_card.ACTION_REVIEW_ANSWER)
    async def on_write_answer(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        if not may_review(body):
            return
        record = await records.review(body["actions"][0]["value"])
        if record is None:
            return
        view = review_card.review_answer_modal(record)
        if record.restricted and deps.access is not None \
                and not shown_collections(record) <= await deps.access.user_reads(body["user"]["id"]):
            view = replies.notice_modal(Key.REVIEW_MODAL_TITLE, Key.SOURCES_RESTRICTED, language=record.language)
        # The modal remembers the channel it was opened from: the submission has none.
        await client.views_open(trigger_id=body["trigger_id"], view=view)

    @app.view(review_card.CALLBACK_REVIEW_ANSWER_SUBMIT)
    async def on_answer_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        text = review_card.review_answer_from(view)
        if not text:
            record = await records.review(view.get("private_metadata") or "")
            required = message(Key.ANSWER_REQUIRED, record.language if record else "en")
            await ack(response_action="errors", errors={review_card.REVIEW_ANSWER_BLOCK: required})
            return
        await ack()
        if not reviewers.is_reviewer(settings, body["user"]["id"]):
            log.warning("review answer by %s refused: not in CITEBOT_REVIEWERS", body["user"]["id"])
            return
        await decide(body, "answer", text, save_draft=review_card.save_draft_from(view))


async def sources_view_for(user: str, answer: AnswerRecord, deps: AppDeps) -> dict[str, Any]:
    """The Sources modal for whoever clicked: a forwarded or shared answer's button is clicked by people the
    answer was not checked for, so the passages are shown only if the clicker may read every cited collection."""
    cited = {s.collection for s in answer.sources}
    if cited and deps.access is not None and not cited <= await deps.access.user_reads(user):
        log.info("sources of answer %s not shown to %s: not open to them", answer.answer_id, user)
        return replies.notice_modal(Key.SOURCES, Key.SOURCES_RESTRICTED, language=answer.language)
    return replies.sources_modal(answer.sources, question=answer.question, language=answer.language)


def _channel_of(body: dict[str, Any]) -> str | None:
    return (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")


def _feedback_answer_id(body: dict[str, Any]) -> str:
    """The answer a feedback button belongs to; "" (logged) for a button that names none."""
    answer_id = body["actions"][0].get("value") or ""
    if not answer_id:
        log.warning("feedback click without an answer id ignored")
    return answer_id
