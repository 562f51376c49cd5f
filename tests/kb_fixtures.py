"""Small knowledge bases written to disk for tests."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import yaml

from bot.models import Answer, Source
from kb_index import build_index
from kb_index.entries import chunk_hash


def zip_bytes(members: dict[str, bytes | int]) -> bytes:
    """A zip; an int member is that many zero bytes, written in chunks (it compresses to almost nothing)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            if isinstance(content, int):
                with archive.open(name, "w", force_zip64=True) as member:
                    chunk = b"\0" * 1_000_000
                    for _ in range(content // len(chunk)):
                        member.write(chunk)
            else:
                archive.writestr(name, content)
    return out.getvalue()


def write_entry(kb_dir: Path, rel: str, meta: dict | None, sections: dict[str, str]) -> Path:
    """Writes one entry file; `meta=None` writes a plain Markdown file without front matter."""
    path = kb_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(f"## {name}\n{text}\n" for name, text in sections.items())
    if meta is None:
        path.write_text(body)
    else:
        front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
        path.write_text(f"---\n{front}---\n{body}")
    return path


# A miniature of the real KB: German payroll with cross-refs, an English handbook.
MINI_KB = {
    "payroll/atz-01.md": (
        {
            "id": "lb-atz-01",
            "title": "Altersteilzeit – Grundlagen",
            "stand": "2026-01",
            "language": "de",
            "legal_bases": ["AltTZG § 2"],
            "cross_refs": ["lb-atz-02"],
            "tags": ["rente"],
        },
        {
            "Zusammenfassung": "Altersteilzeit ist ab dem 55. Lebensjahr möglich. Die Arbeitszeit wird "
            "bis zur Rente halbiert, der Arbeitgeber zahlt einen Lohnausgleich.",
            "Voraussetzungen": "Beschäftigte müssen in den letzten fünf Jahren mindestens 1.080 Kalendertage "
            "versicherungspflichtig beschäftigt gewesen sein.",
        },
    ),
    "payroll/atz-02.md": (
        {"id": "lb-atz-02", "title": "Altersteilzeit – Aufstockung", "stand": "2026-01", "language": "de"},
        {"Aufstockung": "Der Arbeitgeber stockt das Regelarbeitsentgelt um mindestens 20 Prozent auf."},
    ),
    "payroll/efz-01.md": (
        {
            "id": "lb-efz-01",
            "title": "Entgeltfortzahlung im Krankheitsfall",
            "stand": "2026-01",
            "language": "de",
            "legal_bases": ["EFZG § 3"],
        },
        {
            "Anspruch": "Bei Arbeitsunfähigkeit durch Krankheit besteht Anspruch auf Fortzahlung des Lohns "
            "für bis zu sechs Wochen, nach einer Wartezeit von vier Wochen.",
        },
    ),
    "payroll/ueb-01.md": (
        {"id": "lb-ueb-01", "title": "Überstunden und Zuschläge", "stand": "2025-07", "language": "de"},
        {"Vergütung": "Überstunden werden mit einem Zuschlag von 25 Prozent vergütet oder durch Freizeit ausgeglichen."},
    ),
    "handbook/pto-01.md": (
        {
            "id": "hb-pto-01",
            "title": "Annual leave",
            "stand": "2026-02",
            "language": "en",
            "url": "https://wiki.example.com/pto",
            "cross_refs": ["hb-sick-01"],
        },
        {
            "Entitlement": "Every employee gets 28 days of paid annual leave per calendar year.",
            "Carry-over": "You can carry over up to 5 unused vacation days until 31 March of the next year.",
        },
    ),
    "handbook/sick-01.md": (
        {"id": "hb-sick-01", "title": "Sick leave", "stand": "2026-02", "language": "en", "cross_refs": ["lb-efz-01"]},
        {"Reporting": "Tell your manager before 10:00 on the first day you are sick; from day 4 a doctor's note is needed."},
    ),
    "handbook/cafe-01.md": (
        {"id": "hb-cafe-01", "title": "Café and kitchen", "stand": "2026-02", "language": "en"},
        {"Coffee": "The café on floor 2 serves free coffee; running the dishwasher is everyone's job."},
    ),
}


def write_mini_kb(kb_dir: Path) -> Path:
    for rel, (meta, sections) in MINI_KB.items():
        write_entry(kb_dir, rel, meta, sections)
    return kb_dir


def mini_index(root: Path) -> Path:
    """The mini KB written under `root` and indexed; returns the index folder."""
    build_index(write_mini_kb(root / "kb"), root / "index")
    return root / "index"


def _section(rel: str, name: str) -> str:
    return MINI_KB[rel][1][name]


PTO_TEXT = _section("handbook/pto-01.md", "Entitlement")
SICK_TEXT = _section("handbook/sick-01.md", "Reporting")


def mini_kb_answer(question: str, **fields) -> Answer:
    """A verified answer citing the mini KB's annual leave [1] and sick leave [2], as the pipeline
    builds it (content hashes, passages); `fields` override any of its fields."""
    sources = [
        Source(n=1, id="hb-pto-01", title="Annual leave", section="Entitlement", stand="2026-02",
               collection="handbook", content_hash=chunk_hash("hb-pto-01", "Entitlement", PTO_TEXT), passage=PTO_TEXT),
        Source(n=2, id="hb-sick-01", title="Sick leave", section="Reporting", stand="2026-02",
               collection="handbook", content_hash=chunk_hash("hb-sick-01", "Reporting", SICK_TEXT), passage=SICK_TEXT),
    ]
    return Answer(**{
        "question": question, "answer": "You get 28 days [1]; tell your manager when you are sick [2].",
        "verified": True, "refused": False, "citations": ["hb-pto-01", "hb-sick-01"], "sources": sources,
        "model": "test-model", **fields,
    })
