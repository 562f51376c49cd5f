"""The one backoff and Retry-After helper (citebot_core.retry), with each caller's numbers."""

from __future__ import annotations

import email.utils
import time

import pytest
from hypothesis import given, strategies as st

from citebot_core.retry import backoff_delay, parse_retry_after

retries = st.integers(min_value=0, max_value=40)
bases = st.floats(min_value=0.0, max_value=10.0)
caps = st.floats(min_value=0.0, max_value=120.0)
jitters = st.floats(min_value=-1.0, max_value=1.0)


@given(retries, bases, caps, jitters)
def test_a_delay_stays_within_its_jitter_of_the_capped_doubling(retry, base, cap, jitter):
    nominal = min(cap, base * 2**retry)
    delay = backoff_delay(retry, base=base, cap=cap, jitter=jitter)
    low, high = sorted((nominal, nominal * (1 + jitter)))
    assert low - 1e-9 <= delay <= high + 1e-9


@given(retries, bases, caps)
def test_without_jitter_the_delay_doubles_up_to_the_cap(retry, base, cap):
    delay = backoff_delay(retry, base=base, cap=cap)
    assert delay == min(cap, base * 2**retry)
    assert backoff_delay(retry + 1, base=base, cap=cap) >= delay


def test_a_negative_jitter_takes_off_up_to_that_fraction():
    # "Equal jitter", as the job consumer waits: between half the delay and all of it.
    delays = [backoff_delay(3, base=2.0, cap=60.0, jitter=-0.5) for _ in range(200)]
    assert all(8.0 <= d <= 16.0 for d in delays)
    assert min(delays) < 10.0 and max(delays) > 14.0  # spread over the range, not stuck at one end


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("3", 3.0), (" 1.5 ", 1.5), ("-4", 0.0), ("0", 0.0), (None, None), ("", None), ("  ", None),
     ("soon", None), ("inf", None), ("nan", None)],
)
def test_retry_after_in_seconds(value, seconds):
    assert parse_retry_after(value) == seconds


def test_retry_after_as_an_http_date():
    now = time.time()
    assert parse_retry_after(email.utils.formatdate(now + 120, usegmt=True), now=now) == pytest.approx(120, abs=1)
    assert parse_retry_after(email.utils.formatdate(now - 60, usegmt=True), now=now) == 0.0
    # "-0000" is UTC too: the same instant as the GMT form.
    minus_zero = email.utils.formatdate(now + 120, usegmt=True).replace("GMT", "-0000")
    assert parse_retry_after(minus_zero, now=now) == pytest.approx(120, abs=1)


@given(st.text(max_size=40))
def test_any_header_value_gives_a_finite_delay_or_none(value):
    seconds = parse_retry_after(value, now=0.0)
    assert seconds is None or 0.0 <= seconds < float("inf")
