"""The bundled sample KB: it loads cleanly, and retrieval answers its question set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bot.config import BUNDLED_KB_DIR
from kb_index import Retriever, build_index, load_kb

QUESTIONS = yaml.safe_load((Path(__file__).parent / "data" / "sample_questions.yaml").read_text())


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    index_dir = tmp_path_factory.mktemp("sample") / "index"
    report = build_index(BUNDLED_KB_DIR, index_dir)
    assert report.errors == []
    with Retriever(index_dir) as r:
        yield r


def test_sample_kb_is_big_enough_and_clean():
    result = load_kb(BUNDLED_KB_DIR)
    assert result.errors == []
    assert len(result.entries) >= 30
    assert len({e.collection for e in result.entries}) >= 3
    assert {e.language for e in result.entries} == {"de", "en"}


def test_answerable_questions_find_their_entry_in_the_top_three(retriever):
    answerable = [q for q in QUESTIONS if q["expect"]]
    found = [
        q["q"]
        for q in answerable
        if set(q["expect"]) & {h.entry_id for h in retriever.search(q["q"], k=3) if not h.expanded}
    ]
    # Measured: all but one ("Krankschreibung" is not a word the KB uses).
    assert len(found) >= len(answerable) - 2, sorted(set(q["q"] for q in answerable) - set(found))


async def test_off_topic_questions_get_no_answer_from_the_default_pipeline(retriever):
    # Retrieval now refuses only what is plainly off-topic (BM25 alone refuses
    # few of these); the extractive backend must still not quote the KB at them.
    from bot.answer.extractive import ExtractiveBackend
    from bot.answer.pipeline import Pipeline
    from bot.models import Question
    from kb_index.analysis import guess_language

    pipeline = Pipeline(retriever, ExtractiveBackend())
    answered = []
    for q in (q["q"] for q in QUESTIONS if not q["expect"]):
        language = guess_language(q)
        answer = await pipeline.answer(Question(text=q, language=language))
        # Passages the backend reads as near (the gaps report's not_covered), or under the line that retrieval
        # judged the question near, are no answer: the lead says they are the closest passages, no more.
        if not answer.refused and not answer.not_covered:
            answered.append(q)
    # Measured (BM25 alone: the backend has words only): 6 of 13 ("renew my passport?"
    # quotes the travel policy's passport sentence; table rows are passages now, and a
    # row holds its question's words as densely as a sentence). Only a model can tell a
    # sentence that shares the topic word from one that answers; with the embedder the
    # backend marks what does not stand out (bench/extractive). This bound keeps it from
    # getting worse.
    assert len(answered) <= 6, answered
