"""Block Kit rendering: footnotes, escaping of hostile model text, Slack's limits, the review card."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from slack_sdk.errors import SlackObjectFormationError

from bot.i18n import message
from bot.models import Answer, Outcome, Source, Violation
from bot.review.desk import posted_notes
from bot.slack.blockkit import MESSAGE_TEXT_BUDGET, block_text_length, context, section, to_message
from bot.slack.mrkdwn import clip, escape, split_text
from bot.slack.replies import (
    answer_message,
    error_message,
    feedback_reason_from,
    feedback_reason_modal,
    help_message,
    refusal_message,
    sources_modal,
    uncertain_message,
)
from bot.slack.review_card import (
    review_answer_from,
    review_answer_modal,
    review_card,
    review_card_decided,
    save_draft_from,
)
from bot.store.records import ReviewRecord, ReviewStatus

HOSTILE = [
    "<!channel> everyone look",
    "<!here>",
    "<!everyone>",
    "hi <@U1> and <@W0123ABC|boss>",
    "<https://evil.example.com|click for the policy>",
    "<#C0123|general>",
    "<!subteam^S123|admins>",
    "<!date^1700000000^{date}|x>",
    "Tom & Jerry &amp; &lt;tags&gt;",
    "a < b > c",
]


def src(n: int, **kw) -> Source:
    fields = dict(
        n=n, id=f"kb-{n:02d}", title=f"Titel {n}", section="Details", stand="2026-01",
        url=f"https://wiki.example.com/kb-{n:02d}", passage=f"Passage {n}.",
    )
    fields.update(kw)
    return Source(**fields)


def answer(text: str = "Urlaub: 30 Tage [1]. Altersteilzeit ab 55 [2].", sources=None, **kw) -> Answer:
    sources = [src(1), src(2, url=None)] if sources is None else sources
    return Answer(question="Wie viel Urlaub?", answer=text, verified=True, refused=False, sources=sources, **kw)


def mrkdwn_texts(blocks: list[dict]) -> list[str]:
    """Every text Slack parses as mrkdwn: section texts and mrkdwn context elements."""
    texts = []
    for block in blocks:
        if block["type"] == "section":
            texts.append(block["text"]["text"])
        elif block["type"] == "context":
            texts += [e["text"] for e in block["elements"] if e["type"] == "mrkdwn"]
    return texts


def control_sequences(text: str) -> list[str]:
    return re.findall(r"<[^>]*>", text)


def buttons(blocks: list[dict]) -> list[dict]:
    return [e for b in blocks if b["type"] == "actions" for e in b["elements"] if e["type"] == "button"]


def assert_within_slack_limits(blocks: list[dict], max_blocks: int) -> None:
    assert len(blocks) <= max_blocks
    for block in blocks:
        if block["type"] == "section":
            assert 0 < len(block["text"]["text"]) <= 3000
        if block["type"] == "context":
            assert 1 <= len(block["elements"]) <= 10
            assert all(len(e["text"]) <= 3000 for e in block["elements"])
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
    for b in buttons(blocks):
        assert len(b["text"]["text"]) <= 75
        assert 0 < len(b["value"]) <= 2000


def assert_modal(view: dict) -> None:
    assert view["type"] == "modal"
    assert view["title"]["type"] == "plain_text" and 0 < len(view["title"]["text"]) <= 24
    assert 0 < len(view["close"]["text"]) <= 24
    if "submit" in view:
        assert 0 < len(view["submit"]["text"]) <= 24
    assert_within_slack_limits(view["blocks"], 100)


# ------------------------------------------------------------------ the answer


def test_answer_text_keeps_markers_and_sources_context_lists_each_footnote():
    msg = answer_message(answer(), language="de", ref="ans-1")
    blocks = msg["blocks"]
    assert blocks[0] == {"type": "section", "text": {"type": "mrkdwn", "text": "Urlaub: 30 Tage [1]. Altersteilzeit ab 55 [2]."}}
    [sources] = [b for b in blocks if b["type"] == "context"]
    assert [e["text"] for e in sources["elements"]] == [
        "[1] <https://wiki.example.com/kb-01|Titel 1> · Details · Stand 2026-01",
        "[2] Titel 2 · Details · Stand 2026-01",  # no url: not linked
    ]
    assert blocks[-1]["type"] == "actions"


def test_source_without_stand_or_section_leaves_them_out():
    msg = answer_message(answer(sources=[src(1, section="", stand=None, url=None)]), language="en", ref="a")
    assert "[1] Titel 1" in mrkdwn_texts(msg["blocks"])


def test_sources_button_and_feedback_buttons_carry_the_callers_reference():
    msg = answer_message(answer(), language="en", ref="ans-42")
    found = {b["action_id"]: b for b in buttons(msg["blocks"])}
    assert set(found) == {"citebot_sources", "citebot_feedback_up", "citebot_feedback_down"}
    assert {b["value"] for b in found.values()} == {"ans-42"}
    assert found["citebot_sources"]["text"]["text"] == "Sources"
    assert answer_message(answer(), language="de", ref="x")["blocks"][-1]["elements"][0]["text"]["text"] == "Quellen"


@pytest.mark.parametrize("ref", ["", "x" * 2001])
def test_a_missing_or_oversized_reference_is_refused_before_slack_sees_it(ref):
    with pytest.raises(ValueError):
        answer_message(answer(), language="en", ref=ref)


def test_fallback_text_has_the_answer_and_one_line_per_source():
    msg = answer_message(answer(), language="en", ref="a")
    assert msg["text"].splitlines() == [
        "Urlaub: 30 Tage [1]. Altersteilzeit ab 55 [2].",
        "",
        "Sources:",
        "[1] Titel 1 · Details · Stand 2026-01 https://wiki.example.com/kb-01",
        "[2] Titel 2 · Details · Stand 2026-01",
    ]


def test_links_never_break_out_of_their_brackets_and_only_http_is_linked():
    hostile_url = "https://wiki.example.com/a b|<!channel>?x=1&y=2"
    msg = answer_message(
        answer(sources=[src(1, url=hostile_url), src(2, url="javascript:alert(1)"), src(3, title="A|B")]),
        language="en",
        ref="a",
    )
    lines = mrkdwn_texts(msg["blocks"])[1:4]
    assert lines[0] == "[1] <https://wiki.example.com/a%20b%7C%3C!channel%3E?x=1&amp;y=2|Titel 1> · Details · Stand 2026-01"
    assert lines[1] == "[2] Titel 2 · Details · Stand 2026-01"
    assert control_sequences(lines[2]) == ["<https://wiki.example.com/kb-03|A¦B>"]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_model_text_cannot_open_a_control_sequence(hostile):
    msg = answer_message(answer(f"Antwort {hostile} [1].", sources=[src(1, url=None)]), language="en", ref="a")
    for text in mrkdwn_texts(msg["blocks"]) + [msg["text"]]:
        assert "<" not in text and ">" not in text
    assert escape(hostile) in msg["blocks"][0]["text"]["text"]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_kb_titles_sections_and_passages_are_escaped_too(hostile):
    bad = src(1, title=hostile, section=hostile, stand=hostile, passage=hostile)
    msg = answer_message(answer("Text [1].", sources=[bad]), language="en", ref="a")
    view = sources_modal([bad], question=hostile, language="en")
    for text in mrkdwn_texts(msg["blocks"]) + mrkdwn_texts(view["blocks"]) + [msg["text"]]:
        # Our one link is the only control sequence; its label is escaped.
        assert [s for s in control_sequences(text) if not s.startswith("<https://wiki.example.com/kb-01|")] == []
        assert "<!" not in text and "<@" not in text and "<#" not in text


def test_escaping_is_exactly_slacks_three_entities():
    assert escape("Tom & Jerry <b> &amp;") == "Tom &amp; Jerry &lt;b&gt; &amp;amp;"
    assert escape("plain *bold* _it_") == "plain *bold* _it_"


def test_markdown_bold_and_headings_become_mrkdwn_bold():
    msg = answer_message(answer("## Urlaub\n**30 Tage** im Jahr [1].", sources=[src(1)]), language="de", ref="a")
    assert msg["blocks"][0]["text"]["text"] == "*Urlaub*\n*30 Tage* im Jahr [1]."


def test_reviewed_answer_names_the_reviewer_and_a_forged_id_is_not_a_mention():
    msg = answer_message(answer(), language="en", ref="a", reviewed_by="U0REVIEW1")
    assert "Reviewed by <@U0REVIEW1>." in mrkdwn_texts(msg["blocks"])
    forged = answer_message(answer(), language="de", ref="a", reviewed_by="U1> <!channel")
    assert "Geprüft von U1&gt; &lt;!channel." in mrkdwn_texts(forged["blocks"])


def test_partial_answer_shows_its_note_apart_from_the_body():
    note = message("partial", "en")
    msg = answer_message(answer("Nur das [1].", notes=[note], partial=True), language="en", ref="a")
    texts = mrkdwn_texts(msg["blocks"])
    assert texts[0] == "Nur das [1]."
    assert texts.count(note) == 1
    assert msg["blocks"][1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}


def test_what_the_kb_does_not_cover_is_said_apart_from_the_body():
    note = message("not_covered", "de")
    body = "Bestimmte Bezüge sind unpfändbar [1]. Zur Pfändung Ihres Kontos enthält die Wissensbasis keine Angaben."
    msg = answer_message(answer(body, notes=[note], not_covered=["Zur Pfändung …"]), language="de", ref="a")
    assert msg["blocks"][0]["text"]["text"] == body
    assert msg["blocks"][1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}


def test_partial_flag_without_a_note_in_the_text_still_gets_one():
    msg = answer_message(answer("Nur das [1].", partial=True), language="de", ref="a")
    assert message("partial", "de") in mrkdwn_texts(msg["blocks"])


def test_answer_on_a_truncated_question_shows_the_truncation_note():
    note = message("truncated", "de", limit=4000)
    partial = message("partial", "de")
    msg = answer_message(answer("Das [1].", notes=[partial, note], partial=True), language="de", ref="a")
    notes = [b for b in msg["blocks"] if b["type"] == "context"][0]
    assert [e["text"] for e in notes["elements"]] == [partial, note]
    assert msg["blocks"][0]["text"]["text"] == "Das [1]."


def test_refused_and_uncertain_answers_get_no_feedback_or_sources_buttons():
    refused = Answer(question="q", answer=message("refusal", "en"), verified=True, refused=True, outcome=Outcome.REFUSED)
    msg = answer_message(refused, language="en", ref="a")
    assert buttons(msg["blocks"]) == []
    assert mrkdwn_texts(msg["blocks"]) == [message("refusal", "en")]


# ------------------------------------------------------------------ splitting and the caps


def test_long_answer_is_split_at_paragraphs_under_3000_characters():
    paragraphs = [f"Absatz {i}: " + "Wort " * 120 + f"Ende [{i % 3 + 1}]." for i in range(6)]  # ~640 chars each
    text = "\n\n".join(paragraphs)
    msg = answer_message(answer(text, sources=[src(1), src(2), src(3)]), language="de", ref="a")
    sections = [b["text"]["text"] for b in msg["blocks"] if b["type"] == "section"]
    assert len(sections) == 2
    assert all(len(s) <= 3000 for s in sections)
    assert sections[0].endswith("Ende [1].")  # cut between paragraphs, not inside one
    assert "\n\n".join(sections) == text


def test_split_never_cuts_a_word_and_prefers_sentences():
    text = " ".join(f"Satz{i} hat einige Wörter darin." for i in range(400))  # no paragraph breaks
    pieces = split_text(text, 3000)
    assert len(pieces) > 1
    assert all(len(p) <= 3000 for p in pieces)
    assert " ".join(pieces).split() == text.split()
    assert all(p.endswith(".") for p in pieces)


def test_a_single_word_longer_than_a_section_is_cut_but_never_inside_an_entity():
    pieces = split_text(escape("&" * 1000), 3000)  # 5000 characters of "&amp;"
    assert len(pieces) == 2 and all(len(p) <= 3000 for p in pieces)
    assert all(re.fullmatch(r"(&amp;)+", p) for p in pieces)


def test_clip_cuts_at_a_word_and_says_so():
    assert clip("eins zwei drei vier", 12) == "eins zwei…"
    assert clip("kurz", 12) == "kurz"


def test_20000_character_answer_is_shortened_visibly_and_keeps_sources_and_buttons():
    text = "\n\n".join(f"Absatz {i}. " + "Inhalt mit Worten. " * 50 + f"[{i % 2 + 1}]" for i in range(21))
    assert len(text) > 20000
    msg = answer_message(answer(text), language="en", ref="a")
    blocks = msg["blocks"]
    assert_within_slack_limits(blocks, 50)
    assert block_text_length(blocks) <= MESSAGE_TEXT_BUDGET
    texts = mrkdwn_texts(blocks)
    assert "…answer shortened, see Sources for the passages." in texts
    assert blocks[-1]["type"] == "actions" and blocks[-2]["elements"][0]["text"].startswith("[1] ")
    assert msg["text"].startswith(text[:5000])  # the fallback keeps the whole answer


def test_40_sources_are_split_over_context_blocks_of_ten():
    sources = [src(i) for i in range(1, 41)]
    msg = answer_message(answer("Viel [1].", sources=sources), language="en", ref="a")
    assert_within_slack_limits(msg["blocks"], 50)
    contexts = [b for b in msg["blocks"] if b["type"] == "context"]
    assert [len(c["elements"]) for c in contexts] == [10, 10, 10, 10]
    assert contexts[3]["elements"][9]["text"].startswith("[40] ")


def test_hundreds_of_sources_end_in_a_count_and_stay_under_50_blocks():
    sources = [src(i, title="Ein recht langer Titel " * 4) for i in range(1, 501)]
    msg = answer_message(answer("Viel " * 5000 + "[1].", sources=sources), language="en", ref="a")
    blocks = msg["blocks"]
    assert_within_slack_limits(blocks, 50)
    assert block_text_length(blocks) <= MESSAGE_TEXT_BUDGET
    lines = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert re.fullmatch(r"…and \d+ more sources\.", lines[-1])
    shown = sum(1 for line in lines if line.startswith("["))
    assert lines[-1] == f"…and {500 - shown} more sources."


# ------------------------------------------------------------------ the Sources modal


def test_sources_modal_shows_each_footnote_with_its_passage():
    view = sources_modal([src(1, passage="Urlaub: 30 Tage."), src(2, url=None)], question="Wie viel?", language="de")
    assert_modal(view)
    assert view["title"]["text"] == "Quellen" and view["close"]["text"] == "Schließen"
    texts = mrkdwn_texts(view["blocks"])
    assert texts[0] == "*Frage*\nWie viel?"
    assert "*[1] <https://wiki.example.com/kb-01|Titel 1> · Details · Stand 2026-01*" in texts
    assert texts[texts.index("*[1] <https://wiki.example.com/kb-01|Titel 1> · Details · Stand 2026-01*") + 1] == "Urlaub: 30 Tage."


def test_sources_modal_stays_within_100_blocks_and_3000_characters_per_section():
    sources = [src(i, passage=("Ein Satz im Handbuch. " * 300)) for i in range(1, 81)]  # 6,600 chars each
    view = sources_modal(sources, question="q " * 2000, language="en")
    assert_modal(view)
    texts = mrkdwn_texts(view["blocks"])
    assert "…passage shortened." in texts
    assert re.fullmatch(r"\d+ more sources are not shown\.", texts[-1])


def test_sources_modal_passage_without_text_says_so():
    view = sources_modal([src(1, passage="")], question="q", language="en")
    assert "(no passage text stored)" in mrkdwn_texts(view["blocks"])


# ------------------------------------------------------------------ the bot's own messages


@pytest.mark.parametrize("language", ["en", "de"])
def test_notices_carry_the_bots_sentence_in_the_askers_language(language):
    assert mrkdwn_texts(refusal_message(language=language)["blocks"]) == [message("refusal", language)]
    assert mrkdwn_texts(uncertain_message(language=language)["blocks"]) == [message("uncertain", language)]
    assert mrkdwn_texts(error_message(language=language)["blocks"]) == [message("llm_down", language)]
    assert mrkdwn_texts(help_message(language=language)["blocks"]) == [message("help", language)]
    for msg in (refusal_message(language=language), help_message(language=language)):
        assert msg["text"] and buttons(msg["blocks"]) == []


def test_notices_on_a_truncated_question_add_the_note():
    msg = uncertain_message(language="de", question_limit=4000)
    assert mrkdwn_texts(msg["blocks"]) == [message("uncertain", "de"), message("truncated", "de", limit=4000)]


# ------------------------------------------------------------------ the review card


def review(**kw) -> ReviewRecord:
    fields = dict(
        review_id="rv-123",
        question_id="C0PUBLIC1:1796030100.000100",
        question="Wie viel Urlaub <!channel>?",
        asker="U0ASKER1",
        channel="C0PUBLIC1",
        is_dm=False,
        draft="Es gibt 45 Tage [kb-01].\n<@U1> sagt das.",
        violations=[Violation(kind="NUMBER_NOT_IN_SOURCE", detail="45 not in <kb-01>")],
        sources=[src(1), src(2)],
        created_at=datetime(2026, 11, 30, 9, 15, tzinfo=UTC).timestamp(),
    )
    fields.update(kw)
    return ReviewRecord(**fields)


def decided(record: ReviewRecord, status: ReviewStatus, when: float = 1_700_000_000, answer: str | None = None):
    return record.model_copy(update={"status": status, "decided_by": "U0REV", "decided_at": when, "final_answer": answer})


def test_review_card_shows_question_draft_violations_sources_and_asker():
    card = review_card(review())
    assert_within_slack_limits(card["blocks"], 50)
    texts = mrkdwn_texts(card["blocks"])
    assert "Asked by <@U0ASKER1> in <#C0PUBLIC1> · <!date^1796030100^{date_short_pretty} {time}|2026-11-30 09:15 UTC>" in texts
    assert "*Question*\nWie viel Urlaub &lt;!channel&gt;?" in texts
    assert "*Rejected draft*\n>Es gibt 45 Tage [kb-01].\n>&lt;@U1&gt; sagt das." in texts
    assert "*Why it was rejected*\n• *NUMBER_NOT_IN_SOURCE*: 45 not in &lt;kb-01&gt;" in texts
    assert "[1] <https://wiki.example.com/kb-01|Titel 1> · Details · Stand 2026-01" in texts


def test_review_card_names_the_finding_of_each_try_in_one_line():
    tries = ["try 1: LINK_NOT_IN_SOURCE: '+49 421 555' is not in <kb-01>", "try 2: NUMBER_NOT_IN_SOURCE: 45 (+1 more)"]
    card = review_card(review(tries=tries))
    assert_within_slack_limits(card["blocks"], 50)
    [why] = [t for t in mrkdwn_texts(card["blocks"]) if t.startswith("*Why it was rejected*")]
    assert why.splitlines()[1:4] == ["• try 1: LINK_NOT_IN_SOURCE: '+49 421 555' is not in &lt;kb-01&gt;",
                                     "• try 2: NUMBER_NOT_IN_SOURCE: 45 (+1 more)",
                                     "• *NUMBER_NOT_IN_SOURCE*: 45 not in &lt;kb-01&gt;"]


def test_review_card_buttons_carry_only_the_review_id():
    card = review_card(review())
    found = {b["action_id"]: b["value"] for b in buttons(card["blocks"])}
    assert found == {
        "citebot_review_approve": "rv-123",
        "citebot_review_answer": "rv-123",
        "citebot_review_dismiss": "rv-123",
    }


@pytest.mark.parametrize("record", [review(is_dm=True, channel="D0PRIVATE"), review(is_dm=False, channel="D0PRIVATE")])
def test_dm_question_card_hides_the_asker_and_the_dm_channel(record):
    card = review_card(record)
    dumped = json.dumps(card)
    assert "U0ASKER1" not in dumped and "D0PRIVATE" not in dumped
    assert mrkdwn_texts(card["blocks"])[0].startswith("Asked in a direct message")


def test_review_card_of_a_record_without_draft_says_so():
    record = review(
        review_id="rv-9", question="Frage?", language="de", asker=None, channel="D0PRIVATE", is_dm=True, draft="",
        violations=[Violation(kind="NO_CITATION", detail="none")], sources=[src(1, passage="p")],
        created_at=1_700_000_000,
    )
    card = review_card(record)
    texts = mrkdwn_texts(card["blocks"])
    assert "*Abgelehnter Entwurf*\n(kein Entwurf)" in texts
    assert "*Warum er abgelehnt wurde*\n• *NO_CITATION*: none" in texts
    assert {b["value"] for b in buttons(card["blocks"])} == {"rv-9"}


def test_feedback_record_card_shows_the_posted_answer_and_the_reason_in_the_records_language():
    record = review(kind="feedback", language="de", draft="30 Tage [1].", feedback_reason="veraltet <!here>", violations=[])
    texts = mrkdwn_texts(review_card(record)["blocks"])
    assert "*Die gepostete Antwort*\n>30 Tage [1]." in texts
    assert "*Angegebener Grund*\nveraltet &lt;!here&gt;" in texts
    assert review_card(record)["blocks"][0]["text"]["text"] == "Antwort als nicht hilfreich markiert"
    in_english = record.model_copy(update={"language": "en"})
    assert review_card(in_english)["blocks"][0]["text"]["text"] == "Answer marked as not helpful"
    without_reason = mrkdwn_texts(review_card(record.model_copy(update={"feedback_reason": None}))["blocks"])
    assert "*Angegebener Grund*\n(kein Grund angegeben)" in without_reason


HUGE = dict(
    question="Frage & " * 2000,
    draft="a\n" * 5000,  # short lines: quoting nearly doubles them
    violations=[Violation(kind="UNSUPPORTED_CLAIM", detail="<d> " * 500)] * 40,
    sources=[src(i) for i in range(1, 60)],
)


def test_decided_card_of_a_huge_record_stays_within_limits():
    card = review_card_decided(decided(review(**HUGE), ReviewStatus.ANSWERED, answer="&\n" * 5000))
    assert_within_slack_limits(card["blocks"], 50)
    assert block_text_length(card["blocks"]) <= MESSAGE_TEXT_BUDGET


def test_review_card_with_a_huge_record_stays_within_limits():
    card = review_card(review(**HUGE))
    assert_within_slack_limits(card["blocks"], 50)
    assert block_text_length(card["blocks"]) <= MESSAGE_TEXT_BUDGET
    texts = mrkdwn_texts(card["blocks"])
    assert any(t.startswith("*Why it was rejected*") and t.endswith("\n…and 30 more.") for t in texts)
    assert texts[-1].startswith("…and ") and texts[-1].endswith(" more sources.")


@pytest.mark.parametrize(
    ("decision", "line"),
    [
        (ReviewStatus.APPROVED, "✅ Approved by <@U0REV> at "),
        (ReviewStatus.ANSWERED, "✍️ Answered by <@U0REV> at "),
        (ReviewStatus.DISMISSED, "🚫 Dismissed by <@U0REV> at "),
    ],
)
def test_decided_card_has_no_buttons_and_says_who_decided_when(decision, line):
    card = review_card_decided(decided(review(), decision, datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp()))
    assert buttons(card["blocks"]) == [] and all(b["type"] != "actions" for b in card["blocks"])
    last = mrkdwn_texts(card["blocks"])[-1]
    assert last == line + "<!date^1796032800^{date_short_pretty} {time}|2026-11-30 10:00 UTC>"
    assert_within_slack_limits(card["blocks"], 50)


def test_decided_card_shows_the_posted_answer_escaped():
    card = review_card_decided(decided(review(), ReviewStatus.ANSWERED, answer="Es sind 30 Tage <!here>."))
    assert "*Posted answer*\n>Es sind 30 Tage &lt;!here&gt;." in mrkdwn_texts(card["blocks"])


def test_decided_card_of_a_dm_question_still_hides_the_asker():
    card = review_card_decided(decided(review(is_dm=True, channel="D0PRIVATE"), ReviewStatus.APPROVED))
    assert "U0ASKER1" not in json.dumps(card) and "D0PRIVATE" not in json.dumps(card)


def test_an_open_review_has_no_decided_card():
    with pytest.raises(ValueError):
        review_card_decided(review())


# ------------------------------------------------------------------ review and feedback modals


def test_review_answer_modal_carries_the_review_id_and_a_multiline_input():
    view = review_answer_modal(review(question="Frage <!here>?", draft="Entwurf <@U1>", language="en"))
    assert_modal(view)
    assert view["callback_id"] == "citebot_review_answer_submit"
    assert view["private_metadata"] == "rv-123"
    [field, box] = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["element"]["type"] == "plain_text_input" and field["element"]["multiline"] is True
    # The optional "also save as a draft KB entry" box, unticked unless the reviewer ticks it.
    assert box["optional"] is True and box["element"]["type"] == "checkboxes"
    [option] = box["element"]["options"]
    ticked = {"values": {box["block_id"]: {box["element"]["action_id"]: {"selected_options": [option]}}}}
    assert save_draft_from({**view, "state": ticked}) and not save_draft_from(view)
    assert field["element"]["max_length"] == 3000
    assert all("<!" not in t and "<@" not in t for t in mrkdwn_texts(view["blocks"]))
    state = {"values": {field["block_id"]: {field["element"]["action_id"]: {"type": "plain_text_input", "value": " Antwort \n"}}}}
    assert review_answer_from({**view, "state": state}) == "Antwort"


def test_feedback_reason_modal_asks_for_an_optional_reason():
    view = feedback_reason_modal("ans-7", language="de")
    assert_modal(view)
    assert view["callback_id"] == "citebot_feedback_reason" and view["private_metadata"] == "ans-7"
    [field] = view["blocks"]
    assert field["optional"] is True and field["element"]["multiline"] is True
    assert feedback_reason_from(view) == ""
    state = {"values": {field["block_id"]: {field["element"]["action_id"]: {"value": "veraltet"}}}}
    assert feedback_reason_from({**view, "state": state}) == "veraltet"


# ------------------------------------------------------------------ slack_sdk's validation


def oversized_source(n: int) -> Source:
    """Every field of a KB entry far past what a footnote or a block can show."""
    return src(
        n,
        title="Titel & <Kapitel> " * 400,
        section="Abschnitt " * 800,
        stand="2026-" * 2000,
        url="https://wiki.example.com/" + "a" * 5000,
        passage="Satz mit & und <tags>. " * 3000 + "x" * 9000,
    )


def oversized_answer() -> Answer:
    long_word = "Wort" * 2000  # no place to cut it but inside
    notes = [message("partial", "en")] * 12  # many notes: they must fit beside the cut body
    text = "\n\n".join([f"Absatz & <b> [1] {long_word}"] * 20)
    return answer(text, notes=notes, sources=[oversized_source(i) for i in range(1, 80)], partial=True)


def built_from_oversized_text() -> list[tuple[str, dict, int]]:
    """(what, message or view, its block limit) for everything the bot posts or opens."""
    record = review(
        question="Frage & " * 5000,
        draft="Entwurf <x>\n" * 5000,
        violations=[Violation(kind="UNSUPPORTED_CLAIM " * 300, detail="<d> " * 5000)] * 50,
        sources=[oversized_source(i) for i in range(1, 80)],
        feedback_reason="veraltet " * 3000,
    )
    ans = oversized_answer()
    return [
        ("answer", answer_message(ans, language="de", ref="a", reviewed_by="U0REV"), 50),
        ("compact answer", answer_message(ans, language="de", ref="a", compact=True), 50),
        ("sources modal", sources_modal(ans.sources, question="Frage " * 10000, language="de"), 100),
        ("refusal", refusal_message(language="de", question_limit=4000), 50),
        ("review card", review_card(record), 50),
        ("feedback card", review_card(record.model_copy(update={"kind": "feedback"})), 50),
        ("decided card", review_card_decided(decided(record, ReviewStatus.ANSWERED, answer="Antwort & " * 9000)), 50),
        ("review modal", review_answer_modal(record), 100),
        ("feedback modal", feedback_reason_modal("a" * 2000, language="de"), 100),
    ]


def test_oversized_kb_and_model_text_is_cut_to_fit_before_slack_sdk_checks_it():
    # Building at all is the first half of the proof: every block goes through
    # slack_sdk's to_dict(), which raises on anything over Slack's limits.
    for what, built, max_blocks in built_from_oversized_text():
        blocks = built["blocks"]
        assert_within_slack_limits(blocks, max_blocks)
        if "type" in built:
            assert_modal(built)
        else:
            assert block_text_length(blocks) <= MESSAGE_TEXT_BUDGET, what
            assert len(built["text"]) <= 40000, what
        footnotes = [t for t in mrkdwn_texts(blocks) if t.startswith("[1] ") or t.startswith("*[1] ")]
        assert all(len(t) < 1000 for t in footnotes), what


def test_slack_sdk_raises_on_what_we_did_not_cut_so_the_cutting_is_ours():
    with pytest.raises(SlackObjectFormationError):
        to_message("x", [section("x" * 3001)])
    with pytest.raises(SlackObjectFormationError):
        to_message("x", [context(["x"] * 11)])


def test_a_recorded_answer_gives_back_its_notes_for_the_repost_of_a_flagged_answer():
    partial, cut = message("partial", "de"), message("truncated", "de", limit=40)
    body, notes = posted_notes(f"Das [1].\n\n{partial}\n\n{cut}\n", "de", 40)
    assert (body, notes) == ("Das [1].", [partial, cut])
    # Only the bot's own notes, exactly: a paragraph of the answer stays in it.
    assert posted_notes("Das [1].\n\nAuch das [2].", "de", 40) == ("Das [1].\n\nAuch das [2].", [])
    assert posted_notes(f"Das [1].\n\n{message('truncated', 'de', limit=41)}", "de", 40)[1] == []
