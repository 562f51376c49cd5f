"""Confluence storage format -> plain HTML that the HTML reader (kb_index.formats.html) reads well.

A page's body comes from the REST API in Confluence's storage format: XHTML
with `ac:` and `ri:` elements for macros, links, images and tasks. Storage
format is usually well-formed XML, but not always (HTML entities such as
&nbsp; appear, old pages carry stray tags), so it is not parsed as XML: the
tolerant tokenizer of `html.parser` builds a small tree here, end tags close
the nearest open element of their name, and nothing it is given makes it
raise. An HTML5 parser would not do either: it does not honour `<x/>` on
unknown elements and moves `<table>`s out of paragraphs.

What each construct becomes:

- headings, paragraphs, lists, tables, emphasis, code, links: kept as HTML;
- `code` and `noformat` macros: `<pre>` with the plain-text body;
- panels (`info`, `note`, `warning`, `tip`, `panel`, `expand`): their body,
  the panel's title as a bold first paragraph;
- `status`: its title; `jira`: the issue key;
- `ac:link`: its link text, else the linked page's title or file name;
- `ac:task-list`: a list of the tasks' bodies;
- macros that only show something Confluence computes (`toc`, `children`,
  `attachments`, …), images, emoticons and anchors: dropped;
- any other macro: its rich-text body, if it has one.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Deeper markup is kept as its text: the tree (and rendering it) stays bounded.
_MAX_DEPTH = 150
_CDATA = re.compile(r"<!\[CDATA\[(.*?)(?:\]\]>|\Z)", re.DOTALL)
# Other marked sections (Word's <![if !supportLists]> in pasted text) would stop html.parser: removed.
_MARKED_SECTION = re.compile(r"<!\[[^>]*>?")

# HTML elements kept as they are (with no attributes, but for those in _ATTRIBUTES).
_KEPT = frozenset(
    "h1 h2 h3 h4 h5 h6 p br hr ul ol li table thead tbody tfoot tr th td caption strong b em i u s del ins "
    "strike sub sup code pre blockquote a dl dt dd div span small big cite q abbr kbd samp var mark".split()
)
_ATTRIBUTES = {"a": ("href",), "ol": ("start",), "td": ("colspan", "rowspan"), "th": ("colspan", "rowspan")}
_VOID = frozenset("br hr img col wbr input meta link area base source track embed param".split())
# Elements whose content is never the page's text.
_DROPPED_TAGS = frozenset(
    "script style head title img col colgroup object embed iframe svg math template "
    "ac:image ac:emoticon ac:placeholder ac:parameter ac:adf-attribute ac:task-id ac:task-status "
    "ac:task-uuid ri:page ri:attachment ri:user ri:url ri:space ri:content-entity ri:blog-post ri:shortcut".split()
)
_CODE_MACROS = frozenset({"code", "noformat"})
_PANEL_MACROS = frozenset({"info", "note", "warning", "tip", "panel", "expand"})
# Macros that show what Confluence computes or embeds at view time: nothing of the page's own text.
_DROPPED_MACROS = frozenset(
    "toc toc-zone children attachments anchor pagetree pagetreesearch recently-updated contentbylabel "
    "content-report-table livesearch include excerpt-include profile-picture gallery viewfile view-file "
    "multimedia widget html iframe create-from-template blog-posts space-details".split()
)


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[_Node | str] = field(default_factory=list)

    def first(self, tag: str) -> _Node | None:
        """The first child element named `tag`."""
        for child in self.children:
            if isinstance(child, _Node) and child.tag == tag:
                return child
        return None

    def text(self) -> str:
        """All text below this node, as it is written."""
        parts: list[str] = []
        stack: list[_Node | str] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                parts.append(item)
            else:
                stack.extend(reversed(item.children))
        return "".join(parts)


def storage_to_html(storage: str, title: str) -> str:
    """A whole HTML document of the page: `<title>` is `title`, the body the page's content."""
    body = _Renderer().children(_parse(storage))
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">'
        f"<title>{_escape(title)}</title></head>\n<body>\n{body}\n</body></html>\n"
    )


# -- parsing


class _TreeBuilder(HTMLParser):
    """html.parser's tokens into a _Node tree, forgiving anything ill-formed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.stack) > _MAX_DEPTH:
            return  # its text is still kept, under the deepest element open
        node = _Node(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self.stack) <= _MAX_DEPTH:
            self.stack[-1].children.append(_Node(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        # Close the nearest open element of that name (and any left open inside it); a stray end tag is ignored.
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def _parse(storage: str) -> _Node:
    # CDATA (the body of code macros) becomes escaped text, which the tokenizer reads back as it was.
    text = _CDATA.sub(lambda m: html.escape(m.group(1), quote=False), storage)
    text = _MARKED_SECTION.sub("", text)
    builder = _TreeBuilder()
    try:
        builder.feed(text)
        builder.close()
    except Exception:  # noqa: BLE001 - html.parser's own complaint about markup it cannot tokenize
        # Keep what was read; the rest of the page is kept as its plain text.
        builder.root.children.append(re.sub(r"<[^>]*>", " ", builder.rawdata))
    return builder.root


# -- rendering


class _Renderer:
    """The tree back to HTML, macros and links replaced by what a reader sees of them."""

    def children(self, node: _Node) -> str:
        return "".join(self.render(child) for child in node.children)

    def render(self, item: _Node | str) -> str:
        if isinstance(item, str):
            return _escape(item)
        tag = item.tag
        if tag in _DROPPED_TAGS:
            return ""
        if tag in ("ac:structured-macro", "ac:macro"):
            return self.macro(item)
        if tag == "ac:link":
            return _escape(_link_text(item))
        if tag == "ac:task-list":
            return f"<ul>{self.tasks(item)}</ul>"
        if tag == "ac:adf-extension":
            return self.adf_extension(item)
        if tag == "time":
            # Confluence's date picker: <time datetime="2026-03-01"/> shows its date.
            return _escape(item.attrs.get("datetime", "")) + self.children(item)
        if tag == "ac:plain-text-body":
            return ""  # only code-like macros show it; they read it themselves
        if tag in _KEPT:
            return self.element(item)
        # Layouts, rich-text bodies, inline comment markers, unknown HTML: their content.
        return self.children(item)

    def element(self, node: _Node) -> str:
        attrs = "".join(
            f' {name}="{_escape(value, quote=True)}"'
            for name in _ATTRIBUTES.get(node.tag, ())
            if (value := node.attrs.get(name, "").strip())
        )
        if node.tag in _VOID:
            return f"<{node.tag}{attrs}>"
        return f"<{node.tag}{attrs}>{self.children(node)}</{node.tag}>"

    def macro(self, node: _Node) -> str:
        name = node.attrs.get("ac:name", "").strip().lower()
        if name in _DROPPED_MACROS:
            return ""
        if name in _CODE_MACROS:
            body = node.first("ac:plain-text-body")
            code = body.text() if body is not None else self.text_of_body(node)
            return f"<pre>{_escape(code)}</pre>" if code.strip() else ""
        if name == "status":
            return _escape(_parameter(node, "title") or _parameter(node, "colour") or "")
        if name == "jira":
            return _escape(_parameter(node, "key") or "")
        body = node.first("ac:rich-text-body")
        content = self.children(body) if body is not None else ""
        if name in _PANEL_MACROS:
            title = _parameter(node, "title")
            heading = f"<p><strong>{_escape(title)}</strong></p>" if title else ""
            return f"<div>{heading}{content}</div>" if heading or content else ""
        # excerpt, details, section, column and any macro not known here: its body, if any.
        return content

    def text_of_body(self, node: _Node) -> str:
        body = node.first("ac:rich-text-body")
        return body.text() if body is not None else ""

    def tasks(self, node: _Node) -> str:
        items = []
        for child in node.children:
            if isinstance(child, _Node) and child.tag == "ac:task":
                body = child.first("ac:task-body")
                items.append(f"<li>{self.children(body) if body is not None else ''}</li>")
            elif isinstance(child, _Node) and child.tag == "ac:task-list":
                items.append(f"<li><ul>{self.tasks(child)}</ul></li>")
        return "".join(items)

    def adf_extension(self, node: _Node) -> str:
        """Cloud's newer elements (decision lists, note panels) come with an HTML fallback: read that."""
        fallback = node.first("ac:adf-fallback")
        if fallback is not None:
            return self.children(fallback)
        content = next((n.first("ac:adf-content") for n in node.children
                        if isinstance(n, _Node) and n.tag == "ac:adf-node"), None)
        return self.children(content) if content is not None else ""


def _parameter(node: _Node, name: str) -> str | None:
    for child in node.children:
        if isinstance(child, _Node) and child.tag == "ac:parameter" and child.attrs.get("ac:name") == name:
            value = " ".join(child.text().split())
            return value or None
    return None


def _link_text(node: _Node) -> str:
    """What a reader sees of an ac:link: its own text, else the page's title or the file's name."""
    for body in ("ac:link-body", "ac:plain-text-link-body"):
        found = node.first(body)
        if found is not None and found.text().strip():
            return found.text()
    for target, attribute in (("ri:page", "ri:content-title"), ("ri:blog-post", "ri:content-title"),
                              ("ri:attachment", "ri:filename"), ("ri:space", "ri:space-key"),
                              ("ri:url", "ri:value")):
        found = node.first(target)
        if found is not None and found.attrs.get(attribute, "").strip():
            return found.attrs[attribute]
    return ""  # a user mention or an anchor: no text of the page


def _escape(text: str, quote: bool = False) -> str:
    return html.escape(text, quote=quote)
