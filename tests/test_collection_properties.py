"""Generated collection files: every file citebot accepts means exactly one thing, and that is what it reports.

What a collection file means is who may read the collection: `bot.access.policy.readable` over the parsed
access, the function `citebot access` reports from. The files are generated from an intended audience, written in
the ways people write YAML (block and flow lists, quotes, `@` handles, comments, key order, CRLF, a BOM), and then
some of them are edited the ways people slip: a line commented out, a line given twice with another value, a value
blanked, a line deleted. For each one citebot accepts:

- written without a slip, it means the intended audience;
- the readings another YAML reader could give it agree: a duplicate key read first-wins or last-wins, and the
  file with its commented-out keys put back, are never read by fewer people than citebot lets in (a comment that
  switched a restriction off is refused, a comment that narrows it is not).

A fixed seed and a bounded number of examples keep it the same on every run and under a few seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from bot.access.policy import Directory, Kind, Person, readable
from kb_index.collection import Audience, CollectionAccess, CollectionError, parse_collection

PROPERTIES = settings(max_examples=250, deadline=None, database=None, derandomize=True,
                      suppress_health_check=[HealthCheck.too_slow])

handles = st.sampled_from(["payroll", "hr-team", "board.members", "ops_oncall", "S0PAYROLL", "S0HR7"])
channels = st.sampled_from(["C0HR", "C0PAYROLL", "G0BOARD"])
users = st.sampled_from(["U0CFO", "U0CEO", "W0AUDIT"])


@dataclass(frozen=True)
class Intent:
    """What the writer of a collection file means."""

    groups: tuple[str, ...]
    channels: tuple[str, ...]
    users: tuple[str, ...]
    guests: bool | None  # None: the key left out
    external: bool | None
    language: str | None

    @property
    def access(self) -> CollectionAccess:
        named = self.groups or self.channels or self.users
        audience = Audience(groups=self.groups, channels=self.channels, users=self.users) if named else None
        return CollectionAccess(audience=audience, guests=bool(self.guests), external=bool(self.external))


intents = st.builds(
    Intent,
    groups=st.lists(handles, max_size=3, unique=True).map(tuple),
    channels=st.lists(channels, max_size=2, unique=True).map(tuple),
    users=st.lists(users, max_size=2, unique=True).map(tuple),
    guests=st.none() | st.booleans(),
    external=st.none() | st.booleans(),
    language=st.none() | st.sampled_from(["en", "de"]),
)


@st.composite
def written(draw, intent: Intent) -> list[str]:
    """The lines of a collection file saying `intent`, in one of the ways people write one."""
    def value(name: str) -> str:
        at = "@" if name[:1].islower() and draw(st.booleans()) else ""
        # YAML cannot start a plain word with @: a handle written so is quoted (unquoted it is refused, not misread).
        quote = draw(st.sampled_from(["'", '"'] if at else ["", "'", '"']))
        return f"{quote}{at}{name}{quote}"

    def names(values: tuple[str, ...], indent: str) -> list[str]:
        if draw(st.booleans()):
            return [f"[{', '.join(value(v) for v in values)}]"]
        return ["", *(f"{indent}  - {value(v)}" for v in values)]

    top: list[list[str]] = []
    lists = [(k, v) for k, v in (("groups", intent.groups), ("channels", intent.channels),
                                 ("users", intent.users)) if v]
    if lists:
        block = ["audience:" + draw(st.sampled_from(["", "   # who may read it"]))]
        for key, values in draw(st.permutations(lists)):
            first, *rest = names(values, "  ")
            block += [f"  {key}: {first}".rstrip(), *rest]
        top.append(block)
    for key, flag in (("guests", intent.guests), ("external", intent.external)):
        if flag is not None:
            top.append([f"{key}: {'true' if flag else 'false'}"])
    if intent.language:
        top.append([f"language: {intent.language}"])
    lines = [line for block in draw(st.permutations(top)) for line in block]
    if draw(st.booleans()):
        lines.insert(0, "# Who may read this collection: see the knowledge-base docs")
    return lines


def as_bytes(lines: list[str], *, crlf: bool = False, bom: bool = False) -> bytes:
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    return ("\ufeff" if bom else "").encode() + text.encode()


@st.composite
def slipped(draw, lines: list[str]) -> list[str]:
    """`lines` after one to three slips of a writer's hand."""
    lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        slip = draw(st.sampled_from(["comment", "duplicate", "blank", "delete", "other value"]))
        if slip == "comment":
            lines[at] = re.sub(r"^(\s*)", r"\1# ", line, count=1)
        elif slip == "duplicate":
            lines.insert(draw(st.integers(0, len(lines))), line)
        elif slip == "other value" and ":" in line:
            key = line.split(":", 1)[0]
            other = draw(st.sampled_from(["[U0ANYONE]", "[everyone]", "true", "false", "[C0GENERAL]"]))
            lines.insert(draw(st.integers(0, len(lines))), f"{key}: {other}")
        elif slip == "blank" and ":" in line:
            lines[at] = line.split(":", 1)[0] + ":"
        elif slip == "delete":
            del lines[at]
    return lines


# ---------------------------------------------------------------- who reads it

def population(*accesses: CollectionAccess) -> tuple[list[Person], Directory]:
    """Someone in each group and channel the accesses name, each named user, and an outsider: each as a full
    member and as a guest; the directory says who is in which group and channel."""
    groups: dict[str, frozenset[str]] = {}
    chans: dict[str, frozenset[str]] = {}
    ids = {"U0OUTSIDER", "U0ANYONE"}
    for access in accesses:
        if access.audience is None:
            continue
        for g in access.audience.groups:
            groups[g] = frozenset({f"U0IN{g.upper()}"})
        for c in access.audience.channels:
            chans[c] = frozenset({f"U0IN{c}"})
        ids |= set(access.audience.users)
    ids |= {m for members in (*groups.values(), *chans.values()) for m in members}
    people = [Person(uid, kind) for uid in sorted(ids) for kind in (Kind.MEMBER, Kind.GUEST, Kind.EXTERNAL)]
    return people, Directory(groups=groups, channels=chans)


def readers(access: CollectionAccess, people: list[Person], directory: Directory) -> set[Person]:
    """Who may read a collection with `access`: as `citebot access` decides it."""
    return {p for p in people if readable(p, {"c": access}, directory)["c"].allowed}


def other_readings(data: bytes) -> list[CollectionAccess]:
    """What other readers could take the same bytes to mean: duplicate keys first-wins (PyYAML keeps the last),
    and the file with its commented-out keys put back. Readings that are not a valid collection are left out."""
    text = data.decode("utf-8-sig")
    uncommented = re.sub(r"(?m)^(\s*)#\s*(?=(audience|groups|channels|users|guests|external)\s*:)", r"\1", text)
    found = []
    for loader, candidate in ((_FirstWins, text), (yaml.SafeLoader, uncommented)):
        try:
            raw = yaml.load(candidate, Loader=loader)  # noqa: S506 - SafeLoader and a subclass of it
            found.append(parse_collection(yaml.safe_dump(raw or {}).encode()).access)
        except (yaml.YAMLError, CollectionError, TypeError):
            continue
    return found


class _FirstWins(yaml.SafeLoader):
    pass


def _first_wins(loader, node):
    pairs = [(loader.construct_object(k, deep=True), loader.construct_object(v, deep=True)) for k, v in node.value]
    out: dict = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


_FirstWins.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _first_wins)


# ---------------------------------------------------------------- the properties

@PROPERTIES
@given(data=st.data(), intent=intents, crlf=st.booleans(), bom=st.booleans())
def test_a_file_written_as_meant_means_what_was_meant(data, intent, crlf, bom):
    text = as_bytes(data.draw(written(intent)), crlf=crlf, bom=bom)
    access = parse_collection(text).access
    people, directory = population(intent.access)
    assert readers(access, people, directory) == readers(intent.access, people, directory), text


@PROPERTIES
@given(data=st.data(), intent=intents)
def test_a_slipped_file_is_refused_or_reads_one_way_only(data, intent):
    text = as_bytes(data.draw(slipped(data.draw(written(intent)))))
    try:
        access = parse_collection(text).access
    except CollectionError:
        return  # refused: the collection is closed until the file is fixed
    others = other_readings(text)
    people, directory = population(access, *others)
    admitted = readers(access, people, directory)
    for other in others:
        # Another reading may be narrower (a comment that narrows is fine) but never lets in fewer people.
        assert admitted <= readers(other, people, directory), (text, access, other)


@PROPERTIES
@given(st.binary(max_size=400) | st.text(st.sampled_from("audience:groups[]{}-#&*!@ \n\t'\"S0CU,~"), max_size=400)
       .map(str.encode))
def test_any_bytes_are_a_collection_or_an_error_with_a_line(data):
    try:
        parse_collection(data)
    except CollectionError as exc:
        assert exc.line >= 1 and exc.message
