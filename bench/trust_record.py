"""Records the prompts citebot builds for the trust set's questions (bench/trust/questions.yaml).

Each question goes through the pipeline exactly as `citebot ask` runs it, with
CITEBOT_LLM=openai pointed at a recording fake LLM server (real HTTP; it answers
with the refusal, so nothing is regenerated). What the server received is
written to bench/trust/prompts.jsonl, one line per question and answer mode: the
messages as sent, and the evidence blocks they showed. Whoever plays the model
answers those messages; bench/trust.py later checks the answers against the
very same blocks.

Questions that retrieval refuses before any model is asked get no prompt (they
are listed on stderr).

    python bench/trust_record.py [--questions bench/trust/questions.yaml] [--out bench/trust/prompts.jsonl]

With --judge, it writes bench/trust/judge_prompts.jsonl instead: for every draft
of the set (bench/trust.py), the entailment judge's prompt as citebot builds it
(bot.answer.judge.judge_messages) on every statement of the draft, whether the
checks would pass it or not, so that one recorded reply serves any setting of the
checks. Drafts are named by an opaque id (`judge_id`), so whoever plays the judge
cannot tell right drafts from wrong ones.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.trust import markdown_kb
from bot.answer.pipeline import make_pipeline
from bot.config import BUNDLED_VECTORS_DIR, load_settings
from bot.models import AnswerMode, Question
from kb_index import Retriever, build_index
from kb_index.embedding import LocalE5Embedder
from tests.fakes.llm_server import FakeLLMServer

HERE = Path(__file__).resolve().parent / "trust"
MODES = (AnswerMode.CITATIONS, AnswerMode.CLAIMS)


def evidence_record(source) -> dict:
    """A block the prompt showed (Answer.context: one Source per block, numbered as in the prompt)."""
    return {"block": source.n, "entry_id": source.id, "section": source.section, "content_hash": source.content_hash}


async def record(questions: list[dict], index_dir: Path, url: str, server: FakeLLMServer) -> list[dict]:
    settings = load_settings(env_file=None, CITEBOT_LLM="openai", CITEBOT_LLM_URL=url, CITEBOT_LLM_MODEL="recorder",
                             CITEBOT_JUDGE="off", CITEBOT_INDEX_DIR=str(index_dir))
    out = []
    with Retriever(index_dir, embedder=LocalE5Embedder()) as retriever:
        pipeline = make_pipeline(settings, retriever)
        try:
            for item in questions:
                question = Question(text=item["q"], language=item["language"])
                for mode in MODES:
                    before = len(server.calls)
                    answer = await pipeline.answer(question, mode=mode)
                    if len(server.calls) == before:
                        print(f"{item['id']} {mode.value}: refused before the model", file=sys.stderr)
                        continue
                    body = server.calls[before].body
                    out.append({
                        "pid": f"{item['id']}-{mode.value}",
                        "qid": item["id"],
                        "mode": mode.value,
                        "language": item["language"],
                        "question": item["q"],
                        "messages": body["messages"],
                        "evidence": [evidence_record(s) for s in answer.context],
                        "n_context": answer.n_context,
                    })
        finally:
            await pipeline.backend.aclose()
    return out


class _Capture:
    """A model that keeps the evidence of the prompt it is sent and answers with the case's draft."""

    name = "capture"

    def __init__(self, draft: str):
        self.draft = draft
        self.evidence = None

    async def generate(self, request):
        from bot.models import Draft

        if self.evidence is None:
            self.evidence = request.evidence
        return Draft(text=self.draft, model=self.name, raw=self.draft)

    async def aclose(self) -> None:
        pass


def _all_statements(case, evidence, draft=None, held=()):
    """Every statement of the draft, as the judge would be asked about it (bot.answer.verify.judgement);
    `held`: the findings held for the judge the checks made on it."""
    from bot.answer.verify.citations import verify_citations
    from bot.answer.verify.claims import verify_claims
    from bot.answer.verify.judgement import statements
    from bot.answer.verify.not_covered import says_not_covered
    from bot.models import Verdict

    draft = case.draft if draft is None else draft
    mode = AnswerMode(case.mode)
    if mode is AnswerMode.CLAIMS:
        verdict = verify_claims(draft, evidence, case.language)
        by_pointer = {ev.pointer_id for ev in evidence}
        claims = [c.model_copy(update={"verified": bool(c.evidence_ids) and set(c.evidence_ids) <= by_pointer
                                       and not says_not_covered(c.text)}) for c in verdict.claims]
        verdict = verdict.model_copy(update={"claims": claims})
    else:
        # Every cited sentence, and the uncited ones the judge is asked about with all the answer's blocks.
        checked = verify_citations(draft, evidence, case.language, question=case.question)
        verdict = Verdict(ok=True, violations=[v for v in checked.violations if v.kind == "UNCITED_NUMBER"])
    verdict = verdict.model_copy(update={"violations": [*verdict.violations, *held]})
    return statements(draft, verdict, evidence, mode, case.language)


async def _asked(index_dir: Path, root: Path):
    """Each draft of the set with the statements the judge would be asked about, on the blocks of the
    prompt it answered as bench/trust.py shows them (ReplayPipeline), its block pointers moved to where
    that prompt shows their blocks (bench.trust.renumber)."""
    from bench.trust import Replay, ReplayPipeline, load_cases, renumber
    from bot.answer.verify.policy import held_for_judge

    with Retriever(index_dir, embedder=LocalE5Embedder()) as retriever:
        for case in load_cases(root):
            model = _Capture(case.draft)
            pipeline = ReplayPipeline(retriever, model, mode=AnswerMode(case.mode), case=case, replay=Replay())
            answer = await pipeline.answer(Question(text=case.question, language=case.language))
            draft, _ = renumber(case, model.evidence or [])
            held = [v for v in answer.violations if held_for_judge(v)]
            yield case, _all_statements(case, model.evidence or [], draft, held)


def _prompt_row(case, asked, **extra) -> dict:
    from bench.trust import judge_id
    from bot.answer.judge import judge_messages
    from bot.answer.verify.judgement import item_label

    return {
        "judge_id": judge_id(case.id),
        **extra,
        "messages": judge_messages(asked, case.language, case.question),
        "statements": [{"id": item_label(i), "text": s.text} for i, s in enumerate(asked)],
    }


async def record_judge(index_dir: Path, root: Path = HERE) -> list[dict]:
    """The judge's prompt on every statement of every draft."""
    out = [_prompt_row(case, asked) async for case, asked in _asked(index_dir, root) if asked]
    out.sort(key=lambda row: row["judge_id"])  # no order that groups a question's drafts together
    return out


async def record_judge_more(index_dir: Path, root: Path = HERE) -> list[dict]:
    """The judge's prompts on the statements that have no recorded verdict yet (the checks now ask
    about statements they did not ask about when the verdicts were recorded): one supplement prompt
    per draft, built by citebot as any judge prompt, under the draft's opaque id."""
    from bench.trust import RecordedJudge, judge_id, statement_key

    recorded = RecordedJudge.load(root)
    # A supplement of its own: the verdicts to earlier ones name their statements S1, S2 … of those prompts.
    more = root / MORE_PROMPTS
    supplement = 1 + max((row.get("supplement", 0) for row in _rows(more)), default=0)
    out = []
    async for case, asked in _asked(index_dir, root):
        known = recorded.verdicts.get(judge_id(case.id), {})
        missing = [s for s in asked if statement_key(s.text) not in known]
        if missing:
            out.append(_prompt_row(case, missing, supplement=supplement))
    out.sort(key=lambda row: row["judge_id"])
    return out


MORE_PROMPTS = "judge_prompts_more.jsonl"


def _rows(path: Path) -> list[dict]:
    from bench.trust import _jsonl

    return _jsonl(path) if path.exists() else []


def sample_index(tmp: Path) -> Path:
    """An index of the sample KB's entries the sets were recorded on (bench.trust.markdown_kb)."""
    index_dir = tmp / "index"
    build_index(markdown_kb(tmp), index_dir, embedder=LocalE5Embedder(), seed_vectors=BUNDLED_VECTORS_DIR)
    return index_dir


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=HERE / "questions.yaml")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--judge", action="store_true", help="record the judge's prompts for every draft instead")
    parser.add_argument("--judge-more", action="store_true",
                        help="add the judge's prompts on the statements without a recorded verdict (a new "
                             "supplement, after those of earlier runs)")
    parser.add_argument("--root", type=Path, default=HERE, help="the set's folder (bench/trust, bench/trust/holdout)")
    args = parser.parse_args()
    if args.judge or args.judge_more:
        name, recorder = (MORE_PROMPTS, record_judge_more) if args.judge_more else ("judge_prompts.jsonl", record_judge)
        out = args.out or args.root / name
        with tempfile.TemporaryDirectory() as tmp:
            rows = asyncio.run(recorder(sample_index(Path(tmp)), args.root))
        # Supplements add to the prompts before them, whose statements earlier verdicts name.
        write_jsonl(out, (_rows(out) if args.judge_more else []) + rows)
        print(f"{len(rows)} judge prompts, {sum(len(r['statements']) for r in rows)} statements -> {out}")
        return 0
    args.out = args.out or HERE / "prompts.jsonl"
    questions = yaml.safe_load(args.questions.read_text())
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        prompts = asyncio.run(record(questions, sample_index(Path(tmp)), server.url, server))
    write_jsonl(args.out, prompts)
    print(f"{len(prompts)} prompts for {len(questions)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
