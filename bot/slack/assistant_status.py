"""What an assistant panel thread shows while the worker answers, instead of the 👀 reaction.

The status line ("citebot is searching the knowledge base…", then "… is
checking the answer…") is set where the stages happen: the worker sets the
first before the pipeline runs, and the pipeline's progress callback the
second, before the draft is checked. Slack clears the status itself when the
answer is posted into the thread, and drops it after two minutes without one.
The thread's title is its first question.

Both are best effort: a status Slack refuses must not cost the asker the answer,
and a redelivered job setting them again only repeats what the thread shows.
"""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bot.i18n import Key, message
from bot.models import SlackQuestion
from bot.slack.calls import best_effort
from bot.slack.mrkdwn import clip

# The stages of bot.answer.pipeline whose start the thread shows, and what it says then.
STAGE_STATUS = {"retrieve": Key.ASSISTANT_SEARCHING, "verify": Key.ASSISTANT_CHECKING}
# A thread's title is a line in the History list.
TITLE_CHARS = 100


class PanelStatus:
    def __init__(self, slack: AsyncWebClient, question: SlackQuestion):
        self.slack = slack
        self.question = question
        self._shown: str | None = None

    async def stage(self, stage: str) -> None:
        """The pipeline's progress callback: the status of `stage`, if it has one and it is new."""
        key = STAGE_STATUS.get(stage)
        if key is None:
            return
        status = message(key, self.question.language)
        if status != self._shown:
            self._shown = status
            await best_effort(self.slack.assistant_threads_setStatus(
                channel_id=self.question.channel, thread_ts=self._thread_ts, status=status))

    async def title(self, question: SlackQuestion) -> None:
        """The thread titled by `question` (with its thread's history read): only by its first,
        so that a follow-up keeps the title."""
        if question.history:
            return
        await best_effort(self.slack.assistant_threads_setTitle(
            channel_id=question.channel, thread_ts=self._thread_ts, title=clip(question.text, TITLE_CHARS)))

    @property
    def _thread_ts(self) -> str:
        return self.question.thread_ts or self.question.ts
