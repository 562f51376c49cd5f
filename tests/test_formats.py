"""The format converters (kb_index.formats) on documents made by real tools, and on bad files.

The sample files are in tests/data/formats (make.sh says which tool made each);
the bad files (truncated, zip bomb, 2,000 pages, hostile HTML, other encodings)
are built here from those samples. Every failure must be a ConversionError with
the right reason, within bounded time.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pypdf import PdfReader, PdfWriter

from kb_index import markdown
from kb_index.formats import REASONS, SUFFIXES, ConversionError, Document, Limits, convert
from tests.kb_fixtures import zip_bytes

DATA = Path(__file__).parent / "data" / "formats"


def load(name: str) -> bytes:
    return (DATA / name).read_bytes()


def doc(name: str) -> Document:
    return convert(load(name), Path(name).suffix)


def section(document: Document, *path: str):
    found = [s for s in document.sections if s.path == tuple(path)]
    assert len(found) == 1, [s.path for s in document.sections]
    return found[0]


def full_text(document: Document) -> str:
    return "\n".join(s.text for s in document.sections)


def refused(data: bytes, suffix: str, limits: Limits = Limits()) -> ConversionError:  # noqa: B008
    started = time.monotonic()
    with pytest.raises(ConversionError) as caught:
        convert(data, suffix, limits)
    assert time.monotonic() - started < 10, "refusing a file must not take long"
    assert caught.value.reason in REASONS
    return caught.value


def test_suffixes_and_unknown_type():
    assert {".pdf", ".docx", ".html", ".htm"} == SUFFIXES
    assert refused(b"hello", ".txt").reason == "unsupported"
    assert refused(b"hello", "").reason == "unsupported"


# -- PDF


def test_pdf_with_outline_has_its_sections_pages_and_metadata():
    document = doc("reisekosten.pdf")
    assert (document.title, document.stand, document.language) == ("Reisekostenrichtlinie", "2026-03-15", "de")
    paths = [s.path for s in document.sections]
    assert paths == [
        (),
        ("1 Geltungsbereich",),
        ("2 Erstattungsfähige Kosten", "2.1 Fahrtkosten"),
        ("2 Erstattungsfähige Kosten", "2.2 Übernachtungskosten"),
        ("2 Erstattungsfähige Kosten", "2.3 Verpflegungsmehraufwand"),
        ("3 Fristen und Abrechnung", "3.1 Fristen"),
        ("3 Fristen und Abrechnung", "3.2 Belege"),
        ("4 Ansprechpartner",),
    ]
    assert [s.page for s in document.sections] == [1, 1, 2, 2, 2, 3, 3, 3]
    # the title line is the document's title, not text of the first section
    assert not document.sections[0].text.startswith("Reisekostenrichtlinie")


def test_pdf_running_headers_footers_gone_and_lines_joined():
    document = doc("reisekosten.pdf")
    text = full_text(document)
    assert "Seite" not in text and "von 3" not in text
    assert "Musterfirma GmbH · Reisekostenrichtlinie" not in text
    # hyphenated line ends joined, soft breaks joined: each paragraph is one line
    fahrt = section(document, "2 Erstattungsfähige Kosten", "2.1 Fahrtkosten").text
    assert "werden in der zweiten Klasse erstattet; bei einer Fahrtdauer" in fahrt
    assert "Abwesenheit von mehr als acht Stunden" in text
    assert "BahnCard-Rabatte" in fahrt  # a hyphen inside a line stays
    assert "erstat-" not in text and "geneh-" not in text
    assert fahrt.splitlines()[0].startswith("Vorrangig") and fahrt.splitlines()[0].endswith("im Reiseportal.")
    assert "- Privat-PKW: 0,30 Euro je gefahrenem Kilometer" in fahrt.splitlines()
    # the text is stored as Markdown units: normalizing it changes nothing
    for s in document.sections:
        assert markdown.normalize(s.text) == s.text


def test_pdf_table_as_rows():
    text = section(doc("reisekosten.pdf"), "2 Erstattungsfähige Kosten", "2.2 Übernachtungskosten").text
    assert text.splitlines()[-4:] == [
        "| Ort | Höchstbetrag je Nacht |",
        "| --- | --- |",
        "| München, Frankfurt am Main, Hamburg | 150 Euro |",
        "| übrige Orte im Inland | 110 Euro |",
    ]


def test_pdf_headings_by_font_without_outline():
    document = doc("security-handbook.pdf")
    assert document.title == "Information Security Handbook"
    assert document.stand == "2026-03-01"  # ModDate before CreationDate (2026-01-10)
    assert document.language is None  # no /Lang in the catalog
    assert [(s.path, s.page) for s in document.sections] == [
        ((), 1),
        (("1 Passwords",), 1),
        (("1 Passwords", "1.1 Password rules"), 1),
        (("1 Passwords", "1.2 Multi-factor authentication"), 1),
        (("2 Remote access",), 2),
        (("2 Remote access", "2.1 VPN"), 2),
        (("2 Remote access", "2.2 Public Wi-Fi"), 2),
        (("3 Reporting incidents",), 3),
    ]
    text = full_text(document)
    assert "Page 1 of 3" not in text and "ACME Corp - Information Security Handbook" not in text
    # a paragraph running over the page break is one paragraph
    mfa = section(document, "1 Passwords", "1.2 Multi-factor authentication").text
    assert "report it to the service desk on the same day" in mfa
    assert "exception before you act" in text  # "excep-" + "tion"
    wifi = section(document, "2 Remote access", "2.2 Public Wi-Fi").text
    assert "- it is encrypted and under your control;" in wifi.splitlines()


def test_pdf_without_headings_is_one_section_per_page():
    document = doc("hausordnung.pdf")
    assert [(s.path, s.page) for s in document.sections] == [((), 1), ((), 2)]
    first, second = (s.text.splitlines() for s in document.sections)
    assert "17. Die Küchen sind sauber zu halten; benutztes Geschirr gehört in die Spülmaschine." in first
    assert second[0].startswith("31. Bei Feueralarm")
    assert document.language == "en"  # what the file declares (/Lang en-US), not what it is


def test_pdf_scan_encrypted_restricted():
    assert refused(load("scan.pdf"), ".pdf").reason == "no text layer (a scan?)"
    assert refused(load("encrypted.pdf"), ".pdf").reason == "encrypted"
    restricted = doc("restricted.pdf")
    assert restricted.sections == doc("security-handbook.pdf").sections
    assert restricted.title == "Information Security Handbook"


def test_truncated_pdf_is_a_broken_file():
    data = load("reisekosten.pdf")
    for size in (0, 10, 2000, len(data) // 2, len(data) - 300):
        assert refused(data[:size], ".pdf").reason == "broken file", size
    assert refused(b"%PDF-1.7\n" + bytes(range(256)) * 20, ".pdf").reason == "broken file"


def test_pdf_with_2000_pages_is_too_large_before_its_pages_are_read():
    source = PdfReader(DATA / "hausordnung.pdf")
    writer = PdfWriter()
    for _ in range(2000):
        writer.add_page(source.pages[0])
    out = io.BytesIO()
    writer.write(out)
    started = time.monotonic()
    error = refused(out.getvalue(), ".pdf")
    assert error.reason == "too large" and "2,000 pages" in error.detail
    assert time.monotonic() - started < 3
    # within the limit it converts, and a text budget is kept
    assert refused(load("reisekosten.pdf"), ".pdf", Limits(max_pages=2)).reason == "too large"
    assert refused(load("reisekosten.pdf"), ".pdf", Limits(max_chars=500)).reason == "too large"


# -- Word


def test_docx_pandoc_title_headings_lists_tables_links_metadata():
    document = doc("it-policy.docx")
    assert (document.title, document.stand, document.language) == ("IT Acceptable Use Policy", "2026-03-01", "en")
    assert [s.path for s in document.sections] == [
        ("Purpose",), ("Devices", "Company laptops"), ("Devices", "Private devices"), ("Software requests",),
        ("Support hours",),
    ]
    laptops = section(document, "Devices", "Company laptops").text.splitlines()
    assert "[software catalogue](https://it.acme.example/catalogue)" in laptops[0]
    assert "- Report a lost or stolen laptop within **24 hours**." in laptops
    requests = section(document, "Software requests").text.splitlines()
    assert requests == [
        "1. Open a ticket in the service desk portal.",
        "2. Name the software, the version and the business reason.",
        "3. Wait for the approval of your manager and of IT Security.",
    ]
    hours = section(document, "Support hours").text.splitlines()
    assert hours[:4] == [
        "| Service | Hours | Contact |",
        "| --- | --- | --- |",
        "| Service desk | Mon–Fri 08:00–18:00 | extension 4444 |",
        "| On-call (outages only) | 24/7 | +49 30 1234 5678 |",
    ]
    assert "[servicedesk@acme.example](mailto:servicedesk@acme.example)" in hours[-1]


def test_docx_localized_heading_styles():
    document = doc("homeoffice.docx")  # "Überschrift 1/2", style ids Berschrift1/2
    assert (document.title, document.language) == ("Homeoffice-Regelung", "de")
    assert document.stand is not None and len(document.stand) == 10
    assert [s.path for s in document.sections] == [(), ("Antrag",), ("Ausstattung",)]
    assert section(document, "Antrag").text.splitlines()[0] == "1. Antrag im Personalportal stellen."
    ausstattung = section(document, "Ausstattung").text
    assert "| Monitor | bis 200 Euro |" in ausstattung.splitlines()
    assert "[Betriebsvereinbarung](https://intranet.musterfirma.example/bv-homeoffice)" in ausstattung


def test_docx_from_libreoffice_same_sections_as_its_pdf():
    word = doc("reisekosten.docx")
    assert (word.title, word.stand, word.language) == ("Reisekostenrichtlinie", "2026-03-15", "de")
    assert [s.path[-1] for s in word.sections[1:]] == [
        p.path[-1].split(" ", 1)[1] for p in doc("reisekosten.pdf").sections[1:]
    ]
    text = full_text(word)
    assert "Seite" not in text  # header and footer parts are not body text
    assert "| übrige Orte im Inland | 110 Euro |" in text.splitlines()


def test_docx_zip_bomb_is_refused_before_extracting():
    bomb = zip_bytes({"[Content_Types].xml": b"<Types/>", "word/document.xml": 200_000_000})
    assert len(bomb) < 1_000_000
    error = refused(bomb, ".docx")
    assert error.reason == "too large" and "uncompressed" in error.detail
    many = zip_bytes({f"word/media/{i}.bin": b"x" for i in range(50)} | {"word/document.xml": b"<x/>"})
    assert refused(many, ".docx", Limits(max_zip_members=20)).reason == "too large"


def test_docx_broken_files():
    data = load("it-policy.docx")
    assert refused(data[: len(data) // 2], ".docx").reason == "broken file"
    assert refused(b"not a zip at all", ".docx").reason == "broken file"
    assert refused(zip_bytes({"hello.txt": b"hi"}), ".docx").reason == "broken file"  # a zip, but not Word
    assert refused(zip_bytes({"word/document.xml": b"<w:document><unclosed"}), ".docx").reason == "broken file"
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512
    assert refused(ole, ".docx").reason == "unsupported"
    assert refused(ole + "EncryptedPackage".encode("utf-16-le"), ".docx").reason == "encrypted"


# -- HTML


def test_confluence_export_main_content_only():
    document = doc("confluence-vpn.html")
    assert (document.title, document.stand, document.language, document.url) == (
        "VPN-Zugang einrichten", "2026-03-12", None, None)
    assert [s.path for s in document.sections] == [
        (), ("Voraussetzungen",), ("Einrichtung",), ("Einrichtung", "Portale je Standort"), ("Störungen",)]
    text = full_text(document)
    for chrome in ("IT-Service Startseite", "Erstellt von", "Attachments", "VPN-Anleitung.pdf",
                   "Document generated by Confluence", "Atlassian", "rbtoc", "padding"):
        assert chrome not in text, chrome
    assert "[Multi-Faktor-Anmeldung](Multi-Faktor-Anmeldung_65550.html)" in text  # no base known: kept relative
    assert "| München | `vpn-muc.musterfirma.example` (ab April 2026) |" in text.splitlines()
    stoerungen = section(document, "Störungen").text
    assert "[IT-Servicedesk](https://servicedesk.musterfirma.example/portal/2)" in stoerungen
    assert "```\nglobalconnect --status\nglobalconnect --reconnect\n```" in stoerungen


def test_saved_intranet_page_main_content_only():
    document = doc("intranet-parental-leave.html")
    assert (document.title, document.stand, document.language, document.url) == (
        "Parental leave", "2026-02-17", "en", "https://intranet.acme.example/hr/parental-leave")
    assert [s.path for s in document.sections] == [
        (), ("How to apply",), ("Pay during leave",), ("Pay during leave", "Pension and benefits"), ("Questions?",)]
    text = full_text(document)
    for chrome in ("cookies", "Search the intranet", "Benefits", "Skip to content", "Last updated", "Share in Teams",
                   "Related pages", "Imprint", "SCRIPT", "NOSCRIPT", "HIDDEN", "TEMPLATE", "IFRAME", "Print this"):
        assert chrome not in text, chrome
    assert "[parental leave request](https://intranet.acme.example/hr/forms/parental-leave-request)" in text
    assert "[HR FAQ](https://intranet.acme.example/hr/faq)" in text  # relative, made absolute by the canonical URL
    assert "| 13–26 | 50 % of basic salary |" in text.splitlines()
    assert "  - the reduction is shown on the annual bonus letter" in text.splitlines()
    assert "fifth birthday" in section(document).text and "\n" not in section(document).text


HOSTILE = b"""<!doctype html><html lang="de-AT"><head><title>Hostile</title>
<script>alert('SCRIPT1')</script><base href="https://wiki.example.com/space/page/"></head>
<body onload="alert('ONLOAD')"><img src=x onerror="alert('ONERROR')">
<h1>Titel</h1><h2 onclick="alert('CLICK')">Abschnitt</h2>
<p>Text <a href="javascript:alert('JS')">klick</a> und <a href="other.html" onmouseover="x()">Link</a>.</p>
<iframe srcdoc="<p>SRCDOC</p>" src="https://evil.example/"></iframe>
<object data="x.swf">OBJECT</object><embed src="y"><svg><script>SVGSCRIPT</script><text>SVGTEXT</text></svg>
<script type="module">import 'MODULE'</script><style>p{color:red}STYLE</style>
<p>Ende</p><script>document.write("<h2>WRITTEN</h2>")</script>
"""


def test_html_with_scripts_iframes_and_event_handlers():
    document = convert(HOSTILE, ".html")
    assert document.language == "de"
    text = full_text(document)
    for bad in ("SCRIPT", "alert", "ONLOAD", "ONERROR", "CLICK", "SRCDOC", "OBJECT", "SVG", "MODULE", "STYLE",
                "WRITTEN", "javascript"):
        assert bad not in text, bad
    assert [s.path for s in document.sections] == [("Abschnitt",)]
    lines = document.sections[0].text.splitlines()
    assert lines[0] == "Text klick und [Link](https://wiki.example.com/space/page/other.html)."
    assert lines[-1] == "Ende"


def test_html_in_other_encodings():
    page = "<html><head>{meta}<title>Übersicht</title></head><body><h1>Übersicht</h1><p>Größe: 5 €, Maße ±2</p>"
    latin = page.format(meta='<meta charset="iso-8859-1">').encode("cp1252")
    assert "Größe: 5 €, Maße ±2" in full_text(convert(latin, ".htm"))
    undeclared = page.format(meta="").encode("cp1252")  # not UTF-8, nothing declared: read as windows-1252
    assert "Größe: 5 €, Maße ±2" in full_text(convert(undeclared, ".html"))
    bom16 = "\ufeff" + page.format(meta="")
    assert "Größe: 5 €, Maße ±2" in full_text(convert(bom16.encode("utf-16-le"), ".html"))
    wrong = page.format(meta='<meta charset="no-such-charset">').encode("utf-8")
    assert convert(wrong, ".html").title == "Übersicht"


def test_html_bad_inputs():
    assert refused(b"<p>x</p>" * 100, ".html", Limits(max_html_bytes=200)).reason == "too large"
    deep = b"<div>" * 20_000 + b"<p>tief</p>" + b"</div>" * 20_000
    assert "tief" in full_text(convert(deep, ".html"))
    assert convert(b"", ".html").sections == []
    assert convert(b"\0\xff\xfe garbage \x00", ".html").sections is not None


# -- fuzz: mutated sample files give a Document or a ConversionError, nothing else

SAMPLES = {name: load(name) for name in (
    "reisekosten.pdf", "security-handbook.pdf", "hausordnung.pdf", "restricted.pdf", "it-policy.docx",
    "homeoffice.docx", "confluence-vpn.html", "intranet-parental-leave.html",
)}
FUZZ = settings(max_examples=40, deadline=5000, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def mutated(draw) -> tuple[bytes, str]:
    name = draw(st.sampled_from(sorted(SAMPLES)))
    data = bytearray(SAMPLES[name])
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "delete", "duplicate"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 512))]
        else:
            data[at:at] = data[at:at + draw(st.integers(1, 4096))]
    return bytes(data), Path(name).suffix


@FUZZ
@given(mutated())
def test_fuzz_mutated_samples_give_a_document_or_a_conversion_error(sample):
    data, suffix = sample
    try:
        document = convert(data, suffix, Limits(max_seconds=10))
    except ConversionError as exc:
        assert exc.reason in REASONS
    else:
        assert isinstance(document, Document)
        for s in document.sections:
            assert s.text.strip() and isinstance(s.path, tuple)


@FUZZ
@given(st.binary(max_size=2048), st.sampled_from(sorted(SUFFIXES)))
def test_fuzz_random_bytes_give_a_document_or_a_conversion_error(data, suffix):
    try:
        assert isinstance(convert(data, suffix), Document)
    except ConversionError as exc:
        assert exc.reason in REASONS
