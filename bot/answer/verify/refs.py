"""KB-ID references in an answer written in citations mode: "[doc-01]", "[doc-01, doc-02]",
"[Source: doc-01]", or an id named in running text ("see doc-02"). The verifier reads them with
`find_refs`; the renderer replaces the very same spans with footnote markers, so both agree."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb_index.sentences import QUOTED

# Square brackets not followed by "(": "[text](url)" is a Markdown link, not a citation.
_BRACKET = re.compile(r"\[([^\[\]\n]{1,200})\](?!\()")
_PART_SPLIT = re.compile(r"\s*[,;]\s*|\s+(?:und|and|&)\s+")
_LABEL = re.compile(r"^(?:kb-id|kb|id|quelle|quellen|source|sources|siehe|see|vgl\.?|cf\.?)\s*:?\s+", re.I)
_ID_LIKE = re.compile(r"^[A-Za-z0-9][\w.\-/]*$")
# A bare id stands alone, not as a part of an address or a host name ("hb-01@example.com", "wiki.hb-01.de").
_ALONE = r"(?<![\w\-/@.])({})(?![\w\-/@]|\.\w)"


@dataclass(frozen=True)
class Ref:
    """One reference: a bracket (possibly several ids) or a bare mention of one id."""

    start: int
    end: int
    ids: tuple[str, ...]  # known KB-IDs, canonical spelling, without repeats
    unknown: tuple[str, ...]  # id-shaped tokens that are no context block's KB-ID
    bare: bool = False


class IdSet:
    """The KB-IDs of the context blocks, matched without regard to case (models upper-case ids)."""

    def __init__(self, ids: list[str]):
        self._canonical = {i.casefold(): i for i in ids}
        # Shapes of the known ids ("doc", 2 parts): a bare token of one that is not known is a made-up id.
        self._shapes = {_shape(i) for i in ids if _shape(i)}
        bare = sorted(filter(_unmistakable, ids), key=len, reverse=True)
        alternatives = "|".join(re.escape(i) for i in bare)
        self._bare = re.compile(_ALONE.format(alternatives), re.I) if bare else None

    def get(self, token: str) -> str | None:
        return self._canonical.get(token.casefold())

    def has_shape_of_known(self, token: str) -> bool:
        return _shape(token) in self._shapes

    def bare_mentions(self, text: str):
        return self._bare.finditer(text) if self._bare else iter(())


def _shape(token: str) -> tuple[str, int] | None:
    parts = token.casefold().split("-")
    return (parts[0], len(parts)) if len(parts) >= 2 and any(ch.isdigit() for ch in token) else None


def _unmistakable(token: str) -> bool:
    """With a digit or a separator: a one-word id ("faq") would match ordinary prose."""
    return any(ch.isdigit() or ch in "-_/." for ch in token)


def _bracket_ref(match: re.Match[str], known: IdSet, quoted: bool) -> Ref | None:
    """A bracket's reference; in a quotation only to a known id: "[2026-01-01]" there is the quoted text's."""
    ids: list[str] = []
    unknown: list[str] = []
    for part in _PART_SPLIT.split(match.group(1).strip()):
        token = _LABEL.sub("", part.strip()).strip()
        canonical = known.get(token)
        if canonical:
            if canonical not in ids:
                ids.append(canonical)
        elif _ID_LIKE.match(token) and _unmistakable(token) and not quoted:
            unknown.append(token)
    if not ids and not unknown:
        return None  # "[sic]", "[Hinweis]", "[Stand 2026]": editorial brackets, not citations
    return Ref(match.start(), match.end(), tuple(ids), tuple(unknown))


def find_refs(text: str, known: IdSet) -> list[Ref]:
    """All references in `text`, in order of position."""
    quotes = [m.span() for m in QUOTED.finditer(text)]
    refs = [r for m in _BRACKET.finditer(text) if (r := _bracket_ref(m, known, any(a < m.start() < b for a, b in quotes)))]
    taken = [m.span() for m in _BRACKET.finditer(text)]
    for m in known.bare_mentions(text):
        if not any(a <= m.start() < b for a, b in taken):
            refs.append(Ref(m.start(), m.end(), (known.get(m.group(1)) or m.group(1),), (), bare=True))
    for m in re.finditer(_ALONE.format(r"[A-Za-z]\w*(?:-\w+)+"), text):
        token = m.group(0)
        if not any(a <= m.start() < b for a, b in taken) and not known.get(token) and known.has_shape_of_known(token):
            refs.append(Ref(m.start(), m.end(), (), (token,), bare=True))
    return sorted(refs, key=lambda r: r.start)


def strip_refs(text: str, refs: list[Ref]) -> str:
    """`text` without its references: ids must not count as numbers ("doc-01" has a 1)."""
    out, position = [], 0
    for ref in refs:
        out.append(text[position : ref.start])
        position = ref.end
    out.append(text[position:])
    return "".join(out)


def ordered_ids(refs: list[Ref]) -> list[str]:
    """Known KB-IDs in order of first use."""
    seen: list[str] = []
    for ref in refs:
        seen.extend(i for i in ref.ids if i not in seen)
    return seen
