"""edge.pow: hashcash challenges bound to event, account, difficulty and expiry."""

from __future__ import annotations

import uuid

from onsale.edge.pow import (
    HIGH_RISK_MIN_DIFFICULTY,
    SPENT_SLACK_SECONDS,
    PowCodec,
    PowVerdict,
    Work,
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


def test_check_names_the_challenge_a_join_must_spend() -> None:
    clock = Clock()
    codec = PowCodec([KEY], 300, clock)
    one, two = codec.issue(42, ALICE, 8), codec.issue(42, ALICE, 8)
    verdict, spent = codec.check({"challenge": one.token, "solution": solve(one.token, 8)},
                                 42, ALICE, 6)
    assert verdict is PowVerdict.OK and spent is not None
    assert (spent.expires_at, spent.difficulty) == (one.expires_at, 6)  # what was required
    _, other = codec.check({"challenge": two.token, "solution": solve(two.token, 8)},
                           42, ALICE, 8)
    assert other is not None and other.challenge_id != spent.challenge_id
    # Every solution of one challenge is the same work to spend: one join per challenge.
    alt = next(s for s in (format(n, "x") for n in range(10**6))
               if work(one.token, s) >= 8 and s != solve(one.token, 8))
    assert codec.check({"challenge": one.token, "solution": alt}, 42, ALICE, 8)[1] == \
        Work(spent.challenge_id, spent.expires_at, 8)
    assert codec.check(None, 42, ALICE, 8) == (PowVerdict.MISSING, None)
    assert codec.check({"challenge": one.token, "solution": "x"}, 43, ALICE, 8) == \
        (PowVerdict.INVALID, None)


def test_a_spent_challenge_is_remembered_for_the_rest_of_its_life_and_some() -> None:
    clock = Clock()
    codec = PowCodec([KEY], 300, clock)
    challenge = codec.issue(42, ALICE, 1)
    _, spent = codec.check({"challenge": challenge.token,
                            "solution": solve(challenge.token, 1)}, 42, ALICE, 1)
    assert spent is not None
    assert codec.remember_ms(spent) == (300 + SPENT_SLACK_SECONDS) * 1000
    clock.now += 299.5
    assert codec.remember_ms(spent) == int((0.5 + SPENT_SLACK_SECONDS) * 1000)
    clock.now += 10  # expired: verify refuses it, the mark still outlives other clocks
    assert codec.remember_ms(spent) == SPENT_SLACK_SECONDS * 1000
