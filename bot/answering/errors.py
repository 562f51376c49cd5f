"""How an answer job fails, by kind: the consumer retries a Retryable and gives up on a Permanent
(citebot_core.errors); bot.answering.answerer says what the asker hears past the last try."""

from __future__ import annotations

from bot.answer.budget import BudgetSpent
from bot.models import Answer, JudgeStatus, Outcome
from citebot_core.errors import Permanent, Retryable


class ModelUnavailable(Retryable):
    """The model failed this try; past the last one the asker gets the model-down apology."""


class JudgeOutage(ModelUnavailable):
    """The judge could not judge the draft this try: past the last one, the asker hears "not sure"
    and the review card carries the draft (`answer`, the pipeline's uncertain answer)."""

    def __init__(self, answer: Answer):
        super().__init__(f"judge: {answer.unverified_reason}")
        self.answer = answer


class ModelRejected(Permanent):
    """The model's server refused the request: another try would be refused the same way."""


def judge_outage(answer: Answer) -> bool:
    """Did the judge fail to judge for a reason another try may not have? Not the question's time
    spent (while the judge was asked, or before it could be): that ends "not sure" at once, as
    every later try would find no time left."""
    judgement = answer.judgement
    return (answer.outcome is Outcome.UNCERTAIN and judgement is not None and judgement.status is JudgeStatus.UNAVAILABLE
            and not (judgement.error or "").startswith(BudgetSpent.__name__))
