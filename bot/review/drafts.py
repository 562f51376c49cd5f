"""A reviewer's written answer, saved as a draft KB entry.

The gap that sent a question to review closes only when the KB has the
answer. A reviewer who writes one can tick "also save as a draft KB entry";
the worker then writes it here, as Markdown with front matter, into the drafts
folder (Settings.drafts_folder). Nothing there is indexed
(kb_index.files.DRAFTS_FOLDER): an answer typed into a modal is checked by
someone and moved into the KB before the bot cites it.

The file name comes from the review (a slug of the question and a hash of the
review id), never from a path anyone typed. It is written under a hidden name
and linked into place, which fails if the name exists: an existing file is
never overwritten, a redelivered job finds its file there and writes nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import unicodedata
from pathlib import Path

import yaml

from bot.store.records import ReviewRecord

SLUG_CHARS = 48
TITLE_CHARS = 200
_SECTION = {"en": "Answer", "de": "Antwort"}


def draft_name(record: ReviewRecord) -> str:
    """`<slug of the question>-<8 hex of the review id>.md`: the same review, the same file."""
    ascii_text = unicodedata.normalize("NFKD", record.question).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:SLUG_CHARS].strip("-") or "entry"
    digest = hashlib.sha256(record.review_id.encode()).hexdigest()[:8]
    return f"{slug}-{digest}.md"


def draft_text(record: ReviewRecord, answer: str, reviewer: str, today: dt.date) -> str:
    """The entry: front matter the indexer reads (kb_index.entries), one `##` section with the answer."""
    title = " ".join(record.question.split())[:TITLE_CHARS] or Path(draft_name(record)).stem
    meta = {
        "id": Path(draft_name(record)).stem,
        "title": title,
        "stand": today.isoformat(),
        "language": record.language,
        # Not read by the indexer (the folder keeps drafts out); says what the file is to whoever moves it.
        "draft": True,
        "reviewed_by": reviewer,
        "review_id": record.review_id,
    }
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
    section = _SECTION.get(record.language, _SECTION["en"])
    return f"---\n{front}---\n## {section}\n{answer.strip()}\n"


def save_draft(folder: Path, record: ReviewRecord, answer: str, reviewer: str, today: dt.date | None = None) -> tuple[Path, bool]:
    """(the draft's path, whether this call wrote it); a file already there is kept as it is."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / draft_name(record)
    if path.exists() or path.is_symlink():
        return path, False
    text = draft_text(record, answer, reviewer, today or dt.date.today())
    # A hidden name (passed over by the KB walk) until it is complete.
    partial = folder / f".{path.name}.{os.getpid()}.partial"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(partial, path)  # fails if the name exists: never overwrites
        except FileExistsError:
            return path, False
    finally:
        partial.unlink(missing_ok=True)
    return path, True
