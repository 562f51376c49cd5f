"""A reviewer's written answer saved as a draft KB entry: the modal's box, the
worker's file in the drafts folder, and an index of the KB that lists the
folder instead of reading it. Signed HTTP into a running citebot, real Redis,
a real folder."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from bot.config import ConfigError, load_settings
from bot.jobs.job import Job, ReviewDecisionPayload
from bot.jobs.queue import JobQueue
from bot.store.records import Records, ReviewStatus
from kb_index.entries import parse_entry
from kb_index.files import DRAFTS_FOLDER, DRAFTS_SKIPPED
from tests.citebot_fixtures import answers_in, button_value
from tests.harness import REVIEW_CHANNEL, block_action, mention_event, view_submission
from tests.kb_fixtures import write_mini_kb
from tests.polling import wait_until, wait_until_async

pytestmark = pytest.mark.e2e

QUESTION = "How many days of annual leave do I get?"
WRITTEN = "Ask HR: it depends on your contract."


def open_modal(bot) -> tuple[dict, dict]:
    hallucinated = "You get 45 days of leave [hb-pto-01]."
    bot.llm.script(hallucinated, hallucinated, hallucinated, hallucinated)
    event = mention_event(QUESTION)
    bot.send_event(event)
    [card] = answers_in(bot, REVIEW_CHANNEL, None)
    bot.send_action(block_action("citebot_review_answer", button_value(card, "citebot_review_answer"),
                                 channel=REVIEW_CHANNEL))
    [opened] = bot.slack.wait_for("views.open", 1)
    return event, opened.body["view"]


def submission(view: dict, *, ticked: bool) -> dict:
    values = {"citebot_review_answer": {"answer": {"type": "plain_text_input", "value": WRITTEN}},
              "citebot_review_save_draft": {"save_draft": {
                  "type": "checkboxes",
                  "selected_options": [{"text": {"type": "plain_text", "text": "x"}, "value": "draft"}] if ticked else [],
              }}}
    return view_submission(view, user="UREVIEWER", values=values)


def index_kb(kb: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           "CITEBOT_KB_DIR": str(kb), "CITEBOT_INDEX_DIR": str(tmp_path / "index2")}
    return subprocess.run([sys.executable, "-m", "bot.cli", "index"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_a_ticked_box_saves_one_draft_that_the_index_lists_but_does_not_read(citebot, tmp_path):
    kb = write_mini_kb(tmp_path / "kb")
    bot = citebot(CITEBOT_KB_DIR=kb)
    event, view = open_modal(bot)
    assert any(b.get("block_id") == "citebot_review_save_draft" for b in view["blocks"])
    assert bot.send_action(submission(view, ticked=True)).status_code == 200
    answers_in(bot, "CGENERAL", event["event"]["ts"], count=2)
    drafts = kb / DRAFTS_FOLDER
    [draft] = wait_until(lambda: list(drafts.glob("*.md")), 10, "the draft file")
    assert draft.name.startswith("how-many-days-of-annual-leave-do-i-get-")
    entry = parse_entry(draft.read_bytes(), f"{DRAFTS_FOLDER}/{draft.name}", "en")
    assert (entry.id, entry.title, entry.language) == (draft.stem, QUESTION, "en")
    assert entry.stand == dt.date.today().isoformat()
    assert [s.text.strip() for s in entry.sections] == [WRITTEN]
    assert "draft: true" in draft.read_text()
    assert not list(drafts.glob(".*"))  # no partial file left behind

    done = index_kb(kb, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{kb / DRAFTS_FOLDER}: not indexed: {DRAFTS_SKIPPED}" in done.stderr
    manifest = json.loads(next((tmp_path / "index2").rglob("manifest.json")).read_text())
    assert draft.stem not in manifest["entries"]


def test_without_the_box_no_file(citebot, tmp_path):
    kb = write_mini_kb(tmp_path / "kb")
    bot = citebot(CITEBOT_KB_DIR=kb)
    event, view = open_modal(bot)
    bot.send_action(submission(view, ticked=False))
    answers_in(bot, "CGENERAL", event["event"]["ts"], count=2)
    wait_until(lambda: len(bot.slack.calls("chat.update")) >= 1, 10, "the card updated")
    assert not (kb / DRAFTS_FOLDER).exists()


def test_a_redelivered_decision_writes_the_draft_once(citebot, tmp_path):
    drafts = tmp_path / "drafts"
    bot = citebot(CITEBOT_DRAFTS_DIR=drafts)
    event, view = open_modal(bot)
    bot.send_action(submission(view, ticked=True))
    answers_in(bot, "CGENERAL", event["event"]["ts"], count=2)
    [draft] = wait_until(lambda: list(drafts.glob("*.md")), 10, "the draft file")
    first = draft.read_text()
    draft.write_text(first + "edited by someone\n")  # a file there is never overwritten either
    # The same job again, as a redelivery brings it after a worker died between
    # writing the draft and saving the decision: the review still open.
    asyncio.run(redeliver(bot.env["CITEBOT_REDIS_URL"], view["private_metadata"]))
    wait_until(lambda: "already saved" in bot.worker_logs(), 10, "the second run of the decision")
    assert list(drafts.iterdir()) == [draft]
    assert draft.read_text() == first + "edited by someone\n"
    assert len(bot.replies("CGENERAL", event["event"]["ts"])) == 2  # and the answer is not posted twice


async def redeliver(redis_url: str, review_id: str) -> None:
    async with aioredis.Redis.from_url(redis_url) as redis:
        records = Records(redis)

        async def decided():  # the draft file is written before the decision is saved
            record = await records.review(review_id)
            return record if record is not None and record.status is ReviewStatus.ANSWERED else None

        record = await wait_until_async(decided, 10, "the decision saved")
        record.status = ReviewStatus.OPEN
        await records.save_review(record)
    payload = ReviewDecisionPayload(review_id=review_id, decision="answer", reviewer="UREVIEWER", text=WRITTEN,
                                    save_draft=True)
    async with JobQueue(redis_url) as queue:
        await queue.enqueue(Job.of(payload), dedupe_id=f"redelivery:{review_id}")


def test_a_drafts_folder_inside_the_kb_must_be_the_one_the_index_skips(tmp_path):
    kb = write_mini_kb(tmp_path / "kb")
    with pytest.raises(ConfigError, match="CITEBOT_DRAFTS_DIR: inside CITEBOT_KB_DIR"):
        load_settings(env_file=None, CITEBOT_KB_DIR=str(kb), CITEBOT_DRAFTS_DIR=str(kb / "drafts"))
    assert load_settings(env_file=None, CITEBOT_KB_DIR=str(kb)).drafts_folder == kb / DRAFTS_FOLDER
    inside = load_settings(env_file=None, CITEBOT_KB_DIR=str(kb), CITEBOT_DRAFTS_DIR=str(kb / "hr" / DRAFTS_FOLDER))
    assert inside.drafts_folder == kb / "hr" / DRAFTS_FOLDER
