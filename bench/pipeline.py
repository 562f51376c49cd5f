"""Pipeline overhead benchmark: time per question spent outside the LLM.

The extractive backend answers from the bundled sample KB (indexed into a temp
dir); the questions of tests/data/sample_questions.yaml are cycled to --n (200).
Time per question = wall time of Pipeline.answer minus its `generate` timing
(retrieve, budget, prompt, verify, answer building), plus Slack rendering when
bot/slack/replies.py provides `answer_message`. Printed: median and p95 per
stage and in total, for each answer mode. Goal: median total <= 15 ms.

    python bench/pipeline.py [--n 200] [--mode citations|claims|both]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import cycle, islice
from pathlib import Path

import yaml

from bot.answer.extractive import ExtractiveBackend
from bot.answer.pipeline import Pipeline
from bot.config import BUNDLED_KB_DIR
from bot.models import Answer, AnswerMode, Question
from kb_index import Retriever, build_index

QUESTIONS = Path(__file__).resolve().parents[1] / "tests" / "data" / "sample_questions.yaml"
WARMUP = 10  # questions answered first and not counted: caches, lazy imports


def load_questions(path: Path, n: int) -> list[Question]:
    items = yaml.safe_load(path.read_text())
    questions = [Question(text=item["q"], language=item.get("language", "en")) for item in items]
    return list(islice(cycle(questions), n))


def renderer() -> Callable[[Answer, Question], object] | None:
    """bot.slack.replies.answer_message, if it exists, called with what it asks for."""
    try:
        from bot.slack.replies import answer_message
    except ImportError:
        return None
    values = {"language": lambda q: q.language, "lang": lambda q: q.language, "ref": lambda q: "bench-ref",
              "question": lambda q: q}
    params = list(inspect.signature(answer_message).parameters.values())[1:]
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    if any(p.name not in values for p in required):
        return None  # a signature this benchmark does not know how to call

    def render(answer: Answer, question: Question) -> object:
        args = [values[p.name](question) for p in required if p.kind is p.POSITIONAL_ONLY]
        kwargs = {p.name: values[p.name](question) for p in required if p.kind is not p.POSITIONAL_ONLY}
        return answer_message(answer, *args, **kwargs)

    return render


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def measure(pipeline: Pipeline, questions: list[Question], mode: AnswerMode, render) -> dict[str, list[float]]:
    stages: dict[str, list[float]] = {"retrieve": [], "verify": [], "budget+prompt+build": [], "render": [], "total": []}
    for q in questions[:WARMUP]:
        answer = await pipeline.answer(q, mode=mode)
        if render:
            render(answer, q)
    for q in questions:
        t0 = time.perf_counter()
        answer = await pipeline.answer(q, mode=mode)
        wall = (time.perf_counter() - t0) * 1000
        t = answer.timings_ms
        render_ms = 0.0
        if render:
            t1 = time.perf_counter()
            render(answer, q)
            render_ms = (time.perf_counter() - t1) * 1000
        outside = wall - t.get("generate", 0.0)
        stages["retrieve"].append(t.get("retrieve", 0.0))
        stages["verify"].append(t.get("verify", 0.0))
        stages["budget+prompt+build"].append(outside - t.get("retrieve", 0.0) - t.get("verify", 0.0))
        stages["render"].append(render_ms)
        stages["total"].append(outside + render_ms)
    return stages


async def run(args) -> int:
    questions = load_questions(QUESTIONS, args.n)
    render = renderer()
    modes = [AnswerMode.CITATIONS, AnswerMode.CLAIMS] if args.mode == "both" else [AnswerMode(args.mode)]
    with tempfile.TemporaryDirectory() as tmp:
        report = build_index(BUNDLED_KB_DIR, Path(tmp) / "index")
        print(f"sample KB: {report.chunks} chunks; {len(questions)} questions (+{WARMUP} warm-up); "
              f"Slack rendering: {'bot.slack.replies.answer_message' if render else 'not available, left out'}")
        with Retriever(Path(tmp) / "index") as retriever:
            pipeline = Pipeline(retriever, ExtractiveBackend())
            for mode in modes:
                stages = await measure(pipeline, questions, mode, render)
                print(f"mode {mode.value}: time outside the LLM per question (ms)")
                for name, values in stages.items():
                    if name == "render" and not render:
                        continue
                    print(f"  {name:<20} median {statistics.median(values):7.2f}   p95 {pct(values, 95):7.2f}")
                ok = statistics.median(stages["total"]) <= 15.0
                print(f"  goal median total <= 15 ms: {'met' if ok else 'NOT met'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--mode", default="both", choices=("citations", "claims", "both"))
    return asyncio.run(run(ap.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
