"""edge.pow: hashcash challenges bound to event, account, difficulty and expiry."""

from __future__ import annotations

import uuid

from onsale.edge.pow import (
    HIGH_RISK_MIN_DIFFICULTY,
    PowCodec,
    PowVerdict,
    leading_zero_bits,
    required_difficulty,
    solve,
    work,
)

KEY = "pow-key-0123456789abcdef"
ALICE = uuid.UUID(int=1)


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_leading_zero_bits() -> None:
    assert leading_zero_bits(b"\x00\x00\xff") == 16
    assert leading_zero_bits(b"\x00\x01") == 15
    assert leading_zero_bits(b"\x80") == 0
    assert leading_zero_bits(b"\x00\x00") == 16


def test_a_solved_challenge_verifies_once_for_its_event_and_account() -> None:
    clock = Clock()
    codec = PowCodec([KEY], 300, clock)
    challenge = codec.issue(42, ALICE, 8)
    solution = solve(challenge.token, 8)
    assert work(challenge.token, solution) >= 8
    proof = {"challenge": challenge.token, "solution": solution}
    assert codec.verify(proof, 42, ALICE, 8) is PowVerdict.OK
    assert codec.verify(proof, 43, ALICE, 8) is PowVerdict.INVALID
    assert codec.verify(proof, 42, uuid.UUID(int=2), 8) is PowVerdict.INVALID
    assert codec.verify(proof, 42, ALICE, 9) is PowVerdict.INVALID  # easier than required
    clock.now += 301
    assert codec.verify(proof, 42, ALICE, 8) is PowVerdict.INVALID


def test_wrong_missing_and_forged_proofs() -> None:
    codec = PowCodec([KEY], 300, Clock())
    challenge = codec.issue(42, ALICE, 12)
    bad = next(s for s in (format(n, "x") for n in range(1000))
               if work(challenge.token, s) < 12)
    assert codec.verify({"challenge": challenge.token, "solution": bad}, 42, ALICE, 12) \
        is PowVerdict.INVALID
    assert codec.verify(None, 42, ALICE, 12) is PowVerdict.MISSING
    assert codec.verify({"challenge": challenge.token}, 42, ALICE, 12) is PowVerdict.INVALID
    forged = PowCodec(["other-key-0123456789ab"], 300, Clock()).issue(42, ALICE, 1)
    assert codec.verify({"challenge": forged.token, "solution": solve(forged.token, 1)},
                        42, ALICE, 1) is PowVerdict.INVALID


def test_high_risk_visitors_get_at_least_the_floor() -> None:
    assert required_difficulty(0, False) == 0
    assert required_difficulty(0, True) == HIGH_RISK_MIN_DIFFICULTY
    assert required_difficulty(24, True) == 24
