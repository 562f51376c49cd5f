"""The Confluence connector (kb_index.sources.confluence) against a fake Confluence over real HTTP.

The storage-format converter first (its HTML read by the HTML reader, as the
sync reads it), then listing (pagination, who may read, label exclusion,
attachments), fetching, retries and failures, Data Center, and `check`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kb_index.formats import convert
from kb_index.sources import confluence
from kb_index.sources.config import ConfluenceSource
from kb_index.sources.confluence import ConfluenceConnector
from kb_index.sources.confluence_storage import storage_to_html
from kb_index.sources.http import SourceUnavailable
from kb_index.sources.model import DocumentError, Grant, Listed, SourceError
from tests.fakes.confluence_server import FakeConfluence

FORMATS = Path(__file__).parent / "data" / "formats"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
EVERYONE_GROUP = Grant(everyone=True, groups=frozenset({"confluence-users"}))


# -- fixtures


class Waits(list[float]):
    """A `sleep` that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def wiki() -> Iterator[FakeConfluence]:
    with FakeConfluence(max_limit=25) as fake:
        fake.add_space("HR", "Human Resources", groups=["confluence-users"])
        yield fake


@pytest.fixture
def datacenter() -> Iterator[FakeConfluence]:
    with FakeConfluence(deployment="data_center", context="", max_limit=20) as fake:
        yield fake


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKI_EMAIL", "sync@example.com")
    monkeypatch.setenv("WIKI_TOKEN", "api-token")
    monkeypatch.setenv("WIKI_PAT", "pat-token")


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def connect(waits: Waits) -> Iterator[Callable[..., ConfluenceConnector]]:
    """Makes a connector for a fake, sources.yml fields overridable; closes them all at the end."""
    made: list[ConfluenceConnector] = []

    def make(fake: FakeConfluence, **fields: Any) -> ConfluenceConnector:
        credentials = ({"email": "WIKI_EMAIL", "api_token": "WIKI_TOKEN"} if fake.deployment == "cloud"
                       else {"token": "WIKI_PAT"})
        config = {"type": "confluence", "url": fake.url, "deployment": fake.deployment, "spaces": ["HR"],
                  "collection": "handbook", "credentials": credentials, "groups": {"Confluence-Users": "everyone"},
                  **fields}
        connector = ConfluenceConnector("wiki", ConfluenceSource.model_validate(config), sleep=waits)
        made.append(connector)
        return connector

    yield make
    for connector in made:
        connector.close()


def by_title(listing: Iterator[Listed]) -> dict[str, Listed]:
    return {listed.title: listed for listed in listing}


def section_texts(html: str) -> dict[tuple[str, ...], str]:
    document = convert(html.encode(), ".html")
    return {s.path: s.text for s in document.sections}


# -- storage format -> HTML


def test_storage_headings_tables_lists_and_code_read_as_sections() -> None:
    storage = (
        "<h1>Reisen</h1><p>Vorab&nbsp;genehmigen.</p>"
        "<h2>Sätze</h2><table><tbody><tr><th><p>Posten</p></th><th>Satz</th></tr>"
        "<tr><td><p>Hotel</p></td><td>120 EUR</td></tr></tbody></table>"
        "<h2>Ablauf</h2><ol><li>Antrag</li><li>Reise<ul><li>Belege sammeln</li></ul></li></ol>"
        '<ac:structured-macro ac:name="code" ac:schema-version="1"><ac:parameter ac:name="language">sh</ac:parameter>'
        '<ac:plain-text-body><![CDATA[if [ "$a" < 3 ]; then echo "<ok>"; fi]]></ac:plain-text-body>'
        "</ac:structured-macro>"
        '<ac:structured-macro ac:name="noformat"><ac:plain-text-body><![CDATA[raw  text]]></ac:plain-text-body>'
        "</ac:structured-macro>"
    )
    html = storage_to_html(storage, "Reiserichtlinie")
    assert "<title>Reiserichtlinie</title>" in html
    sections = section_texts(html)
    assert sections[()] == "Vorab genehmigen."
    assert sections[("Sätze",)] == "| Posten | Satz |\n| --- | --- |\n| Hotel | 120 EUR |"
    assert sections[("Ablauf",)] == (
        '1. Antrag\n2. Reise\n  - Belege sammeln\n\n```\nif [ "$a" < 3 ]; then echo "<ok>"; fi\n```\n\n'
        "```\nraw  text\n```"
    )


def test_storage_panels_status_jira_links_and_tasks() -> None:
    storage = (
        '<p>Stand: <ac:structured-macro ac:name="status"><ac:parameter ac:name="colour">Green</ac:parameter>'
        '<ac:parameter ac:name="title">FREIGEGEBEN</ac:parameter></ac:structured-macro>, Ticket '
        '<ac:structured-macro ac:name="jira"><ac:parameter ac:name="server">Jira</ac:parameter>'
        '<ac:parameter ac:name="key">HR-42</ac:parameter></ac:structured-macro>.</p>'
        '<ac:structured-macro ac:name="warning"><ac:parameter ac:name="title">Achtung</ac:parameter>'
        "<ac:rich-text-body><p>Fristen beachten.</p></ac:rich-text-body></ac:structured-macro>"
        '<ac:structured-macro ac:name="expand"><ac:rich-text-body><p>Mehr Details.</p></ac:rich-text-body>'
        "</ac:structured-macro>"
        '<p>Siehe <ac:link><ri:page ri:content-title="Spesen" /></ac:link>, '
        '<ac:link><ri:page ri:content-title="Formulare"/><ac:plain-text-link-body><![CDATA[das Formular]]>'
        '</ac:plain-text-link-body></ac:link> und <ac:link><ri:attachment ri:filename="antrag.pdf"/></ac:link>'
        '<ac:emoticon ac:name="smile"/> heute.</p>'
        "<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete</ac:task-status>"
        "<ac:task-body>Belege scannen</ac:task-body></ac:task><ac:task><ac:task-id>2</ac:task-id>"
        "<ac:task-status>incomplete</ac:task-status><ac:task-body>Antrag senden</ac:task-body></ac:task>"
        "</ac:task-list>"
        '<ac:structured-macro ac:name="details"><ac:rich-text-body><p>Eigentümer: HR</p></ac:rich-text-body>'
        "</ac:structured-macro>"
        '<p>Gültig ab <time datetime="2026-04-01" />.</p>'
    )
    [text] = section_texts(storage_to_html(storage, "Spesen")).values()
    assert text.split("\n\n") == [
        "Stand: FREIGEGEBEN, Ticket HR-42.",
        "**Achtung**",
        "Fristen beachten.",
        "Mehr Details.",
        "Siehe Spesen, das Formular und antrag.pdf heute.",
        "- Belege scannen\n- Antrag senden",
        "Eigentümer: HR",
        "Gültig ab 2026-04-01.",
    ]


def test_storage_drops_macros_without_text_and_keeps_unknown_bodies() -> None:
    storage = (
        '<ac:structured-macro ac:name="toc"><ac:parameter ac:name="maxLevel">2</ac:parameter></ac:structured-macro>'
        '<ac:structured-macro ac:name="children"/><ac:structured-macro ac:name="attachments"/>'
        '<p><ac:structured-macro ac:name="anchor"><ac:parameter ac:name="">oben</ac:parameter>'
        "</ac:structured-macro>Text</p>"
        '<ac:image ac:height="250"><ri:attachment ri:filename="diagramm.png" /></ac:image>'
        '<ac:structured-macro ac:name="some-vendor-macro"><ac:parameter ac:name="secret">nicht zeigen</ac:parameter>'
        "<ac:rich-text-body><p>Sichtbarer Inhalt</p></ac:rich-text-body></ac:structured-macro>"
        '<ac:layout><ac:layout-section ac:type="two_equal"><ac:layout-cell><p>Links</p></ac:layout-cell>'
        "<ac:layout-cell><p>Rechts</p></ac:layout-cell></ac:layout-section></ac:layout>"
    )
    html = storage_to_html(storage, "Seite")
    [text] = section_texts(html).values()
    assert text.split("\n\n") == ["Text", "Sichtbarer Inhalt", "Links", "Rechts"]
    for gone in ("maxLevel", "oben", "diagramm", "nicht zeigen", "ac:"):
        assert gone not in html


@pytest.mark.parametrize("storage, kept", [
    ("", None),
    ("<p>offen <b>fett", "offen **fett**"),
    ("</p></div>lose<p>", "lose"),
    ("<p>a &lt; b &amp;&nbsp;c &bogus; &#x1F600;</p>", "a < b & c &bogus; \U0001F600"),
    ("<![CDATA[ohne Ende", "ohne Ende"),
    ("<![if !supportLists]>Punkt<![endif]>", "Punkt"),
    ("<p>Vor</p><!-- offen", "Vor"),
    ('<ac:structured-macro ac:name="code"><ac:plain-text-body>kein cdata</ac:plain-text-body>', "kein cdata"),
    ("<ac:structured-macro><ac:rich-text-body><p>ohne Namen</p>", "ohne Namen"),
    ("<p>" * 500 + "tief", "tief"),
    ("\x00\ufffd<<>>", None),
    ('<ac:link><ri:user ri:account-id="123"/></ac:link> erwähnt', "erwähnt"),
])
def test_storage_odd_input_does_not_crash(storage: str, kept: str | None) -> None:
    html = storage_to_html(storage, "Odd <Title> & co")
    assert "<title>Odd &lt;Title&gt; &amp; co</title>" in html
    document = convert(html.encode(), ".html")
    text = "\n".join(s.text for s in document.sections)
    if kept is not None:
        assert kept in text


# -- listing


def test_listing_follows_next_links_across_search_pages(wiki: FakeConfluence, connect) -> None:
    ids = [wiki.add_page("HR", f"Seite {n:03d}") for n in range(60)]
    connector = connect(wiki)
    listed = list(connector.listing())
    assert [item.id for item in listed] == ids  # 25 a call: three search calls
    assert {item.version for item in listed} == {"1"}
    assert all(item.grants == (EVERYONE_GROUP,) and item.unreadable is None for item in listed)
    searches = wiki.calls("/rest/api/content/search")
    assert len(searches) == 3 + 1  # the pages' three, and one for attachments
    assert [c.query.get("start") for c in searches[:3]] == ["0", "25", "50"]
    assert all(c.query["cql"] == 'space="HR" and type=page' for c in searches[:3])
    assert connector.calls.counts == {"space": 1, "list": 4}


def test_listing_gives_paths_versions_and_titles(wiki: FakeConfluence, connect) -> None:
    home = wiki.add_page("HR", "Start")
    travel = wiki.add_page("HR", "Reisen", parent=home)
    rates = wiki.add_page("HR", "Sätze", parent=travel)
    wiki.edit_page(rates, body="<p>neu</p>")
    wiki.edit_page(rates, body="<p>neuer</p>")
    listed = by_title(connect(wiki).listing())
    assert listed["Sätze"] == Listed(id=rates, version="3", title="Sätze", grants=(EVERYONE_GROUP,),
                                     path=("Start", "Reisen"))
    assert listed["Start"].path == ()


def test_space_grant_from_groups_users_and_anonymous(wiki: FakeConfluence, connect) -> None:
    wiki.add_user("acc-anna", "Anna@Example.com")
    wiki.add_space("PAY", groups=["Payroll-Team"], users=["acc-anna"])
    wiki.add_space("PUB", anonymous=True)
    wiki.add_page("PAY", "Gehälter")
    wiki.add_page("PUB", "Öffentlich")
    listed = by_title(connect(wiki, spaces=["PAY", "PUB"]).listing())
    # Space editors' "create page" entries do not make them readers; names lower-cased.
    assert listed["Gehälter"].grants == (Grant(users=frozenset({"anna@example.com"}),
                                               groups=frozenset({"payroll-team"})),)
    assert listed["Öffentlich"].grants == (Grant(everyone=True),)


def test_group_not_mapped_to_everyone_stays_a_group(wiki: FakeConfluence, connect) -> None:
    wiki.add_page("HR", "Seite")
    [listed] = connect(wiki, groups={"hr-team": "payroll"}).listing()
    assert listed.grants == (Grant(groups=frozenset({"confluence-users"})),)


def test_restricted_ancestors_narrow_their_children(wiki: FakeConfluence, connect) -> None:
    wiki.add_user("acc-hidden", "boss@example.com", email_shown="lookup")
    home = wiki.add_page("HR", "Start")
    payroll = wiki.add_page("HR", "Lohn", parent=home, groups=["Payroll"])
    salaries = wiki.add_page("HR", "Gehälter", parent=payroll, users=["acc-hidden"])
    wiki.add_page("HR", "Tabelle", parent=salaries)
    wiki.add_page("HR", "Boni", parent=payroll, users=["acc-hidden"])
    connector = connect(wiki)
    listed = by_title(connector.listing())
    payroll_grant = Grant(groups=frozenset({"payroll"}))
    boss = Grant(users=frozenset({"boss@example.com"}))
    assert listed["Start"].grants == (EVERYONE_GROUP,)
    assert listed["Lohn"].grants == (EVERYONE_GROUP, payroll_grant)
    assert listed["Gehälter"].grants == (EVERYONE_GROUP, payroll_grant, boss)
    assert listed["Tabelle"].grants == (EVERYONE_GROUP, payroll_grant, boss)
    assert listed["Boni"].grants == (EVERYONE_GROUP, payroll_grant, boss)
    # The hidden address was looked up once, for both pages restricted to that user.
    [lookup] = wiki.calls("/rest/api/user")
    assert lookup.query == {"accountId": "acc-hidden"}


def test_user_without_an_address_is_counted_not_named(wiki: FakeConfluence, connect) -> None:
    wiki.add_user("acc-ghost", "ghost@example.com", email_shown="never")
    wiki.add_user("acc-open", "open@example.com")
    wiki.add_page("HR", "Geheim", users=["acc-ghost", "acc-open", "acc-unknown"])
    [listed] = connect(wiki).listing()
    assert listed.grants[1] == Grant(users=frozenset({"open@example.com"}), unnamed=2)


def test_excluded_label_leaves_the_page_out_but_its_restriction_on_its_children(
        wiki: FakeConfluence, connect) -> None:
    draft = wiki.add_page("HR", "Entwurf", labels=["draft"], groups=["board"])
    wiki.add_page("HR", "Unterseite", parent=draft)
    wiki.add_page("HR", "Archiv", labels=["ARCHIVED"])
    wiki.add_page("HR", "Normal", labels=["policy"])
    listed = by_title(connect(wiki, exclude_labels=["Draft", "archived"]).listing())
    assert sorted(listed) == ["Normal", "Unterseite"]
    assert listed["Unterseite"].grants == (EVERYONE_GROUP, Grant(groups=frozenset({"board"})))
    assert listed["Unterseite"].path == ("Entwurf",)


@pytest.mark.parametrize("how, reason", [
    ("absent", "the space's permissions are not shown to the sync's account"),
    ("forbidden", "the space's permissions cannot be read (HTTP 403)"),
])
def test_unreadable_space_permissions_list_every_document_unreadable(
        wiki: FakeConfluence, connect, how: str, reason: str) -> None:
    page = wiki.add_page("HR", "Seite")
    wiki.add_attachment(page, "a.pdf", b"%PDF-1.4")
    wiki.hide_permissions("HR", how)  # type: ignore[arg-type]
    listed = list(connect(wiki).listing())
    assert [(item.title, item.grants, item.unreadable) for item in listed] == [
        ("Seite", (), reason), ("a.pdf", (), reason)]


def test_ancestor_outside_the_listing_is_asked_for_alone(wiki: FakeConfluence, connect) -> None:
    wiki.add_space("OTHER")
    folder = wiki.add_page("OTHER", "Ordner", groups=["legal"])
    child = wiki.add_page("HR", "Vertrag")
    wiki.pages[child].parent = folder  # as a Cloud folder: an ancestor the page search does not list
    connector = connect(wiki)
    [listed] = connector.listing()
    assert listed.grants == (EVERYONE_GROUP, Grant(groups=frozenset({"legal"})))
    assert connector.calls.counts["restriction"] == 1

    wiki.fail_next(f"/rest/api/content/{folder}", 404)
    [unreadable] = connect(wiki).listing()
    assert (unreadable.grants, unreadable.unreadable) == ((), "the view restrictions of 'Ordner' above it cannot "
                                                               "be read (HTTP 404)")


def test_moving_and_restricting_change_path_and_grants(wiki: FakeConfluence, connect) -> None:
    secret = wiki.add_page("HR", "Vertraulich", groups=["hr-leads"])
    page = wiki.add_page("HR", "Kündigungen")
    wiki.move_page(page, parent=secret)
    [_, moved] = connect(wiki).listing()
    assert (moved.path, moved.grants, moved.version) == (
        ("Vertraulich",), (EVERYONE_GROUP, Grant(groups=frozenset({"hr-leads"}))), "1")
    wiki.restrict(secret)  # lifted: the version does not change, the grants do
    [_, lifted] = connect(wiki).listing()
    assert (lifted.grants, lifted.version) == ((EVERYONE_GROUP,), "1")
    wiki.add_space("IT", groups=["it-staff"])
    wiki.move_page(secret, space="IT")  # with the page below it
    assert list(connect(wiki).listing()) == []
    assert [(i.title, i.grants[0]) for i in connect(wiki, spaces=["IT"]).listing()] == [
        ("Vertraulich", Grant(groups=frozenset({"it-staff"}))), ("Kündigungen", Grant(groups=frozenset({"it-staff"})))]


def test_space_not_found_fails_the_listing(wiki: FakeConfluence, connect) -> None:
    wiki.add_page("HR", "Seite")
    with pytest.raises(SourceError, match="space NOPE: not found"):
        list(connect(wiki, spaces=["HR", "NOPE"]).listing())


def test_refused_credentials_fail_the_listing(wiki: FakeConfluence, connect, monkeypatch) -> None:
    monkeypatch.setenv("WIKI_TOKEN", "wrong")
    with pytest.raises(SourceError, match="credentials refused"):
        list(connect(wiki).listing())


def test_unset_credential_variable_fails_at_once(wiki: FakeConfluence, connect, monkeypatch) -> None:
    monkeypatch.delenv("WIKI_TOKEN")
    with pytest.raises(SourceError, match="WIKI_TOKEN is not set"):
        connect(wiki)


# -- attachments


def test_pdf_and_word_attachments_are_listed_with_their_pages_grants(wiki: FakeConfluence, connect) -> None:
    pdf = (FORMATS / "reisekosten.pdf").read_bytes()
    policy = wiki.add_page("HR", "Richtlinien", groups=["staff"])
    draft = wiki.add_page("HR", "Entwurf", labels=["draft"])
    pdf_id = wiki.add_attachment(policy, "Reisekosten.PDF", pdf)
    word_id = wiki.add_attachment(policy, "Homeoffice", b"docx bytes", media_type=DOCX)
    wiki.add_attachment(policy, "bild.png", b"\x89PNG")
    wiki.add_attachment(draft, "entwurf.pdf", b"%PDF")
    connector = connect(wiki, exclude_labels=["draft"])
    listed = by_title(connector.listing())
    assert sorted(listed) == ["Homeoffice", "Reisekosten.PDF", "Richtlinien"]
    attachment = listed["Reisekosten.PDF"]
    assert attachment == Listed(id=pdf_id, version="1", title="Reisekosten.PDF",
                                grants=listed["Richtlinien"].grants, path=("Richtlinien",))
    assert attachment.grants == (EVERYONE_GROUP, Grant(groups=frozenset({"staff"})))
    search = wiki.calls("/rest/api/content/search")[-1]
    assert (search.query["cql"], search.query["expand"]) == ('space="HR" and type=attachment', "version,container")

    fetched = connector.fetch(attachment)
    assert (fetched.suffix, fetched.data, fetched.path) == (".pdf", pdf, ("Richtlinien",))
    assert fetched.url == f"{wiki.url}/download/attachments/{policy}/Reisekosten.PDF?version=1&api=v2"
    assert fetched.stand == "2026-01-05"
    assert convert(fetched.data, fetched.suffix).title == "Reisekostenrichtlinie"
    word = connector.fetch(listed["Homeoffice"])
    assert (word.id, word.suffix, word.data) == (word_id, ".docx", b"docx bytes")
    assert wiki.calls("/download/")[-1].auth == "basic"


def test_attachment_over_the_size_cap_is_a_document_error(wiki: FakeConfluence, connect, monkeypatch) -> None:
    monkeypatch.setattr(confluence, "MAX_ATTACHMENT_BYTES", 1024 * 1024)
    page = wiki.add_page("HR", "Seite")
    wiki.add_attachment(page, "gross.pdf", b"%PDF" + b"x" * (1024 * 1024))
    connector = connect(wiki)
    listed = by_title(connector.listing())
    with pytest.raises(DocumentError, match="larger than 1 MB"):
        connector.fetch(listed["gross.pdf"])


def test_attachments_off_lists_pages_only(wiki: FakeConfluence, connect) -> None:
    page = wiki.add_page("HR", "Seite")
    wiki.add_attachment(page, "a.pdf", b"%PDF")
    assert [item.title for item in connect(wiki, attachments=False).listing()] == ["Seite"]
    assert len(wiki.calls("/rest/api/content/search")) == 1


# -- fetching


def test_fetch_page_gives_html_link_and_stand(wiki: FakeConfluence, connect) -> None:
    home = wiki.add_page("HR", "Start")
    page = wiki.add_page("HR", "Urlaub & Freizeit", parent=home, when="2026-03-12T16:30:00+00:00",
                         body="<h2>Antrag</h2><p>Im Portal stellen.</p><h2>Fristen</h2><p>Zwei Wochen.</p>")
    connector = connect(wiki)
    listed = by_title(connector.listing())["Urlaub & Freizeit"]
    fetched = connector.fetch(listed)
    assert (fetched.id, fetched.title, fetched.suffix, fetched.stand, fetched.path) == (
        page, "Urlaub & Freizeit", ".html", "2026-03-12", ("Start",))
    assert fetched.url == f"{wiki.url}/spaces/HR/pages/{page}/Urlaub+%26+Freizeit"
    document = convert(fetched.data, ".html")
    assert document.title == "Urlaub & Freizeit"
    assert {s.path: s.text for s in document.sections} == {("Antrag",): "Im Portal stellen.",
                                                          ("Fristen",): "Zwei Wochen."}
    call = wiki.calls(f"/rest/api/content/{page}")[-1]
    assert call.query == {"expand": "body.storage,version,history.lastUpdated"}


def test_page_deleted_between_listing_and_fetch_is_a_document_error(wiki: FakeConfluence, connect) -> None:
    page = wiki.add_page("HR", "Weg")
    file_id = wiki.add_attachment(page, "weg.pdf", b"%PDF")
    connector = connect(wiki)
    listed = by_title(connector.listing())
    wiki.delete_page(page)
    with pytest.raises(DocumentError, match="no longer there"):
        connector.fetch(listed["Weg"])
    with pytest.raises(DocumentError, match="no longer there"):
        connector.fetch(listed["weg.pdf"])
    assert file_id not in wiki.attachments


def test_forbidden_page_is_a_document_error(wiki: FakeConfluence, connect) -> None:
    page = wiki.add_page("HR", "Gesperrt")
    connector = connect(wiki)
    [listed] = connector.listing()
    wiki.fail_next(f"/rest/api/content/{page}", 403)
    with pytest.raises(DocumentError, match="HTTP 403"):
        connector.fetch(listed)


# -- retries


def test_429_waits_as_long_as_retry_after_says(wiki: FakeConfluence, connect, waits: Waits) -> None:
    wiki.add_page("HR", "Seite")
    wiki.fail_next("/rest/api/content/search", 429, retry_after=7)
    listed = list(connect(wiki).listing())
    assert [item.title for item in listed] == ["Seite"]
    assert waits == [7.0]
    assert [c.status for c in wiki.calls("/rest/api/content/search")] == [429, 200, 200]


def test_5xx_is_retried_with_growing_waits(wiki: FakeConfluence, connect, waits: Waits) -> None:
    page = wiki.add_page("HR", "Seite")
    wiki.fail_next("/rest/api/space/HR", 503, times=2)
    connector = connect(wiki)
    [listed] = connector.listing()
    assert waits == [1.0, 2.0]
    wiki.fail_next(f"/rest/api/content/{page}", 502)
    assert connector.fetch(listed).title == "Seite"
    assert waits == [1.0, 2.0, 1.0]
    assert connector.calls.counts == {"space": 3, "list": 2, "page": 2}


def test_a_server_that_keeps_failing_makes_the_source_unavailable(wiki: FakeConfluence, connect,
                                                                  waits: Waits) -> None:
    page = wiki.add_page("HR", "Seite")
    wiki.fail_next("/rest/api/content/search", 500, times=5)
    connector = connect(wiki)
    with pytest.raises(SourceUnavailable):
        list(connector.listing())
    assert waits == [1.0, 2.0, 4.0, 8.0]
    wiki.fail_next(f"/rest/api/content/{page}", 503, times=5)
    with pytest.raises(SourceUnavailable):  # not one document's problem: the sync stops
        connector.fetch(Listed(id=page, version="1", title="Seite", grants=()))


# -- Data Center


def test_data_center_bearer_token_start_limit_and_username_lookup(datacenter: FakeConfluence, connect) -> None:
    datacenter.add_user("u1", "lead@example.com", username="lead", email_shown="lookup")
    datacenter.add_space("HR", groups=["confluence-users"])
    ids = [datacenter.add_page("HR", f"Seite {n}", users=["u1"] if n == 44 else ()) for n in range(45)]
    connector = connect(datacenter)
    listed = list(connector.listing())
    assert [item.id for item in listed] == ids
    assert listed[-1].grants == (EVERYONE_GROUP, Grant(users=frozenset({"lead@example.com"})))
    searches = [c for c in datacenter.calls("/rest/api/content/search") if "type=page" in c.query["cql"]]
    # 100 asked for, 20 served a call: the start moves on until a page comes back short.
    assert [(c.query["start"], c.query["limit"]) for c in searches] == [("0", "100"), ("20", "100"), ("40", "100")]
    assert {c.auth for c in datacenter.calls()} == {"bearer"}
    assert datacenter.calls("/rest/api/user")[0].query == {"username": "lead"}
    fetched = connector.fetch(listed[0])
    assert fetched.url == f"{datacenter.url}/spaces/HR/pages/{ids[0]}/Seite+0"


# -- check


def test_check_reports_credentials_spaces_and_permissions(wiki: FakeConfluence, connect) -> None:
    wiki.add_space("IT")
    wiki.hide_permissions("IT")
    assert connect(wiki, spaces=["HR", "IT", "NOPE"]).check() == [
        ("ok", f"{wiki.url}: credentials accepted"),
        ("ok", "space HR: found, its permissions readable"),
        ("warn", "space IT: the space's permissions are not shown to the sync's account; "
                 "its documents would not be indexed"),
        ("fail", "source wiki: space NOPE: not found (HTTP 404)"),
    ]


def test_check_with_refused_credentials(wiki: FakeConfluence, connect, monkeypatch) -> None:
    monkeypatch.setenv("WIKI_EMAIL", "someone@example.com")
    assert connect(wiki).check() == [("fail", "source wiki: credentials refused (HTTP 401)")]


# -- the fake itself: what the connector does not send


def test_fake_cql_date_filter_and_bad_cql(wiki: FakeConfluence) -> None:
    wiki.add_page("HR", "Alt", when="2026-02-01T08:00:00+00:00")
    wiki.add_page("HR", "Neu", when="2026-02-03T12:30:00+00:00")
    with httpx.Client(base_url=f"{wiki.url}/rest/api/", auth=("sync@example.com", "api-token")) as client:
        found = client.get("content/search", params={
            "cql": 'space="HR" and type=page and lastmodified >= "2026-02-03 12:30"'}).json()
        assert [r["title"] for r in found["results"]] == ["Neu"]
        assert client.get("content/search", params={"cql": "title ~ x"}).status_code == 400
        assert client.get("space").json()["results"][0]["key"] == "HR"
        assert client.get("space/HR", auth=("sync@example.com", "wrong")).status_code == 401
