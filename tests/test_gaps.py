"""KB gaps: grouping unanswered questions by wording (pure), and `citebot review gaps` over real Redis."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from bot.cli import main
from bot.models import Answer, Outcome, SlackQuestion
from bot.review.gaps import (
    GapQuestion,
    format_gaps,
    group_questions,
    question_terms,
    similarity,
)
from bot.store.audit import AuditTrail, audit_entry
from bot.store.connection import connect

DAY = 86400.0
NOW = 1_790_000_000.0


def q(text, at=0.0, language="en", outcome="refused"):
    return GapQuestion(text=text, language=language, at=NOW - 10 * DAY + at, outcome=outcome)


CHAIR = [
    q("Can I expense my home office chair?", 1),
    q("Is a home office chair reimbursed?", 2, outcome="uncertain"),
    q("can I expense my home office chair", 5),
    q("Can I expense my home office chair?", 9),
]
PARKING = [q("Where can I park my car at the Berlin office?", 3), q("Parking at the Berlin office?", 7)]
CEO = [q("Who is the CEO?", 4)]


def test_paraphrases_form_one_group_and_the_biggest_group_comes_first():
    gaps = group_questions(CEO + PARKING + CHAIR)
    assert [g.count for g in gaps] == [4, 2, 1]
    chair = gaps[0]
    # The most asked wording represents the group, as it was last typed.
    assert chair.representative == "Can I expense my home office chair?"
    assert chair.variants == ["Is a home office chair reimbursed?"]
    assert chair.outcomes == {"refused": 3, "uncertain": 1}
    assert chair.last_asked == CHAIR[-1].at and chair.first_asked == CHAIR[0].at
    assert gaps[1].representative in {p.text for p in PARKING} and gaps[2].representative == "Who is the CEO?"


def test_grouping_does_not_depend_on_the_order_questions_come_in():
    questions = CEO + PARKING + CHAIR
    expected = group_questions(questions)
    shuffled = list(questions)
    random.Random(7).shuffle(shuffled)
    assert group_questions(shuffled) == expected


def test_groups_of_equal_size_put_the_most_recently_asked_first():
    old, new = q("How do I book a meeting room?", 1), q("What is the dress code?", 8)
    assert [g.representative for g in group_questions([old, new])] == [new.text, old.text]


def test_german_compound_meets_the_words_spelled_apart_and_languages_are_listed():
    gaps = group_questions([
        q("Wie viele Urlaubstage habe ich?", 1, language="de"),
        q("Wie viele Tage Urlaub bekomme ich?", 2, language="de"),
        q("urlaub tage?", 3, language="en"),
    ])
    assert len(gaps) == 1 and gaps[0].count == 3 and gaps[0].languages == ["de", "en"]


def test_different_topics_sharing_one_common_word_stay_apart():
    gaps = group_questions([q("How do I reset my VPN password?", 1), q("How do I book a business trip to Paris?", 2)])
    assert len(gaps) == 2


def test_threshold_decides_how_alike_questions_must_be():
    pair = [q("home office chair budget", 1), q("home office desk", 2)]
    score = similarity(question_terms(pair[0].text), question_terms(pair[1].text))
    assert 0 < score < 1
    assert len(group_questions(pair, threshold=score)) == 1
    assert len(group_questions(pair, threshold=score + 0.01)) == 2


def test_questions_of_only_stop_words_group_only_by_the_same_wording():
    gaps = group_questions([q("???", 1), q("???", 2), q("why?", 3), q("Who is the CEO?", 4)])
    assert sorted(g.count for g in gaps) == [1, 1, 2]


def test_a_new_group_never_drifts_away_from_its_first_question():
    # Each question is close to the one before, but the last is far from the first.
    chain = [q("vpn password reset", 1), q("password reset email", 2), q("reset email signature", 3),
             q("email signature logo", 4)]
    gaps = group_questions(chain)
    assert [sorted([g.representative, *g.variants]) for g in gaps] == [
        ["email signature logo", "reset email signature"],  # asked last: first among equals
        ["password reset email", "vpn password reset"],
    ]


def test_format_lists_count_outcomes_languages_and_variants():
    text = format_gaps(group_questions(CHAIR + CEO), days=30)
    lines = text.splitlines()
    assert lines[0].startswith("KB gaps, last 30 days: 5 question(s)") and "2 group(s)" in lines[0]
    assert lines[2] == "   4×  Can I expense my home office chair?"
    assert "refused 3 · uncertain 1 · en · last asked" in lines[3]
    assert lines[4] == '       also asked as: "Is a home office chair reimbursed?"'
    assert format_gaps([], days=7) == "No unanswered questions in the last 7 days."


# ---------------------------------------------------------------- the command, over the audit trail


def _record(redis_url, entries):
    async def run():
        redis = connect(redis_url, timeout=5)
        try:
            trail = AuditTrail(redis)
            for entry in entries:
                await trail.record(entry)
        finally:
            await redis.aclose()

    asyncio.run(run())


def _unanswered(text, qid, *, outcome=Outcome.REFUSED, at=None, is_dm=False, language="en"):
    question = SlackQuestion(text=text, id=qid, channel="DSECRET" if is_dm else "CGENERAL", user="USECRET",
                             ts="1700000001.000100", is_dm=is_dm, language=language)
    answer = Answer(question=text, answer="-", verified=outcome is Outcome.REFUSED, refused=outcome is Outcome.REFUSED,
                    outcome=outcome)
    entry = audit_entry(question, answer)
    if at is not None:
        entry.at = at
    return entry


@pytest.fixture
def cli_env(tmp_path, monkeypatch, redis_url):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CITEBOT_REDIS_URL", redis_url)
    return redis_url


def test_review_gaps_groups_refused_and_uncertain_questions_of_the_trail(cli_env, capsys):
    answered = _unanswered("How many vacation days do I get?", "C:1", outcome=Outcome.ANSWERED)
    _record(cli_env, [
        _unanswered("Can I expense my home office chair?", "C:2"),
        _unanswered("Is a home office chair reimbursed?", "C:3", outcome=Outcome.UNCERTAIN),
        _unanswered("Can I expense my home office chair?", "D:4", is_dm=True),
        _unanswered("Who is the CEO?", "C:5"),
        answered,
    ])
    assert main(["review", "gaps"]) == 0
    out = capsys.readouterr().out
    assert "4 question(s) the knowledge base could not answer, in 2 group(s)" in out
    assert "   3×  Can I expense my home office chair?" in out  # the DM question counts too
    assert "vacation" not in out and "USECRET" not in out and "DSECRET" not in out
    assert main(["review", "gaps", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(g["count"], g["question"]) for g in data] == [(3, "Can I expense my home office chair?"), (1, "Who is the CEO?")]
    assert data[0]["outcomes"] == {"refused": 2, "uncertain": 1}


def test_an_answer_that_says_what_the_kb_does_not_cover_counts_as_a_gap(cli_env, capsys):
    partly = _unanswered("Do I get a bike allowance and how many vacation days?", "C:1", outcome=Outcome.ANSWERED)
    partly.not_covered = ["The knowledge base does not say whether there is a bike allowance."]
    _record(cli_env, [partly, _unanswered("How many vacation days do I get?", "C:2", outcome=Outcome.ANSWERED)])
    assert main(["review", "gaps", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(g["count"], g["question"], g["outcomes"]) for g in data] == [
        (1, "Do I get a bike allowance and how many vacation days?", {"not covered": 1})]


def test_review_gaps_looks_back_only_the_given_days(cli_env, capsys, monkeypatch):
    _record(cli_env, [_unanswered("Who is the CEO?", "C:1")])
    # Stream ids are the server's clock: seen from 40 days on, the entry is 40 days old.
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + 40 * DAY)
    assert main(["review", "gaps", "--days", "30"]) == 0
    assert capsys.readouterr().out.strip() == "No unanswered questions in the last 30 days."
    assert main(["review", "gaps", "--days", "50"]) == 0
    assert "Who is the CEO?" in capsys.readouterr().out


def test_review_gaps_without_redis_is_one_clear_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CITEBOT_REDIS_URL", "redis://127.0.0.1:1/15")
    assert main(["review", "gaps"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("citebot: cannot reach Redis at 127.0.0.1:1/15") and "Traceback" not in err
