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

from bot.answer.pipeline import make_pipeline
from bot.config import BUNDLED_KB_DIR, BUNDLED_VECTORS_DIR, load_settings
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=HERE / "questions.yaml")
    parser.add_argument("--out", type=Path, default=HERE / "prompts.jsonl")
    args = parser.parse_args()
    questions = yaml.safe_load(args.questions.read_text())
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        index_dir = Path(tmp) / "index"
        build_index(BUNDLED_KB_DIR, index_dir, embedder=LocalE5Embedder(), seed_vectors=BUNDLED_VECTORS_DIR)
        prompts = asyncio.run(record(questions, index_dir, server.url, server))
    args.out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in prompts))
    print(f"{len(prompts)} prompts for {len(questions)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
