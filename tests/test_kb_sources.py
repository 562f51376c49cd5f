"""A KB folder as people have it: Markdown, PDF, Word and a Confluence export, with and
without front matter, through the real converters, a real index on disk and the real CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bot.cli import main
from kb_index import build_index, load_kb
from kb_index.chunking import MAX_CHUNK_CHARS, sentences, split_long
from kb_index.collection import CollectionError, parse_collection
from tests.kb_fixtures import write_entry

FORMATS = Path(__file__).parent / "data" / "formats"

COPIED = {
    "hr/reisekosten.pdf": "reisekosten.pdf",  # PDF with an outline
    "hr/homeoffice.docx": "homeoffice.docx",  # LibreOffice's Word export
    "it/hausordnung.pdf": "hausordnung.pdf",  # PDF without headings, declared English, written in German
    "it/security-handbook.pdf": "security-handbook.pdf",  # PDF with headings by font only
    "it/it-policy.docx": "it-policy.docx",  # pandoc's Word styles
    "it/confluence-vpn.html": "confluence-vpn.html",  # Confluence space export page
    "it/scan.pdf": "scan.pdf",  # no text layer
    "it/encrypted.pdf": "encrypted.pdf",  # needs a password
}
HR_COLLECTION = "base_url: https://wiki.example.com/hr\nlanguage: de\nsource_role: primary_answer_source\n"
PRINTER = "# Druckerservice\n\nDie Drucker im 2. Stock betreut das Facility-Team. Störungen meldet man im Ticketportal.\n"


def write_mixed_kb(root: Path) -> Path:
    kb = root / "kb"
    for rel, name in COPIED.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FORMATS / name, kb / rel)
    (kb / "hr" / "_collection.yml").write_text(HR_COLLECTION)
    (kb / "it" / "drucker.md").write_text(PRINTER)  # Markdown without front matter
    (kb / "it" / "logo.png").write_bytes(b"\x89PNG\r\n")
    write_entry(kb, "it/wlan.md", {"id": "it-wlan-01", "title": "WLAN", "stand": "2026-01", "language": "de",
                                   "cross_refs": ["it-gone-01"]},
                {"Gastzugang": "Gäste bekommen an der Rezeption einen WLAN-Code für einen Tag."})
    return kb


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The mixed KB, indexed once (with --keep-going: two of its PDFs cannot be read)."""
    root = tmp_path_factory.mktemp("mixed")
    kb = write_mixed_kb(root)
    report = build_index(kb, root / "index", keep_going=True)
    return kb, root / "index", report


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Runs `citebot` with CITEBOT_KB_DIR and CITEBOT_INDEX_DIR; returns (exit status, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)  # no stray .env
    for var in [v for v in os.environ if v.startswith(("CITEBOT_", "SLACK_"))]:
        monkeypatch.delenv(var)

    def run(capsys, args: list[str], kb: Path, index: Path, **env: str):
        for name, value in {"CITEBOT_KB_DIR": str(kb), "CITEBOT_INDEX_DIR": str(index), **env}.items():
            monkeypatch.setenv(name, value)
        code = main(args)
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return run


# ---------------------------------------------------------------- every file accounted for


def test_every_file_is_indexed_or_listed_with_its_reason(mixed):
    kb, _, report = mixed
    files = {str(p.relative_to(kb)) for p in kb.rglob("*") if p.is_file() and p.name != "_collection.yml"}
    indexed = {e.path for e in load_kb(kb).entries}
    failed = {e.path: e.message for e in report.errors}
    other = {e.path: e.message for e in report.not_indexed}
    assert indexed | set(failed) | set(other) == files
    assert not indexed & (set(failed) | set(other))
    assert failed == {
        "it/encrypted.pdf": "not indexed: encrypted: a password is needed to open it",
        "it/scan.pdf": failed["it/scan.pdf"],
    }
    assert failed["it/scan.pdf"].startswith("not indexed: no text layer (a scan?)")
    assert other == {"it/logo.png": "unknown type: .png files are not indexed"}


def test_index_output_lists_skipped_files_and_warnings_and_exits_one_without_keep_going(tmp_path, cli, capsys):
    kb = write_mixed_kb(tmp_path)
    code, out, err = cli(capsys, ["index", "-q"], kb, tmp_path / "index", CITEBOT_EMBEDDER="none")
    assert code == 1 and "not switched in" in out
    lines = err.splitlines()
    assert f"{kb / 'it' / 'encrypted.pdf'}:1: not indexed: encrypted: a password is needed to open it" in lines
    assert any(line.startswith(f"{kb / 'it' / 'scan.pdf'}:1: not indexed: no text layer") for line in lines)
    assert f"{kb / 'it' / 'logo.png'}: not indexed: unknown type: .png files are not indexed" in lines
    [warning] = [line for line in lines if "warning:" in line]
    assert warning.startswith(f"{kb / 'it' / 'wlan.md'}:") and "unknown cross-ref 'it-gone-01'" in warning
    code, out, _ = cli(capsys, ["index", "-q", "--keep-going"], kb, tmp_path / "index", CITEBOT_EMBEDDER="none")
    assert code == 0 and "2 skipped" in out and "1 file(s) of other types not indexed" in out and "1 warning(s)" in out


def test_an_unknown_cross_ref_alone_does_not_hold_the_build_back(tmp_path, cli, capsys):
    kb = tmp_path / "kb"
    write_entry(kb, "a.md", {"id": "a-01", "title": "A", "cross_refs": ["nope-01"]}, {"S": "Text of a."})
    code, out, err = cli(capsys, ["index", "-q"], kb, tmp_path / "index", CITEBOT_EMBEDDER="none")
    assert code == 0 and "1 entries" in out and "-> gen-" in out
    assert "warning: unknown cross-ref 'nope-01'" in err
    code, out, _ = cli(capsys, ["search", "Text", "--json"], kb, tmp_path / "index", CITEBOT_EMBEDDER="none")
    assert code == 0 and [h["entry_id"] for h in json.loads(out)["hits"]] == ["a-01"]


def test_doctor_lists_the_files_that_are_not_indexed(mixed, cli, capsys, redis_url):
    kb, index, _ = mixed
    code, out, _ = cli(capsys, ["doctor", "--json"], kb, index, CITEBOT_REDIS_URL=redis_url, CITEBOT_EMBEDDER="none")
    findings = [f for f in json.loads(out)["findings"] if f["check"] == "index"]
    listed = {f["path"]: (f["status"], f["reason"]) for f in findings if "path" in f}
    assert listed["it/encrypted.pdf"] == ("warn", "not indexed: encrypted: a password is needed to open it")
    assert listed["it/scan.pdf"][0] == "warn" and "no text layer" in listed["it/scan.pdf"][1]
    assert listed["it/logo.png"] == ("ok", "unknown type: .png files are not indexed")
    assert any(f["detail"].startswith("warning: it/wlan.md:") for f in findings)


# ---------------------------------------------------------------- retrieval and footnotes

QUESTIONS = [
    ("Bis wann muss ich die Reisekostenabrechnung einreichen?", "hr-reisekosten"),  # PDF, outline
    ("Wann ist das Hauptgebäude geöffnet?", "it-hausordnung"),  # PDF, no headings
    ("Is multi-factor authentication required for e-mail?", "it-security-handbook"),  # PDF, font headings
    ("Wie viele Tage pro Woche darf ich im Homeoffice arbeiten?", "hr-homeoffice"),  # Word (LibreOffice)
    ("May private laptops connect to the company network?", "it-it-policy"),  # Word (pandoc)
    ("Welches Portal trage ich im VPN-Client ein?", "it-confluence-vpn"),  # Confluence export
    ("Wer betreut die Drucker im 2. Stock?", "it-drucker"),  # Markdown without front matter
]


@pytest.mark.parametrize(("question", "entry"), QUESTIONS)
def test_a_question_about_each_format_finds_its_entry_in_the_top_three(mixed, cli, capsys, question, entry):
    kb, index, _ = mixed
    code, out, _ = cli(capsys, ["search", question, "-k", "3", "--json"], kb, index, CITEBOT_EMBEDDER="none")
    assert code == 0
    assert entry in [h["entry_id"] for h in json.loads(out)["hits"] if not h["expanded"]]


def test_a_pdf_answer_names_its_page_and_section_path_and_links_through_the_collection_file(mixed, cli, capsys):
    kb, index, _ = mixed
    code, out, _ = cli(capsys, ["ask", "--json", "Bis wann muss ich die Reisekostenabrechnung einreichen?"], kb, index,
                       CITEBOT_EMBEDDER="none")
    answer = json.loads(out)
    assert code == 0 and answer["verified"] and not answer["refused"]
    [source] = [s for s in answer["sources"] if s["id"] == "hr-reisekosten"]
    assert source["page"] == 3 and source["section"] == "3 Fristen und Abrechnung › 3.1 Fristen"
    assert source["url"] == "https://wiki.example.com/hr/reisekosten.pdf"
    assert source["stand"] == "2026-03-15"  # the PDF's own date
    code, out, _ = cli(capsys, ["ask", "Bis wann muss ich die Reisekostenabrechnung einreichen?"], kb, index,
                       CITEBOT_EMBEDDER="none")
    assert "Reisekostenrichtlinie · 3 Fristen und Abrechnung › 3.1 Fristen · p. 3 · Stand 2026-03-15" in out


def test_a_word_answer_names_its_section_and_no_page(mixed, cli, capsys):
    kb, index, _ = mixed
    code, out, _ = cli(capsys, ["ask", "--json", "May private laptops connect to the company network?"], kb, index,
                       CITEBOT_EMBEDDER="none")
    answer = json.loads(out)
    [source] = [s for s in answer["sources"] if s["id"] == "it-it-policy"]
    assert source["section"] == "Devices › Private devices" and source["page"] is None
    assert source["url"] is None  # the it collection has no collection file


def test_metadata_without_front_matter(mixed):
    kb, _, _ = mixed
    os.utime(kb / "it" / "drucker.md", (1767261600, 1767261600))  # 2026-01-01 10:00 UTC
    entries = {e.id: e for e in load_kb(kb).entries}
    house = entries["it-hausordnung"]
    # The PDF declares English (LibreOffice's default); its text is German.
    assert (house.language, house.title, house.stand) == ("de", "Hausordnung", "2026-12-01")
    assert entries["it-security-handbook"].language == "en"
    assert entries["it-confluence-vpn"].language == "de"  # detected: the export declares none
    printer = entries["it-drucker"]
    assert (printer.title, printer.stand, printer.language) == ("Druckerservice", "2026-01-01", "de")
    assert entries["hr-homeoffice"].url == "https://wiki.example.com/hr/homeoffice.docx"
    assert entries["it-wlan-01"].url is None and entries["it-wlan-01"].stand == "2026-01"  # front matter as it was


def test_a_pdf_without_headings_is_cut_into_bounded_chunks_with_its_pages(mixed):
    kb, _, _ = mixed
    house = next(e for e in load_kb(kb).entries if e.id == "it-hausordnung")
    assert len(house.sections) >= 3  # page 1 alone is longer than one chunk
    assert all(len(s.text) <= MAX_CHUNK_CHARS for s in house.sections)
    assert {s.page for s in house.sections} == {1, 2}
    assert "Sammelplatz" in house.sections[-1].text and house.sections[-1].page == 2


# ---------------------------------------------------------------- the collection file


def test_a_bad_collection_file_is_one_error_line_for_its_folder(tmp_path, cli, capsys):
    kb = tmp_path / "kb"
    write_entry(kb, "hr/a.md", {"id": "a-01", "title": "A"}, {"S": "Text."})
    (kb / "hr" / "_collection.yml").write_text("language: de\nbase-url: https://wiki.example.com/hr/\n")
    code, _, err = cli(capsys, ["index", "-q"], kb, tmp_path / "index", CITEBOT_EMBEDDER="none")
    assert code == 1
    [line] = [line for line in err.splitlines() if line.startswith(str(kb))]
    assert line == (f"{kb / 'hr' / '_collection.yml'}:2: invalid collection file: 'base-url': unknown key "
                    "(known: base_url, source_role, language, audience, guests, external)")


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("base_url: wiki.example.com\n", 1, "https://"),
        ("language: fr\n", 1, "en, de"),
        ("- a\n- b\n", 1, "mapping"),
        ("base_url: [unclosed\n", 2, "invalid YAML"),
    ],
)
def test_collection_file_errors_say_what_and_where(text, line, needle):
    with pytest.raises(CollectionError) as caught:
        parse_collection(text.encode())
    assert needle in caught.value.message and caught.value.line == line


def test_base_url_keeps_the_suffix_of_documents_and_drops_that_of_pages():
    settings = parse_collection(b"base_url: https://wiki.example.com/hr\n")
    assert settings.url_of("travel/Reisekosten 2026.pdf") == "https://wiki.example.com/hr/travel/Reisekosten%202026.pdf"
    assert settings.url_of("onboarding.md") == "https://wiki.example.com/hr/onboarding"


# ---------------------------------------------------------------- chunking


def test_long_text_is_cut_between_paragraphs_then_sentences_never_over_the_bound():
    paragraph = " ".join(f"Satz {i} sagt etwas über Fristen, z. B. den 1. Januar." for i in range(12))
    long_paragraph = " ".join(f"Sentence {i} is rather long and says what it says." for i in range(80))
    text = "\n\n".join([paragraph] * 6 + [long_paragraph])
    parts = split_long("Reisekosten › Fristen", text)
    assert len(parts) > 2 and all(len(part) <= MAX_CHUNK_CHARS for _, part in parts)
    assert [name for name, _ in parts][:2] == ["Reisekosten › Fristen (1)", "Reisekosten › Fristen (2)"]
    joined = " ".join(part for _, part in parts).split()
    assert joined == text.split()  # nothing lost, nothing reordered
    for _, part in parts:  # every cut is at a sentence end
        assert part.rstrip().endswith(".")


def test_a_table_cut_in_two_repeats_its_header_row():
    rows = "\n".join(f"| Ort {i} | {'Beschreibung ' * 8}|" for i in range(60))
    parts = split_long("Standorte", "| Ort | Beschreibung |\n| --- | --- |\n" + rows)
    assert len(parts) > 1
    assert all(part.startswith("| Ort | Beschreibung |\n| --- | --- |") for _, part in parts)


def test_sentences_do_not_end_at_abbreviations_ordinals_or_dates():
    text = "Die Frist endet z. B. am 1. Januar. Danach gilt Nr. 3 der Regel. Done? Yes."
    assert sentences(text) == ["Die Frist endet z. B. am 1. Januar.", "Danach gilt Nr. 3 der Regel.", "Done?", "Yes."]


def test_a_short_section_stays_whole():
    assert split_long("S", "Kurz.") == [("S", "Kurz.")]


# ---------------------------------------------------------------- an empty or missing index


def test_ask_and_search_on_an_empty_knowledge_base_say_it_is_not_ready(tmp_path, cli, capsys):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "only-a-scan.pdf").write_bytes((FORMATS / "scan.pdf").read_bytes())
    index = tmp_path / "index"
    # No index yet: ask indexes the KB first, finds nothing it can read, and says so.
    code, _, err = cli(capsys, ["ask", "Wie hoch ist das Tagegeld?"], kb, index, CITEBOT_EMBEDDER="none")
    assert code == 1
    assert "only-a-scan.pdf:1: not indexed: no text layer" in err
    assert "citebot: the knowledge base is not ready: the index in" in err and "holds no entries" in err
    code, _, err = cli(capsys, ["search", "Tagegeld"], kb, index, CITEBOT_EMBEDDER="none")
    assert code == 1 and "the knowledge base is not ready" in err
    code, out, _ = cli(capsys, ["ask", "--json", "Wie hoch ist das Tagegeld?"], kb, index, CITEBOT_EMBEDDER="none")
    assert code == 1 and out == ""


def test_search_on_a_missing_index_says_how_to_build_it(tmp_path, cli, capsys):
    (tmp_path / "kb").mkdir()
    code, _, err = cli(capsys, ["search", "Tagegeld"], tmp_path / "kb", tmp_path / "none", CITEBOT_EMBEDDER="none")
    assert code == 2 and "run 'citebot index' first" in err


def test_an_empty_index_is_indexed_again_by_ask_once_files_came(tmp_path, cli, capsys):
    kb = tmp_path / "kb"
    kb.mkdir()
    index = tmp_path / "index"
    build_index(kb, index)
    write_entry(kb, "a.md", {"id": "a-01", "title": "Tagegeld", "stand": "2026-01"},
                {"Höhe": "Das Tagegeld beträgt 28 Euro pro Tag."})
    code, out, _ = cli(capsys, ["ask", "Wie hoch ist das Tagegeld?"], kb, index, CITEBOT_EMBEDDER="none")
    assert code == 0 and "28 Euro" in out


def test_doctor_fails_on_an_empty_index(tmp_path, cli, capsys, redis_url):
    kb = tmp_path / "kb"
    kb.mkdir()
    build_index(kb, tmp_path / "index")
    code, out, _ = cli(capsys, ["doctor"], kb, tmp_path / "index", CITEBOT_REDIS_URL=redis_url, CITEBOT_EMBEDDER="none")
    assert code == 1
    assert any(line.startswith("fail  index") and "holds no entries" in line for line in out.splitlines())


@pytest.mark.e2e
def test_the_asker_in_slack_hears_that_the_knowledge_base_is_not_ready_until_it_is(citebot, tmp_path):
    from bot.i18n import Key, message
    from tests.citebot_fixtures import answers_in
    from tests.harness import mention_event

    kb, index = tmp_path / "kb2", tmp_path / "index2"
    kb.mkdir()
    (kb / "only-a-scan.pdf").write_bytes((FORMATS / "scan.pdf").read_bytes())
    build_index(kb, index, keep_going=True)  # switched in, and empty
    bot = citebot(CITEBOT_INDEX_DIR=index, CITEBOT_KB_DIR=kb, CITEBOT_EMBEDDER="none")
    first = mention_event("Wie hoch ist das Tagegeld?")
    bot.send_event(first)
    [reply] = answers_in(bot, "CGENERAL", first["event"]["ts"])
    assert reply["text"] == message(Key.KB_NOT_READY, "de") and bot.llm.calls == []
    logs = {p.name: p.read_text() for p in bot.logs.iterdir() if p.is_file()}
    said = [name for name, text in logs.items() if "the knowledge base is not ready" in text and "Traceback" not in text]
    assert any("web" in name for name in said) and any("worker" in name for name in said), sorted(logs)

    write_entry(kb, "a.md", {"id": "a-01", "title": "Tagegeld", "stand": "2026-01"},
                {"Höhe": "Das Tagegeld beträgt 28 Euro pro Tag."})
    build_index(kb, index, keep_going=True)
    bot.llm.script("Das Tagegeld beträgt 28 Euro pro Tag [a-01].")
    second = mention_event("Wie hoch ist das Tagegeld?")
    bot.send_event(second)
    [answer] = answers_in(bot, "CGENERAL", second["event"]["ts"])
    assert "28 Euro" in answer["text"]


def test_a_long_section_over_several_pages_gives_each_chunk_the_page_it_starts_on():
    from kb_index.documents import document_sections
    from kb_index.formats.blocks import Builder, Deadline
    from kb_index.formats.model import Document, Limits

    builder = Builder(Deadline(Limits()))
    builder.heading(1, "Reisekosten", page=1)
    builder.heading(2, "Fristen", page=1)
    for page in range(1, 6):  # one section running over five pages, 1,500 characters a page
        for n in range(3):
            builder.paragraph(f"Seite {page}, Absatz {n}: " + "Die Frist beträgt dreißig Tage. " * 15, page=page)
    sections = builder.sections()
    assert [s.path for s in sections] == [("Fristen",)] and sections[0].line_pages[0] == (0, 1)
    parts = document_sections(Document("Reisekosten", None, "de", sections))
    assert len(parts) > 3 and all(len(p.text) <= MAX_CHUNK_CHARS for p in parts)
    for part in parts:  # each part's page is the page its first paragraph is on
        first = part.text.split(",", 1)[0]
        assert first == f"Seite {part.page}", (part.name, part.page, first)
    assert parts[0].page == 1 and parts[-1].page == 5
