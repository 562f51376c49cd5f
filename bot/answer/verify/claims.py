"""Claim-lattice checks: an answer as JSON claims, each pointing at evidence.

The model returns {"claims": [{"text": ..., "evidence_ids": ["E1", ...]}]}. Each claim is checked
on its own by the sound checks; what each finding does is policy.py's table, and the audit mode
then says what may be posted: STRICT (no finding: all of it), HYBRID (some claims verified and
every finding local to a claim: only those, marked partial), UNGROUNDED (any other finding, or
nothing verified: handled like a failed verification). Whether a claim says what its evidence
says is the entailment judge's to decide (bot.answer.judge).

Evidence ids: the prompt's pointer ids (E1..En, any case), or a content-addressed evidence_id or
a KB entry id (all of its blocks), which name blocks unambiguously too; resolved to pointer ids.

A refusal is a verified answer without claims: an empty claim list (the only way to refuse under
schema-constrained decoding), claims that only say the refusal sentence, or that sentence as
plain text. A refusal that goes on to state something is checked (text.is_refusal).
"""

from __future__ import annotations

import json
import re
from typing import Any

from bot.answer.verify.lenient_json import parse_lenient_json
from bot.answer.verify.links import missing_links
from bot.answer.verify.not_covered import says_not_covered
from bot.answer.verify.numbers import unstated
from bot.answer.verify.policy import claim_local, finding
from bot.answer.verify.text import DOUBLE_QUOTE_CHARS, evidence_text, is_refusal, strip_think
from bot.models import AuditMode, Claim, Evidence, Verdict, Violation
from citebot_core.errors import Permanent

# Source roles a claim may rest on. Background material (noisy_background_source)
# gives context to the model but is not what an employee should be told as fact.
DEFAULT_ALLOWED_ROLES = frozenset({"primary_answer_source", "secondary_answer_source", "supporting_source",
                                   "definition_source", "procedure_source"})

# More claims than this is a runaway answer (repetition, listing a whole block):
# operators must see it, so it demotes to HYBRID; it never cuts claims off.
MAX_CLAIMS = 12


class _SchemaError(Permanent, ValueError):
    pass


# A claim of punctuation alone ("." "-" "…") states nothing a source could back: it is no claim.
_SAYS_SOMETHING = re.compile(r"[^\W_]")


def _read_claims(obj: Any) -> list[Claim]:
    if not isinstance(obj, dict) or not isinstance(obj.get("claims"), list):
        raise _SchemaError('expected an object {"claims": [...]}')
    claims = []
    for i, item in enumerate(obj["claims"]):
        if not isinstance(item, dict):
            raise _SchemaError(f"claim {i} is not an object")
        text, ids = item.get("text"), item.get("evidence_ids")
        if not isinstance(text, str) or not text.strip():
            raise _SchemaError(f"claim {i} has no text")
        if not _SAYS_SOMETHING.search(text):
            raise _SchemaError(f"claim {i} has no word or number: {text.strip()!r}")
        if isinstance(ids, str):
            ids = [ids]  # a single id not wrapped in a list: the meaning is plain
        if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
            raise _SchemaError(f"claim {i}: evidence_ids must be a list of strings")
        claims.append(Claim(text=text.strip(), evidence_ids=[x.strip().strip("[]") for x in ids]))
    return claims


class EvidenceIndex:
    """Resolves what a claim cites to the context blocks."""

    def __init__(self, evidence: list[Evidence]):
        self._by_key: dict[str, list[Evidence]] = {}
        for ev in evidence:
            for key in (ev.pointer_id, ev.evidence_id):
                self._by_key.setdefault(key.casefold(), []).append(ev)
        for ev in evidence:  # an entry id: all of its blocks, unless it is some block's own id
            self._by_key.setdefault(ev.entry_id.casefold(), [e for e in evidence if e.entry_id == ev.entry_id])

    def resolve(self, token: str) -> list[Evidence]:
        return self._by_key.get(token.casefold(), [])


def _check_claim(i: int, claim: Claim, index: EvidenceIndex, allowed_roles: frozenset[str], language: str,
                 question: str) -> tuple[Claim, list[Violation]]:
    """The claim with resolved pointer ids and its `verified` flag, and its findings."""
    out: list[Violation] = []

    def add(kind: str, detail: str) -> None:
        out.append(finding(kind, detail, i))

    if any(ch in claim.text for ch in DOUBLE_QUOTE_CHARS):
        add("MANUAL_QUOTE_VIOLATION", "claim text contains a double quote; state facts without quoting")
    resolved: list[Evidence] = []
    for token in claim.evidence_ids:
        found = index.resolve(token)
        if not found:
            add("UNKNOWN_EVIDENCE_ID", f"{token!r} is not one of the evidence ids")
        resolved.extend(ev for ev in found if ev not in resolved)
    for ev in resolved:
        if ev.source_role not in allowed_roles:
            add("SOURCE_ROLE_BLOCKED", f"{ev.pointer_id} ({ev.entry_id}) has role {ev.source_role!r}")
    if not claim.evidence_ids:
        add("UNSUPPORTED_CLAIM", "the claim cites no evidence")
    elif resolved:
        haystacks = [evidence_text(ev) for ev in resolved]
        for link in missing_links(claim.text, haystacks):
            add("LINK_NOT_IN_SOURCE", f"{link!r} is not in the cited evidence")
        for raw in unstated(claim.text, haystacks, language, question=question):
            add("NUMBER_NOT_IN_SOURCE", f"{raw!r} is not stated in the cited evidence")
    pointers = [ev.pointer_id for ev in resolved] + [t for t in claim.evidence_ids if not index.resolve(t)]
    return Claim(text=claim.text, evidence_ids=pointers, verified=not out), out


def audit_mode(violations: list[Violation], n_verified: int) -> AuditMode:
    if n_verified == 0 or not all(claim_local(v) for v in violations):
        return AuditMode.UNGROUNDED
    return AuditMode.HYBRID if violations else AuditMode.STRICT


def _refusal(fixups: list[str]) -> Verdict:
    return Verdict(ok=True, refusal=True, audit_mode=AuditMode.STRICT, json_fixups=fixups)


def verified_citations(claims: list[Claim], index: EvidenceIndex) -> list[str]:
    seen: list[str] = []
    for claim in claims:
        if claim.verified:
            for token in claim.evidence_ids:
                seen.extend(ev.entry_id for ev in index.resolve(token) if ev.entry_id not in seen)
    return seen


def verify_claims(draft_text: str, evidence: list[Evidence], language: str = "en",
                  allowed_roles: frozenset[str] | set[str] = DEFAULT_ALLOWED_ROLES, *, question: str = "") -> Verdict:
    """The sound checks of a claims-mode draft against the context blocks it was written from.
    `question` is what was asked: its numbers may be repeated."""
    text = strip_think(draft_text)
    try:
        obj, fixups = parse_lenient_json(text)
        claims = _read_claims(obj)
    except json.JSONDecodeError as exc:
        return _refusal([]) if is_refusal(text) else _schema_invalid(f"not JSON: {exc.msg}", [])
    except _SchemaError as exc:
        return _schema_invalid(str(exc), fixups)
    if all(not c.evidence_ids and is_refusal(c.text) for c in claims):
        return _refusal(fixups)  # also true for an empty list
    gaps = [c.text for c in claims if says_not_covered(c.text)]
    if len(gaps) == len(claims):
        return _refusal(fixups).model_copy(update={"not_covered": gaps})
    index = EvidenceIndex(evidence)
    checked, violations = [], []
    for i, claim in enumerate(claims):
        # A partial refusal (not_covered.py) is not posted as a fact, and not checked.
        result, found = (claim, []) if claim.text in gaps else _check_claim(
            i, claim, index, frozenset(allowed_roles), language, question)
        checked.append(result)
        violations += found
    if len(claims) > MAX_CLAIMS:
        violations.append(finding("TOO_MANY_CLAIMS", f"{len(claims)} claims; at most {MAX_CLAIMS}"))
    mode = audit_mode(violations, sum(c.verified for c in checked))
    return Verdict(ok=mode is AuditMode.STRICT, violations=violations, citations=verified_citations(checked, index),
                   audit_mode=mode, claims=checked, json_fixups=fixups, not_covered=gaps)


def _schema_invalid(detail: str, fixups: list[str]) -> Verdict:
    violations = [finding("SCHEMA_INVALID", detail)]
    return Verdict(ok=False, violations=violations, audit_mode=AuditMode.UNGROUNDED, json_fixups=fixups)
