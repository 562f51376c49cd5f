"""What the assistant panel opens with: the language to greet in, and the suggested prompts.

Read in the web process, like the Home tab (bot.home.data): a few Redis
reads and the index manifest, well inside Slack's 3 seconds.

The prompts come from the sources CITEBOT_ASSISTANT_PROMPTS names, in its order,
up to Slack's four:

- `asked`: the user's own questions that were answered, most asked first (similar
  wordings counted together), and only those the thread may still search: every
  collection their answer cited is one of the thread's. Only the user's own: a
  question's text is for its asker (the Home tab keeps it the same way), and
  nobody else sees the panel.
- `collections`: one prompt per collection of the live index that the thread
  may search (the `default` collection of loose files has no name to offer).
"""

from __future__ import annotations

import json

import redis.asyncio as aioredis

from bot.channels import ChannelPolicy
from bot.config import Settings
from bot.i18n import Key, message
from bot.models import Outcome
from bot.review.gaps import GapQuestion, group_questions
from bot.slack.mrkdwn import clip
from bot.store.asked import AskedIndex
from bot.store.audit import AuditTrail
from kb_index.collection import collection_base, in_collections
from kb_index.entries import DEFAULT_COLLECTION
from kb_index.index import IndexNotFound, current_generation, read_manifest

MAX_PROMPTS = 4  # Slack shows up to four
# A prompt's title is a button's label; its message is sent as the user's question.
TITLE_CHARS = 75
MESSAGE_CHARS = 1000


async def greeting_language(user: str, policy: ChannelPolicy, *, settings: Settings, redis: aioredis.Redis) -> str:
    """The channel's language where it has one, else the language of the user's latest
    question, else CITEBOT_LANGUAGE: a greeting has no text of its own to tell it by."""
    if policy.language:
        return policy.language
    audit = AuditTrail(redis)
    for asked in await AskedIndex(redis).recent(user, 5):
        entry = await audit.get(asked.question_id)
        if entry is not None:
            return entry.language
    return settings.language


async def suggested_prompts(user: str, policy: ChannelPolicy, language: str, *, settings: Settings,
                            redis: aioredis.Redis) -> list[dict[str, str]]:
    """Up to four {"title", "message"} prompts, from the sources the settings name."""
    prompts: list[dict[str, str]] = []
    for source in settings.assistant_prompts:
        if source == "asked":
            prompts += [_prompt(text, text) for text in await most_asked(user, policy, redis=redis)]
        elif source == "collections":
            prompts += [_prompt(name, message(Key.ASSISTANT_PROMPT_COLLECTION, language, collection=name))
                        for name in searchable_collections(settings, policy)]
    unique = list({p["message"]: p for p in prompts}.values())
    return unique[:MAX_PROMPTS]


async def most_asked(user: str, policy: ChannelPolicy, *, redis: aioredis.Redis) -> list[str]:
    """The user's answered questions, most asked first, that the thread may search."""
    audit = AuditTrail(redis)
    answered = []
    for asked in await AskedIndex(redis).recent(user):
        entry = await audit.get(asked.question_id)
        if entry is None or entry.outcome is not Outcome.ANSWERED or not entry.cited:
            continue
        if policy.collections is not None and not all(in_collections(c.collection, policy.collections)
                                                      for c in entry.cited):
            continue
        answered.append(GapQuestion(text=asked.text, language=entry.language, at=asked.at, outcome=str(entry.outcome)))
    return [group.representative for group in group_questions(answered)][:MAX_PROMPTS]


def searchable_collections(settings: Settings, policy: ChannelPolicy) -> list[str]:
    """The live index's named collections that the thread may search; [] without an index."""
    try:
        manifest = read_manifest(current_generation(settings.index_dir))
    except (IndexNotFound, OSError, json.JSONDecodeError):
        return []
    names = {path.split("/", 1)[0] for path in (manifest.get("paths") or {}).values() if "/" in path}
    names.discard(DEFAULT_COLLECTION)
    if policy.collections is not None:
        # A synced collection's parts are shown by their base name: one line for "handbook", not one per part.
        names = {n for n in names if n in {collection_base(c) for c in policy.collections}}
    return sorted(names)


def _prompt(title: str, text: str) -> dict[str, str]:
    return {"title": clip(title, TITLE_CHARS), "message": clip(text, MESSAGE_CHARS)}
