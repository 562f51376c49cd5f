"""Which help-channel messages ask something (bot.helpdesk.asks): words only, no model."""

from __future__ import annotations

import pytest

from bot.helpdesk.asks import (
    ADDRESSED,
    ASKS_FOR,
    MAX_CHARS,
    NO_QUESTION,
    QUESTION_MARK,
    QUESTION_WORD,
    SOCIAL,
    TOO_LONG,
    TOO_SHORT,
    asks,
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("How many days of annual leave do I get?", QUESTION_MARK),
        ("Wann wird das Gehalt überwiesen?", QUESTION_MARK),
        ("how do I reset my VPN password", QUESTION_WORD),
        ("what's the per diem for Munich", QUESTION_WORD),
        ("wie lange dauert die Probezeit", QUESTION_WORD),
        ("was kostet das Jobticket im Monat", QUESTION_WORD),
        ("can I carry over vacation days", QUESTION_WORD),
        ("gibt es einen Zuschuss fürs Fitnessstudio", QUESTION_WORD),
        ("does anyone know where the parental leave form is", ASKS_FOR),
        ("weiß jemand, wo die Reisekostenrichtlinie liegt", ASKS_FOR),
        ("Hi team :wave: quick question, is the office open on Saturday", QUESTION_WORD),
        ("My laptop will not charge. Is there a known fix?", QUESTION_MARK),
    ],
)
def test_questions_are_recognised_with_their_reason(text, reason):
    verdict = asks(text)
    assert verdict.question and bool(verdict)
    assert verdict.reason == reason


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Thanks, that worked!", TOO_SHORT),
        ("Danke dir!", TOO_SHORT),
        ("+1", TOO_SHORT),
        ("any update?", TOO_SHORT),
        ("why?", TOO_SHORT),
        ("lunch anyone?", TOO_SHORT),
        ("Coffee break in 5?", SOCIAL),
        ("The printer on floor 2 works again.", NO_QUESTION),
        ("Reminder: please submit your timesheets by Friday.", NO_QUESTION),
        ("When I joined, onboarding took two weeks.", NO_QUESTION),
        ("Wie besprochen habe ich das Formular geschickt.", NO_QUESTION),
        ("Have a nice weekend, see you Monday", SOCIAL),
        ("Do not forget the all-hands meeting tomorrow", NO_QUESTION),
        ("Was great meeting everyone at the offsite", NO_QUESTION),
        ("I'll be out of office tomorrow, back on Monday.", NO_QUESTION),
        ("<@U0HR42> has joined the channel", ADDRESSED),
        ("<@U0HR42> can you approve my leave request?", ADDRESSED),
        ("<!subteam^S0IT|@it-support> is the VPN down for everyone?", ADDRESSED),
        ("<!here> is anyone else seeing login errors?", ADDRESSED),
    ],
)
def test_statements_thanks_and_chatter_are_left_alone(text, reason):
    verdict = asks(text)
    assert not verdict.question and not verdict
    assert verdict.reason == reason


def test_a_long_post_is_no_question_even_with_a_question_mark():
    post = "Incident summary: " + "the VPN gateway dropped connections. " * 60 + "Any questions?"
    assert len(post) > MAX_CHARS
    assert asks(post).reason == TOO_LONG
    assert asks(post[-400:]).question  # the same words, short, are a question


def test_a_question_after_a_statement_counts():
    assert asks("I moved to the Hamburg office last month. Which holidays apply to me now").question


def test_markup_and_links_do_not_make_a_question():
    assert not asks("<https://wiki.example.com/how-do-i?x=1|how do I?> :tada:").question


def test_the_bench_channel_is_mostly_read_as_labelled():
    """bench/help_channel.py's 40 messages: a change to the rules that gets more than two of them wrong
    changes what a help channel's members see; the bench prints which ones."""
    import sys

    from tests.harness import ROOT

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from help_channel_messages import MESSAGES
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert len(MESSAGES) == 40 and sum(label for _, label in MESSAGES) == 20
    wrong = [text for text, label in MESSAGES if asks(text).question != label]
    assert len(wrong) <= 2, wrong
