"""SciFact judge benchmark: the entailment judge beside the deterministic verifier, in one run.

The cases are bench/verifier_scifact.py's (its loading and pairing, imported):
each a claims-mode answer of one claim citing one abstract as E1, from the
SciFact claims of one split:

  (a)  a SUPPORT claim citing its gold abstract;
  (b)  the same claim citing the best-ranked abstract that is not gold (the hard
       negative: related, same vocabulary, not the source);
  (c)  a SUPPORT claim with one number changed to a value its abstract does not state;
  CONTRADICT: a CONTRADICT claim citing its gold abstract.

(Random negatives are left out: the verifier already rejects them all, and
judge calls are spent where words fail.) Three verifiers, "accepted" meaning
the claim would be posted:

  checks        the sound claims checks (verify_claims: evidence ids, numbers, links, quotes);
  judge         the judge alone, as citebot makes it (make_backend, make_judge): supports,
                with its quote found in the abstract; a failed call accepts nothing;
  checks+judge  as the pipeline runs them: the judge only on what the checks accept, and a
                failed judge call accepts nothing (it fails closed: docs/DESIGN.md 3.6).

Printed for each: F1 of accepting (a) over (b), the share of CONTRADICT
accepted, the share of (c) caught; for the judge: calls made, failures, median
and 90th-percentile latency, and what it said. Goals (issue "llm-servers"):
F1 >= 0.85 against hard negatives, <= 10 % of CONTRADICT accepted.

    python bench/judge_scifact.py --llm-url URL --model NAME [--llm openai|ollama] [--api-key KEY]
        [--limit N] [--concurrency K] [--timeout S] [--data DIR] [--split dev|train]

--limit N judges a fixed-seed sample of N cases from each set instead of all
of them (dev: 138 gold, 124 hard negatives, 24 changed numbers, 71 CONTRADICT).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bot.answer.backends import make_backend
from bot.answer.judge import Judge, make_judge
from bot.answer.verify.judgement import Statement
from bot.config import load_settings
from bot.models import AnswerMode, JudgeStatus, Support
from kb_index import Retriever

try:
    from bench import verifier_scifact as scifact
except ImportError:  # run as a script: bench/ itself is on sys.path
    import verifier_scifact as scifact  # type: ignore[no-redef]

SETS = ("gold", "hard", "changed", "contradict")


@dataclass
class Call:
    """One judge call on one case."""

    accepted: bool
    failed: bool
    seconds: float
    said: str  # what the judge said, "supports*" for a support without its quote found, or "failed"
    error: str | None = None  # why it failed


@dataclass
class Cases:
    """Per set, the sampled cases and each one's outcomes."""

    cases: dict[str, list[scifact.Case]]
    checks: dict[str, list[bool]] = field(default_factory=dict)
    judge: dict[str, list[Call]] = field(default_factory=dict)

    def combined(self, name: str) -> list[bool]:
        """Checks, then the judge on what they accept; an unavailable judge accepts nothing."""
        return [ok and call.accepted for ok, call in zip(self.checks[name], self.judge[name], strict=True)]


def sample(sets, limit: int | None) -> dict[str, list[scifact.Case]]:
    rng = random.Random(scifact.SEED)
    chosen = {}
    for name in SETS:
        cases = getattr(sets, name)
        chosen[name] = cases if limit is None or len(cases) <= limit else rng.sample(cases, limit)
    return chosen


async def judge_case(judge: Judge, case: scifact.Case, corpus: dict[str, dict], gate: asyncio.Semaphore) -> Call:
    evidence = scifact.evidence_for(corpus[case.doc])
    statement = Statement(0, case.claim, ("E1",), (evidence[0],))
    async with gate:
        start = time.perf_counter()
        judgement = await judge.judge([statement], AnswerMode.CLAIMS, "en")
        seconds = time.perf_counter() - start
    (judged,) = judgement.statements
    failed = judgement.status is JudgeStatus.UNAVAILABLE
    said = "failed" if failed else (judged.said or "no verdict")
    if judged.said == Support.SUPPORTS and not judged.quote_found:
        said += "*"
    return Call(judged.support is Support.SUPPORTS, failed, seconds, said, judgement.error)


async def judge_all(judge: Judge, cases: Cases, corpus: dict[str, dict], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)
    for name in SETS:
        cases.judge[name] = list(
            await asyncio.gather(*(judge_case(judge, c, corpus, gate) for c in cases.cases[name]))
        )


# ----------------------------------------------------------------- report


def _pct(values: list[bool]) -> str:
    return f"{100 * sum(values) / len(values):5.1f} %" if values else "    - "


def _row(label: str, values: tuple[str, str, str], goal: str = "") -> str:
    return f"  {label:<28}{values[0]:>18}{values[1]:>18}{values[2]:>18}   {goal}".rstrip()


def _latency(calls: list[Call]) -> str:
    if not calls:
        return "-"
    seconds = sorted(c.seconds for c in calls)
    p90 = seconds[min(len(seconds) - 1, int(0.9 * len(seconds)))]
    return f"{statistics.median(seconds):.2f} s / {p90:.2f} s"


def report(cases: Cases, header: str) -> None:
    kinds = {
        "checks": cases.checks,
        "judge": {n: [c.accepted for c in cases.judge[n]] for n in SETS},
        "checks+judge": {n: cases.combined(n) for n in SETS},
    }
    print(header)
    print(_row("", ("checks", "judge", "checks+judge")))
    print(_row("(a) gold accepted", tuple(_pct(k["gold"]) for k in kinds.values())))
    print(_row("(b) hard negative accepted", tuple(_pct(k["hard"]) for k in kinds.values())))
    print(_row("F1 (a) vs (b)", tuple(f"{scifact.prf(k['gold'], k['hard'])[2]:.3f}" for k in kinds.values()), ">= 0.85"))
    print(_row("CONTRADICT accepted", tuple(_pct(k["contradict"]) for k in kinds.values()), "<= 10 %"))
    caught = tuple(_pct([not ok for ok in k["changed"]]) for k in kinds.values())
    print(_row("(c) changed number caught", caught, "100 %"))
    every = [c for n in SETS for c in cases.judge[n]]
    after_checks = [c for n in SETS for ok, c in zip(cases.checks[n], cases.judge[n], strict=True) if ok]
    print(_row("judge calls", ("-", str(len(every)), str(len(after_checks)))))
    print(_row("judge failures", ("-", str(sum(c.failed for c in every)), str(sum(c.failed for c in after_checks)))))
    print(_row("judge latency median / p90", ("-", _latency(every), _latency(after_checks))))
    said = Counter(c.said for c in every)
    print("  the judge said: " + ", ".join(f"{word} {n}" for word, n in said.most_common())
          + "  (supports*: supports without its quote found in the abstract)")
    errors = Counter(c.error for c in every if c.error)
    for error, n in errors.most_common(3):
        print(f"  failed {n}x: {error}")


# ----------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm-url", required=True, help="the model server's root, e.g. http://localhost:8000")
    ap.add_argument("--model", required=True, help="the model name sent with every request")
    ap.add_argument("--llm", choices=("openai", "ollama"), default="openai", help="the server's API (default openai)")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per judge call (CITEBOT_LLM_TIMEOUT)")
    ap.add_argument("--limit", type=int, default=None, help="judge a fixed-seed sample of N cases per set")
    ap.add_argument("--concurrency", type=int, default=1, help="judge calls at once (default 1)")
    ap.add_argument("--data", type=Path, default=scifact.DEFAULT_DATA)
    ap.add_argument("--split", default="dev", choices=("dev", "train"))
    args = ap.parse_args(argv)
    # Failed judge calls are counted in the report; their log lines would only interleave with it.
    logging.basicConfig(level=logging.ERROR)
    if (args.limit is not None and args.limit < 1) or args.concurrency < 1:
        ap.error("--limit and --concurrency must be at least 1")
    if not (args.data / "corpus.jsonl").exists():
        print(f"SciFact not found in {args.data} (give --data)", file=sys.stderr)
        return 2
    # The judge as citebot builds it from its settings: the same backend, timeout and JSON schema.
    settings = load_settings(env_file=None, llm=args.llm, llm_url=args.llm_url, llm_model=args.model,
                             llm_api_key=args.api_key, llm_timeout=args.timeout, judge="llm")
    t0 = time.perf_counter()
    corpus = scifact.load_corpus(args.data)
    with tempfile.TemporaryDirectory() as tmp, Retriever(scifact.build_kb_index(args.data, Path(tmp))) as retriever:
        cases = Cases(sample(scifact.build_sets(scifact.load_claims(args.data, args.split), corpus, retriever), args.limit))
    cases.checks = {n: [scifact.accepted(c, corpus) for c in cases.cases[n]] for n in SETS}
    print(f"sets built and checked in {time.perf_counter() - t0:.1f} s")
    t1 = time.perf_counter()
    asyncio.run(_judge_with(settings, cases, corpus, args.concurrency))
    sizes = ", ".join(f"{len(cases.cases[n])} {n}" for n in SETS)
    sampled = f" (fixed-seed sample of at most {args.limit} per set)" if args.limit else ""
    report(cases, f"SciFact {args.split}: {sizes}{sampled}; judge {args.model} at {args.llm_url}, "
                  f"{args.concurrency} call(s) at once, {time.perf_counter() - t1:.0f} s of judging")
    return 0


async def _judge_with(settings, cases: Cases, corpus: dict[str, dict], concurrency: int) -> None:
    backend = make_backend(settings)
    try:
        judge = make_judge(settings, backend)
        assert judge is not None  # judge="llm"
        await judge_all(judge, cases, corpus, concurrency)
    finally:
        await backend.aclose()


if __name__ == "__main__":
    sys.exit(main())
