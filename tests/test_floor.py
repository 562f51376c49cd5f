"""The floor (citebot_core): imported by both packages, importing neither; one error base; one HTTP retry loop."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

import pytest

import bot
import citebot_core
import kb_index
from bot.i18n import Key, all_translations
from bot.slack.calls import SlackFailed, SlackRateLimited, SlackUnavailable
from bot.store.errors import StoreUnavailable
from bot.store.ledger import PostLedger
from citebot_core.deadline import BudgetSpent, deadline_in
from citebot_core.errors import CitebotError, Permanent, Retryable
from citebot_core.http import RetryPolicy, send
from citebot_core.languages import LANGUAGES
from kb_index.analysis import analyzer
from tests.harness import ROOT


def imported_modules(path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_floor_imports_neither_package() -> None:
    for path in (ROOT / "citebot_core").rglob("*.py"):
        assert not {m for m in imported_modules(path) if m.split(".")[0] in ("bot", "kb_index")}, path


def test_slack_and_review_do_not_reach_into_the_queue() -> None:
    for folder in ("bot/slack", "bot/review"):
        for path in (ROOT / folder).rglob("*.py"):
            assert "bot.jobs.queue" not in imported_modules(path), path


def exception_classes() -> list[type[BaseException]]:
    found = []
    for package in (bot, kb_index, citebot_core):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            found += [
                cls for _, cls in inspect.getmembers(module, inspect.isclass)
                if issubclass(cls, BaseException) and cls.__module__ == module.__name__
            ]
    return found


def test_every_error_class_derives_from_the_base() -> None:
    classes = exception_classes()
    assert len(classes) >= 26
    assert [cls.__qualname__ for cls in classes if not issubclass(cls, CitebotError)] == []


def test_slack_errors_say_their_kind_without_the_queue() -> None:
    assert issubclass(SlackUnavailable, Retryable) and issubclass(SlackRateLimited, Retryable)
    assert issubclass(SlackFailed, Permanent)


async def test_a_post_ledger_that_loses_redis_is_a_store_failure_not_the_queue() -> None:
    from bot.jobs.queue import QueueUnavailable

    ledger = PostLedger("redis://127.0.0.1:1/0", timeout=0.5)  # nothing listens on port 1
    try:
        with pytest.raises(StoreUnavailable) as failed:
            await ledger.claim_post("q1")
    finally:
        await ledger.close()
    assert isinstance(failed.value, Retryable) and not isinstance(failed.value, QueueUnavailable)


def test_one_list_of_languages_for_index_answers_and_interface() -> None:
    assert LANGUAGES == ("en", "de")
    for language in LANGUAGES:
        assert analyzer(language) is not None
    assert all(len(all_translations(key)) == len(LANGUAGES) for key in Key)


class Down(Retryable):
    pass


def flaky(failures: list[BaseException]):
    calls: list[int] = []

    def request() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "ok"

    return request, calls


def test_the_loop_retries_a_retryable_with_backoff_and_honours_retry_after() -> None:
    request, calls = flaky([Down("503"), Down("429", retry_after=3.0)])
    sleeps: list[float] = []
    assert send(request, RetryPolicy(2, base=0.5, cap=8.0), sleep=sleeps.append) == "ok"
    assert (len(calls), sleeps) == (3, [0.5, 3.0])


def test_the_loop_gives_up_with_the_number_of_tries() -> None:
    request, calls = flaky([Down("1"), Down("2"), Down("3")])
    with pytest.raises(Down, match="3") as gave_up:
        send(request, RetryPolicy(2, base=0.1, cap=1.0), sleep=lambda _: None)
    assert gave_up.value.attempts == 3 == len(calls)


def test_the_loop_does_not_retry_a_permanent_error_nor_a_long_retry_after() -> None:
    request, calls = flaky([Permanent("refused")])
    with pytest.raises(Permanent):
        send(request, RetryPolicy(3, base=0.1, cap=1.0), sleep=lambda _: None)
    assert len(calls) == 1
    request, calls = flaky([Down("429", retry_after=60.0)])
    with pytest.raises(Down):
        send(request, RetryPolicy(3, base=0.1, cap=1.0, max_retry_after=30.0), sleep=lambda _: None)
    assert len(calls) == 1


def test_the_loop_does_not_sleep_past_the_deadline() -> None:
    request, calls = flaky([Down("503")])
    with deadline_in(0.2), pytest.raises(BudgetSpent):
        send(request, RetryPolicy(2, base=5.0, cap=8.0, deadline=True), sleep=lambda _: None)
    assert len(calls) == 1
