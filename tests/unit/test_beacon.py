"""edge/beacon.py: drand rounds checked offline against real chains' keys, with rounds
those chains published (the fixtures are their public values; no network here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from onsale.edge.beacon import BeaconError, Round, verify, verify_due
from onsale.kernel.beacon_chain import MAINNET, QUICKNET

# quicknet round 123 (api.drand.sh/52db9ba7…c84e971/public/123)
QUICK_123 = Round(123, "b75c69d0b72a5d906e854e808ba7e2accb1542ac355ae486d591aa9d43765482"
                       "e26cd02df835d3546d23c4b13e0dfc92")
# mainnet (League of Entropy) round 72785 and the signature of round 72784 before it
MAIN_72785 = Round(
    72785,
    "82f5d3d2de4db19d40a6980e8aa37842a0e55d1df06bd68bddc8d60002e8e959eb9cfa368b3c1b77d18f02"
    "a54fe047b80f0989315f83b12a74fd8679c4f12aae86eaf6ab5690b34f1fddd50ee3cc6f6cdf59e95526d5"
    "a5d82aaa84fa6f181e42",
    "a609e19a03c2fcc559e8dae14900aaefe517cb55c840f6e69bc8e4f66c8d18e8a609685d9917efbfb0c37f"
    "058c2de88f13d297c7e19e0ab24813079efe57a182554ff054c7638153f9b26a60e7111f71a0ff63d95717"
    "04905d3ca6df0b031747")
# mainnet round 1's signature: a point of the curve, another round's
MAIN_1_SIGNATURE = (
    "8d61d9100567de44682506aea1a7a6fa6e5491cd27a0a0ed349ef6910ac5ac20ff7bc3e09d7c046566c9f7"
    "f3c6f3b10104990e7cb424998203d8f7de586fb7fa5f60045417a432684f85093b06ca91c769f0e7ca1926"
    "8375e659c2a2352b4655")


def test_a_published_quicknet_round_verifies() -> None:
    randomness = verify(QUICKNET, QUICK_123)
    assert randomness == QUICK_123.randomness and len(randomness) == 32


def test_a_chained_mainnet_round_verifies() -> None:
    assert verify(MAINNET, MAIN_72785) == MAIN_72785.randomness


@pytest.mark.parametrize("bad", [
    Round(124, QUICK_123.signature),                                   # the wrong round
    Round(123, QUICK_123.signature[:-2] + "93"),                       # a forged byte
    Round(123, "00" * 48),                                             # not a point
    Round(123, "zz"),                                                  # not hex
    Round(0, QUICK_123.signature),                                     # no round 0
])
def test_anything_else_is_refused_on_quicknet(bad: Round) -> None:
    with pytest.raises(BeaconError):
        verify(QUICKNET, bad)


def test_a_mainnet_round_needs_its_own_signature_and_the_previous_one() -> None:
    with pytest.raises(BeaconError):
        verify(MAINNET, Round(72785, MAIN_1_SIGNATURE, MAIN_72785.previous_signature))
    with pytest.raises(BeaconError):
        verify(MAINNET, Round(72785, MAIN_72785.signature,
                              "6" + MAIN_72785.previous_signature[1:]))
    with pytest.raises(BeaconError):
        verify(MAINNET, Round(321, MAIN_72785.signature, MAIN_72785.previous_signature))
    with pytest.raises(BeaconError):  # another chain's key
        verify(QUICKNET, Round(72785, MAIN_72785.signature))


def test_rounds_are_due_on_the_chains_clock() -> None:
    assert QUICKNET.round_at(QUICKNET.genesis_time - 1) == 0
    assert QUICKNET.round_at(QUICKNET.genesis_time) == 1
    assert QUICKNET.round_at(QUICKNET.genesis_time + 3 * 122) == 123
    assert QUICKNET.time_of(123) == QUICKNET.genesis_time + 366
    assert MAINNET.round_at(MAINNET.time_of(72785) + 29) == 72785


def test_a_round_not_yet_published_is_not_accepted() -> None:
    due = QUICKNET.time_of(123)
    with pytest.raises(BeaconError, match="not yet published"):
        verify_due(QUICKNET, QUICK_123, due - 1)
    assert verify_due(QUICKNET, QUICK_123, due) == QUICK_123.randomness


def test_importing_leaves_the_recursion_limit() -> None:
    """py_ecc raises the limit to 100,000 on import; with that, a deeply nested JSON body
    overflows the C stack (SIGSEGV) instead of raising RecursionError. The import in a
    fresh interpreter leaves the limit as it was, and json's refusal still works."""
    code = ("import json, sys\n"
            "before = sys.getrecursionlimit()\n"
            "import onsale.edge.beacon\n"
            "assert sys.getrecursionlimit() == before, sys.getrecursionlimit()\n"
            "try:\n"
            "    json.loads('[' * 200_000)\n"
            "except RecursionError:\n"
            "    print('refused')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "refused"), done.stderr
