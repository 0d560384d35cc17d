"""The provider and core agree on webhook signatures through a shared vector, not code:
the simulator's ``sign`` produces the vector's header, core's ``verify`` accepts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onsale.core import webhook_signature as core_sig
from onsale.psp import signature as psp_sig

VECTOR = json.loads((Path(__file__).parents[1] / "fixtures" / "webhook_signature.json")
                    .read_text())
PAYLOAD = VECTOR["payload"].encode()
T = VECTOR["timestamp"]


def test_the_simulator_signs_the_vector() -> None:
    assert psp_sig.sign(VECTOR["secret"], PAYLOAD, T) == VECTOR["header"]


@pytest.mark.parametrize("header", [VECTOR["header"], VECTOR["rotated_header"]])
def test_core_accepts_the_vector(header: str) -> None:
    core_sig.verify(VECTOR["secret"], PAYLOAD, header, now=T + 10)


@pytest.mark.parametrize(("secret", "payload", "header", "now", "reason"), [
    (VECTOR["wrong_secret"], PAYLOAD, VECTOR["header"], T, core_sig.MISMATCH),
    (VECTOR["secret"], PAYLOAD + b" ", VECTOR["header"], T, core_sig.MISMATCH),
    (VECTOR["secret"], PAYLOAD, VECTOR["header"], T + 301, core_sig.STALE),
    (VECTOR["secret"], PAYLOAD, VECTOR["header"], T - 301, core_sig.STALE),
    (VECTOR["secret"], PAYLOAD, "t=abc,v1=00", T, core_sig.MALFORMED),
    (VECTOR["secret"], PAYLOAD, "t=²,v1=00", T, core_sig.MALFORMED),
    (VECTOR["secret"], PAYLOAD, f"t={T}", T, core_sig.MALFORMED),
    (VECTOR["secret"], PAYLOAD, "", T, core_sig.MALFORMED),
])
def test_core_refuses_what_the_vector_does_not_prove(secret: str, payload: bytes, header: str,
                                                      now: int, reason: str) -> None:
    with pytest.raises(core_sig.SignatureError) as caught:
        core_sig.verify(secret, payload, header, now=now)
    assert caught.value.reason == reason


def test_both_sides_name_the_same_header() -> None:
    assert core_sig.HEADER == psp_sig.HEADER
