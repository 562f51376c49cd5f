"""Trust benchmark: does citebot post what capable models get wrong, and flag what they get right?

The labelled set lives in bench/trust/ (its README says how it was made):
- questions.yaml: questions people would ask about the sample KB, in German and
  English, on pages of their own language and of the other, some only partly
  covered;
- prompts.jsonl: the prompts `citebot ask` built for each (bench/trust_record.py,
  a recording fake LLM), both answer modes;
- drafts/right-*.jsonl: the replies of a capable model to those prompts, right;
- drafts/wrong-<kind>.jsonl: right replies with one realistic mistake each, by
  kind (number changed, number in words changed, negation flipped, condition or
  scope changed, wrong actor or object, fact added);
- judge/*.jsonl: a capable model's verdicts, as the entailment judge, on every
  statement of every draft (the fake judge answers with them);
- split.yaml: the tune/test halves, by question, fixed before anything was tuned;
- holdout/: a second set made the same way after the checks were tuned on both
  halves of the first (its test half had been measured once, then joined the
  tuning): the numbers that say how the checks do on drafts they were not tuned on.

Each draft goes through the real pipeline (Pipeline.answer: retrieval, prompt,
the draft, the checks, the regeneration, the judge) with a scripted model that
answers the prompt with the draft, again with the same draft if asked to
regenerate, and the judge's prompt with the recorded verdicts. Counted:
- a right draft is flagged when the first draft fails (a second model call);
  "not sure" when the answer ends uncertain;
- a wrong draft is posted when its mistaken statement reaches the asker (the
  whole answer verified; in claims mode, its claim among those posted).
The sound checks only (judge off: the answer is posted unverified, marked so) and
judge on (the recorded capable judge), per half, kind, language pair and mode; with the judge on, what it adds per answer (calls, prompt and
reply size in tokens at 4 characters each, time in citebot).

SciFact (bench/verifier_scifact.py) is printed beside it with --scifact.

    python bench/trust.py [--set holdout|main|fresh|fresh2] [--half test|tune|all] [--by kind|pair|mode] [--show N] [--minicheck] [--checks] [--held-back] [--live-retrieval]

Goals on held-out drafts: judge on, wrong posted <= 3 % and right flagged <= 3 %.
The sound checks alone cannot tell a wrong sentence whose words all stand in its
block, and make no claim to: an answer posted with the judge off says it was not
checked (bot.answer.pipeline).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import itertools
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.answer.judge import LLMJudge
from bot.answer.minicheck import MiniCheckJudge
from bot.answer.pipeline import Pipeline
from bot.answer.verify.judgement import JUDGE_JSON_SCHEMA
from bot.config import BUNDLED_KB_DIR, BUNDLED_VECTORS_DIR
from bot.models import Answer, AnswerMode, Draft, GenerationRequest, Outcome, Question
from kb_index import ChunkResult, Retriever, build_index
from kb_index.analysis import terms
from kb_index.embedding import LocalE5Embedder
from kb_index.search import Retrieval

HERE = Path(__file__).resolve().parent / "trust"
KINDS = ("number_changed", "number_word_changed", "negation_flipped", "condition_changed", "actor_changed",
         "fact_added")
GOALS = {"right_flagged": 0.05, "wrong_posted": 0.25, "per_kind": 1 / 6, "judge_wrong": 0.03, "judge_right": 0.03}
CHARS_PER_TOKEN = 4
SET_NAMES = {"holdout": "held-out", "main": "main", "fresh": "fresh", "fresh2": "second fresh",
             "tuned": "tuned-on"}


@dataclass(frozen=True)
class Case:
    id: str
    pid: str
    qid: str
    half: str
    mode: str
    language: str  # the question's
    pair: str  # question language - language of the blocks it was asked about: de-de, de-en ...
    kind: str  # "right" or the kind of mistake
    question: str
    draft: str
    messages: tuple
    mutated: str = ""
    # The blocks the recorded prompt showed: number -> (entry id, section, content hash).
    blocks: tuple = ()


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _pair(question: dict) -> str:
    own = question["language"]
    if question.get("kind") == "cross_language":
        return f"{own}-{'en' if own == 'de' else 'de'}"
    return f"{own}-{own}"


def load_cases(root: Path = HERE) -> list[Case]:
    questions = {q["id"]: q for q in yaml.safe_load((root / "questions.yaml").read_text())}
    halves = yaml.safe_load((root / "split.yaml").read_text())
    prompts = {p["pid"]: p for p in _jsonl(root / "prompts.jsonl")}
    cases = []

    def add(pid: str, kind: str, draft: str, mutated: str = "") -> None:
        p = prompts[pid]
        q = questions[p["qid"]]
        cases.append(Case(f"{pid}:{kind}", pid, p["qid"], halves[p["qid"]], p["mode"], p["language"], _pair(q), kind,
                          p["question"], draft, tuple(json.dumps(m, sort_keys=True) for m in p["messages"]), mutated,
                          tuple((e["block"], e["entry_id"], e["section"], e["content_hash"]) for e in p["evidence"])))

    for path in sorted((root / "drafts").glob("right-*.jsonl")):
        for row in _jsonl(path):
            add(row["pid"], "right", row["draft"])
    for path in sorted((root / "drafts").glob("wrong-*.jsonl")):
        for row in _jsonl(path):
            add(row["pid"], row["kind"], row["draft"], row.get("mutated_statement", ""))
    return cases


# ------------------------------------------------------------------ the scripted model


def judge_id(case_id: str) -> str:
    """A draft's name in the judge's prompts: one that does not say whether the draft is right."""
    return hashlib.sha256(case_id.encode()).hexdigest()[:12]


def statement_key(text: str) -> str:
    return " ".join(re.sub(r"[^\w%€.,]+", " ", text.casefold()).split()).rstrip(".")


@dataclass
class RecordedJudge:
    """The capable model's verdicts, by case and statement text."""

    verdicts: dict[str, dict[str, dict]] = field(default_factory=dict)
    unmatched: int = 0
    unmatched_texts: list[str] = field(default_factory=list)  # the statements asked with no recorded verdict
    # What a statement with no recorded verdict counts as: not stated (the default: the judge did not vouch
    # for it), or supported (--unmatched supports: what the recorded verdicts alone decide, as if the judge
    # agreed with every statement it was never asked about when the verdicts were recorded).
    unmatched_verdict: str = "not_stated"
    # Per case, per judge call: the supplement each verdict other than "supports" came from (0: the first
    # recording, N: judge_prompts_more.jsonl's supplement N, -1: no recorded verdict). Counts only, so that
    # a sealed half can say what flagged its right answers without its drafts being read.
    doubts: dict[str, list[list[int]]] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path = HERE) -> RecordedJudge:
        """bench/trust/judge/*.jsonl: {"judge_id", "verdicts": [{"id": "S1", "verdict", "quote"}]}, the
        statements' texts taken from bench/trust/judge_prompts.jsonl by id."""
        judge = cls()
        prompts = root / "judge_prompts.jsonl"
        if not prompts.exists() or not (root / "judge").is_dir():
            return judge
        # judge_prompts_more.jsonl: prompts on statements the checks came to ask about later ("supplement": 1).
        rows = [*_jsonl(prompts), *(_jsonl(root / "judge_prompts_more.jsonl") if (root / "judge_prompts_more.jsonl").exists() else [])]
        texts = {(row["judge_id"], row.get("supplement", 0)): {s["id"]: s["text"] for s in row["statements"]} for row in rows}
        for path in sorted((root / "judge").glob("*.jsonl")):
            for row in _jsonl(path):
                table = judge.verdicts.setdefault(row["judge_id"], {})
                for v in row["verdicts"]:
                    text = texts.get((row["judge_id"], row.get("supplement", 0)), {}).get(str(v.get("id")))
                    if text is not None:
                        table[statement_key(text)] = {**v, "supplement": row.get("supplement", 0)}
        return judge

    def minicheck_reply(self, case: Case, claim: str) -> str:
        """MiniCheck's Yes or No for one sentence: "Yes" where the recorded judge supported the statement
        the sentence is part of (the capable judge's verdicts in MiniCheck's protocol, not MiniCheck's own)."""
        key = statement_key(claim)
        table = self.verdicts.get(judge_id(case.id), {})
        found = next((v for text, v in table.items() if key and key in text), None)
        if found is None:
            self.unmatched += 1
            return "No"
        return "Yes" if found["verdict"] == "supports" else "No"

    def reply(self, case: Case, request: GenerationRequest) -> str:
        table = self.verdicts.get(judge_id(case.id), {})
        out = []
        doubts = self.doubts.setdefault(case.id, [])
        doubts.append([])
        for line in request.messages[-1]["content"].split("\n"):
            m = re.match(r"^(S\d+) \(([^)]*)\): (.*)$", line)
            if not m:
                continue
            found = table.get(statement_key(m.group(3)))
            if found is None:
                self.unmatched += 1
                self.unmatched_texts.append(f"{case.id}: {m.group(3)}")
                out.append(self._unmatched(m.group(1), m.group(2), request))
                doubts[-1] += [-1] if out[-1]["verdict"] != "supports" else []
            else:
                doubts[-1] += [found.get("supplement", 0)] if found["verdict"] != "supports" else []
                out.append({"id": m.group(1), "verdict": found["verdict"], "quote": found.get("quote", "")})
        return json.dumps({"verdicts": out}, ensure_ascii=False)


    def _unmatched(self, item: str, cites: str, request: GenerationRequest) -> dict:
        if self.unmatched_verdict != "supports":
            return {"id": item, "verdict": "not_stated", "quote": ""}
        # A quote the statement's blocks hold, so that the support counts (bot.answer.verify.judgement).
        pointers = set(re.findall(r"E\d+", cites))
        blocks = [ev.chunk for ev in request.evidence if ev.pointer_id in pointers]
        quote = next((w for c in blocks for w in re.findall(r"[^\W\d_]{6,}", c.text) if terms(w, c.language)), "")
        return {"id": item, "verdict": "supports", "quote": quote}


def _minicheck_claim(request: GenerationRequest) -> str | None:
    """The claim of a request in MiniCheck's form (bot.answer.minicheck), else None."""
    if len(request.messages) != 1:
        return None
    content = request.messages[0]["content"]
    if not content.startswith("Document: ") or "\nClaim: " not in content:
        return None
    return content.rsplit("\nClaim: ", 1)[1]


_POINTER = re.compile(r'"E(\d+)"')


def renumber(case: Case, evidence) -> tuple[str, int]:
    """The draft with its block pointers ("E6", claims mode) moved to where the same block is in
    the prompt citebot builds now: retrieval can order near-equal blocks differently from the
    recording, which must not count against the checks. Also how many cited blocks are gone."""
    now = {(ev.entry_id, ev.chunk.section, ev.chunk.content_hash): ev.block for ev in evidence}
    moved = {n: now.get((entry, section, digest)) for n, entry, section, digest in case.blocks}
    lost = 0

    def move(match: re.Match) -> str:
        nonlocal lost
        n = int(match.group(1))
        if moved.get(n) is None:
            lost += 1
            return match.group(0)
        return f'"E{moved[n]}"'

    return _POINTER.sub(move, case.draft), lost


@dataclass
class ScriptedModel:
    """Answers the prompt with the case's draft (every time: a regeneration repeats it) and the
    judge's prompt with the recorded verdicts. Counts calls and sizes."""

    case: Case
    judge: RecordedJudge
    name: str = "capable-model (recorded)"
    answer_calls: int = 0
    judge_calls: int = 0
    judge_chars_in: int = 0
    judge_chars_out: int = 0
    draft_chars_in: int = 0
    prompt_drift: bool = False
    draft: str = ""
    lost_blocks: int = 0  # blocks the draft cites that the prompt citebot builds now lacks

    async def generate(self, request: GenerationRequest) -> Draft:
        size = sum(len(m["content"]) for m in request.messages)
        minicheck = _minicheck_claim(request)
        if minicheck is not None:
            self.judge_calls += 1
            text = self.judge.minicheck_reply(self.case, minicheck)
            self.judge_chars_in += size
            self.judge_chars_out += len(text)
            return Draft(text=text, model=self.name, raw=text)
        if request.json_schema == JUDGE_JSON_SCHEMA:
            self.judge_calls += 1
            text = self.judge.reply(self.case, request)
            self.judge_chars_in += size
            self.judge_chars_out += len(text)
            return Draft(text=text, model=self.name, raw=text)
        self.answer_calls += 1
        if self.answer_calls == 1:
            self.draft_chars_in += size
            sent = tuple(json.dumps(m, sort_keys=True) for m in request.messages)
            self.prompt_drift = sent != self.case.messages
            self.draft, self.lost_blocks = renumber(self.case, request.evidence)
        return Draft(text=self.draft, model=self.name, raw=self.draft)

    async def aclose(self) -> None:
        pass


# ------------------------------------------------------------------ running


@dataclass
class Result:
    case: Case
    answer: Answer
    answer_calls: int
    judge_calls: int
    judge_tokens_in: float
    judge_tokens_out: float
    draft_tokens_in: float
    judge_ms: float
    verify_ms: float
    prompt_drift: bool
    lost_blocks: int

    @property
    def flagged(self) -> bool:
        return self.answer_calls > 1

    @property
    def not_sure(self) -> bool:
        return self.answer.outcome is Outcome.UNCERTAIN

    @property
    def posted(self) -> bool:
        """The mistaken statement reached the asker."""
        if self.answer.outcome is not Outcome.ANSWERED or self.answer.refused:
            return False
        if self.case.mode == "citations" or not self.case.mutated:
            return True
        return statement_key(self.case.mutated) in statement_key(re.sub(r"\[\d+\]", "", self.answer.answer))

    @property
    def failure(self) -> bool:
        return self.flagged if self.case.kind == "right" else self.posted


_BLOCK_HEAD = re.compile(r"^Block (\d+) — (?:E\d+ — )?\[[^\]]+\](.*)$", re.MULTILINE)


@dataclass
class Replay:
    """What replaying a case's recorded blocks found: blocks whose text changed since (the same
    entry and section, another content hash), and blocks the index no longer has."""

    changed: int = 0
    lost: int = 0


def recorded_hits(retriever: Retriever, case: Case, replay: Replay) -> list[ChunkResult]:
    """The blocks the recorded prompt showed, in its order, as the index holds them now: what the
    draft answered. A block whose text changed since is the same entry's section as it is now."""
    # A cross-reference's block says so in its head line ("Block 7 — [id] (cross-reference)").
    messages = [json.loads(m) for m in case.messages]
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    expanded = {int(n) for n, rest in _BLOCK_HEAD.findall(user) if rest.strip()}
    hits = []
    for n, entry, section, digest in case.blocks:
        chunks = [c for c in retriever.entry_chunks(entry) if c.section == section]
        chunk = next((c for c in chunks if c.content_hash == digest), None)
        if chunk is None and chunks:
            replay.changed += 1
            chunk = chunks[0]
        if chunk is None:
            replay.lost += 1
            continue
        hits.append(dataclasses.replace(chunk, expanded=n in expanded))
    return hits


class ReplayPipeline(Pipeline):
    """The pipeline with retrieval replayed: the model is shown the blocks the recorded prompt showed,
    so the checks are measured on the prompt the draft answered. Retrieval has moved on since the sets
    were recorded (ranking and chunking changes), and a draft checked against blocks it never saw is
    flagged for what retrieval changed, not for what it says. Retrieval's decision whether to answer
    is the live one."""

    def __init__(self, *args, case: Case, replay: Replay, **kwargs):
        super().__init__(*args, **kwargs)
        self.case = case
        self.replay = replay

    def retrieve(self, question: Question) -> Retrieval:
        live = super().retrieve(question)
        return Retrieval(recorded_hits(self.retriever, self.case, self.replay), live.answerability, live.parts,
                         live.semantic)


def _judge(kind: str, model: ScriptedModel):
    if kind == "llm":
        return LLMJudge(model)
    if kind == "minicheck":
        return MiniCheckJudge(model)
    return None


async def run(cases: list[Case], retriever: Retriever, judge: RecordedJudge, judged: bool | str,
              replay: Replay | None = None) -> list[Result]:
    """`judged`: False (judge off), True or "llm" (the chat judge), "minicheck". With `replay`, each
    draft is checked against the blocks its recorded prompt showed (ReplayPipeline); without, against
    what retrieval finds now."""
    kind = "llm" if judged is True else (judged or "off")
    results = []
    for case in cases:
        model = ScriptedModel(case, judge)
        options = {"mode": AnswerMode(case.mode), "judge": _judge(kind, model)}
        if replay is not None:
            pipeline: Pipeline = ReplayPipeline(retriever, model, case=case, replay=replay, **options)
        else:
            pipeline = Pipeline(retriever, model, **options)
        answer = await pipeline.answer(Question(text=case.question, language=case.language))
        results.append(Result(
            case, answer, model.answer_calls, model.judge_calls, model.judge_chars_in / CHARS_PER_TOKEN,
            model.judge_chars_out / CHARS_PER_TOKEN, model.draft_chars_in / CHARS_PER_TOKEN,
            answer.timings_ms.get("judge", 0.0), answer.timings_ms.get("verify", 0.0), model.prompt_drift,
            model.lost_blocks,
        ))
    return results


# ------------------------------------------------------------------ reporting


def _rate(results: list[Result]) -> str:
    n = len(results)
    bad = sum(r.failure for r in results)
    return f"{bad:>3}/{n:<3} {100 * bad / n:5.1f} %" if n else "    –       "


def table(off: list[Result], on: list[Result] | None, by: str) -> list[str]:
    key = {"kind": lambda r: r.case.kind, "pair": lambda r: r.case.pair, "mode": lambda r: r.case.mode}[by]
    lines = [f"{'':26} {'checks only':>16}   {'judge on':>16}"]
    base = off or on or []

    def row(label: str, pick) -> None:
        a = [r for r in off if pick(r)]
        b = [r for r in on if pick(r)] if on is not None else []
        lines.append(f"{label:26} {_rate(a):>16}   {_rate(b) if on is not None else '':>16}")

    lines.append("right answers flagged (first draft)")
    # By kind, the right drafts are one kind: their "all" row says it.
    groups = [] if by == "kind" else sorted({key(r) for r in base if r.case.kind == "right"})
    row("  all", lambda r: r.case.kind == "right")
    for g in groups:
        row(f"  {g}", lambda r, g=g: r.case.kind == "right" and key(r) == g)
    lines.append("wrong answers posted")
    row("  all", lambda r: r.case.kind != "right")
    groups = [k for k in KINDS if by == "kind"] or sorted({key(r) for r in base if r.case.kind != "right"})
    for g in groups:
        row(f"  {g}", lambda r, g=g: r.case.kind != "right" and key(r) == g)
    return lines


def cost(results: list[Result]) -> list[str]:
    answered = [r for r in results if r.judge_calls]
    if not answered:
        return ["judge: no calls"]
    n = len(results)
    med = sorted(r.judge_ms for r in answered)[len(answered) // 2]
    return [
        f"judge cost per answer (over {n} answers, {len(answered)} judged): "
        f"{sum(r.judge_calls for r in results) / n:.2f} calls, "
        f"{sum(r.judge_tokens_in for r in results) / n:.0f} prompt + {sum(r.judge_tokens_out for r in results) / n:.0f}"
        f" reply tokens (the draft's: {sum(r.draft_tokens_in for r in results) / n:.0f} prompt tokens, "
        f"{sum(r.answer_calls for r in results) / n:.2f} calls); citebot's own time around the judge "
        f"{med:.1f} ms median (the model's time is the server's: bench/judge_scifact.py)"
    ]


def why_flagged(results: list[Result], judge: RecordedJudge) -> list[str]:
    """What flagged the right first drafts with the judge on, in counts: a sound check (the judge doubted
    nothing), the judge on a statement of the first recording (supplement 0), a statement with no recorded
    verdict, or the judge only on statements recorded later (supplement N), when the checks came to ask them."""
    why: Counter = Counter()
    for r in results:
        if r.case.kind != "right" or not r.flagged:
            continue
        first = (judge.doubts.get(r.case.id) or [[]])[0]
        if not first:
            why["a sound check"] += 1
        elif 0 in first:
            why["the judge, on a statement of the first recording"] += 1
        elif -1 in first:
            why["a statement with no recorded verdict"] += 1
        else:
            why[f"the judge, only on statements recorded later (supplement {max(first)})"] += 1
    return ["right answers flagged with the judge on, by what flagged them: "
            + (", ".join(f"{n} by {what}" for what, n in sorted(why.items())) or "none")]


def show_failures(results: list[Result], n: int) -> list[str]:
    lines = []
    for r in [r for r in results if r.failure][:n]:
        lines.append(f"--- {r.case.id} ({r.case.half}, {r.case.pair}) {'FLAGGED' if r.case.kind == 'right' else 'POSTED'}")
        if r.case.mutated:
            lines.append(f"    mistake: {r.case.mutated}")
        else:
            lines.append(f"    draft: {r.case.draft[:600]}")
        for v in r.answer.violations[:6]:
            lines.append(f"    {v.kind}: {v.detail[:300]}")
    return lines


def _families(result: Result) -> frozenset[str]:
    """The checks (violation kinds) that held a draft back."""
    return frozenset(v.kind for v in result.answer.violations)


def check_costs(results: list[Result]) -> list[tuple[str, int, int, int, int]]:
    """Per check (violation kind), judge off: the right drafts it flags and the wrong ones it catches,
    each also counted where it is the only check that fired (what dropping it would change)."""
    rows = []
    flagged = [_families(r) for r in results if r.case.kind == "right" and r.flagged]
    caught = [_families(r) for r in results if r.case.kind != "right" and not r.posted]
    for kind in sorted({k for fs in flagged + caught for k in fs}):
        rows.append((kind, sum(kind in fs for fs in flagged), sum(fs == {kind} for fs in flagged),
                     sum(kind in fs for fs in caught), sum(fs == {kind} for fs in caught)))
    return sorted(rows, key=lambda row: -(row[1] + row[3]))


def frontier(results: list[Result]) -> list[tuple[float, float, tuple[str, ...]]]:
    """What the checks could trade, judge off: for every subset of the checks kept, the share of right
    drafts flagged and of wrong drafts posted, and of those the subsets no other beats on both (fewest
    posted at each share flagged). A wrong draft counts as caught by a subset when it was caught and one
    of the subset's checks fired on it: in claims mode that check may have fired on another claim, so
    a subset's figure is an estimate; the full set's is the measured one."""
    right = [_families(r) for r in results if r.case.kind == "right"]
    wrong = [(None if r.posted else _families(r)) for r in results if r.case.kind != "right"]
    if not right or not wrong:
        return []
    kinds = sorted({k for fs in right for k in fs} | {k for fs in wrong if fs for k in fs})
    points = []
    for n in range(len(kinds) + 1):
        for kept in itertools.combinations(kinds, n):
            keep = set(kept)
            flagged = sum(bool(fs & keep) for fs in right) / len(right)
            posted = sum(fs is None or not fs & keep for fs in wrong) / len(wrong)
            points.append((flagged, posted, kept))
    best: list[tuple[float, float, tuple[str, ...]]] = []
    for point in sorted(points, key=lambda p: (p[0], p[1], len(p[2]))):
        if not best or point[1] < best[-1][1]:
            best.append(point)
    return best


def checks_report(results: list[Result]) -> list[str]:
    lines = ["", "what each check costs and catches (checks only; 'only': no other check fired on the draft)",
             f"  {'check':26} {'right flagged':>15} {'wrong caught':>15}"]
    for kind, flags, only_flags, catches, only_catches in check_costs(results):
        lines.append(f"  {kind:26} {flags:>6} ({only_flags:>2} only) {catches:>6} ({only_catches:>2} only)")
    lines.append("the trade the checks allow: fewest wrong posted at each share of right flagged (subsets kept)")
    for flagged, posted, kept in frontier(results):
        lines.append(f"  flagged {100 * flagged:5.1f} %  posted {100 * posted:5.1f} %  {', '.join(kept) or '(none)'}")
    return lines


def held_back(results: list[Result]) -> list[tuple[str, int, int, int]]:
    """Per finding kind: the right answers whose first try it held back (a second model call), those where it was
    the only finding of that try, and those that ended "not sure". From each answer's `attempts`, so a first
    draft's finding counts even when the regeneration passed."""
    first = [(frozenset(v.kind for v in r.answer.attempts[0].violations), r.not_sure)
             for r in results if r.case.kind == "right" and r.answer.attempts and not r.answer.attempts[0].ok]
    rows = [(kind, sum(kind in kinds for kinds, _ in first), sum(kinds == {kind} for kinds, _ in first),
             sum(kind in kinds and sure for kinds, sure in first)) for kind in {k for kinds, _ in first for k in kinds}]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def held_back_report(results: list[Result], label: str) -> list[str]:
    right = sum(r.case.kind == "right" for r in results)
    total = sum(r.case.kind == "right" and bool(r.answer.attempts) and not r.answer.attempts[0].ok for r in results)
    lines = ["", f"right answers held back by each finding kind ({label}): {total} of {right} right answers' first "
                 "tries held back",
             f"  {'finding':26} {'held back':>9} {'only':>5} {'not sure':>9}"]
    lines += [f"  {kind:26} {n:>9} {only:>5} {sure:>9}" for kind, n, only, sure in held_back(results)]
    return lines


def markdown_kb(tmp: Path) -> Path:
    """The sample KB's Markdown entries, the ones the sets were recorded on: documents in
    other formats added to the sample later must not change the prompts."""
    kb = tmp / "kb"
    for path in sorted(BUNDLED_KB_DIR.rglob("*")):
        rel = path.relative_to(BUNDLED_KB_DIR)
        if path.is_file() and (path.suffix in (".md", ".txt") or path.name.startswith("_")):
            (kb / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, kb / rel)
    return kb


# Everything tuned on so far, as --set tuned: the first set whole, the held-out set's tune half, both
# fresh sets. Never the held-out test half.
TUNED = (("main", "all"), ("holdout", "tune"), ("fresh", "all"), ("fresh2", "all"))


def load_sets(which: str, half: str, judge_v1: bool = False) -> tuple[list[Case], RecordedJudge]:
    """The cases of a set's half (or of every tuned-on set, `tuned`) and the recorded judge's verdicts on
    them (case ids differ across sets, so the verdicts of several sets join into one table)."""
    picks = TUNED if which == "tuned" else ((which, half),)
    cases: list[Case] = []
    judge = RecordedJudge()
    for name, part in picks:
        root = HERE if name == "main" else HERE / name
        cases += [c for c in load_cases(root) if part == "all" or c.half == part]
        judge.verdicts.update(RecordedJudge.load(root / "judge_v1" if judge_v1 else root).verdicts)
    return cases, judge


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="which", choices=("holdout", "main", "fresh", "fresh2", "tuned"),
                        default="holdout",
                        help="holdout: the set drawn after tuning on the first (the default); main: the first set; "
                             "fresh: right drafts to new questions, drawn to tune on when the others were spent; "
                             "fresh2: a second such set, measured once with the checks frozen, then tuned on; "
                             "tuned: every draft tuned on so far (main, the held-out tune half, fresh, fresh2)")
    parser.add_argument("--half", choices=("test", "tune", "all"), default="all",
                        help="the set's halves (the main set's were both tuned on in the end; the held-out set's tune half "
                             "after its first measurement)")
    parser.add_argument("--by", choices=("kind", "pair", "mode"), default="kind")
    parser.add_argument("--show", type=int, default=0, help="print the first N failures of the half (tune only!)")
    parser.add_argument("--show-judged", action="store_true", help="--show the failures with the judge on")
    parser.add_argument("--no-judge", action="store_true", help="judge off only")
    parser.add_argument("--judge-only", action="store_true", help="judge on only (no checks-only pass)")
    parser.add_argument("--unmatched", choices=("not_stated", "supports"), default="not_stated",
                        help="what a statement with no recorded verdict counts as (default: not stated)")
    parser.add_argument("--show-unmatched", type=int, default=0, metavar="N",
                        help="print the first N statements the judge was asked with no recorded verdict")
    parser.add_argument("--minicheck", action="store_true",
                        help="judge on in MiniCheck's protocol (one sentence a call), with the recorded verdicts")
    parser.add_argument("--live-retrieval", action="store_true",
                        help="show the model what retrieval finds now, not the blocks of the recorded prompt the "
                             "draft answered (retrieval has moved on since the sets were recorded)")
    parser.add_argument("--checks", action="store_true",
                        help="judge off: what each check costs in right drafts and catches in wrong ones, and the "
                             "trade between the two that subsets of the checks allow")
    parser.add_argument("--held-back", action="store_true",
                        help="per finding kind, how many right answers' first tries it held back (checks only, and "
                             "judge on), from each answer's attempts")
    parser.add_argument("--scifact", action="store_true", help="also run bench/verifier_scifact.py's numbers")
    parser.add_argument("--judge-v1", action="store_true",
                        help="the verdicts the capable judge gave to the judge's first prompt (no question shown; "
                             "the set's judge_v1/), not those to the prompt citebot builds now")
    args = parser.parse_args()

    cases, judge = load_sets(args.which, args.half, args.judge_v1)
    judge.unmatched_verdict = args.unmatched
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        index_dir = Path(tmp) / "index"
        embedder = LocalE5Embedder()
        build_index(markdown_kb(Path(tmp)), index_dir, embedder=embedder, seed_vectors=BUNDLED_VECTORS_DIR)
        replay = None if args.live_retrieval else Replay()
        with Retriever(index_dir, embedder=embedder) as retriever:
            off = [] if args.judge_only else asyncio.run(run(cases, retriever, judge, judged=False, replay=replay))
            kind = "minicheck" if args.minicheck else "llm"
            on = None if args.no_judge or not judge.verdicts else \
                asyncio.run(run(cases, retriever, judge, judged=kind, replay=None if replay is None else Replay()))
    counts = Counter(c.kind for c in cases)
    which = f"the {SET_NAMES[args.which]} set" + ("s" if args.which == "tuned" else f", {args.half}")
    print(f"bench/trust: {len(cases)} drafts of {which} ({counts['right']} right, "
          f"{len(cases) - counts['right']} wrong), {time.perf_counter() - started:.0f} s")
    if replay is not None and (replay.changed or replay.lost):
        print(f"note: of the blocks the recorded prompts showed, {replay.changed} changed since and "
              f"{replay.lost} are no longer in the index")
    drift = sum(r.prompt_drift for r in off or on or [])
    if drift:
        lost = sum(r.lost_blocks > 0 for r in off or on or [])
        print(f"note: for {drift} drafts citebot now builds another prompt than the one they answered "
              f"(block pointers renumbered to match; {lost} cite a block the prompt no longer shows)")
    for line in table(off, on, args.by):
        print(line)
    not_sure = sum(r.not_sure for r in off if r.case.kind == "right")
    print(f"right answers that ended 'not sure' (checks only): {not_sure}")
    if on is not None:
        print("\n".join(cost(on)))
        print("\n".join(why_flagged(on, judge)))
        if judge.unmatched:
            counted = "supported" if judge.unmatched_verdict == "supports" else "not stated"
            print(f"note: {judge.unmatched} statements had no recorded verdict (counted as {counted})")
            for text in judge.unmatched_texts[:args.show_unmatched]:
                print(f"    {text}")
    if args.checks:
        print("\n".join(checks_report(off)))
    if args.held_back:
        if off:
            print("\n".join(held_back_report(off, "checks only")))
        if on is not None:
            print("\n".join(held_back_report(on, "judge on")))
    if args.show:
        print("\n".join(show_failures(on if args.show_judged and on is not None else off, args.show)))
    if args.scifact:
        import subprocess

        subprocess.run([sys.executable, str(Path(__file__).with_name("verifier_scifact.py"))], check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
