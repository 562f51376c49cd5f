"""What each kind of finding does to a draft: the one table, read here and nowhere else.

- REGENERATE: the draft as written cannot be posted. It is regenerated once with the finding as
  feedback; a second failure gives the asker "not sure" and the review card the draft. The sound
  checks' findings are of this kind: never wrong about a right draft, so no judge may overrule them.
- JUDGE: held for the entailment judge (a number no cited block and not the question states: the
  answer may have worked it out from the asker's case). The judge clears it by supporting the
  statement with a quote found in its blocks; where no judge runs it fails as REGENERATE.
- FAIL: nothing can be posted and a regeneration would not help: the judge could not judge (down,
  timed out, an unreadable reply, the question's time spent). A model outage: the job is retried
  (bot.answering.answerer), and the last try ends "not sure" with the draft on the review card.

`claim_local`: in claims mode the finding concerns one claim, which is dropped, and the verified
rest may be posted as partial (AuditMode.HYBRID); any other finding makes it UNGROUNDED.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.models import JUDGE_CONTRADICTS, JUDGE_NOT_STATED, Verdict, Violation

JUDGE_UNAVAILABLE = "JUDGE_UNAVAILABLE"


class Action(StrEnum):
    REGENERATE = "regenerate"
    JUDGE = "judge"
    FAIL = "fail"


@dataclass(frozen=True)
class Rule:
    action: Action
    claim_local: bool = False


_R = Rule(Action.REGENERATE)
_LOCAL = Rule(Action.REGENERATE, claim_local=True)

POLICY: dict[str, Rule] = {
    # citations mode
    "UNKNOWN_ID": _R,  # a cited id is not one of the prompt's blocks
    "NO_CITATION": _R,  # an answer that cites nothing and is no refusal
    "QUOTE_NOT_IN_SOURCE": _R,  # a double-quoted passage not verbatim in a cited block
    "UNCITED_SENTENCE": _R,  # a quotation or link with nothing cited to back it
    "UNCITED_NUMBER": Rule(Action.JUDGE),  # a number in a sentence nothing cites: the judge sees every cited block
    "SOURCE_ROLE_BLOCKED": _R,  # a block whose role is no answer source
    "CUT_AT_OUTPUT_CAP": _R,  # the draft stopped at the output cap
    # claims mode
    "SCHEMA_INVALID": _R,
    "MANUAL_QUOTE_VIOLATION": _R,  # a claim with a double quote: quotations cannot be checked per claim
    "UNKNOWN_EVIDENCE_ID": _LOCAL,
    "UNSUPPORTED_CLAIM": _LOCAL,  # a claim that cites no evidence
    "TOO_MANY_CLAIMS": _LOCAL,  # a runaway answer: posted partial, so operators see it
    # both
    "LINK_NOT_IN_SOURCE": _LOCAL,  # a URL, e-mail address, phone number or Slack link no cited block states
    "NUMBER_NOT_IN_SOURCE": Rule(Action.JUDGE, claim_local=True),
    JUDGE_CONTRADICTS: _LOCAL,
    JUDGE_NOT_STATED: _LOCAL,
    JUDGE_UNAVAILABLE: Rule(Action.FAIL),
}


def rule(kind: str) -> Rule:
    """The kind's rule; an unknown kind regenerates (a check added without a row fails safe)."""
    return POLICY.get(kind, _R)


def finding(kind: str, detail: str, claim: int | None = None) -> Violation:
    """A violation of `kind`, held for the judge where the table says so."""
    return Violation(kind=kind, detail=detail, claim=claim, soft=rule(kind).action is Action.JUDGE)


def held_for_judge(violation: Violation) -> bool:
    return rule(violation.kind).action is Action.JUDGE


def claim_local(violation: Violation) -> bool:
    return rule(violation.kind).claim_local


def outage(verdict: Verdict) -> bool:
    """Does the verdict carry a finding no regeneration can mend (the judge could not judge)?"""
    return any(rule(v.kind).action is Action.FAIL for v in verdict.violations)
