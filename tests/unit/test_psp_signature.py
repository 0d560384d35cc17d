"""psp.signature: the header format, rotation, staleness and forgery."""

from __future__ import annotations

import hashlib
import hmac
import math

import pytest

from onsale.psp.signature import MALFORMED, MISMATCH, STALE, SignatureError, compute, sign, verify

SECRET = "whsec_test_0123456789"
BODY = b'{"id":"evt_1","type":"payment_intent.succeeded"}'


def test_sign_is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert compute(SECRET, BODY, 1700000000) == expected
    assert sign(SECRET, BODY, 1700000000) == f"t=1700000000,v1={expected}"
    assert sign(SECRET, BODY, 1700000000.9) == sign(SECRET, BODY, 1700000000)


def test_round_trip_within_tolerance_either_side() -> None:
    header = sign(SECRET, BODY, 1700000000)
    verify(SECRET, BODY, header, now=1700000000)
    verify(SECRET, BODY, header, now=1700000300)
    verify(SECRET, BODY, header, now=1699999700)
    verify(SECRET, BODY, header, now=1700000030, tolerance=30)


@pytest.mark.parametrize("now", [1700000301, 1699999699])
def test_stale_timestamp(now: float) -> None:
    with pytest.raises(SignatureError) as caught:
        verify(SECRET, BODY, sign(SECRET, BODY, 1700000000), now=now)
    assert caught.value.reason == STALE


def test_infinite_tolerance_disables_the_age_check() -> None:
    verify(SECRET, BODY, sign(SECRET, BODY, 1), now=1700000000, tolerance=math.inf)


@pytest.mark.parametrize("body, secret", [
    (BODY + b" ", SECRET),
    (BODY, "another-secret-0123"),
])
def test_mismatch(body: bytes, secret: str) -> None:
    with pytest.raises(SignatureError) as caught:
        verify(secret, body, sign(SECRET, BODY, 1700000000), now=1700000000)
    assert caught.value.reason == MISMATCH


def test_a_forged_stale_header_reports_the_mismatch() -> None:
    with pytest.raises(SignatureError) as caught:
        verify(SECRET, BODY, "t=1,v1=00", now=1700000000)
    assert caught.value.reason == MISMATCH


def test_rotation_any_v1_entry_may_match() -> None:
    good = compute(SECRET, BODY, 1700000000)
    header = f"t=1700000000,v1={'0' * 64},v0=ignored,v1={good}"
    verify(SECRET, BODY, header, now=1700000000)
    verify(SECRET, BODY, f"t=1700000000, v1={good}", now=1700000000)


@pytest.mark.parametrize("header", [
    "", "garbage", "t=1700000000", "v1=abc", "t=abc,v1=abc", "t=-5,v1=abc",
    "t=1,t=2,v1=abc", "t=1700000000,v1=", "t=1700000000,,v1=abc", "t=1700000000,=x,v1=ab",
    "t=²,v1=abc", "t=١٧٠٠٠٠٠٠٠٠,v1=abc", "t=" + "9" * 5000 + ",v1=abc",  # no int() crash
])
def test_malformed(header: str) -> None:
    with pytest.raises(SignatureError) as caught:
        verify(SECRET, BODY, header, now=1700000000)
    assert caught.value.reason == MALFORMED
    assert str(caught.value) == MALFORMED


def test_non_ascii_signature_is_a_mismatch_not_a_crash() -> None:
    with pytest.raises(SignatureError) as caught:
        verify(SECRET, BODY, "t=1700000000,v1=é", now=1700000000)
    assert caught.value.reason == MISMATCH


def test_signature_error_is_a_value_error() -> None:
    assert issubclass(SignatureError, ValueError)
