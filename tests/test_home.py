"""The Home tab end to end: signed HTTP into the web process, app_home_opened, and the view
it publishes to the fake Slack, over real Redis and a real index on disk."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from aiohttp.test_utils import TestClient, TestServer
from slack_sdk.models.views import View

from bot.channels import ChannelsConfig
from bot.config import load_settings
from bot.home.data import HomeData, kb_state
from bot.home.view import home_view
from bot.inbound.intake import AppDeps
from bot.inbound.listeners import create_app
from bot.inbound.web import create_web_app
from bot.jobs.queue import JobQueue
from bot.models import Outcome
from bot.store.audit import AuditEntry, AuditTrail
from bot.store.records import Records, ReviewRecord
from tests.fakes.slack_server import FakeSlackServer
from tests.harness import BOT_TOKEN, REVIEW_CHANNEL, SIGNING_SECRET, dm_event, envelope, mention_event, signed_headers

REVIEWER = "UREVIEWER"
_events = iter(range(1, 1_000_000))


@pytest.fixture
def slack():
    with FakeSlackServer(token=BOT_TOKEN) as server:
        yield server


@pytest.fixture
async def web(slack, redis_url, redis, index_dir, monkeypatch, tmp_path):
    """`await web(payload)`: a signed POST /slack/events to the web process; its HTTP status."""
    monkeypatch.chdir(tmp_path)
    for name, value in {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                        "CITEBOT_SLACK_API_URL": slack.url, "CITEBOT_REDIS_URL": redis_url,
                        "CITEBOT_INDEX_DIR": str(index_dir), "CITEBOT_REVIEW_CHANNEL": REVIEW_CHANNEL,
                        "CITEBOT_REVIEWERS": REVIEWER}.items():
        monkeypatch.setenv(name, value)
    queue = JobQueue(redis_url)
    bolt = create_app(AppDeps(settings=load_settings(), queue=queue, records=Records(redis), channels=ChannelsConfig()))
    async with TestClient(TestServer(create_web_app(bolt, signing_secret=SIGNING_SECRET))) as client:

        async def post(payload: dict) -> int:
            body = json.dumps(payload)
            headers = {"Content-Type": "application/json", **signed_headers(body)}
            async with client.post("/slack/events", data=body, headers=headers) as response:
                return response.status

        yield post
    await queue.close()


def home_opened(user: str, tab: str = "home") -> dict:
    n = next(_events)
    event = {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": tab, "event_ts": f"1700002{n:03d}.0001"}
    return envelope(event, f"EvHOME{n:06d}", 1700002000 + n)


async def open_home(web, slack: FakeSlackServer, user: str) -> dict:
    assert await web(home_opened(user)) == 200
    view = slack.home_view(user)
    assert view is not None, "no views.publish for the user"
    # Valid per slack_sdk: the published view parses back into its models and passes their checks.
    fields = {k: view[k] for k in ("type", "blocks", "callback_id", "private_metadata") if k in view}
    View(**fields).validate_json()
    return view


def text_of(view: dict) -> str:
    return json.dumps(view["blocks"], ensure_ascii=False)


async def record(redis, question_id: str, outcome: Outcome, text: str, *, is_dm: bool = False, at: float | None = None):
    entry = AuditEntry(question_id=question_id, outcome=outcome, question=text, is_dm=is_dm,
                       channel="DASKER" if is_dm else "CGENERAL", at=at or time.time())
    await AuditTrail(redis).record(entry)


def question_id(payload: dict) -> str:
    return f"{payload['event']['channel']}:{payload['event']['ts']}"


async def test_an_ordinary_user_sees_how_to_ask_their_own_questions_and_the_kb(web, slack, redis):
    asked = mention_event("How many vacation days?", user="UASKER")
    private = dm_event("Is my <!channel> salary & bonus private?", user="UASKER")
    unsure = mention_event("Can I carry leave over?", user="UASKER")
    waiting = mention_event("Who approves sick leave?", user="UASKER")
    someone_else = mention_event("What is the other person asking?", user="UOTHER")
    for payload in (asked, private, unsure, waiting, someone_else):
        assert await web(payload) == 200
    await record(redis, question_id(asked), Outcome.ANSWERED, "How many vacation days?")
    await record(redis, question_id(private), Outcome.REFUSED, "Is my <!channel> salary & bonus private?", is_dm=True)
    await record(redis, question_id(unsure), Outcome.UNCERTAIN, "Can I carry leave over?")

    view = await open_home(web, slack, "UASKER")
    text = text_of(view)
    assert view["type"] == "home"
    assert "How to ask" in text and "mention @citebot" in text
    # Their own questions, newest first (the DM's ts is the latest), each with its outcome; nobody else's.
    lines = view["blocks"][3]["text"]["text"].splitlines()[1:]
    assert len(lines) == 4
    assert "not in the knowledge base" in lines[0] and "salary &amp; bonus" in lines[0]
    assert "&lt;!channel&gt;" in lines[0] and "<!channel>" not in text  # escaped: no @channel out of a question
    assert "being answered" in lines[1] and "Who approves sick leave?" in lines[1]
    assert "not sure" in lines[2] and "carry leave over" in lines[2]
    assert "✅ answered" in lines[3] and "vacation days" in lines[3]
    assert "other person" not in text
    # The knowledge base's state from the index manifest.
    assert "Knowledge base" in text and "Index gen-000001" in text and "entries" in text and "last indexed" in text
    # An ordinary user's tab has no reviews and no gaps.
    assert "Open reviews" not in text and "gaps" not in text
    [call] = slack.calls("views.publish")
    assert call.body["user_id"] == "UASKER"


async def test_a_reviewer_sees_open_reviews_oldest_first_a_refused_card_and_the_gaps(web, slack, redis):
    now = time.time()
    records = Records(redis)
    await records.save_review(ReviewRecord(question_id="CGENERAL:1.1", channel="CGENERAL", question="Newest: parental leave?",
                                           created_at=now - 5 * 3600, card_channel=REVIEW_CHANNEL, card_ts="1700000100.000200"))
    await records.save_review(ReviewRecord(question_id="CGENERAL:1.2", channel="CGENERAL", question="Oldest: company car rules?",
                                           created_at=now - 3 * 86400, card_error="not_in_channel"))
    await records.save_review(ReviewRecord(question_id="DASKER:1.3", question="my private DM about my divorce",
                                           is_dm=True, channel="DASKER", created_at=now - 2 * 86400,
                                           card_channel=REVIEW_CHANNEL, card_ts="1700000050.000100"))
    for i in range(3):
        await record(redis, f"CGENERAL:2.{i}", Outcome.REFUSED, "How do I book a parking spot?", at=now - 60 - i)
    await record(redis, "CGENERAL:2.9", Outcome.UNCERTAIN, "Where is the canteen menu?", at=now - 30)
    await record(redis, "DASKER:2.8", Outcome.REFUSED, "secret question from a DM", is_dm=True, at=now - 20)

    text = text_of(await open_home(web, slack, REVIEWER))
    assert "Open reviews (3), oldest first" in text
    # Oldest first, each with its age.
    oldest, dm, newest = text.index("company car"), text.index("asked in a direct message"), text.index("parental leave")
    assert oldest < dm < newest
    assert "*3 d old*" in text and "*2 d old*" in text and "*5 h old*" in text
    # A card Slack refused: the reason instead of a link; the others link to their card.
    assert "no card: `not_in_channel`" in text
    assert f"<{slack.root}/archives/{REVIEW_CHANNEL}/p1700000100000200|open the card>" in text
    # A direct message's text stays with its asker.
    assert "divorce" not in text and "secret question" not in text
    # The gaps report's top entries, most asked first.
    assert text.index("3× How do I book a parking spot?") < text.index("1× Where is the canteen menu?")
    assert "Index gen-000001" in text


async def test_card_links_are_permalinks_built_from_the_workspace_address_not_asked_for(web, slack, redis):
    slack.workspace_url = "https://northwind.slack.com/"
    records = Records(redis)
    for i in range(20):
        await records.save_review(ReviewRecord(question_id=f"CGENERAL:4.{i}", channel="CGENERAL", question=f"question {i}",
                                               card_channel=REVIEW_CHANNEL, card_ts=f"1700000{i:03d}.000{i:03d}"))
    text = text_of(await open_home(web, slack, REVIEWER))
    # Slack's permalink form: the workspace's domain, the channel, "p" and the ts without its dot.
    assert f"<https://northwind.slack.com/archives/{REVIEW_CHANNEL}/p1700000007000007|open the card>" in text
    assert text.count("https://northwind.slack.com/archives/") == 20
    text_of(await open_home(web, slack, REVIEWER))
    text_of(await open_home(web, slack, "UASKER"))
    # Three tabs, twenty links: the workspace's address from one auth.test (beside Bolt's own, at
    # the first request, and the access check's, for the team a user belongs to), and no chat.getPermalink;
    # the reviewer's access (which restricted reviews and gaps their tab shows) from one users.info, cached
    # for their second tab; nothing else but the views published.
    assert Counter(c.method for c in slack.calls()) == {"auth.test": 3, "users.info": 1, "views.publish": 3}


def test_without_the_workspace_address_a_card_is_named_by_its_channel():
    review = ReviewRecord(question_id="CGENERAL:5.1", channel="CGENERAL", question="q", card_channel=REVIEW_CHANNEL,
                          card_ts="1700000100.000200")
    text = json.dumps(home_view(HomeData(user=REVIEWER, now=time.time(), is_reviewer=True, reviews=[review])))
    assert f"open the card: <#{REVIEW_CHANNEL}>" in text and "archives" not in text


async def test_a_view_past_100_blocks_is_cut_to_fit(web, slack, redis):
    records = Records(redis)
    now = time.time()
    for i in range(150):
        await records.save_review(ReviewRecord(question_id=f"CGENERAL:3.{i}", channel="CGENERAL", question=f"question number {i}",
                                               created_at=now - 86400 + i, card_channel=REVIEW_CHANNEL,
                                               card_ts=f"1700000{i:03d}.000100"))
    view = await open_home(web, slack, REVIEWER)
    assert len(view["blocks"]) == 100
    text = text_of(view)
    assert "Open reviews (150)" in text and "question number 0\\n" in text
    shown = text.count("question number")
    assert f"…and {150 - shown} more: `citebot review list`" in text
    # What follows the reviews and the KB state are never the part that is cut.
    assert "Top gaps" in text and "Knowledge base" in text


async def test_reviews_without_a_card_bring_their_buttons_and_still_fit_100_blocks(web, slack, redis):
    records = Records(redis)
    now = time.time()
    for i in range(120):
        carded = {"card_channel": REVIEW_CHANNEL, "card_ts": f"1700000{i:03d}.000100"} if i % 3 == 0 else {}
        await records.save_review(ReviewRecord(question_id=f"CGENERAL:6.{i}", channel="CGENERAL", question=f"question number {i}",
                                               draft=f"draft {i} " + "word " * 400, created_at=now - 86400 + i,
                                               card_error=None if carded else "not_in_channel", **carded))
    view = await open_home(web, slack, REVIEWER)
    # Full, but for the one block a review with buttons (two blocks) could not use.
    assert len(view["blocks"]) in (99, 100)
    text = text_of(view)
    shown = text.count("question number")
    buttons = [b for b in view["blocks"] if b["type"] == "actions"]
    assert len(buttons) == text.count("no card: `not_in_channel`") and len(buttons) > 20
    assert len({b["block_id"] for b in buttons}) == len(buttons)  # Slack wants block ids unique in a view
    assert f"…and {120 - shown} more: `citebot review list`" in text
    assert "Top gaps" in text


async def test_the_messages_tab_publishes_nothing(web, slack):
    assert await web(home_opened("UASKER", tab="messages")) == 200
    assert slack.calls("views.publish") == []


def test_the_kb_state_says_why_there_is_nothing_to_answer_from(tmp_path):
    state = kb_state(tmp_path / "no-index")
    assert state.generation is None and "citebot index" in (state.problem or "")
    text = json.dumps(home_view(HomeData(user="U1", now=time.time(), kb=state)))
    assert "citebot index" in text


def test_the_home_tab_speaks_the_workspaces_language():
    import json as _json

    from bot.home.data import HomeData, KbState, MyQuestion
    from bot.home.view import home_view
    from bot.models import Outcome

    data = HomeData(user="U1", now=1_800_000_000.0, is_reviewer=True,
                    questions=[MyQuestion("Wie viele Urlaubstage?", 1_799_999_000.0, str(Outcome.ANSWERED))],
                    kb=KbState(generation="gen-000001", entries=3, chunks=7, built_at="2026-12-01"))
    german = _json.dumps(home_view(data, language="de"), ensure_ascii=False)
    english = _json.dumps(home_view(data, language="en"), ensure_ascii=False)
    assert "Deine letzten Fragen" in german and "✅ beantwortet" in german and "3 Einträge" in german
    assert "Keine offenen Prüfungen." in german and "Your recent questions" not in german
    assert "Your recent questions" in english and "✅ answered" in english
