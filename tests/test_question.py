"""Question pre-processing: chatter stripping, multi-question splitting, follow-ups."""

from __future__ import annotations

import re

import pytest

from kb_index.question.chatter import strip_chatter
from kb_index.question.follow_up import retrieval_text
from kb_index.question.parts import MAX_PARTS, split_question

# --------------------------------------------------------------- strip_chatter


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # English greetings, fillers, thanks, sign-offs
        ("hey team 👋 how many vacation days do I get?", "how many vacation days do I get?"),
        (
            "Hi all, quick question from the Berlin office: how many vacation days do I get? "
            "Thanks in advance :pray: Cheers, Bob",
            "how many vacation days do I get?",
        ),
        ("Hey! How do I book a train? :train: thx", "How do I book a train?"),
        ("Hi Anna, can I work from home on Fridays? — Bob", "can I work from home on Fridays?"),
        ("Is the office open on Good Friday? Cheers", "Is the office open on Good Friday?"),
        ("Thanks for the answer, but what about part-time?", "what about part-time?"),
        ("Thanks, how about interns?", "how about interns?"),
        ("Quick q - do interns get paid vacation?", "do interns get paid vacation?"),
        ("sorry for the dumb question but how do I reset my password", "how do I reset my password"),
        (
            "Moin moin, sorry to bother you, hope you're well! Where do I find the travel policy "
            "https://wiki.example/travel? BR, Jörg Müller",
            "Where do I find the travel policy?",
        ),
        (
            "Do I need to tell HR when I move? Thanks in advance! Best regards, Maria Gonzalez",
            "Do I need to tell HR when I move?",
        ),
        (
            "hey all good morning! does the canteen open at 8? any help appreciated",
            "does the canteen open at 8?",
        ),
        ("Hi HR team, how much is the per diem in Munich?\n\nThanks,\nAnna", "how much is the per diem in Munich?"),
        ("How many days do I get?\n-- Bob", "How many days do I get?"),
        ("Do we get a bonus for referring friends? best, Tom", "Do we get a bonus for referring friends?"),
        ("Question: can I expense taxis at 10:30:00 pm?", "can I expense taxis at 10:30:00 pm?"),
        # missing punctuation, lowercase
        (
            "quick question from the berlin office how many vacation days do i get thanks",
            "how many vacation days do i get",
        ),
        ("How many vacation days do I get thanks in advance cheers", "How many vacation days do I get"),
        ("hi can I bring my kid", "can I bring my kid"),
        ("Thanks in advance :pray: what is the hotel limit?", "what is the hotel limit?"),
        # German
        (
            "Hallo zusammen, wie lange wird der Lohn bei Krankheit fortgezahlt? Danke vorab! "
            "Liebe Grüße aus Hamburg",
            "wie lange wird der Lohn bei Krankheit fortgezahlt?",
        ),
        ("Moin! Wie viele Urlaubstage habe ich? LG", "Wie viele Urlaubstage habe ich?"),
        (
            "Liebe Kolleg*innen, gibt es eine Regel für Hunde im Büro? Viele Grüße, Sepp",
            "gibt es eine Regel für Hunde im Büro?",
        ),
        (
            "Servus zusammen! Muss ich eine AU einreichen, wenn ich einen Tag krank bin? "
            "Danke euch und viele Grüße aus München, Sepp",
            "Muss ich eine AU einreichen, wenn ich einen Tag krank bin?",
        ),
        (
            "Guten Morgen liebe Kollegen, kurze Frage: ab wann kann ich in Altersteilzeit? "
            ":smile: Danke schön",
            "ab wann kann ich in Altersteilzeit?",
        ),
        ("Hallo HR-Team, wie beantrage ich Elternzeit? VG Jana", "wie beantrage ich Elternzeit?"),
        (
            "Grüß Gott! Wie hoch ist die Reisekostenpauschale?\n\nMfG\nDr. Huber",
            "Wie hoch ist die Reisekostenpauschale?",
        ),
        ("Kann ich mein Fahrrad im Büro abstellen? Danke!\nAnna", "Kann ich mein Fahrrad im Büro abstellen?"),
        (
            "Hallo zusammen, sorry für die Störung, ich hoffe es geht euch gut. "
            "Gibt es Parkplätze für E-Autos? Danke euch!",
            "Gibt es Parkplätze für E-Autos?",
        ),
        (
            "ich hab mal ne Frage: Wie viel Urlaub bekommen Teilzeit- und Vollzeitkräfte? 🙏🏽",
            "Wie viel Urlaub bekommen Teilzeit- und Vollzeitkräfte?",
        ),
        (
            "hallo zusammen wie viele urlaubstage habe ich vielen dank im voraus",
            "wie viele urlaubstage habe ich",
        ),
        (
            "Eine kurze Frage aus dem Büro Köln: Wer genehmigt Dienstreisen? Besten Dank, Jan",
            "Wer genehmigt Dienstreisen?",
        ),
        # Slack markup
        (
            "<@U024BE7LH> <!here> can I expense a hotel? see <https://x.example/a|this page>",
            "can I expense a hotel? see",
        ),
        ("Hey <@U123|bob>, where is the form? <https://intranet.example/forms>", "where is the form?"),
        ("<!channel> is <#C123|general> the right place for IT questions?", "is the right place for IT questions?"),
        ("what's the wifi password @here", "what's the wifi password"),
        ("How much is the per diem? 🇩🇪 ✅", "How much is the per diem?"),
        ("Is 9:30:00 ok? :+1::skin-tone-2:", "Is 9:30:00 ok?"),
        ("Is &lt;5 days enough notice &amp; who approves?", "Is <5 days enough notice & who approves?"),
    ],
)
def test_strip_chatter_exact(message, expected):
    assert strip_chatter(message) == expected


@pytest.mark.parametrize(
    ("message", "kept", "gone"),
    [
        (
            "Hello, my e-mail <mailto:bob@x.de|bob@x.de> is locked, what do I do?",
            ["bob@x.de", "e-mail", "locked"],
            ["Hello", "mailto"],
        ),
        (
            "Can I take leave until <!date^1392734382^{date}|Feb 18>? Thanks!",
            ["Feb 18", "leave"],
            ["date^", "Thanks"],
        ),
        (
            "Hi team! I work part-time in Berlin. How many vacation days do I get? Thanks, Bob",
            ["part-time", "Berlin", "vacation days"],
            ["Hi", "Thanks", "Bob"],
        ),
        (
            "Moin 👋 Wie werden Überstunden vergütet :thinking_face: LG aus Hamburg",
            ["Überstunden", "vergütet"],
            ["Moin", "LG", "Hamburg", "thinking"],
        ),
        (
            "Hey folks, quick question for you all: what's the expense limit for hotels in Paris? ty!",
            ["expense limit", "hotels", "Paris"],
            ["Hey", "folks", "quick", "ty"],
        ),
        (
            "Guten Tag, mail an hr@firma.de oder an <@U99>? Mit freundlichen Grüßen, Petra Schmidt",
            ["hr@firma.de", "mail"],
            ["Guten Tag", "Grüßen", "Petra"],
        ),
        (
            "hope this is the right channel. Where do I report a broken monitor? :sweat_smile: cheers",
            ["report", "broken monitor"],
            ["hope", "channel", "cheers", "sweat"],
        ),
    ],
)
def test_strip_chatter_keeps_content_words(message, kept, gone):
    out = strip_chatter(message)
    for word in kept:
        assert word in out
    for word in gone:
        assert word not in out


@pytest.mark.parametrize(
    "message",
    [
        "Can I bring my dog to the office?",
        "Thanks to the new policy, can I work from home?",
        "How do I say thanks",
        "Can I send a thank you gift to a client?",
        "Wie sage ich danke",
        "Which hotel is best",
        "Which hotel is best, Bob",
        "Best practices for onboarding?",
        "Morning shift allowance?",
        "Hello World app access?",
        "Hi-vis vest policy?",
        "What is BR in payroll?",
        "Is there a budget for thank-you cards?",
        "Gibt es ein Budget für Dankeschön-Geschenke?",
        "Wie viel Urlaub bekommen Teilzeit- und Vollzeitkräfte?",
        "Sind liebe Grüße in Kundenmails erlaubt?",
        "Who approves the quick question form?",
        "Topics:\n- Vacation days?\n- Sick Leave",
    ],
)
def test_strip_chatter_keeps_words_inside_a_question(message):
    assert strip_chatter(message) == " ".join(message.split())


def test_thanks_then_question_keeps_the_question():
    out = strip_chatter("Thanks for the answer, but what about part-time?")
    assert "what about part-time" in out
    assert "Thanks" not in out


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Thanks!", "Thanks!"),
        ("hi", "hi"),
        ("Danke vorab!", "Danke vorab!"),
        ("hey team 👋", "hey team"),
        ("Thanks in advance :pray:", "Thanks in advance"),
        ("liebe Grüße aus Hamburg", "liebe Grüße aus Hamburg"),
        ("<@U024BE7LH> thanks!! :tada:", "thanks!!"),
        (":pray: danke", "danke"),
        ("Cheers, Bob", "Cheers, Bob"),
    ],
)
def test_strip_chatter_never_empties_a_message_with_words(message, expected):
    assert strip_chatter(message) == expected


@pytest.mark.parametrize("message", ["", "   ", "👋 🎉", "<@U024BE7LH> <!here>"])
def test_strip_chatter_of_wordless_input_has_no_words(message):
    assert not re.search(r"[^\W\d_]", strip_chatter(message))


def test_strip_chatter_collapses_whitespace():
    assert strip_chatter("  How   many\tvacation\n\n days?  ") == "How many vacation days?"


# -------------------------------------------------------------- split_question


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "Wie lange wird der Lohn bei Krankheit fortgezahlt und wie werden Überstunden vergütet?",
            ["Wie lange wird der Lohn bei Krankheit fortgezahlt?", "wie werden Überstunden vergütet?"],
        ),
        (
            "How many vacation days do I get, and can I carry them over? Also what's the expense limit for hotels?",
            ["How many vacation days do I get?", "can I carry them over?", "what's the expense limit for hotels?"],
        ),
        (
            "What is the hotel limit or what is the per diem?",
            ["What is the hotel limit?", "what is the per diem?"],
        ),
        (
            "I work part-time. How many vacation days do I get? And can I carry them over?",
            ["I work part-time. How many vacation days do I get?", "can I carry them over?"],
        ),
        (
            "How many vacation days do I get and also the hotel limit?",
            ["How many vacation days do I get?", "the hotel limit?"],
        ),
        (
            "Wie hoch ist die Kilometerpauschale und außerdem wie beantrage ich Elternzeit?",
            ["Wie hoch ist die Kilometerpauschale?", "wie beantrage ich Elternzeit?"],
        ),
        (
            "Wie hoch ist die Kilometerpauschale sowie wann wird das Gehalt überwiesen?",
            ["Wie hoch ist die Kilometerpauschale?", "wann wird das Gehalt überwiesen?"],
        ),
        (
            "What's the hotel limit, plus who approves travel requests?",
            ["What's the hotel limit?", "who approves travel requests?"],
        ),
        (
            "Welche Hotels sind erlaubt, wie viel darf eine Nacht kosten?",
            ["Welche Hotels sind erlaubt?", "wie viel darf eine Nacht kosten?"],
        ),
        (
            "As a part-timer, how many vacation days do I get and how is overtime paid?",
            ["As a part-timer, how many vacation days do I get?", "how is overtime paid?"],
        ),
        (
            "Bekomme ich Urlaubsgeld und wie hoch ist das Weihnachtsgeld?",
            ["Bekomme ich Urlaubsgeld?", "wie hoch ist das Weihnachtsgeld?"],
        ),
        (
            "How do I request parental leave and who approves the request?",
            ["How do I request parental leave?", "who approves the request?"],
        ),
        (
            "Can I expense taxis and do I need receipts?",
            ["Can I expense taxis?", "do I need receipts?"],
        ),
        (
            "Wie viele Urlaubstage bekomme ich und kann ich sie ins nächste Jahr übertragen?",
            ["Wie viele Urlaubstage bekomme ich?", "kann ich sie ins nächste Jahr übertragen?"],
        ),
        (
            "Please send me the travel policy. Also, what's the hotel limit?",
            ["Please send me the travel policy.", "what's the hotel limit?"],
        ),
        (
            "Was ist die Kilometerpauschale? Gibt es Jobräder?",
            ["Was ist die Kilometerpauschale?", "Gibt es Jobräder?"],
        ),
        (
            "Where is the sick note form? Außerdem: wer zahlt das Jobticket?",
            ["Where is the sick note form?", "wer zahlt das Jobticket?"],
        ),
    ],
)
def test_split_two_topics(text, parts):
    assert split_question(text) == parts


@pytest.mark.parametrize(
    "text",
    [
        "Wie viel Urlaub bekommen Teilzeit- und Vollzeitkräfte?",
        "Welche Regeln gelten für Teilzeit- und welche für Vollzeitkräfte?",
        "Can I work from home and from abroad?",
        "Can part-timers and interns work from home?",
        "Do I get a laptop and a phone?",
        "Where can I find the holiday calendar and the vacation request form?",
        "Can I work from home or do I need to come in?",
        "Is the limit 100 or 150 EUR?",
        "Who do I contact, HR or my manager?",
        "How many vacation days do I get and what about part-timers?",
        "How many vacation days do I get and how do I request them?",
        "Is it allowed and is it paid?",
        "Wie beantrage ich Urlaub und wann muss ich das tun?",
        "Wie lange dauert es, bis die Reisekosten erstattet werden?",
        "Was passiert mit meinem Urlaub, wenn ich kündige?",
        "Ich bin krank, also was muss ich tun?",
        "How much vacation do I get? And for part-timers?",
        "I'm moving to Munich next month and need to update my address. How do I do that?",
        "Can I bring my dog to the office?",
        "My laptop is broken.",
        "Krankmeldung und Arztbesuch während der Arbeitszeit: was gilt?",
    ],
)
def test_single_question_is_not_split(text):
    assert split_question(text) == [text]


def test_split_keeps_at_most_max_parts():
    text = (
        "How do I book flights? How do I book hotels? How do I book trains? "
        "How do I book rental cars? How do I book taxis?"
    )
    parts = split_question(text)
    assert len(parts) == MAX_PARTS == 4
    assert parts[:3] == ["How do I book flights?", "How do I book hotels?", "How do I book trains?"]
    assert parts[3] == "How do I book rental cars? How do I book taxis?"


def test_split_clauses_also_capped():
    parts = split_question(
        "How do I report sick and who pays my salary and what is the sick pay rule "
        "and when do I get paid and where is the form?"
    )
    assert len(parts) == 4
    assert parts[0] == "How do I report sick?"
    assert "where is the form?" in parts[3]


def test_split_parts_have_no_dangling_connectives():
    parts = split_question(
        "Wie viele Urlaubstage habe ich, und wann verfällt der Resturlaub? Und außerdem, wo beantrage ich Sonderurlaub?"
    )
    assert parts == [
        "Wie viele Urlaubstage habe ich?",
        "wann verfällt der Resturlaub?",
        "wo beantrage ich Sonderurlaub?",
    ]


def test_strip_then_split_a_realistic_message():
    message = (
        "Hi team 👋 quick question from the Berlin office: how many vacation days do I get, "
        "and can I carry them over? Also what's the expense limit for hotels? Thanks in advance :pray: Cheers, Bob"
    )
    assert split_question(strip_chatter(message)) == [
        "how many vacation days do I get?",
        "can I carry them over?",
        "what's the expense limit for hotels?",
    ]


# -------------------------------------------------------------- retrieval_text

LONG_CHATTY_FIRST = (
    "Hi team 👋 hope you're all well! Sorry to bother, quick question from the Berlin office: "
    "how many vacation days do I get? Thanks in advance, cheers Bob"
)


@pytest.mark.parametrize(
    ("question", "history", "expected"),
    [
        ("and for part-timers?", [LONG_CHATTY_FIRST], "how many vacation days do I get? and for part-timers?"),
        ("und bei Teilzeit?", ["Wie viele Urlaubstage habe ich?"], "Wie viele Urlaubstage habe ich? und bei Teilzeit?"),
        (
            "what about interns?",
            ["How many vacation days do I get?"],
            "How many vacation days do I get? what about interns?",
        ),
        (
            "what if I'm sick?",
            ["Can I carry vacation days over?"],
            "Can I carry vacation days over? what if I'm sick?",
        ),
        (
            "Can I carry them over?",
            ["How many vacation days do I get?"],
            "How many vacation days do I get? Can I carry them over?",
        ),
        (
            "Danke! Und was ist mit Werkstudenten?",
            ["Hallo zusammen, wie viele Urlaubstage habe ich? LG Jana"],
            "wie viele Urlaubstage habe ich? Und was ist mit Werkstudenten?",
        ),
        # the most recent substantive question, not a later "thanks!"
        (
            "und bei Teilzeit?",
            ["Wie hoch ist die Kilometerpauschale?", "Wie viele Urlaubstage habe ich?", "Danke! 🙏"],
            "Wie viele Urlaubstage habe ich? und bei Teilzeit?",
        ),
        # stand-alone questions are not combined
        ("How do I submit expenses?", ["Wie viele Urlaubstage habe ich?"], "How do I submit expenses?"),
        (
            "Hey, wie hoch ist das Weihnachtsgeld?",
            ["Wie viele Urlaubstage habe ich?"],
            "wie hoch ist das Weihnachtsgeld?",
        ),
        ("and for part-timers?", [], "and for part-timers?"),
        # pure chatter is never glued onto the previous question
        ("thanks!", ["How many vacation days do I get?"], "thanks!"),
    ],
)
def test_retrieval_text(question, history, expected):
    assert retrieval_text(question, history) == expected


def test_retrieval_text_history_chatter_is_removed():
    out = retrieval_text("and for part-timers?", [LONG_CHATTY_FIRST])
    for chatter in ("Hi", "team", "hope", "Sorry", "Berlin", "Thanks", "cheers", "Bob", "👋"):
        assert chatter not in out
    assert out.endswith("and for part-timers?")


def test_retrieval_text_uses_only_the_last_question():
    out = retrieval_text("what about interns?", ["What is the hotel limit?", "How many vacation days do I get?"])
    assert "hotel" not in out
    assert "vacation" in out


def test_retrieval_text_clips_a_long_previous_question():
    essay = "How does the vacation policy work " + "in this very long case " * 60 + "at the very end?"
    out = retrieval_text("und bei Teilzeit?", [essay])
    assert out.startswith("How does the vacation policy work")
    assert out.endswith(" und bei Teilzeit?")
    assert "at the very end" not in out
    assert len(out) <= 300 + len(" und bei Teilzeit?")


def test_retrieval_text_strips_the_current_question():
    assert retrieval_text("Hey <@U1> what about interns? :pray: thx", ["How many vacation days do I get?"]) == (
        "How many vacation days do I get? what about interns?"
    )
