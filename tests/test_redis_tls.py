"""TLS and ACL users: a redis-server that speaks only TLS, wants a client certificate and
knows one user (the default user is off), with certificates made at test time.

`citebot doctor` names the mode, TLS and the server's version, and never the password;
the queue, the consumer and the ledger work over it with the CA and client files the
settings name (CITEBOT_REDIS_CA_FILE, CITEBOT_REDIS_CERT_FILE, CITEBOT_REDIS_KEY_FILE).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from bot.config import ConfigError, load_settings
from bot.jobs.consumer import Consumer
from bot.jobs.queue import Job, JobQueue
from bot.store.ledger import PostClaim, PostLedger
from bot.store.redis_target import RedisTarget
from tests.polling import wait_until_async
from tests.redis_tls_server import TlsRedis
from tests.test_doctor import doctor  # noqa: F401
from tests.test_queue import FAST, Calls, answer_job

pytestmark = pytest.mark.e2e

USER, PASSWORD = "citebot", "n0t-in-any-output"


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory) -> Iterator[TlsRedis]:
    server = TlsRedis(tmp_path_factory.mktemp("tls-redis"), user=USER, password=PASSWORD)
    try:
        yield server.start()
    finally:
        server.stop()


def _files(server: TlsRedis) -> dict[str, str]:
    return {
        "CITEBOT_REDIS_CA_FILE": str(server.certs["ca"]),
        "CITEBOT_REDIS_CERT_FILE": str(server.certs["client_cert"]),
        "CITEBOT_REDIS_KEY_FILE": str(server.certs["client_key"]),
    }


def test_doctor_names_mode_tls_and_version_and_never_the_password(doctor, capsys, tls_redis) -> None:  # noqa: F811
    code, found, findings = doctor(capsys, CITEBOT_REDIS_URL=tls_redis.url(), **_files(tls_redis))
    ((status, detail),) = found["redis"]
    assert status == "ok", detail
    assert detail.startswith("Redis 7.") and "(single, TLS)" in detail and f"127.0.0.1:{tls_redis.port}/0" in detail
    data = next(f for f in findings if f["check"] == "redis")
    assert data["mode"] == "single" and data["tls"] is True and data["version"].startswith("7.")
    assert PASSWORD not in capsys.readouterr().out + str(findings) + detail


# redis-py 5.3 leaves the TLS socket of a refused AUTH to the garbage collector
# (asyncio warns "unclosed transport"): its bug, not the doctor's.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_wrong_password_fails_without_the_password(doctor, capsys, tls_redis) -> None:  # noqa: F811
    wrong = tls_redis.url().replace(PASSWORD, "also-secret")
    _, found, _ = doctor(capsys, CITEBOT_REDIS_URL=wrong, **_files(tls_redis))
    ((status, detail),) = found["redis"]
    assert status == "warn" and "cannot reach Redis" in detail and "also-secret" not in detail
    gc.collect()  # the leaked socket's warning here, not in the next test


def test_a_client_certificate_needs_its_key(monkeypatch, tls_redis) -> None:
    monkeypatch.setenv("CITEBOT_REDIS_URL", tls_redis.url())
    monkeypatch.setenv("CITEBOT_REDIS_CERT_FILE", str(tls_redis.certs["client_cert"]))
    with pytest.raises(ConfigError, match="CITEBOT_REDIS_KEY_FILE") as caught:
        load_settings()
    assert PASSWORD not in str(caught.value)


async def test_queue_consumer_and_ledger_over_tls_as_an_acl_user(tls_redis) -> None:
    target = RedisTarget(tls_redis.url(), ca_file=str(tls_redis.certs["ca"]),
                         cert_file=str(tls_redis.certs["client_cert"]), key_file=str(tls_redis.certs["client_key"]))
    done = Calls()

    async def handler(job: Job) -> None:
        done.add(job.id)

    async def dead(job: Job, error: BaseException) -> None:
        raise AssertionError(error)

    async with JobQueue(target) as queue:
        job = answer_job("tls-q")
        assert await queue.enqueue(job, dedupe_id="Ev-tls")
        consumer = Consumer(handler, redis_url=target, on_dead=dead, **FAST)
        task = asyncio.create_task(consumer.run())
        try:
            await wait_until_async(lambda: len(done) == 1, what="the job over TLS")
        finally:
            consumer.stop()
            await task
    ledger = PostLedger(target)
    try:
        assert await ledger.claim_post("tls-q") is PostClaim.GRANTED
    finally:
        await ledger.close()
    assert done.values == [job.id]


async def test_without_the_client_certificate_the_server_refuses(tls_redis) -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    from bot.store.connection import connect

    client = connect(RedisTarget(tls_redis.url(), ca_file=str(tls_redis.certs["ca"])), timeout=2.0)
    try:
        with pytest.raises((RedisConnectionError, OSError)) as caught:
            await client.ping()
        assert PASSWORD not in str(caught.value)
    finally:
        await client.aclose()
