"""Word (.docx) -> Document: sections from heading styles, lists as items, tables as rows.

The zip is checked before anything is extracted: its member count and the
uncompressed sizes its directory declares, summed (Python's zipfile never
inflates a member past its declared size, so the sum bounds what is read; a
member that inflates further fails its CRC and the file is "broken"). The body
is converted by mammoth (document.xml with its numbering, hyperlinks and
tables, in reading order; headers, footers and comments left out; images not
read) into HTML, which the HTML reader's walk turns into blocks.

Headings: mammoth knows Word's built-in "Heading N" by name; the style map
given to it adds every paragraph style that is a heading by its name in
another language ("Überschrift 1", "Titre 1", ...), by its outline level, or
by the style it is based on, and the Title style, one level above Heading 1
(so a document's Title is its title heading, see blocks.py).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
import zipfile

import mammoth  # type: ignore[import-untyped]  # mammoth ships no type information
import mammoth.images  # type: ignore[import-untyped]
from selectolax.lexbor import LexborHTMLParser

from kb_index.formats import html
from kb_index.formats.blocks import Builder, Deadline, clean
from kb_index.formats.model import ConversionError, Document, Limits

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_CORE = {
    "title": "{http://purl.org/dc/elements/1.1/}title",
    "language": "{http://purl.org/dc/elements/1.1/}language",
    "modified": "{http://purl.org/dc/terms/}modified",
    "created": "{http://purl.org/dc/terms/}created",
}
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a compound file: an encrypted Office file, or an old .doc
_HEADING_NAME = re.compile(
    r"^(heading|überschrift|titre|titolo|título|encabezado|kop|rubrik|otsikko|nagłówek|nadpis|заголовок|见出し|标题)"
    r"\s*(\d)$",
    re.IGNORECASE,
)
_TITLE_NAME = re.compile(r"^(title|titel|titre|titolo|título|tytuł|заголовок документа)$", re.IGNORECASE)
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_SAFE_NAME = re.compile(r"^[^'\\\]\n]+$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def read(data: bytes, limits: Limits) -> Document:
    if data.startswith(_OLE):
        if "EncryptedPackage".encode("utf-16-le") in data[:1_000_000]:
            raise ConversionError("encrypted", "a password-protected Office file")
        raise ConversionError("unsupported", "an old binary Word file (.doc), not .docx")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ConversionError("broken file", f"not a zip archive ({exc})") from exc
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_zip_members:
            raise ConversionError("too large", f"{len(members):,} zip members (at most {limits.max_zip_members:,})")
        declared = sum(member.file_size for member in members)
        if declared > limits.max_uncompressed_bytes:
            raise ConversionError(
                "too large", f"{declared:,} bytes uncompressed (at most {limits.max_uncompressed_bytes:,})"
            )
        names = {member.filename for member in members}
        if "word/document.xml" not in names:
            raise ConversionError("broken file", "no word/document.xml: not a Word document")
        styles = _xml(archive, "word/styles.xml") if "word/styles.xml" in names else None
        core = _xml(archive, "docProps/core.xml") if "docProps/core.xml" in names else None

    deadline = Deadline(limits)
    result = mammoth.convert_to_html(
        io.BytesIO(data),
        style_map=_style_map(styles),
        convert_image=mammoth.images.img_element(lambda image: {}),  # images are not read
    )
    deadline.check()
    body = LexborHTMLParser(f"<body>{result.value}</body>").body
    builder = Builder(deadline)
    if body is not None:
        html.walk(body, builder)

    props = _core(core)
    title = props.get("title") or builder.title_heading()
    stand = _date(props.get("modified")) or _date(props.get("created"))
    language = html._language(props.get("language") or _default_language(styles))
    return Document(title=title or None, stand=stand, language=language, sections=builder.sections())


def _xml(archive: zipfile.ZipFile, name: str) -> ET.Element | None:
    try:
        return ET.fromstring(archive.read(name))
    except ET.ParseError as exc:
        raise ConversionError("broken file", f"{name} is not XML ({exc})") from exc


def _core(core: ET.Element | None) -> dict[str, str]:
    if core is None:
        return {}
    found = {}
    for key, tag in _CORE.items():
        node = core.find(tag)
        if node is not None and node.text and clean(node.text):
            found[key] = clean(node.text)
    return found


def _date(value: str | None) -> str | None:
    match = _DATE.match(value or "")
    return match.group(0) if match and not match.group(0).startswith("1601") else None


def _default_language(styles: ET.Element | None) -> str | None:
    if styles is None:
        return None
    lang = styles.find(f"{_W}docDefaults/{_W}rPrDefault/{_W}rPr/{_W}lang")
    return lang.get(f"{_W}val") if lang is not None else None


def _style_map(styles: ET.Element | None) -> str:
    """mammoth style map lines for the document's heading and title styles."""
    if styles is None:
        return ""
    by_id: dict[str, ET.Element] = {}
    for style in styles.iter(f"{_W}style"):
        if style.get(f"{_W}type") == "paragraph" and style.get(f"{_W}styleId"):
            by_id[style.get(f"{_W}styleId") or ""] = style

    def level(style_id: str, seen: int = 0) -> int | None:
        """0 for a title style, N for a heading of level N, None for a body style."""
        style = by_id.get(style_id)
        if style is None or seen > 10:
            return None
        name_node = style.find(f"{_W}name")
        name = (name_node.get(f"{_W}val") or "") if name_node is not None else ""
        for candidate in (name, style_id):
            if _TITLE_NAME.match(candidate.strip()):
                return 0
            heading = _HEADING_NAME.match(candidate.strip())
            if heading and int(heading.group(2)) > 0:
                return int(heading.group(2))
        outline = style.find(f"{_W}pPr/{_W}outlineLvl")
        if outline is not None:
            try:
                value = int(outline.get(f"{_W}val") or "9")
            except ValueError:
                value = 9
            return value + 1 if 0 <= value < 9 else None  # 9 is "body text"
        based = style.find(f"{_W}basedOn")
        return level(based.get(f"{_W}val") or "", seen + 1) if based is not None else None

    lines = []
    for style_id, style in by_id.items():
        found = level(style_id)
        if found is None:
            continue
        tag = f"h{min(found + 1, 6)}:fresh"
        name_node = style.find(f"{_W}name")
        name = (name_node.get(f"{_W}val") or "") if name_node is not None else ""
        if _SAFE_ID.match(style_id):
            lines.append(f"p.{style_id} => {tag}")
        if name and _SAFE_NAME.match(name):
            lines.append(f"p[style-name='{name}'] => {tag}")
    return "\n".join(lines)
