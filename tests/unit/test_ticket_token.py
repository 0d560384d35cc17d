"""Signed tickets a gate verifies offline (core/ticket_token.py), on literal keys and
values: a good ticket, a forged one, the wrong key id, malformed, revoked, expired, the
wrong event, and a rotation (a ticket under the old kid verifies while the new signs)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from onsale.core.ticket_token import (
    Claims,
    KeyRing,
    PublicKey,
    b64url,
    derived_key,
    key_ring,
    keys_document,
    new_key_line,
    parse_key,
    read_keys_document,
    read_revocations,
    sign,
    unb64url,
    unverified_event,
    verify,
)
from onsale.kernel.config_sessions import ticket_signing_keys
from onsale.kernel.settings import ConfigError

GATE1 = "gate1:" + base64.b64encode(bytes(range(32))).decode()
GATE2 = "gate2:" + base64.b64encode(bytes(range(32, 64))).decode()
TICKET = "01900000-0000-7000-8000-000000000001"
ORDER = "01900000-0000-7000-8000-0000000000aa"
SEAT_12 = Claims(kid="gate1", event=7, ticket=TICKET, order=ORDER,
                 issued_at="2026-12-03T18:00:00.000000Z", seat=12)
# The format pinned: Ed25519 is deterministic, so this key and these claims always give
# this value (a scanner written elsewhere can test itself against it).
VALUE = ("OT1.eyJldmVudCI6NywiaXNzdWVkX2F0IjoiMjAyNi0xMi0wM1QxODowMDowMC4wMDAwMDBaIiwia2lk"
         "IjoiZ2F0ZTEiLCJvcmRlciI6IjAxOTAwMDAwLTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDBhYSIsInNl"
         "YXQiOjEyLCJ0aWNrZXQiOiIwMTkwMDAwMC0wMDAwLTcwMDAtODAwMC0wMDAwMDAwMDAwMDEiLCJ2Ijox"
         "fQ.HEC9rlv4u3ZX2EvXUL6RsKi3RYPKAIj38B3Uc1yqFno653jS5r4FQ6yYfXjyJquOwllLHZX9m84D3"
         "x-Aaww0Ag")
GATE1_PUBLIC_X = "A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg"
NOW = datetime(2026, 12, 24, 20, 0, tzinfo=UTC)
ENDS = datetime(2026, 12, 25, 2, 0, tzinfo=UTC)


def ring(*items: str) -> KeyRing:
    return key_ring(",".join(items), "unused-secret-0123456789")


def published(keys: KeyRing, event: int = 7) -> dict[str, PublicKey]:
    """What a scanner holds: the keys document, read back."""
    doc = json.loads(json.dumps(keys_document(keys, event, ENDS)))
    got_event, found = read_keys_document(doc)
    assert got_event == event
    return found


def test_a_good_ticket_verifies_and_says_what_it_admits_to() -> None:
    keys = ring(GATE1)
    assert sign(SEAT_12, keys.signer) == VALUE
    verdict = verify(VALUE, published(keys), now=NOW, event=7)
    assert (verdict.ok, verdict.reason) == (True, "valid")
    assert verdict.claims == SEAT_12


def test_a_ga_place_is_signed_with_its_tier_and_place() -> None:
    keys = ring(GATE1)
    place = Claims(kid="gate1", event=7, ticket=TICKET, order=ORDER,
                   issued_at="2026-12-03T18:00:00.000000Z", ga_tier=2, place=3)
    value = sign(place, keys.signer)
    payload = json.loads(unb64url(value.split(".")[1]))
    assert payload == {"v": 1, "kid": "gate1", "event": 7, "ticket": TICKET, "order": ORDER,
                       "issued_at": "2026-12-03T18:00:00.000000Z", "ga_tier": 2, "place": 3}
    assert verify(value, published(keys), now=NOW).claims == place


def test_one_changed_byte_of_payload_or_signature_is_forged() -> None:
    keys = published(ring(GATE1))
    head, payload, signature = VALUE.split(".")
    doc = json.loads(unb64url(payload))
    doc["seat"] = 13  # another seat, same signature
    other_seat = f"{head}.{b64url(json.dumps(doc).encode())}.{signature}"
    assert verify(other_seat, keys, now=NOW).reason == "forged"
    raw = bytearray(unb64url(signature))
    raw[0] ^= 1
    assert verify(f"{head}.{payload}.{b64url(bytes(raw))}", keys, now=NOW).reason == "forged"


def test_signed_by_another_key_under_our_kid_is_forged() -> None:
    impostor = parse_key("gate1:" + base64.b64encode(bytes(range(64, 96))).decode())
    value = sign(SEAT_12, impostor)
    assert verify(value, published(ring(GATE1)), now=NOW).reason == "forged"


def test_a_key_id_the_scanner_does_not_hold_is_unknown() -> None:
    value = sign(Claims(**{**SEAT_12.__dict__, "kid": "gate2"}), ring(GATE2).signer)
    verdict = verify(value, published(ring(GATE1)), now=NOW)
    assert verdict.reason == "unknown_key" and "gate2" in verdict.detail
    assert verdict.claims is None  # nothing unverified is returned


@pytest.mark.parametrize("value", [
    "", "OT1", "OT1..", "OT2." + VALUE[4:], VALUE + ".x", "OT1.!!!.abc",
    "OT1." + b64url(b"not json") + ".AAAA", "OT1." + b64url(b"[1,2]") + ".AAAA",
    "OT1." + b64url(b'{"kid":3}') + ".AAAA", "x" * 5000,
])
def test_malformed_values_are_refused_as_malformed(value: str) -> None:
    assert verify(value, published(ring(GATE1)), now=NOW).reason == "malformed"


def test_a_signed_payload_out_of_shape_is_malformed() -> None:
    keys = ring(GATE1)
    head = "OT1." + b64url(json.dumps({"v": 1, "kid": "gate1", "event": "7"}).encode())
    value = f"{head}.{b64url(keys.signer.private.sign(head.encode()))}"
    assert verify(value, published(keys), now=NOW).reason == "malformed"


def test_a_revoked_ticket_is_refused_after_its_signature_is_checked() -> None:
    keys = published(ring(GATE1))
    verdict = verify(VALUE, keys, now=NOW, revoked={TICKET})
    assert verdict.reason == "revoked" and verdict.claims == SEAT_12
    assert verify(VALUE, keys, now=NOW, revoked={ORDER}).ok


def test_past_the_event_end_the_key_has_expired() -> None:
    keys = published(ring(GATE1))
    assert verify(VALUE, keys, now=ENDS).ok
    assert verify(VALUE, keys, now=ENDS + timedelta(microseconds=1)).reason == "expired"


def test_a_ticket_for_another_event_is_refused_with_these_keys() -> None:
    assert verify(VALUE, published(ring(GATE1), event=8), now=NOW,
                  event=8).reason == "wrong_event"


def test_rotation_the_new_key_signs_and_the_old_kid_still_verifies() -> None:
    old_ticket = VALUE  # signed while gate1 alone signed
    rotated = ring(GATE2, GATE1)
    assert rotated.signer.kid == "gate2"
    new_ticket = sign(Claims(**{**SEAT_12.__dict__, "kid": "gate2"}), rotated.signer)
    keys = published(rotated)
    assert sorted(keys) == ["gate1", "gate2"]
    assert verify(old_ticket, keys, now=NOW).ok
    assert verify(new_ticket, keys, now=NOW).ok
    # once gate1 is dropped (every event it signed for has ended), its tickets are unknown
    assert verify(old_ticket, published(ring(GATE2)), now=NOW).reason == "unknown_key"


def test_the_keys_document_publishes_public_keys_only() -> None:
    doc = keys_document(ring(GATE2, GATE1), 7, ENDS)
    assert doc["signing_kid"] == "gate2" and doc["valid_until"] == "2026-12-25T02:00:00.000000Z"
    gate1 = doc["keys"][1]
    assert gate1 == {"kid": "gate1", "alg": "Ed25519", "kty": "OKP", "crv": "Ed25519",
                     "x": GATE1_PUBLIC_X, "valid_until": "2026-12-25T02:00:00.000000Z"}
    with pytest.raises(ValueError):
        read_keys_document({"event_id": 7, "keys": [{**gate1, "alg": "HS256"}]})
    with pytest.raises(ValueError):
        read_keys_document({"keys": []})


def test_revocations_document_is_read_as_ticket_ids() -> None:
    assert read_revocations({"event_id": 7, "revoked": [{"ticket_id": TICKET}]}) == \
        (7, frozenset({TICKET}))
    with pytest.raises(ValueError):
        read_revocations({"event_id": "7", "revoked": []})


def test_keys_come_from_the_setting_or_are_derived_from_the_secret() -> None:
    derived = key_ring("", "s" * 32)
    assert [k.kid for k in derived.keys] == ["d-0dc702b2"] == [derived_key("s" * 32).kid]
    assert key_ring("", "t" * 32).signer.kid != "d-0dc702b2"
    assert [k.kid for k in key_ring(f" {GATE2} , {GATE1},", "s" * 32).keys] == \
        ["gate2", "gate1"]
    with pytest.raises(ValueError, match="same kid"):
        key_ring(f"{GATE1},{GATE1}", "s" * 32)


@pytest.mark.parametrize("raw,message", [
    ("gate1", "kid:base64"), ("bad kid:AAAA", "kid:base64"),
    ("gate1:%%%%", "not base64"), ("gate1:" + base64.b64encode(b"short").decode(), "5 bytes"),
    (f"{GATE1},{GATE1}", "same kid"),
])
def test_the_setting_refuses_keys_out_of_shape(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ticket_signing_keys("ONSALE_TICKET_SIGNING_KEYS", raw)
    assert ticket_signing_keys("X", f" {GATE1},{GATE2} ") == f"{GATE1},{GATE2}"


def test_a_new_key_line_is_a_working_key() -> None:
    line = new_key_line("k2027")
    assert ticket_signing_keys("X", line) == line
    keys = key_ring(line, "s" * 32)
    value = sign(Claims(**{**SEAT_12.__dict__, "kid": "k2027"}), keys.signer)
    assert verify(value, published(keys), now=NOW).ok
    with pytest.raises(ValueError):
        new_key_line("no spaces")


def test_the_event_is_read_unverified_only_to_pick_the_keys() -> None:
    assert unverified_event(VALUE) == 7
    assert unverified_event("garbage") is None
