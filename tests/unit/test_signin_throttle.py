"""core.signin_throttle, the pure parts: the back-off schedule, what counts as
one client address, the email key, and the verdict from the scripts' answers.
The scripts themselves run against Valkey in tests/integration/test_accounts.py."""

from __future__ import annotations

import pytest

from onsale.core.signin_throttle import (
    Limits,
    SigninThrottle,
    address_bucket,
    email_digest,
    lockout_seconds_after,
    retry_after_seconds,
    verdict,
)


@pytest.mark.parametrize(("failures", "seconds"), [
    (0, 0), (1, 0), (4, 0),           # below the threshold: no lock
    (5, 30), (6, 60), (7, 120), (8, 240), (9, 480),  # then doubling
    (10, 900), (11, 900), (50, 900),  # capped
    (10**6, 900),                     # no overflow however long the streak
])
def test_the_lockout_doubles_after_the_threshold_up_to_the_cap(failures: int,
                                                               seconds: int) -> None:
    assert lockout_seconds_after(failures, after=5, base=30, cap=900) == seconds


def test_a_threshold_of_one_locks_after_the_first_failure() -> None:
    assert [lockout_seconds_after(f, 1, 2, 100) for f in range(5)] == [0, 2, 4, 8, 16]


@pytest.mark.parametrize(("host", "bucket"), [
    ("203.0.113.7", "203.0.113.7"),
    ("203.0.113.8", "203.0.113.8"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # same subscriber
    ("2001:db8:1:3::1", "2001:db8:1:3::/64"),                   # the next one
    ("::ffff:203.0.113.7", "203.0.113.7"),                       # IPv4-mapped
    ("::1", "::/64"),
    ("unknown", "unknown"),
    ("", "unknown"),
])
def test_what_counts_as_one_client_address(host: str, bucket: str) -> None:
    assert address_bucket(host) == bucket


def test_an_odd_host_string_is_bounded() -> None:
    assert len(address_bucket("x" * 10_000)) == 64


def test_emails_are_keyed_by_a_digest_case_and_spaces_folded() -> None:
    assert email_digest("Ada@Example.com") == email_digest(" ada@example.com ")
    assert email_digest("ada@example.com") != email_digest("bob@example.com")
    key = SigninThrottle.email_key("Ada@Example.com")
    assert "ada" not in key.lower() and "example" not in key
    assert key.startswith("onsale:signin:email:") and len(key) == len("onsale:signin:email:") + 32


@pytest.mark.parametrize(("ms", "seconds"), [(1, 1), (999, 1), (1000, 1), (1001, 2),
                                             (29_500, 30), (0, 1)])
def test_retry_after_is_whole_seconds_rounded_up_at_least_one(ms: int, seconds: int) -> None:
    assert retry_after_seconds(ms) == seconds


@pytest.mark.parametrize(("ip_ms", "email", "expected"), [
    (0, [0, 3], None),          # both allow
    (0, [0, 0], None),          # a sign-up (no failure counted)
    (12_000, [0, 1], 12),       # the address is over its limit
    (0, [1, 30_000], 30),       # the email is locked
    (0, [2, 45_001], 46),       # the email's window is full
    (5_000, [1, 60_000], 60),   # both refuse: the longer wait
    (0, [2, 0], 1),             # refused at the very end of the window
])
def test_the_verdict_of_the_two_scripts(ip_ms: int, email: list[int],
                                        expected: int | None) -> None:
    assert verdict(ip_ms, email) == expected


def test_a_failure_streak_is_remembered_longer_than_the_longest_lock() -> None:
    assert Limits().memory_seconds == 3600
    assert Limits(lockout_max_seconds=7200).memory_seconds == 14_400
