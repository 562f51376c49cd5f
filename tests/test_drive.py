"""The Google Drive connector (kb_index/sources/drive.py) over real HTTP against the fake Drive.

The fake (tests/fakes/drive_server.py) checks the service account's signed JWT
as Google does, so these tests go through google-auth's real token flow.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kb_index.sources import drive as drive_module
from kb_index.sources.config import DriveSource
from kb_index.sources.drive import DriveConnector
from kb_index.sources.http import SourceUnavailable
from kb_index.sources.model import DocumentError, Grant, Listed, SourceError
from tests.fakes.drive_server import (
    DOCX,
    DRIVE_READONLY,
    GOOGLE_SHEET,
    PDF,
    FakeDrive,
    anyone,
    domain,
    group,
    rsa_key,
    service_account_info,
    user,
)

KEY_ENV = "TEST_DRIVE_SERVICE_ACCOUNT"
SUBJECT_ENV = "TEST_DRIVE_SUBJECT"
ACCOUNT = "citebot-sync@example-project.iam.gserviceaccount.com"
FILES = "/drive/v3/files"
CHANGES = "/drive/v3/changes"

Connect = Callable[..., DriveConnector]


@pytest.fixture
def drive(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDrive]:
    with FakeDrive() as fake:
        monkeypatch.setenv(KEY_ENV, json.dumps(fake.service_account()))
        yield fake


@pytest.fixture
def waits() -> list[float]:
    """The waits the connector's retries asked for (no test sleeps)."""
    return []


@pytest.fixture
def connect(drive: FakeDrive, waits: list[float]) -> Iterator[Connect]:
    """A connector to the fake; keyword arguments are the source's settings (folders, domains, ...)."""
    opened: list[DriveConnector] = []

    def make(*, credentials: dict[str, str] | None = None, **settings: object) -> DriveConnector:
        source = DriveSource.model_validate({
            "type": "google_drive", "collection": "policies", "api_url": drive.root,
            "credentials": {"service_account": KEY_ENV, **(credentials or {})}, **settings,
        })
        connector = DriveConnector("policies", source, sleep=waits.append)
        opened.append(connector)
        return connector

    yield make
    for connector in opened:
        connector.close()


def by_title(listed: list[Listed]) -> dict[str, Listed]:
    return {item.title: item for item in listed}


def one_grant(item: Listed) -> Grant:
    assert len(item.grants) == 1, item
    return item.grants[0]


# -- auth


def test_the_service_account_token_is_obtained_once_and_sent(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root, permissions=[anyone()])
    connector = connect(folders=[root])

    assert [item.title for item in connector.listing()] == ["Leave"]
    assert [item.title for item in connector.listing()] == ["Leave"]

    [token_call] = drive.calls("/token")
    assert token_call.status == 200
    assert token_call.claims is not None
    assert token_call.claims["iss"] == ACCOUNT
    assert token_call.claims["scope"] == DRIVE_READONLY
    assert "sub" not in token_call.claims
    [bearer] = {c.bearer for c in drive.calls(FILES)}  # one token, on every Drive call
    assert bearer is not None and bearer.startswith("ya29.fake-")
    assert connector.calls.counts["token"] == 1


def test_the_key_may_be_given_as_the_path_of_its_file(drive: FakeDrive, connect: Connect,
                                                      monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps(drive.service_account()))
    monkeypatch.setenv(KEY_ENV, str(key_file))
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)

    assert [item.title for item in connect(folders=[root]).listing()] == ["Leave"]


def test_a_key_google_does_not_know_is_refused_with_the_reason(drive: FakeDrive, connect: Connect,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered with key 0, signed with key 1: what a deleted or rotated key looks like.
    info = service_account_info(drive.token_uri, key=rsa_key(1))
    monkeypatch.setenv(KEY_ENV, json.dumps(info))
    root = drive.add_folder("Policies")

    with pytest.raises(SourceError) as caught:
        list(connect(folders=[root]).listing())

    assert "invalid_grant" in str(caught.value)
    assert "Invalid JWT Signature" in str(caught.value)
    assert "PRIVATE KEY" not in str(caught.value)
    assert drive.calls(FILES) == []


@pytest.mark.parametrize(("value", "expected"), [
    ("{not json", "is not valid JSON"),
    ('{"type": "authorized_user", "client_id": "x"}', "holds no service account key (type: authorized_user)"),
    ("/nonexistent/key.json", "neither a service account key's JSON nor a readable key file"),
])
def test_a_garbled_key_is_a_source_error(drive: FakeDrive, connect: Connect, monkeypatch: pytest.MonkeyPatch,
                                         value: str, expected: str) -> None:
    monkeypatch.setenv(KEY_ENV, value)
    with pytest.raises(SourceError) as caught:
        list(connect(folders=["f"]).listing())
    assert expected in str(caught.value)
    assert KEY_ENV in str(caught.value)
    assert drive.calls() == []


def test_a_private_key_that_is_no_key_is_refused_without_quoting_it(drive: FakeDrive, connect: Connect,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    info = drive.service_account()
    info["private_key"] = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXNlY3JldA==\n-----END PRIVATE KEY-----\n"
    monkeypatch.setenv(KEY_ENV, json.dumps(info))
    with pytest.raises(SourceError) as caught:
        list(connect(folders=["f"]).listing())
    assert "is not usable: its private_key is not a PEM RSA private key" in str(caught.value)
    assert "c2VjcmV0" not in str(caught.value)


def test_a_key_variable_that_is_not_set_is_named(connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(SourceError, match=f"the environment variable {KEY_ENV} is not set"):
        list(connect(folders=["f"]).listing())


def test_delegation_sends_the_subject(drive: FakeDrive, connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SUBJECT_ENV, "admin@example.com")
    drive.allow_subject("admin@example.com")
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)

    listed = list(connect(folders=[root], credentials={"subject": SUBJECT_ENV}).listing())

    assert [item.title for item in listed] == ["Leave"]
    [token_call] = drive.calls("/token")
    assert token_call.claims is not None and token_call.claims["sub"] == "admin@example.com"


def test_delegation_not_granted_is_refused(drive: FakeDrive, connect: Connect,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SUBJECT_ENV, "admin@example.com")
    with pytest.raises(SourceError, match="unauthorized_client.*domain-wide delegation"):
        list(connect(folders=["f"], credentials={"subject": SUBJECT_ENV}).listing())


def test_a_token_refused_by_drive_is_renewed_once(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)
    connector = connect(folders=[root])
    list(connector.listing())

    drive.expire_tokens()
    assert [item.title for item in connector.listing()] == ["Leave"]

    assert len(drive.calls("/token")) == 2
    assert [c.status for c in drive.calls(FILES)].count(401) == 1


def test_a_token_near_its_expiry_is_renewed_before_the_call(drive: FakeDrive, connect: Connect) -> None:
    drive.token_lifetime = 60  # google-auth renews a token with less than a few minutes left
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)

    assert [item.title for item in connect(folders=[root]).listing()] == ["Leave"]

    drive_calls = drive.calls(FILES)
    assert len(drive_calls) == 2 and all(c.status == 200 for c in drive_calls)
    assert len(drive.calls("/token")) == 2
    assert drive_calls[0].bearer != drive_calls[1].bearer


# -- listing


def test_listing_walks_nested_folders_page_after_page(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    hr = drive.add_folder("HR", root)
    benefits = drive.add_folder("Benefits", hr)
    drive.add_doc("Leave", hr)
    drive.add_file("Pension.pdf", benefits, b"%PDF-1.4 pension", PDF)
    bulk = drive.bulk(root, 1001)  # more than one page of 1000

    listed = list(connect(folders=[root]).listing())

    titles = by_title(listed)
    assert len(listed) == 1003
    assert {item.id for item in listed} >= set(bulk)
    assert titles["Leave"].path == ("Policies", "HR")
    assert titles["Pension.pdf"].path == ("Policies", "HR", "Benefits")
    assert titles["doc-00000.pdf"].path == ("Policies",)
    root_pages = [c for c in drive.calls(FILES) if c.path == FILES and c.params["q"].startswith(f"'{root}'")]
    assert [c.params.get("pageToken") for c in root_pages] == [None, "page-1000"]
    assert all(c.params["q"] == f"'{root}' in parents and trashed = false" for c in root_pages)
    assert all(c.params["supportsAllDrives"] == "true" and c.params["includeItemsFromAllDrives"] == "true"
               for c in root_pages)


def test_listing_ten_thousand_files_takes_a_call_per_page(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Handbook")
    folders = [drive.add_folder(f"Part {n}", root) for n in range(20)]
    for folder in folders:
        drive.bulk(folder, 500)

    started = time.monotonic()
    listed = list(connect(folders=[root]).listing())
    elapsed = time.monotonic() - started

    assert len(listed) == 10_000
    assert len({item.id for item in listed}) == 10_000
    assert len(drive.calls(FILES)) == 1 + 1 + 20  # the root's metadata, its page, one page a folder
    assert elapsed < 30


def test_listing_versions_titles_and_trash(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    doc = drive.add_doc("Leave", root)
    pdf = drive.add_file("Travel.pdf", root, b"%PDF-1.4 travel", PDF)
    gone = drive.add_doc("Old", root)
    drive.trash(gone)

    titles = by_title(list(connect(folders=[root]).listing()))

    assert set(titles) == {"Leave", "Travel.pdf"}
    modified = drive.item(doc).modified.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert titles["Leave"].version == f"{modified}/v1"
    assert titles["Travel.pdf"].version.endswith("/md5:" + hashlib.md5(b"%PDF-1.4 travel").hexdigest())
    assert titles["Travel.pdf"].id == pdf


def test_exclude_paths_leave_out_files_and_whole_folders(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)
    archive = drive.add_folder("Archive", root)
    drive.add_file("old.pdf", archive, b"old", PDF)
    older = drive.add_folder("2019", archive)
    drive.add_file("older.pdf", older, b"older", PDF)
    hr = drive.add_folder("HR", root)
    drive.add_file("pay.pdf", hr, b"pay", PDF)
    drafts = drive.add_folder("drafts", hr)
    drive.add_file("draft.docx", drafts, b"draft", DOCX)

    listed = list(connect(folders=[root], exclude_paths=["Archive/**", "*/drafts/*"]).listing())

    assert sorted(item.title for item in listed) == ["Leave", "pay.pdf"]
    walked = {c.params["q"].split("'")[1] for c in drive.calls(FILES) if c.path == FILES}
    assert older not in walked  # a folder matched by a glob is not walked at all


def test_only_docs_pdfs_and_word_files_are_taken(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)
    drive.add_file("Travel.pdf", root, b"%PDF", PDF)
    drive.add_file("Onboarding.docx", root, b"PK", DOCX)
    drive.add_file("Budget", root, b"", GOOGLE_SHEET)
    drive.add_file("logo.png", root, b"\x89PNG", "image/png")
    drive.add_file("Leave (shortcut)", root, b"", "application/vnd.google-apps.shortcut")

    listed = list(connect(folders=[root]).listing())

    assert sorted(item.title for item in listed) == ["Leave", "Onboarding.docx", "Travel.pdf"]


# -- permissions


def test_permissions_map_to_grants(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("People", root, permissions=[user("Ann@Example.com", "owner"), user("bob@example.com", "commenter"),
                                               group("HR@example.com")])
    drive.add_doc("Our domain", root, permissions=[user("ann@example.com", "owner"), domain("Example.com")])
    drive.add_doc("Their domain", root, permissions=[domain("partner.org")])
    drive.add_doc("Link", root, permissions=[anyone()])
    drive.add_doc("All staff", root, permissions=[group("all-staff@example.com")])

    connector = connect(folders=[root], domains=["example.com"], groups={"all-staff@example.com": "everyone"})
    titles = by_title(list(connector.listing()))

    assert one_grant(titles["People"]) == Grant(users=frozenset({"ann@example.com", "bob@example.com"}),
                                                groups=frozenset({"hr@example.com"}))
    assert one_grant(titles["Our domain"]) == Grant(everyone=True, users=frozenset({"ann@example.com"}))
    assert one_grant(titles["Their domain"]).names_nobody
    assert one_grant(titles["Link"]) == Grant(everyone=True)
    assert one_grant(titles["All staff"]) == Grant(everyone=True, groups=frozenset({"all-staff@example.com"}))
    assert all(item.unreadable is None for item in titles.values())
    assert [c for c in drive.calls(FILES) if c.path.endswith("/permissions")] == []  # files.list had them


def test_shared_drive_files_take_their_permissions_from_permissions_list(drive: FakeDrive, connect: Connect) -> None:
    team = drive.add_drive("HR Drive", members=[group("hr-team@example.com", "organizer")])
    folder = drive.add_folder("Payroll", team)
    pay = drive.add_file("Pay.pdf", folder, b"%PDF pay", PDF, permissions=[user("Carol@example.com")])
    drive.add_doc("Welcome", team)

    titles = by_title(list(connect(shared_drives=[team]).listing()))

    assert titles["Pay.pdf"].path == ("HR Drive", "Payroll")
    assert titles["Welcome"].path == ("HR Drive",)
    assert one_grant(titles["Pay.pdf"]) == Grant(users=frozenset({"carol@example.com"}),
                                                 groups=frozenset({"hr-team@example.com"}))
    assert one_grant(titles["Welcome"]) == Grant(groups=frozenset({"hr-team@example.com"}))
    permission_calls = drive.calls(f"{FILES}/{pay}/permissions")
    assert len(permission_calls) == 1 and permission_calls[0].params["supportsAllDrives"] == "true"
    lists = [c for c in drive.calls(FILES) if c.path == FILES]
    assert lists and all(c.params["corpora"] == "drive" and c.params["driveId"] == team for c in lists)


def test_a_folder_inside_a_shared_drive_is_listed_from_that_drive(drive: FakeDrive, connect: Connect) -> None:
    team = drive.add_drive("HR Drive", members=[group("hr-team@example.com")])
    folder = drive.add_folder("Policies", team)
    drive.add_doc("Leave", folder)

    [leave] = list(connect(folders=[folder]).listing())

    assert (leave.title, leave.path) == ("Leave", ("Policies",))
    assert one_grant(leave) == Grant(groups=frozenset({"hr-team@example.com"}))
    [page] = [c for c in drive.calls(FILES) if c.path == FILES]
    assert (page.params["corpora"], page.params["driveId"]) == ("drive", team)


def test_permissions_list_is_paged(drive: FakeDrive, connect: Connect) -> None:
    team = drive.add_drive("Everyone")
    readers = [user(f"reader{n:03d}@example.com") for n in range(150)]
    file_id = drive.add_file("Big audience.pdf", team, b"%PDF", PDF, permissions=readers)

    [listed] = list(connect(shared_drives=[team]).listing())

    assert len(one_grant(listed).users) == 150
    assert [c.params.get("pageToken") for c in drive.calls(f"{FILES}/{file_id}/permissions")] == [None, "page-100"]


def test_unreadable_permissions_leave_a_file_without_grants_and_say_why(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Secret", root, permissions_hidden=True)
    drive.add_doc("Open", root, permissions=[anyone()])

    titles = by_title(list(connect(folders=[root]).listing()))

    assert titles["Secret"].grants == ()
    assert titles["Secret"].unreadable == "its sharing cannot be read: HTTP 403 insufficientFilePermissions"
    assert titles["Open"].grants == (Grant(everyone=True),)
    assert titles["Open"].unreadable is None


def test_a_missing_folder_fails_the_whole_listing(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)
    with pytest.raises(SourceError) as caught:
        list(connect(folders=[root, "nosuchfolder"]).listing())
    assert f"folder nosuchfolder: not found, or not shared with service account {ACCOUNT}" in str(caught.value)


# -- changes


@pytest.fixture
def tree(drive: FakeDrive) -> dict[str, str]:
    """Policies/{Leave, Travel.pdf, HR/{Pay.pdf, drafts/}} and, out of scope, Elsewhere/{Stray.pdf}."""
    ids = {"Policies": drive.add_folder("Policies")}
    ids["HR"] = drive.add_folder("HR", ids["Policies"])
    ids["drafts"] = drive.add_folder("drafts", ids["HR"])
    ids["Leave"] = drive.add_doc("Leave", ids["Policies"], permissions=[anyone()])
    ids["Travel.pdf"] = drive.add_file("Travel.pdf", ids["Policies"], b"%PDF travel", PDF,
                                       permissions=[user("bob@example.com"), anyone()])
    ids["Pay.pdf"] = drive.add_file("Pay.pdf", ids["HR"], b"%PDF pay", PDF, permissions=[group("hr@example.com")])
    ids["Elsewhere"] = drive.add_folder("Elsewhere")
    ids["Stray.pdf"] = drive.add_file("Stray.pdf", ids["Elsewhere"], b"%PDF stray", PDF)
    return ids


@pytest.fixture
def scoped(connect: Connect, tree: dict[str, str]) -> DriveConnector:
    return connect(folders=[tree["Policies"]], exclude_paths=["*/drafts/*"])


def test_no_cursor_no_changes(scoped: DriveConnector) -> None:
    assert scoped.changes(None) is None


def test_an_edit_is_a_change_and_the_cursor_moves_on(drive: FakeDrive, scoped: DriveConnector,
                                                     tree: dict[str, str]) -> None:
    before = by_title(list(scoped.listing()))
    cursor = scoped.start_cursor()
    assert cursor is not None
    drive.edit(tree["Leave"], "<p>31 days</p>")

    changes = scoped.changes(cursor)

    assert changes is not None
    [leave] = changes.changed
    assert (leave.id, leave.path) == (tree["Leave"], ("Policies",))
    assert leave.version != before["Leave"].version
    assert changes.removed == ()
    assert changes.cursor != cursor
    assert scoped.changes(changes.cursor) == type(changes)((), (), changes.cursor)


@pytest.mark.parametrize("how", ["delete", "trash"])
def test_deleted_and_trashed_files_are_removed(drive: FakeDrive, scoped: DriveConnector, tree: dict[str, str],
                                               how: str) -> None:
    cursor = scoped.start_cursor()
    getattr(drive, how)(tree["Pay.pdf"])

    changes = scoped.changes(cursor)

    assert changes is not None
    assert changes.changed == ()
    assert changes.removed == (tree["Pay.pdf"],)


def test_a_file_moved_out_of_scope_is_removed(drive: FakeDrive, scoped: DriveConnector,
                                              tree: dict[str, str]) -> None:
    cursor = scoped.start_cursor()
    drive.move(tree["Pay.pdf"], tree["Elsewhere"])

    changes = scoped.changes(cursor)

    assert changes is not None and changes.changed == () and changes.removed == (tree["Pay.pdf"],)
    looked_up = [c.path.rsplit("/", 1)[1] for c in drive.calls(FILES + "/")]
    assert looked_up == [tree["Policies"], tree["Elsewhere"]]  # the root, then up from the new parent


def test_a_file_moved_into_scope_is_changed_with_its_path(drive: FakeDrive, scoped: DriveConnector,
                                                          tree: dict[str, str]) -> None:
    cursor = scoped.start_cursor()
    drive.move(tree["Stray.pdf"], tree["HR"])

    changes = scoped.changes(cursor)

    assert changes is not None and changes.removed == ()
    [stray] = changes.changed
    assert (stray.id, stray.title, stray.path) == (tree["Stray.pdf"], "Stray.pdf", ("Policies", "HR"))
    assert one_grant(stray) == Grant(users=frozenset({"owner@example.com"}))


def test_a_file_moved_into_an_excluded_folder_is_removed(drive: FakeDrive, scoped: DriveConnector,
                                                         tree: dict[str, str]) -> None:
    cursor = scoped.start_cursor()
    drive.move(tree["Pay.pdf"], tree["drafts"])

    changes = scoped.changes(cursor)

    assert changes is not None and changes.removed == (tree["Pay.pdf"],)


def test_sharing_and_unsharing_are_a_change_with_the_new_grant(drive: FakeDrive, scoped: DriveConnector,
                                                               tree: dict[str, str]) -> None:
    before = by_title(list(scoped.listing()))
    cursor = scoped.start_cursor()
    drive.unshare(tree["Travel.pdf"], "anyone")
    drive.share(tree["Travel.pdf"], group("finance@example.com"))

    changes = scoped.changes(cursor)

    assert changes is not None
    [travel] = changes.changed
    assert one_grant(before["Travel.pdf"]) == Grant(everyone=True, users=frozenset({"bob@example.com"}))
    assert one_grant(travel) == Grant(users=frozenset({"bob@example.com"}), groups=frozenset({"finance@example.com"}))
    assert travel.version == before["Travel.pdf"].version  # same content: the sync compares the grants


def test_an_edit_outside_the_scope_is_a_removal_the_sync_can_ignore(drive: FakeDrive, scoped: DriveConnector,
                                                                    tree: dict[str, str]) -> None:
    cursor = scoped.start_cursor()
    drive.edit(tree["Stray.pdf"], b"%PDF stray 2")

    changes = scoped.changes(cursor)

    assert changes is not None and changes.changed == () and changes.removed == (tree["Stray.pdf"],)


@pytest.mark.parametrize("how", ["rename", "move", "trash"])
def test_a_changed_folder_asks_for_a_full_listing(drive: FakeDrive, scoped: DriveConnector, tree: dict[str, str],
                                                  how: str) -> None:
    cursor = scoped.start_cursor()
    drive.edit(tree["Leave"], "<p>new</p>")
    if how == "rename":
        drive.rename(tree["HR"], "People")
    elif how == "move":
        drive.move(tree["HR"], tree["Elsewhere"])
    else:
        drive.trash(tree["HR"])

    assert scoped.changes(cursor) is None


def test_the_change_feed_is_paged_and_each_file_counted_once(drive: FakeDrive, scoped: DriveConnector,
                                                             tree: dict[str, str]) -> None:
    drive.changes_page = 2
    cursor = scoped.start_cursor()
    for n in range(3):
        drive.edit(tree["Leave"], f"<p>{n}</p>")
    drive.edit(tree["Travel.pdf"], b"%PDF travel 2")
    drive.edit(tree["Pay.pdf"], b"%PDF pay 2")
    rota = drive.add_file("Rota.pdf", tree["HR"], b"%PDF rota", PDF)

    changes = scoped.changes(cursor)

    assert changes is not None
    assert [item.id for item in changes.changed] == [tree["Leave"], tree["Travel.pdf"], tree["Pay.pdf"], rota]
    assert len(drive.calls(CHANGES)) == 4  # the start token, then 6 changes 2 a page
    # HR is asked for once, though both Pay.pdf and Rota.pdf are placed through it.
    assert len(drive.calls(f"{FILES}/{tree['HR']}")) == 1


def test_a_cursor_drive_no_longer_accepts_asks_for_a_full_listing(scoped: DriveConnector) -> None:
    assert scoped.changes("987654") is None


def test_a_new_file_in_scope_is_a_change(drive: FakeDrive, scoped: DriveConnector, tree: dict[str, str]) -> None:
    cursor = scoped.start_cursor()
    new = drive.add_file("New.docx", tree["HR"], b"PK new", DOCX, permissions=[user("dan@example.com")])

    changes = scoped.changes(cursor)

    assert changes is not None
    assert [(item.id, item.path) for item in changes.changed] == [(new, ("Policies", "HR"))]


# -- fetch


def test_fetch_exports_a_google_doc_as_html(drive: FakeDrive, scoped: DriveConnector, tree: dict[str, str]) -> None:
    leave = by_title(list(scoped.listing()))["Leave"]
    drive.edit(tree["Leave"], "<h1>Leave</h1><p>30 days a year.</p>")

    fetched = scoped.fetch(leave)

    assert fetched.suffix == ".html"
    assert fetched.data == b"<h1>Leave</h1><p>30 days a year.</p>"
    assert fetched.url == f"https://docs.google.com/document/d/{tree['Leave']}/edit?usp=drivesdk"
    assert fetched.stand == "2024-01-01"
    assert (fetched.id, fetched.title, fetched.path) == (tree["Leave"], "Leave", ("Policies",))
    [export] = drive.calls(f"{FILES}/{tree['Leave']}/export")
    assert export.params["mimeType"] == "text/html"


def test_fetch_downloads_a_pdf_and_a_word_file(drive: FakeDrive, connect: Connect) -> None:
    team = drive.add_drive("HR Drive")
    drive.add_file("Pay.pdf", team, b"%PDF-1.4 pay", PDF)
    drive.add_file("Onboarding.docx", team, b"PK\x03\x04 docx", DOCX)
    connector = connect(shared_drives=[team])
    titles = by_title(list(connector.listing()))

    pdf = connector.fetch(titles["Pay.pdf"])
    docx = connector.fetch(titles["Onboarding.docx"])

    assert (pdf.suffix, pdf.data, pdf.path) == (".pdf", b"%PDF-1.4 pay", ("HR Drive",))
    assert (docx.suffix, docx.data) == (".docx", b"PK\x03\x04 docx")
    assert pdf.url is not None and pdf.url.startswith("https://drive.google.com/file/d/")
    downloads = [c for c in drive.calls(FILES + "/") if c.params.get("alt") == "media"]
    assert len(downloads) == 2 and all(c.params["supportsAllDrives"] == "true" for c in downloads)


def test_fetch_without_a_listing_reads_the_file_again(drive: FakeDrive, connect: Connect,
                                                      tree: dict[str, str]) -> None:
    listed = by_title(list(connect(folders=[tree["Policies"]]).listing()))["Travel.pdf"]

    fetched = connect(folders=[tree["Policies"]]).fetch(listed)  # a connector that never listed it

    assert fetched.data == b"%PDF travel"
    assert fetched.suffix == ".pdf"


def test_fetch_of_a_file_gone_is_a_document_error(drive: FakeDrive, scoped: DriveConnector,
                                                  tree: dict[str, str]) -> None:
    travel = by_title(list(scoped.listing()))["Travel.pdf"]
    drive.delete(tree["Travel.pdf"])

    with pytest.raises(DocumentError, match="Travel.pdf: HTTP 404 notFound"):
        scoped.fetch(travel)


def test_fetch_refuses_a_file_over_the_cap_without_downloading(drive: FakeDrive, scoped: DriveConnector,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drive_module, "MAX_DOWNLOAD_BYTES", 5)
    travel = by_title(list(scoped.listing()))["Travel.pdf"]

    with pytest.raises(DocumentError, match="Travel.pdf: larger than"):
        scoped.fetch(travel)
    assert [c for c in drive.calls() if c.params.get("alt") == "media"] == []


# -- retries


@pytest.mark.parametrize(("status", "reason"), [(429, None), (403, "rateLimitExceeded"),
                                                (403, "userRateLimitExceeded")])
def test_rate_limits_are_waited_out_as_asked(drive: FakeDrive, scoped: DriveConnector, waits: list[float],
                                             status: int, reason: str | None) -> None:
    drive.fail_next(FILES, status, retry_after=7, reason=reason, times=2)

    listed = list(scoped.listing())

    assert sorted(item.title for item in listed) == ["Leave", "Pay.pdf", "Travel.pdf"]
    assert waits == [7.0, 7.0]
    assert [c.status for c in drive.calls(FILES)][:3] == [status, status, 200]


def test_a_server_error_is_retried_with_a_growing_wait(drive: FakeDrive, scoped: DriveConnector,
                                                       tree: dict[str, str], waits: list[float]) -> None:
    cursor = scoped.start_cursor()
    drive.edit(tree["Leave"])
    drive.fail_next(CHANGES, 503, times=2)

    changes = scoped.changes(cursor)

    assert changes is not None and [item.id for item in changes.changed] == [tree["Leave"]]
    assert waits == [1.0, 2.0]


def test_a_refusal_that_is_no_rate_limit_is_not_retried(drive: FakeDrive, scoped: DriveConnector,
                                                        waits: list[float]) -> None:
    drive.fail_next(FILES, 403, reason="insufficientFilePermissions")
    with pytest.raises(SourceError, match=r"folder .*: access refused to service account .*\(HTTP 403 insufficientFilePermissions\)"):
        list(scoped.listing())
    assert waits == []


def test_a_source_that_stays_down_is_unavailable_even_in_fetch(drive: FakeDrive, scoped: DriveConnector,
                                                               tree: dict[str, str], waits: list[float]) -> None:
    travel = by_title(list(scoped.listing()))["Travel.pdf"]
    drive.fail_next(f"{FILES}/{tree['Travel.pdf']}", 500, times=5)

    with pytest.raises(SourceUnavailable):
        scoped.fetch(travel)
    assert len(waits) == 4


# -- check


def test_check_reports_credentials_folders_and_drives(drive: FakeDrive, connect: Connect) -> None:
    root = drive.add_folder("Policies")
    drive.add_doc("Leave", root)
    empty = drive.add_folder("Empty")
    team = drive.add_drive("HR Drive")
    drive.add_doc("Welcome", team)
    file_id = drive.add_doc("Not a folder", root)

    findings = connect(folders=[root, empty, "nosuchfolder", file_id], shared_drives=[team, "nosuchdrive"]).check()

    assert findings == [
        ("ok", f"credentials accepted: service account {ACCOUNT}"),
        ("ok", f"folder 'Policies' ({root}): found and readable"),
        ("warn", f"folder 'Empty' ({empty}): found, but nothing in it is visible to service account {ACCOUNT}"),
        ("fail", f"source policies: folder nosuchfolder: not found, or not shared with service account {ACCOUNT}"),
        ("fail", f"source policies: {file_id} (Not a folder) is not a folder"),
        ("ok", f"shared drive 'HR Drive' ({team}): found and readable"),
        ("fail", f"source policies: shared drive nosuchdrive: not found, or not shared with service account {ACCOUNT}"),
    ]


def test_check_stops_at_refused_credentials(drive: FakeDrive, connect: Connect,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, json.dumps(service_account_info(drive.token_uri, key=rsa_key(1))))

    findings = connect(folders=["f"]).check()

    assert len(findings) == 1
    assert findings[0][0] == "fail" and "invalid_grant" in findings[0][1]
    assert drive.calls(FILES) == []
