"""The provider and core agree on webhook signatures through a shared vector, not code:
the simulator's ``sign`` produces the vector's header, and core's check (the stripe SDK's
``WebhookSignature.verify_header``, Stripe's scheme) accepts it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import stripe

from onsale.psp import signature as psp_sig

VECTOR = json.loads((Path(__file__).parents[1] / "fixtures" / "webhook_signature.json")
                    .read_text())
PAYLOAD = VECTOR["payload"].encode()
T = VECTOR["timestamp"]


def test_the_simulator_signs_the_vector() -> None:
    assert psp_sig.sign(VECTOR["secret"], PAYLOAD, T) == VECTOR["header"]


@pytest.mark.parametrize("header", [VECTOR["header"], VECTOR["rotated_header"]])
def test_the_sdk_accepts_the_vector(header: str) -> None:
    assert stripe.WebhookSignature.verify_header(PAYLOAD, header, VECTOR["secret"],
                                                 tolerance=None)


@pytest.mark.parametrize(("secret", "payload", "header"), [
    (VECTOR["wrong_secret"], PAYLOAD, VECTOR["header"]),
    (VECTOR["secret"], PAYLOAD + b" ", VECTOR["header"]),
    (VECTOR["secret"], PAYLOAD, "t=abc,v1=00"),
    (VECTOR["secret"], PAYLOAD, f"t={T}"),
    (VECTOR["secret"], PAYLOAD, ""),
])
def test_the_sdk_refuses_what_the_vector_does_not_prove(secret: str, payload: bytes,
                                                         header: str) -> None:
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(payload, header, secret, tolerance=None)


def test_a_fresh_signature_passes_and_an_old_one_is_stale() -> None:
    now = int(time.time())
    fresh = psp_sig.sign(VECTOR["secret"], PAYLOAD, now)
    assert stripe.WebhookSignature.verify_header(PAYLOAD, fresh, VECTOR["secret"], tolerance=300)
    old = psp_sig.sign(VECTOR["secret"], PAYLOAD, now - 301)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(PAYLOAD, old, VECTOR["secret"], tolerance=300)
