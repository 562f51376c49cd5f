"""sources.yml: read one way only, every mistake with its line, never a secret in the file."""

from __future__ import annotations

import pytest

from kb_index.sources.config import ConfluenceSource, DriveSource, SourcesError, parse_sources

GOOD = b"""\
sources:
  handbook:
    type: confluence
    url: https://example.atlassian.net/wiki/
    spaces: [HR, IT]
    exclude_labels: [draft]
    collection: handbook
    credentials:
      email: CONFLUENCE_EMAIL
      api_token: CONFLUENCE_API_TOKEN
    groups:
      confluence-users: everyone
      HR-Team: '@payroll'
    every_minutes: 30
  wiki-dc:
    type: confluence
    url: https://wiki.example.com
    deployment: data_center
    spaces: [OPS]
    collection: ops
    credentials:
      token: CONFLUENCE_PAT
  policies:
    type: google_drive
    folders: [1AbCdEf]
    exclude_paths: ["Archive/**"]
    collection: policies
    credentials:
      service_account: GOOGLE_SERVICE_ACCOUNT_JSON
    domains: [example.com]
    groups: {hr@example.com: S0PAYROLL}
"""


def test_a_good_file_reads_every_source_with_its_type():
    sources = parse_sources(GOOD).sources
    handbook, dc, drive = sources["handbook"], sources["wiki-dc"], sources["policies"]
    assert isinstance(handbook, ConfluenceSource) and isinstance(drive, DriveSource)
    assert handbook.url == "https://example.atlassian.net/wiki"  # the trailing slash dropped
    assert handbook.spaces == ("HR", "IT") and handbook.every_minutes == 30
    # Source groups are matched without case; a handle's @ is dropped as in a collection file.
    assert handbook.groups == {"confluence-users": "everyone", "hr-team": "payroll"}
    assert dc.deployment == "data_center" and dc.credentials.token == "CONFLUENCE_PAT"
    assert drive.folders == ("1AbCdEf",) and drive.groups == {"hr@example.com": "S0PAYROLL"}
    assert drive.every_minutes == 60 and not drive.guests and not drive.external


def _problem(text: str) -> SourcesError:
    with pytest.raises(SourcesError) as caught:
        parse_sources(text.encode(), "sources.yml")
    return caught.value


@pytest.mark.parametrize(("text", "line", "says"), [
    # A typo in a key would silently drop what it says: refused, with the key's line.
    ("sources:\n  h:\n    type: confluence\n    url: https://x\n    spaces: [A]\n    collection: h\n"
     "    exclude-labels: [draft]\n    credentials: {token: T}\n    deployment: data_center\n", 7, "unknown key"),
    # The secret itself where the variable's name belongs.
    ("sources:\n  h:\n    type: confluence\n    url: https://x\n    spaces: [A]\n    collection: h\n"
     "    credentials:\n      email: CONFLUENCE_EMAIL\n      api_token: ATATT3xFfGF0abc123\n", 9, "NAME of an environment"),
    # Cloud credentials on a Data Center source.
    ("sources:\n  h:\n    type: confluence\n    url: https://x\n    deployment: data_center\n    spaces: [A]\n"
     "    collection: h\n    credentials: {email: E, api_token: T}\n", 2, "Data Center takes 'token'"),
    ("sources:\n  h:\n    type: sharepoint\n    collection: h\n", 2, "'type' must be confluence or google_drive"),
    ("sources:\n  p:\n    type: google_drive\n    collection: p\n    credentials: {service_account: K}\n", 2,
     "nothing would be synced"),
    ("sources:\n  p:\n    type: google_drive\n    folders: [x]\n    collection: Policies!\n"
     "    credentials: {service_account: K}\n", 5, "lower-case"),
    ("sources:\n  p:\n    type: google_drive\n    folders: [x]\n    collection: p\n    guests: 1\n"
     "    credentials: {service_account: K}\n", 6, "true or false"),
    ("sources:\n  p:\n    type: google_drive\n    folders: [x]\n    collection: p\n"
     "    groups: {hr@example.com: 'HR Team'}\n    credentials: {service_account: K}\n", 6, "neither a Slack user group"),
])
def test_each_mistake_is_refused_with_its_line(text, line, says):
    problem = _problem(text)
    assert says in problem.message
    assert problem.line == line, problem


def test_a_key_given_twice_is_refused_not_read_as_the_last():
    # `spaces` twice: YAML would keep the second, and the first space would silently not be synced.
    problem = _problem("sources:\n  h:\n    type: confluence\n    spaces: [HR]\n    spaces: [IT]\n")
    assert problem.line == 5 and "given twice" in problem.message


def test_an_empty_file_has_no_sources_and_bad_bytes_are_an_error():
    assert parse_sources(b"").sources == {}
    assert "not UTF-8" in _problem_bytes(b"\xff\xfe\x00sources").message


def _problem_bytes(data: bytes) -> SourcesError:
    with pytest.raises(SourcesError) as caught:
        parse_sources(data)
    return caught.value
