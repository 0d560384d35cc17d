"""psp.idempotency: fingerprints and the replay / conflict / in-progress decision."""

from __future__ import annotations

from onsale.psp.idempotency import (
    Conflict,
    InProgress,
    New,
    Replay,
    StoredKey,
    canonical_json,
    decide,
    fingerprint,
    scope,
)


def test_canonical_json_ignores_key_order_and_spacing() -> None:
    assert canonical_json({"b": 1, "a": {"d": 2, "c": "é"}}) == '{"a":{"c":"é","d":2},"b":1}'
    assert fingerprint("POST", "/v1/x", {"a": 1, "b": 2}) == \
        fingerprint("post", "/v1/x", {"b": 2, "a": 1})


def test_fingerprint_covers_method_path_and_body() -> None:
    base = fingerprint("POST", "/v1/payment_intents/pi_1/capture", {})
    assert base != fingerprint("POST", "/v1/payment_intents/pi_1/cancel", {})
    assert base != fingerprint("POST", "/v1/payment_intents/pi_2/capture", {})
    assert base != fingerprint("POST", "/v1/payment_intents/pi_1/capture",
                               {"amount_to_capture": 1})
    assert fingerprint("POST", "/p", {"amount": 1}) != fingerprint("POST", "/p", {"amount": 1.0})


def test_scope_is_a_digest_per_api_key() -> None:
    assert scope("sk_test_aaaaaaaaaaaaaaaa") != scope("sk_test_bbbbbbbbbbbbbbbb")
    assert "sk_test" not in scope("sk_test_aaaaaaaaaaaaaaaa")
    assert len(scope("sk_test_aaaaaaaaaaaaaaaa")) == 32


def test_decide() -> None:
    done = StoredKey("fp", created=1000.0, status=200, body=b"{}")
    assert decide(None, "fp", 1000.0, 86400) == New()
    assert decide(done, "fp", 1001.0, 86400) == Replay(200, b"{}")
    assert decide(done, "other", 1001.0, 86400) == Conflict()
    assert decide(StoredKey("fp", 1000.0, None, None), "fp", 1001.0, 86400) == InProgress()
    assert decide(StoredKey("fp", 1000.0, None, None), "x", 1001.0, 86400) == Conflict()


def test_an_expired_key_is_new_again() -> None:
    done = StoredKey("fp", created=1000.0, status=402, body=b"{}")
    assert decide(done, "other", 1000.0 + 86399.9, 86400) == Conflict()
    assert decide(done, "other", 1000.0 + 86400, 86400) == New()
    assert decide(done, "fp", 1000.0 + 86400, 86400) == New()
