"""HTML -> Document: the page's main content only, sections from <h1>-<h6>.

Parsed with selectolax's Lexbor engine (an HTML5 parser in C: broken markup
is repaired the way a browser repairs it, and nothing is ever executed). The
main content is the Confluence export's #main-content, else <main> /
[role=main], else a single <article>, else <body>; inside it everything that is
not the page's own text is removed before the walk: scripts, styles,
<noscript>, <template>, iframes and embeds, forms and buttons, navigation,
site headers and footers, <aside>, hidden elements, cookie banners, share
buttons, tables of contents, breadcrumbs, Confluence's page metadata and
attachments box.

The walk (`walk`) is shared with the Word reader, which converts a .docx to
HTML with mammoth first.
"""

from __future__ import annotations

import codecs
import re
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from kb_index.formats.blocks import Builder, Deadline, clean
from kb_index.formats.model import ConversionError, Document, Limits

# Elements whose content is never the page's text.
_DROP_TAGS = (
    "script, style, noscript, template, iframe, frame, frameset, object, embed, applet, canvas, svg, math, "
    "video, audio, map, form, button, input, select, textarea, nav, aside, dialog, link, meta, head"
)
# id/class words of page chrome.
_CHROME = re.compile(
    r"(^|[\s_-])(cookies?|consent|gdpr|cc-banner|breadcrumbs?|breadcrumb-section|share|sharing|social|skip-link|"
    r"toc|toc-macro|pagination|page-metadata|pageSection|attachments|comments?|footer|site-header|navbar|menu|"
    r"sidebar|print-button|visually-hidden|sr-only|screen-reader-text)($|[\s_-])",
    re.IGNORECASE,
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    "p div section article main header footer address blockquote ul ol li dl dt dd table thead tbody tfoot tr td th "
    "caption colgroup col pre figure figcaption hr h1 h2 h3 h4 h5 h6 details summary center fieldset legend body html"
    .split()
)
_MAX_DEPTH = 200  # deeper markup is read as plain text, not walked
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MONTHS = {
    name: i + 1
    for names in (
        "januar februar märz april mai juni juli august september oktober november dezember",
        "january february march april may june july august september october november december",
        "jan feb mar apr may jun jul aug sep oct nov dec",
        "jan feb mär apr mai jun jul aug sep okt nov dez",
    )
    for i, name in enumerate(names.split())
}
_DE_DATE = re.compile(r"(\d{1,2})\.\s*([A-Za-zäÄ]+)\.?\s+(\d{4})")
_EN_DATE = re.compile(r"([A-Za-z]+)\.?\s+(\d{1,2}),\s+(\d{4})")


def read(data: bytes, limits: Limits) -> Document:
    if len(data) > limits.max_html_bytes:
        raise ConversionError("too large", f"{len(data):,} bytes of HTML (at most {limits.max_html_bytes:,})")
    text = decode(data)
    deadline = Deadline(limits)
    tree = LexborHTMLParser(text)
    root = tree.root
    if root is None:
        raise ConversionError("broken file", "no HTML document")
    html = tree.css_first("html")
    head = tree.css_first("head")
    base_tag = head.css_first("base[href]") if head is not None else None
    canonical = _canonical(head)
    base = _attr(base_tag, "href") or canonical
    language = _language(_attr(html, "lang") or _attr(html, "xml:lang"))
    title_tag = tree.css_first("title")
    page_title = clean(title_tag.text()) if title_tag is not None else ""
    confluence_title = tree.css_first("#title-text")
    stand = _stand(tree)

    main = _main(tree)
    builder = Builder(deadline)
    if main is not None:
        _strip(main)
        walk(main, builder, base=base)

    title: str | None
    if confluence_title is not None and clean(confluence_title.text()):
        title = _confluence_title(clean(confluence_title.text()), page_title)
    else:
        heading = builder.title_heading()
        title = heading if heading and heading.casefold() in page_title.casefold() else page_title or heading
    return Document(title=title or None, stand=stand, language=language, sections=builder.sections(), url=canonical)


def decode(data: bytes) -> str:
    """The page's text: by its BOM, else its <meta charset>, else UTF-8, else windows-1252 (the web's default)."""
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace")
    declared = _CHARSET.search(data[:4096])
    if declared:
        try:
            name = codecs.lookup(declared.group(1).decode("ascii")).name
        except (LookupError, UnicodeDecodeError):
            name = ""
        if name and not name.startswith("utf-16"):  # a page read as bytes here cannot be UTF-16 without a BOM
            if name == "latin-1" or name == "iso8859-1":
                name = "cp1252"  # as browsers read it
            return data.decode(name, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _attr(node: LexborNode | None, name: str) -> str | None:
    if node is None:
        return None
    value = node.attributes.get(name)
    return value.strip() if value and value.strip() else None


def _canonical(head: LexborNode | None) -> str | None:
    if head is None:
        return None
    for link in head.css("link[rel][href]"):
        if "canonical" in (link.attributes.get("rel") or "").lower().split():
            href = _attr(link, "href")
            if href and urlsplit(href).scheme in ("http", "https"):
                return href
    return None


def _language(value: str | None) -> str | None:
    if not value:
        return None
    primary = value.replace("_", "-").split("-")[0].lower()
    return primary if primary.isalpha() and 2 <= len(primary) <= 3 else None


def _confluence_title(heading: str, page_title: str) -> str:
    """A Confluence export's page title without its "Space : " prefix."""
    space, sep, rest = heading.partition(" : ")
    return rest.strip() if sep and rest.strip() else heading


def _stand(tree: LexborHTMLParser) -> str | None:
    """The page's own date: its modified (else published) time in the <meta> tags, else Confluence's
    "zuletzt geändert ... am 12. März 2026" / "last updated ... on Mar 12, 2026" line."""
    for selector in (
        'meta[property="article:modified_time"]', 'meta[name="dcterms.modified"]', 'meta[name="last-modified"]',
        'meta[itemprop="dateModified"]', 'meta[property="article:published_time"]', 'meta[name="dcterms.created"]',
        'meta[name="date"]', 'meta[itemprop="datePublished"]',
    ):
        node = tree.css_first(selector)
        found = _DATE.search(_attr(node, "content") or "")
        if found:
            return found.group(0)
    meta = tree.css_first(".page-metadata")
    if meta is not None:
        text = clean(meta.text())
        for match in _DE_DATE.finditer(text):
            month = _MONTHS.get(match.group(2).lower())
            if month:
                return f"{match.group(3)}-{month:02d}-{int(match.group(1)):02d}"
        for match in _EN_DATE.finditer(text):
            month = _MONTHS.get(match.group(1).lower())
            if month:
                return f"{match.group(3)}-{month:02d}-{int(match.group(2)):02d}"
    return None


def _main(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in ("#main-content", "main", '[role="main"]'):
        node = tree.css_first(selector)
        if node is not None:
            return node
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0]
    return tree.body


def _strip(main: LexborNode) -> None:
    """Removes from `main` every element that is not the page's own text."""
    for node in main.css(_DROP_TAGS):
        node.remove()
    for node in main.css("[hidden], [aria-hidden=true], [style]"):
        if node.attributes.get("style") is None or _HIDDEN_STYLE.search(node.attributes.get("style") or ""):
            node.remove()
    for node in main.css("[id], [class], [role]"):
        if node.parent is None:
            continue
        words = f"{node.attributes.get('id') or ''} {node.attributes.get('class') or ''}"
        role = (node.attributes.get("role") or "").lower()
        chrome = _CHROME.search(words) or role in ("navigation", "banner", "contentinfo", "complementary", "dialog", "search")
        if chrome and node.tag not in ("html", "body") and node.mem_id != main.mem_id:
            node.remove()
    for node in main.css("header, footer"):
        # A site's header and footer are chrome; an article's header keeps its headings.
        headings = node.css("h1, h2, h3, h4, h5, h6")
        for heading in headings:
            node.insert_before(heading)
        node.remove()


def walk(root: LexborNode, builder: Builder, base: str | None = None) -> None:
    """Feeds the block content under `root` to `builder` in reading order."""
    _Walker(builder, base).container(root, 0, quote=0)


class _Walker:
    def __init__(self, builder: Builder, base: str | None):
        self.builder = builder
        self.base = base
        self.nodes = 0

    def tick(self) -> None:
        self.nodes += 1
        if self.nodes % 200 == 0:
            self.builder.deadline.check()

    def container(self, node: LexborNode, depth: int, quote: int) -> None:
        """Block children in order; runs of inline content between them are paragraphs."""
        inline: list[str] = []

        def flush() -> None:
            if inline:
                self.builder.paragraph("".join(inline), quote=quote)
                inline.clear()

        child = node.child
        while child is not None:
            self.tick()
            tag = child.tag or ""
            if tag in _BLOCKS:
                flush()
                self.block(child, depth + 1, quote)
            elif tag != "br" or inline:
                inline.append(self.inline(child, depth + 1))
            child = child.next
        flush()

    def block(self, node: LexborNode, depth: int, quote: int) -> None:
        tag = node.tag or ""
        if depth > _MAX_DEPTH:
            self.builder.paragraph(node.text(), quote=quote)
        elif tag in _HEADINGS:
            self.builder.heading(_HEADINGS[tag], self.inline_children(node, depth))
        elif tag in ("p", "dt", "dd", "summary", "figcaption", "caption", "legend", "address"):
            if any((c.tag or "") in _BLOCKS for c in _children(node)):
                self.container(node, depth, quote)
            else:
                self.builder.paragraph(self.inline_children(node, depth), quote=quote)
        elif tag in ("ul", "ol"):
            self.list(node, depth, 1, quote)
        elif tag == "li":  # an item outside a list
            self.list_item(node, depth, 1, None, quote)
        elif tag == "table":
            self.table(node, depth)
        elif tag == "pre":
            self.builder.code(node.text(deep=True))
        elif tag == "blockquote":
            self.container(node, depth, quote + 1)
        elif tag in ("hr", "col", "colgroup"):
            return
        else:
            self.container(node, depth, quote)

    def list(self, node: LexborNode, depth: int, level: int, quote: int) -> None:
        ordered = node.tag == "ol"
        number = _int(node.attributes.get("start"), 1) if ordered else None
        for child in _children(node):
            self.tick()
            if child.tag == "li":
                self.list_item(child, depth + 1, level, number, quote)
                if number is not None:
                    number += 1
            elif child.tag in ("ul", "ol"):
                self.list(child, depth + 1, level + 1, quote)

    def list_item(self, node: LexborNode, depth: int, level: int, number: int | None, quote: int) -> None:
        text: list[str] = []
        nested: list[LexborNode] = []
        for child in _children(node):
            tag = child.tag or ""
            if tag in _BLOCKS and tag not in ("p", "div"):
                nested.append(child)
            elif tag in ("p", "div"):
                text.append(" " + self.inline_children(child, depth + 1) + " ")
            else:
                text.append(self.inline(child, depth + 1))
        item = clean("".join(text))
        if item:
            if quote:
                self.builder.paragraph(item, quote=quote)
            else:
                self.builder.item(item, depth=level, number=number)
        for child in nested:
            if child.tag in ("ul", "ol"):
                self.list(child, depth + 1, level + 1, quote)
            else:
                self.block(child, depth + 1, quote)

    def table(self, node: LexborNode, depth: int) -> None:
        caption = node.css_first("caption")
        if caption is not None:
            self.builder.paragraph(self.inline_children(caption, depth + 1))
        rows: list[list[str]] = []
        for tr in node.css("tr"):
            self.tick()
            if _closest_table(tr) is not None and _closest_table(tr).mem_id != node.mem_id:  # type: ignore[union-attr]
                continue  # a nested table's row: its cell's text is in the outer cell
            cells = [c for c in _children(tr) if c.tag in ("td", "th")]
            rows.append([self.cell(c, depth + 1) for c in cells])
        self.builder.table(rows)

    def cell(self, node: LexborNode, depth: int) -> str:
        parts = []
        for child in _children(node):
            tag = child.tag or ""
            if tag in _BLOCKS:
                parts.append(" " + (self.inline_children(child, depth + 1) if tag != "table" else clean(child.text())) + " ")
            else:
                parts.append(self.inline(child, depth + 1))
        return clean("".join(parts))

    def inline_children(self, node: LexborNode, depth: int) -> str:
        return "".join(self.inline(child, depth + 1) for child in _children(node))

    def inline(self, node: LexborNode, depth: int) -> str:
        """Inline Markdown for `node`: text, **strong**, *em*, `code`, [links](url)."""
        tag = node.tag or ""
        if tag == "-text":
            return node.text(deep=False)
        if tag == "-comment" or tag in ("img", "wbr"):
            return ""
        if tag == "br":
            return " "
        if depth > _MAX_DEPTH:
            return node.text()
        inner = self.inline_children(node, depth)
        if tag in _BLOCKS:
            return " " + inner + " "
        text = clean(inner)
        if not text:
            return inner if inner.isspace() else ""
        lead = " " if inner[:1].isspace() else ""
        trail = " " if inner[-1:].isspace() else ""
        if tag in ("strong", "b"):
            return f"{lead}**{text}**{trail}"
        if tag in ("em", "i"):
            return f"{lead}*{text}*{trail}"
        if tag in ("code", "kbd", "samp", "tt"):
            plain = clean(node.text())
            fence = "``" if "`" in plain else "`"
            return f"{lead}{fence}{plain}{fence}{trail}"
        if tag == "a":
            href = self.href(node.attributes.get("href"))
            if href and "](" not in text:
                label = text.replace("[", "\\[").replace("]", "\\]")
                return f"{lead}[{label}]({href}){trail}"
        return inner

    def href(self, value: str | None) -> str | None:
        """The link's address (absolute where the page's base is known); None for in-page
        anchors and javascript:/data: links, which are kept as their text."""
        if not value or not value.strip() or value.strip().startswith("#"):
            return None
        href = value.strip()
        scheme = urlsplit(href).scheme.lower() if ":" in href else ""
        if scheme and scheme not in ("http", "https", "mailto", "tel", "ftp"):
            return None
        if self.base and not scheme:
            try:
                href = urljoin(self.base, href)
            except ValueError:
                return None
        return href.replace(" ", "%20").replace("(", "%28").replace(")", "%29").replace("<", "%3C").replace(">", "%3E")


def _children(node: LexborNode):
    child = node.child
    while child is not None:
        yield child
        child = child.next


def _closest_table(node: LexborNode) -> LexborNode | None:
    parent = node.parent
    while parent is not None:
        if parent.tag == "table":
            return parent
        parent = parent.parent
    return None


def _int(value: str | None, default: int) -> int:
    try:
        return max(0, min(int((value or "").strip()), 10**9))
    except ValueError:
        return default
