"""Who may read what, end to end (docs/DESIGN.md, section 3.8): signed Slack requests into a running
`citebot serve` and `citebot worker`, real Redis, a real index on disk, the fake Slack Web API.

Every cell of askers × surfaces × collections: restricted text never reaches anyone outside its audience, and
someone inside it gets the answer. One serve and worker for the module; every surface's questions are sent at
once and their replies collected together, so the whole matrix costs about one question's wait per surface.
"""

from __future__ import annotations

import json
import time

import pytest

from bot.i18n import Key, message
from bot.store.keys import ACCESS_PREFIX
from kb_index import build_index
from tests.fakes.slack_server import BOT_USER_ID
from tests.harness import dm_event, envelope, mention_event, slash_command, start_citebot
from tests.kb_fixtures import write_entry
from tests.polling import wait_until
from tests.redis_fixtures import TEST_REDIS_URL, flush, require_redis

pytestmark = pytest.mark.e2e

# collection -> (question, the fact only its text holds)
KB = {
    "handbook": ("When does the canteen open?", "The canteen opens at noon on every weekday.", "opens at noon"),
    "payroll": ("When are salaries paid each month?", "Salaries are paid on the 25th day of each month.", "25th day"),
    "visitors": ("Where do visitors sign in?", "Visitors sign in at the front desk with a photo ID.", "front desk"),
    "partners": ("How fast are partner support tickets answered?",
                 "Partner support tickets are answered within two business days.", "two business days"),
}
COLLECTION_FILES = {
    "payroll": "audience:\n  groups: [payroll-team]\n  channels: [CPAYROLL]\n",
    "visitors": "guests: true\n",
    "partners": "external: true\n",
}
EVERYTHING = set(KB)
# What each asker may read for themselves (DM, assistant panel, /citebot).
OWN = {
    "UPAYROLL": EVERYTHING,  # a full member in the payroll group
    "UASKER": {"handbook", "visitors", "partners"},  # a full member outside it
    "UGUEST": {"visitors"},  # a multi-channel guest
    "UEXTERNAL": {"partners"},  # a user of another organization
    "UGONE": set(),  # deactivated
    "UOTHERBOT": set(),  # a bot
}
# A channel shared with another organization whose channels.yml policy holds no external collection.
SHARED_INTERNAL = "CSHARED2"
# Help channels (answer: questions): a question there is answered without a mention, by the mention's own job.
HELP_GUESTS, HELP_SHARED = "CHELPGUESTS", "CHELPSHARED"


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    require_redis(TEST_REDIS_URL)
    flush(TEST_REDIS_URL)
    root = tmp_path_factory.mktemp("access")
    kb = root / "kb"
    for name, (_, text, _) in KB.items():
        write_entry(kb, f"{name}/entry.md", {"id": f"{name}-01", "title": name.title(), "stand": "2026-01"},
                    {"Facts": text})
    for name, text in COLLECTION_FILES.items():
        (kb / name / "_collection.yml").write_text(text)
    report = build_index(kb, root / "index")
    assert report.switched and not report.errors
    channels = root / "channels.yml"
    channels.write_text(f"channels:\n  {SHARED_INTERNAL}:\n    collections: [handbook, payroll]\n"
                        f"  {HELP_GUESTS}:\n    answer: questions\n  {HELP_SHARED}:\n    answer: questions\n")
    started = start_citebot(root / "logs", redis_url=TEST_REDIS_URL, index_dir=root / "index",
                            worker_args=("--max-tries", "2", "--backoff-base", "0.2"),
                            CITEBOT_LLM="extractive", CITEBOT_EMBEDDER="none", CITEBOT_CHANNELS_FILE=channels,
                            CITEBOT_REVIEWERS="UREVIEWER,UPAYROLL")
    started.slack.channels[SHARED_INTERNAL] = {"id": SHARED_INTERNAL, "name": "partner-internal", "is_member": True,
                                               "is_ext_shared": True, "is_shared": True,
                                               "members": [BOT_USER_ID, "UPAYROLL", "UEXTERNAL"]}
    started.slack.channels[HELP_GUESTS] = {"id": HELP_GUESTS, "name": "help-visitors", "is_member": True,
                                           "members": [BOT_USER_ID, "UPAYROLL", "UGUEST"]}
    started.slack.channels[HELP_SHARED] = {"id": HELP_SHARED, "name": "help-partners", "is_member": True,
                                           "is_ext_shared": True, "is_shared": True,
                                           "members": [BOT_USER_ID, "UPAYROLL", "UEXTERNAL"]}
    yield started
    started.stop()
    flush(TEST_REDIS_URL)


def facts_in(payload: object) -> set[str]:
    """The collections whose fact a message (text, blocks, anything) shows."""
    text = json.dumps(payload, ensure_ascii=False)
    return {name for name, (_, _, fact) in KB.items() if fact in text}


def collect(fetch, expected: int, what: str) -> list:
    return wait_until(lambda: (found := fetch()) and len(found) >= expected and found, 40, what)


def audit_entries(bot) -> list:
    from bot.store.audit import _parse
    from bot.store.keys import AUDIT_STREAM

    with bot.redis() as client:
        return [_parse(row) for row in client.xrange(AUDIT_STREAM)]


def settle(bot) -> None:
    wait_until(bot.queue_idle, 40, "the queue to empty")
    time.sleep(0.3)


def assert_cells(replies: dict[tuple[str, str], object], allowed: dict[str, set[str]]) -> None:
    """Each (asker, collection) cell: its fact in the reply iff allowed; no other restricted fact anywhere."""
    wrong = {}
    for (asker, name), reply in replies.items():
        shown = facts_in(reply)
        leaked = shown - allowed[asker]
        missing = {name} - shown if name in allowed[asker] else set()
        if leaked or missing:
            wrong[(asker, name)] = {"leaked": sorted(leaked), "missing": sorted(missing)}
    assert not wrong, wrong


# ---------------------------------------------------------------- what only the asker sees


def test_a_dm_answers_from_what_the_asker_may_read(bot):
    for asker in OWN:
        for question, _, _ in KB.values():
            assert bot.send_event(dm_event(question, channel=f"D{asker[1:]}", user=asker)).status_code == 200
    settle(bot)
    # A DM's replies are not threaded to their questions: each asker's cells are judged on all of them together.
    replies = {}
    for asker in OWN:
        posted = collect(lambda a=asker: bot.slack.messages(f"D{a[1:]}"), len(KB), f"the DM replies to {asker}")
        assert len(posted) == len(KB), asker  # one reply per question, also to those who may read nothing
        replies.update({(asker, name): posted for name in KB})
    assert_cells(replies, OWN)


def test_a_slash_command_answers_the_asker_from_their_own_access_even_in_a_guest_channel(bot):
    urls = {}
    for asker in OWN:
        for name, (question, _, _) in KB.items():
            url = bot.slack.response_url()
            urls[(asker, name)] = url
            assert bot.send_command(slash_command(question, response_url=url, channel="CGUESTS", user=asker)).status_code == 200
    settle(bot)

    def sent(url: str) -> list[dict]:
        path = "/" + url.split("/", 3)[3]
        return [c.body for c in bot.slack.calls("response_url") if c.path == path]

    replies = {cell: collect(lambda u=url: sent(u), 1, f"the /citebot reply for {cell}") for cell, url in urls.items()}
    assert_cells(replies, OWN)


def test_the_assistant_panel_answers_from_what_the_asker_may_read(bot):
    from tests.test_assistant_panel import panel_message, thread_event

    threads = {}
    for asker in ("UPAYROLL", "UASKER", "UGUEST"):
        for name, (question, _, _) in KB.items():
            thread = f"1699{len(threads):06d}.000400"
            started = thread_event("started", thread_ts=thread, beside="CGENERAL", user=asker)
            assert bot.send_event(started).status_code == 200
            asked = panel_message(question, thread_ts=thread, user=asker)
            assert bot.send_event(asked).status_code == 200
            threads[(asker, name)] = thread
    settle(bot)
    # Each thread: the greeting (posted by the web process before the question was sent), then the reply.
    replies = {cell: collect(lambda t=thread: bot.replies("DASKER", t), 2, f"the panel reply for {cell}")[1:]
               for cell, thread in threads.items()}
    assert_cells(replies, OWN)
    # The suggested prompts name only collections the user may read.
    for (asker, _), thread in threads.items():
        prompts = bot.slack.assistant_thread("DASKER", thread).get("prompts") or []
        named = {name for name in KB for p in prompts if f"about {name}?" in p["message"]}
        assert named <= OWN[asker], (asker, prompts)


# ---------------------------------------------------------------- posted in a channel


@pytest.mark.parametrize(
    ("channel", "asker", "allowed"),
    [
        ("CGENERAL", "UASKER", {"handbook", "visitors", "partners"}),  # a public channel
        ("CGENERAL", "UPAYROLL", {"handbook", "visitors", "partners"}),  # the asker reads more than the channel
        ("CPAYROLL", "UPAYROLL", EVERYTHING),  # the collection's own channel
        ("CGUESTS", "UPAYROLL", {"visitors"}),  # a guest reads along
        ("CSHARED", "UPAYROLL", {"partners"}),  # Slack Connect
    ],
)
def test_a_channel_gets_only_what_every_member_may_read(bot, channel, asker, allowed):
    sent = {}
    for name, (question, _, _) in KB.items():
        event = mention_event(question, channel=channel, user=asker)
        sent[(asker, name)] = event["event"]["ts"]
        assert bot.send_event(event).status_code == 200
    settle(bot)
    replies = {cell: collect(lambda t=ts: bot.replies(channel, t), 1, f"the reply in {channel} for {cell}")
               for cell, ts in sent.items()}
    assert_cells(replies, {asker: allowed})
    assert facts_in([m for m in bot.slack.messages(channel)]) <= allowed
    offers = [c.body for c in bot.slack.calls("chat.postEphemeral")
              if c.body.get("channel") == channel and c.body.get("user") == asker]
    if OWN[asker] - allowed:
        # The asker may read more: what the channel could not be told is answered to them alone, in the thread.
        assert facts_in(offers) == OWN[asker] - allowed
        assert all(o["text"].startswith(message(Key.MORE_IN_PRIVATE, "en")) and o["thread_ts"] for o in offers)
        # Each has its own audit entry: the asker alone saw it, from what they alone may read.
        private = [e for e in audit_entries(bot) if e.private_to == asker and e.channel == channel]
        assert private and all(e.question_id.endswith("#private") and set(e.allowed or ()) <= OWN[asker]
                               and set(e.allowed or ()) - allowed for e in private)
        assert {c.collection for e in private for c in e.cited} == OWN[asker] - allowed
    else:
        assert offers == []


def test_a_shared_channel_without_an_external_collection_gets_no_answer_and_the_asker_is_told_once(bot):
    asked = [mention_event(KB[name][0], channel=SHARED_INTERNAL, user="UPAYROLL") for name in ("handbook", "payroll")]
    for event in asked:
        assert bot.send_event(event).status_code == 200
    settle(bot)
    assert bot.slack.messages(SHARED_INTERNAL) == []
    told = [c.body for c in bot.slack.calls("chat.postEphemeral") if c.body.get("channel") == SHARED_INTERNAL]
    assert len(told) == 1 and told[0]["user"] == "UPAYROLL"
    assert told[0]["text"] == message(Key.EXTERNAL_CHANNEL, "en")


# ---------------------------------------------------------------- changes and errors


def send_access_event(bot, event: dict) -> None:
    n = int(time.time() * 1000) % 10_000_000
    assert bot.send_event(envelope(event, f"EvX{n:07d}{event['type'][:3]}", int(time.time()))).status_code == 200


def ask_in_dm(bot, asker: str, name: str) -> dict:
    event = dm_event(KB[name][0], channel=f"DX{asker[1:]}", user=asker)
    before = len(bot.slack.messages(f"DX{asker[1:]}"))
    bot.send_event(event)
    [*_, reply] = collect(lambda: bot.slack.messages(f"DX{asker[1:]}"), before + 1, f"a DM reply to {asker}")
    return reply


def test_someone_removed_from_the_group_loses_access_after_the_event_and_regains_it(bot):
    assert facts_in(ask_in_dm(bot, "UPAYROLL", "payroll")) == {"payroll"}  # cached from here on
    bot.slack.usergroups["S0PAYROLL"]["users"] = []
    bot.slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID]
    send_access_event(bot, {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL", "team_id": "T0FAKE",
                            "removed_users": ["UPAYROLL"], "event_ts": f"{time.time():.6f}"})
    send_access_event(bot, {"type": "member_left_channel", "user": "UPAYROLL", "channel": "CPAYROLL",
                            "channel_type": "G", "team": "T0FAKE", "event_ts": f"{time.time():.6f}"})
    try:
        assert "payroll" not in facts_in(ask_in_dm(bot, "UPAYROLL", "payroll"))
    finally:
        bot.slack.usergroups["S0PAYROLL"]["users"] = ["UPAYROLL"]
        bot.slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID, "UPAYROLL"]
        send_access_event(bot, {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL", "team_id": "T0FAKE",
                                "added_users": ["UPAYROLL"], "event_ts": f"{time.time():.6f}"})
    assert facts_in(ask_in_dm(bot, "UPAYROLL", "payroll")) == {"payroll"}


def test_a_deactivated_user_reads_nothing_after_user_change(bot):
    bot.slack.users["UFORMER"] = {"team_id": bot.slack.team_id}
    assert facts_in(ask_in_dm(bot, "UFORMER", "handbook")) == {"handbook"}
    bot.slack.users["UFORMER"] = {"team_id": bot.slack.team_id, "deleted": True}
    send_access_event(bot, {"type": "user_change", "user": {"id": "UFORMER", "deleted": True},
                            "event_ts": f"{time.time():.6f}"})
    assert facts_in(ask_in_dm(bot, "UFORMER", "handbook")) == set()


@pytest.mark.parametrize("method", ["users.info", "usergroups.users.list", "conversations.members"])
def test_a_slack_error_never_widens_access_and_the_asker_is_told_after_the_last_try(bot, method):
    # Nothing cached: every try asks Slack, and Slack refuses each (2 tries: the worker's --max-tries).
    bot.redis().delete(*bot.redis().keys(f"{ACCESS_PREFIX}*") or ["-"])
    bot.slack.fail(error="missing_scope", method=method, times=2)
    event = mention_event(KB["payroll"][0], channel="CPAYROLL", user="UPAYROLL")
    bot.send_event(event)
    [reply] = collect(lambda: bot.replies("CPAYROLL", event["event"]["ts"]), 1, "the reply after the last try")
    assert reply["text"] == message(Key.ACCESS_UNCHECKED, "en") and facts_in(reply) == set()
    assert len([c for c in bot.slack.calls(method) if c.error == "missing_scope"]) >= 2


# ---------------------------------------------------------------- everything else that shows KB text


def payroll_answer_in_its_channel(bot) -> dict:
    event = mention_event(KB["payroll"][0], channel="CPAYROLL", user="UPAYROLL")
    bot.send_event(event)
    [posted] = collect(lambda: bot.replies("CPAYROLL", event["event"]["ts"]), 1, "the payroll answer")
    assert facts_in(posted) == {"payroll"}
    return posted


def test_the_sources_button_is_checked_again_for_whoever_clicks(bot):
    from tests.citebot_fixtures import button_value
    from tests.harness import block_action

    value = button_value(payroll_answer_in_its_channel(bot), "citebot_sources")
    opened = len(bot.slack.calls("views.open"))
    # Someone outside the payroll audience (a later member of the channel, a forwarded message): no passages.
    bot.send_action(block_action("citebot_sources", value, channel="CPAYROLL", user="UASKER"))
    bot.send_action(block_action("citebot_sources", value, channel="CPAYROLL", user="UGUEST"))
    bot.send_action(block_action("citebot_sources", value, channel="CPAYROLL", user="UPAYROLL"))
    *_, outsider, guest, insider = bot.slack.wait_for("views.open", opened + 3)
    for refused in (outsider, guest):
        assert facts_in(refused.body["view"]) == set()
        assert message(Key.SOURCES_RESTRICTED, "en") in json.dumps(refused.body["view"])
    assert facts_in(insider.body["view"]) == {"payroll"}


def test_a_review_card_shows_a_draft_only_where_every_review_channel_member_may_read_it(bot):
    from tests.citebot_fixtures import button_value
    from tests.harness import REVIEW_CHANNEL, block_action, view_submission
    from tests.test_home_triage import home_action

    def flag(posted: dict, channel: str, user: str) -> dict:
        cards = len(bot.slack.messages(REVIEW_CHANNEL))
        opened = len(bot.slack.calls("views.open"))
        bot.send_action(block_action("citebot_feedback_down", button_value(posted, "citebot_feedback_down"),
                                     channel=channel, user=user))
        *_, modal = bot.slack.wait_for("views.open", opened + 1)
        reason = {"citebot_feedback_reason": {"reason": {"type": "plain_text_input", "value": "Out of date."}}}
        bot.send_action(view_submission(modal.body["view"], user=user, values=reason))
        return collect(lambda: bot.slack.messages(REVIEW_CHANNEL), cards + 1, "the review card")[-1]

    # The review channel's members (UASKER, UREVIEWER) may not read payroll: the card hides it.
    restricted = flag(payroll_answer_in_its_channel(bot), "CPAYROLL", "UPAYROLL")
    assert facts_in(restricted) == set()
    assert message(Key.REVIEW_RESTRICTED, "en")[:40] in json.dumps(restricted["blocks"])
    assert "citebot_review_approve" not in json.dumps(restricted["blocks"])
    # The Home tab: the reviewer who may read payroll gets the draft and the buttons; the other one does not.
    for reviewer, sees in (("UPAYROLL", {"payroll"}), ("UREVIEWER", set())):
        published = len(bot.slack.calls("views.publish"))
        send_access_event(bot, {"type": "app_home_opened", "user": reviewer, "channel": f"D{reviewer}", "tab": "home",
                                "event_ts": f"{time.time():.6f}"})
        bot.slack.wait_for("views.publish", published + 1)
        view = bot.slack.home_view(reviewer)
        assert facts_in(view) == sees, reviewer
        assert ("citebot_review_approve" in json.dumps(view)) == bool(sees)
    # Approved from there once a guest has joined #payroll: not posted, and the reviewer hears why.
    review_id = next(el["value"] for b in bot.slack.home_view("UPAYROLL")["blocks"] if b["type"] == "actions"
                     for el in b["elements"] if el["action_id"] == "citebot_review_approve")
    posted_before = len(bot.slack.messages("CPAYROLL"))
    bot.slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID, "UPAYROLL", "UGUEST"]
    send_access_event(bot, {"type": "member_joined_channel", "user": "UGUEST", "channel": "CPAYROLL",
                            "channel_type": "G", "team": "T0FAKE", "event_ts": f"{time.time():.6f}"})
    try:
        bot.send_action(home_action(bot.slack.home_view("UPAYROLL"), "citebot_review_approve", review_id, user="UPAYROLL"))
        told = wait_until(lambda: [c.body for c in bot.slack.calls("chat.postEphemeral")
                                   if c.body.get("user") == "UPAYROLL" and "may read its sources" in c.body["text"]],
                          20, "the reviewer told the approval was not posted")
        assert facts_in(told) == set()
        settle(bot)
        assert len(bot.slack.messages("CPAYROLL")) == posted_before
    finally:
        bot.slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID, "UPAYROLL"]
        send_access_event(bot, {"type": "member_left_channel", "user": "UGUEST", "channel": "CPAYROLL",
                                "channel_type": "G", "team": "T0FAKE", "event_ts": f"{time.time():.6f}"})
    # The guest gone again, the same approval is posted into the asker's thread.
    bot.send_action(home_action(bot.slack.home_view("UPAYROLL"), "citebot_review_approve", review_id, user="UPAYROLL"))
    wait_until(lambda: len(bot.slack.messages("CPAYROLL")) > posted_before, 20, "the approved answer in #payroll")
    # A handbook answer's card shows its draft and sources as before.
    event = mention_event(KB["handbook"][0], channel="CGENERAL", user="UASKER")
    bot.send_event(event)
    [posted] = collect(lambda: bot.replies("CGENERAL", event["event"]["ts"]), 1, "the handbook answer")
    open_card = flag(posted, "CGENERAL", "UASKER")
    assert facts_in(open_card) == {"handbook"} and "citebot_review_approve" in json.dumps(open_card["blocks"])


def test_post_in_channel_shares_an_answer_only_where_everyone_may_read_its_sources(bot):
    from tests.citebot_fixtures import button_value
    from tests.harness import block_action

    def ask_and_share(channel: str, name: str, clicks: int = 1) -> list[dict]:
        url = bot.slack.response_url()
        bot.send_command(slash_command(KB[name][0], response_url=url, channel=channel, user="UPAYROLL"))
        path = "/" + url.split("/", 3)[3]
        [reply] = collect(lambda: [c.body for c in bot.slack.calls("response_url") if c.path == path], 1, "reply")
        assert facts_in(reply) == {name}
        action = block_action("citebot_post_in_channel", button_value(reply, "citebot_post_in_channel"),
                              channel=channel, user="UPAYROLL")
        action["response_url"] = url
        for click in range(1, clicks + 1):
            bot.send_action(action)
            outcome = collect(lambda: [c.body for c in bot.slack.calls("response_url") if c.path == path],
                              1 + click, "the outcome")
        return outcome

    # Answered to the asker alone from payroll: #general may not read payroll, so it is not posted there. A
    # refused click does not keep the asker's next one from being looked at again (and refused again).
    *_, first, told = ask_and_share("CGENERAL", "payroll", clicks=2)
    for refusal in (first, told):
        assert "not everyone in the channel may read its sources" in refusal["text"] and facts_in(refusal) == set()
        assert "Slack said" not in refusal["text"]
    settle(bot)
    assert "payroll" not in facts_in(bot.slack.messages("CGENERAL"))
    # In the payroll channel everyone may: it is posted there.
    ask_and_share("CPAYROLL", "payroll")
    wait_until(lambda: any(m.get("thread_ts") is None and facts_in(m) == {"payroll"}
                           for m in bot.slack.messages("CPAYROLL")), 20, "the shared answer in #payroll")


def test_the_gaps_on_a_reviewers_home_tab_leave_out_questions_asked_where_more_could_be_read(bot):
    asked = {"CPAYROLL": ("UPAYROLL", "Which parking garage takes motorbikes overnight?"),
             "CGENERAL": ("UASKER", "Which bakery delivers croissants on Sundays?")}
    # Each asked four times: the most asked gaps come first, ahead of the refusals of the tests before.
    for channel, (user, text) in asked.items():
        for _ in range(4):
            event = mention_event(text, channel=channel, user=user)
            bot.send_event(event)
            collect(lambda c=channel, t=event["event"]["ts"]: bot.replies(c, t), 1, f"the refusal in {channel}")
    settle(bot)
    for reviewer, sees in (("UPAYROLL", {"CPAYROLL", "CGENERAL"}), ("UREVIEWER", {"CGENERAL"})):
        published = len(bot.slack.calls("views.publish"))
        send_access_event(bot, {"type": "app_home_opened", "user": reviewer, "channel": f"D{reviewer}", "tab": "home",
                                "event_ts": f"{time.time():.6f}"})
        bot.slack.wait_for("views.publish", published + 1)
        view = json.dumps(bot.slack.home_view(reviewer))
        assert {c for c, (_, text) in asked.items() if text in view} == sees, reviewer


# ---------------------------------------------------------------- after the gaps test (their refusals would rank above its)


@pytest.mark.parametrize(
    ("channel", "allowed"),
    [
        (HELP_GUESTS, {"visitors"}),  # a guest reads along: never a guests:false collection
        (HELP_SHARED, {"partners"}),  # Slack Connect: no internal answer
    ],
)
def test_a_help_channel_auto_answers_only_from_what_every_member_may_read(bot, channel, allowed):
    sent = {}
    for n, (name, (question, _, _)) in enumerate(KB.items()):
        ts = f"{int(time.time())}.{n:06d}"
        event = {"type": "message", "channel_type": "channel", "channel": channel, "user": "UPAYROLL",
                 "text": question, "ts": ts, "event_ts": ts}
        sent[("UPAYROLL", name)] = ts
        assert bot.send_event(envelope(event, f"EvHelp{channel}{n}", int(time.time()))).status_code == 200
    settle(bot)
    # Only the question whose collection the channel may read is answered there, and from that collection.
    assert facts_in(bot.slack.messages(channel)) == allowed
    for (_, name), ts in sent.items():
        assert facts_in(bot.replies(channel, ts)) == ({name} & allowed), name
    # What the channel could not be told reaches the asker alone.
    private = [c.body for c in bot.slack.calls("chat.postEphemeral") if c.body.get("channel") == channel]
    assert all(p["user"] == "UPAYROLL" for p in private)


def test_a_good_channel_answer_with_a_better_one_in_the_askers_own_access_offers_answer_privately(bot):
    from tests.citebot_fixtures import button_value
    from tests.harness import block_action

    question = "When are salaries paid each month, and when does the canteen open?"
    event = mention_event(question, channel="CGENERAL", user="UPAYROLL")
    told = len(bot.slack.calls("chat.postEphemeral"))
    assert bot.send_event(event).status_code == 200
    settle(bot)
    [reply] = collect(lambda: bot.replies("CGENERAL", event["event"]["ts"]), 1, "the channel's answer")
    assert facts_in(reply) == {"handbook"}  # a good answer, from what the channel may read
    [note] = [c.body for c in bot.slack.calls("chat.postEphemeral")[told:] if c.body.get("channel") == "CGENERAL"]
    assert note["user"] == "UPAYROLL" and note["thread_ts"] and facts_in(note) == set()
    assert message(Key.BETTER_IN_PRIVATE, "en")[:30] in note["text"]
    value = button_value(note, "citebot_answer_privately")
    # Someone else's click (a forwarded note) asks nothing; the asker's is answered to them alone.
    url = bot.slack.response_url()
    path = "/" + url.split("/", 3)[3]
    for user in ("UASKER", "UPAYROLL"):
        action = block_action("citebot_answer_privately", value, channel="CGENERAL", user=user)
        action["response_url"] = url
        bot.send_action(action)
        settle(bot)
        if user == "UASKER":
            assert [c for c in bot.slack.calls("response_url") if c.path == path] == []
    [private] = collect(lambda: [c.body for c in bot.slack.calls("response_url") if c.path == path], 1, "the answer")
    assert "payroll" in facts_in(private)
    assert facts_in(bot.slack.messages("CGENERAL")) <= {"handbook", "visitors", "partners"}


def test_an_approval_for_a_dm_is_checked_against_the_askers_access_when_the_reviewer_decides(bot):
    from tests.citebot_fixtures import button_value
    from tests.harness import REVIEW_CHANNEL, block_action, view_submission
    from tests.test_home_triage import home_action

    dm = "DXPAYROLL"
    reply = ask_in_dm(bot, "UPAYROLL", "payroll")
    assert facts_in(reply) == {"payroll"}
    cards, opened = len(bot.slack.messages(REVIEW_CHANNEL)), len(bot.slack.calls("views.open"))
    bot.send_action(block_action("citebot_feedback_down", button_value(reply, "citebot_feedback_down"),
                                 channel=dm, user="UPAYROLL"))
    *_, modal = bot.slack.wait_for("views.open", opened + 1)
    reason = {"citebot_feedback_reason": {"reason": {"type": "plain_text_input", "value": "Out of date."}}}
    bot.send_action(view_submission(modal.body["view"], user="UPAYROLL", values=reason))
    card = collect(lambda: bot.slack.messages(REVIEW_CHANNEL), cards + 1, "the review card")[-1]
    assert "UPAYROLL" not in json.dumps(card)  # a DM's asker is never named on the card
    # The asker leaves payroll; UREVIEWER joins it and decides on the Home tab.
    bot.slack.usergroups["S0PAYROLL"]["users"] = ["UREVIEWER"]
    bot.slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID]
    send_access_event(bot, {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL", "team_id": "T0FAKE",
                            "removed_users": ["UPAYROLL"], "added_users": ["UREVIEWER"],
                            "event_ts": f"{time.time():.6f}"})
    send_access_event(bot, {"type": "member_left_channel", "user": "UPAYROLL", "channel": "CPAYROLL",
                            "channel_type": "G", "team": "T0FAKE", "event_ts": f"{time.time():.6f}"})
    try:
        published = len(bot.slack.calls("views.publish"))
        send_access_event(bot, {"type": "app_home_opened", "user": "UREVIEWER", "channel": "DUREVIEWER",
                                "tab": "home", "event_ts": f"{time.time():.6f}"})
        bot.slack.wait_for("views.publish", published + 1)
        view = bot.slack.home_view("UREVIEWER")
        review_id = next(el["value"] for b in view["blocks"] if b["type"] == "actions" for el in b["elements"]
                         if el["action_id"] == "citebot_review_approve" and facts_in(b) == set())
        before = len(bot.slack.messages(dm))
        told_before = len(bot.slack.calls("chat.postEphemeral"))
        bot.send_action(home_action(view, "citebot_review_approve", review_id, user="UREVIEWER"))
        wait_until(lambda: any(message(Key.NOT_OPEN_TO_ASKER, "en") in json.dumps(v)
                               for v in [bot.slack.home_view("UREVIEWER"),
                                         *[c.body for c in bot.slack.calls("chat.postEphemeral")[told_before:]]]),
                   20, "the reviewer told the asker may not read its sources now")
        settle(bot)
        assert len(bot.slack.messages(dm)) == before  # nothing posted to the asker
        # A written answer (it cites nothing, but was written from the restricted draft): the same.
        opened = len(bot.slack.calls("views.open"))
        bot.send_action(home_action(bot.slack.home_view("UREVIEWER"), "citebot_review_answer", review_id,
                                    user="UREVIEWER"))
        *_, modal = bot.slack.wait_for("views.open", opened + 1)
        written = {"citebot_review_answer": {"answer": {"type": "plain_text_input", "value": "On the 25th."}}}
        bot.send_action(view_submission(modal.body["view"], user="UREVIEWER", values=written))
        settle(bot)
        assert len(bot.slack.messages(dm)) == before
        assert not any(c.body.get("user") == "UPAYROLL" for c in bot.slack.calls("chat.postEphemeral")[told_before:])
    finally:
        bot.slack.usergroups["S0PAYROLL"]["users"] = ["UPAYROLL"]
        bot.slack.channels["CPAYROLL"]["members"] = [BOT_USER_ID, "UPAYROLL"]
        send_access_event(bot, {"type": "subteam_members_changed", "subteam_id": "S0PAYROLL", "team_id": "T0FAKE",
                                "added_users": ["UPAYROLL"], "removed_users": ["UREVIEWER"],
                                "event_ts": f"{time.time():.6f}"})
        send_access_event(bot, {"type": "member_joined_channel", "user": "UPAYROLL", "channel": "CPAYROLL",
                                "channel_type": "G", "team": "T0FAKE", "event_ts": f"{time.time():.6f}"})


def test_approve_and_dismiss_on_a_restricted_review_check_whoever_clicks(bot):
    from tests.citebot_fixtures import button_value
    from tests.harness import REVIEW_CHANNEL, block_action, view_submission
    from tests.test_home_triage import home_action

    posted = payroll_answer_in_its_channel(bot)
    cards, opened = len(bot.slack.messages(REVIEW_CHANNEL)), len(bot.slack.calls("views.open"))
    bot.send_action(block_action("citebot_feedback_down", button_value(posted, "citebot_feedback_down"),
                                 channel="CPAYROLL", user="UPAYROLL"))
    *_, modal = bot.slack.wait_for("views.open", opened + 1)
    reason = {"citebot_feedback_reason": {"reason": {"type": "plain_text_input", "value": "Stale."}}}
    bot.send_action(view_submission(modal.body["view"], user="UPAYROLL", values=reason))
    card = collect(lambda: bot.slack.messages(REVIEW_CHANNEL), cards + 1, "the review card")[-1]
    published = len(bot.slack.calls("views.publish"))
    send_access_event(bot, {"type": "app_home_opened", "user": "UPAYROLL", "channel": "DUPAYROLL", "tab": "home",
                            "event_ts": f"{time.time():.6f}"})
    bot.slack.wait_for("views.publish", published + 1)
    view = bot.slack.home_view("UPAYROLL")
    review_id = [el["value"] for b in view["blocks"] if b["type"] == "actions" for el in b["elements"]
                 if el["action_id"] == "citebot_review_dismiss"][-1]
    in_channel = len(bot.slack.messages("CPAYROLL"))
    updates = len(bot.slack.calls("chat.update"))
    # A listed reviewer who may not read payroll (a stale tab, a forged click): neither decides it.
    for action in ("citebot_review_approve", "citebot_review_dismiss"):
        bot.send_action(home_action(view, action, review_id, user="UREVIEWER"))
    settle(bot)
    assert len(bot.slack.messages("CPAYROLL")) == in_channel
    assert not [c for c in bot.slack.calls("chat.update")[updates:] if c.body.get("ts") == card["ts"]]
    # The reviewer who may read it does.
    bot.send_action(home_action(view, "citebot_review_dismiss", review_id, user="UPAYROLL"))
    wait_until(lambda: [c for c in bot.slack.calls("chat.update")[updates:] if c.body.get("ts") == card["ts"]],
               20, "the restricted card marked decided")


def test_a_channel_shared_with_another_organization_lists_the_restricted_answers_already_in_it(bot, monkeypatch,
                                                                                               capsys):
    from bot.cli import main

    soon = "CSOONSHARED"
    bot.slack.channels[soon] = {"id": soon, "name": "payroll-projects", "is_member": True,
                                "members": [BOT_USER_ID, "UPAYROLL"]}
    for name in ("payroll", "partners"):  # payroll is restricted, partners is external: true
        event = mention_event(KB[name][0], channel=soon, user="UPAYROLL")
        bot.send_event(event)
        [reply] = collect(lambda e=event: bot.replies(soon, e["event"]["ts"]), 1, f"the {name} answer")
        assert facts_in(reply) == {name}
    settle(bot)
    [payroll_ts] = [m["ts"] for m in bot.slack.messages(soon) if facts_in(m) == {"payroll"}]
    bot.slack.channels[soon].update(is_ext_shared=True, is_shared=True)
    send_access_event(bot, {"type": "channel_shared", "channel": soon, "connected_team_id": "T0OTHER1",
                            "event_ts": f"{time.time():.6f}"})
    for name, value in bot.env.items():
        if name.startswith(("CITEBOT_", "SLACK_")):
            monkeypatch.setenv(name, value)

    def listed() -> list | None:
        assert main(["audit", "shared", "--json"]) == 0
        found = [c for c in json.loads(capsys.readouterr().out) if c["channel"] == soon]
        return found or None

    [shared] = wait_until(listed, 20, "the shared channel in `citebot audit shared`")
    # The payroll answer, and only it, is listed: the partners one may be read there.
    assert [(a["ts"], a["collections"]) for a in shared["answers"]] == [(payroll_ts, ["payroll"])]
    assert main(["doctor", "--json"]) in (0, 1)
    findings = json.loads(capsys.readouterr().out)["findings"]
    [warned] = [f for f in findings if f.get("channel") == soon]
    assert warned["status"] == "warn" and "1 answer(s)" in warned["detail"] and "delete them" in warned["detail"]
    # Unshared again: its history is nobody else's, and the list forgets it.
    send_access_event(bot, {"type": "channel_unshared", "channel": soon, "previously_connected_team_id": "T0OTHER1",
                            "event_ts": f"{time.time():.6f}"})
    wait_until(lambda: listed() is None, 20, "the channel gone from `citebot audit shared`")
