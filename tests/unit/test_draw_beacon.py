"""A draw mixed with a beacon round (edge/draw.py, kernel/beacon_chain.py, edge/ops_draw.py):
the document's checks on quicknet's real round 123, which round a draw must use, what the
event page says, and when the operator may fall back to the seed alone."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from onsale.core.draw_seed import commitment
from onsale.edge.draw import check_beacon, draw_key_of, draw_order, main, mixed_key, verify_document
from onsale.edge.ops_draw import fallback_refusal
from onsale.kernel.beacon_chain import (
    MAINNET,
    QUICKNET,
    ChainError,
    beacon_summary,
    chain_from_info,
    chain_setting,
    commitment_document,
    round_to_draw,
)
from onsale.kernel.timefmt import utc_iso
from tests.unit.test_beacon import QUICK_123

SEED = "5eed" * 16
PARTICIPANTS = sorted(f"{i:08d}-0000-4000-8000-000000000000" for i in range(30))
DUE_123 = QUICKNET.time_of(123)


def iso(unix: float) -> str:
    return utc_iso(datetime.fromtimestamp(unix, UTC))


def drawn_document(**beacon: Any) -> dict[str, Any]:
    """A published draw of quicknet round 123 as the edge writes it."""
    outcome = {"round": 123, "signature": QUICK_123.signature, "previous_signature": "",
               "randomness": QUICK_123.randomness.hex()}
    part = {"commitment": {"chain": QUICKNET.document(), "round": 123},
            "closed_at": iso(DUE_123 - 1), "outcome": outcome}
    part.update(beacon)
    return {"seed": SEED, "commitment": commitment(SEED), "participants": PARTICIPANTS,
            "beacon": part}


def test_rounds_and_times() -> None:
    assert QUICKNET.round_at(QUICKNET.genesis_time) == 1
    assert QUICKNET.round_at(DUE_123) == 123 and QUICKNET.round_at(DUE_123 - 0.5) == 122
    assert QUICKNET.first_round_after(DUE_123) == 124
    assert QUICKNET.round_at(0) == 0
    assert commitment_document(QUICKNET, DUE_123 - 1) == {"chain": QUICKNET.document(),
                                                          "round": 123}


def test_a_late_close_moves_the_draw_to_the_first_round_after_it() -> None:
    committed = commitment_document(QUICKNET, DUE_123 - 1)
    assert round_to_draw(committed, DUE_123 - 1) == 123     # closed in time
    assert round_to_draw(committed, DUE_123) == 124         # closed as 123 came out
    assert round_to_draw(committed, DUE_123 + 31) == 134    # a late admitter
    assert round_to_draw(committed, 0) == 123               # never earlier than committed


def test_the_draw_key_mixes_the_randomness_into_the_seed() -> None:
    randomness = QUICK_123.randomness
    key = mixed_key(SEED, randomness)
    assert key == hashlib.sha256(SEED.encode() + randomness).hexdigest()
    assert draw_key_of(SEED, None) == SEED
    assert draw_key_of(SEED, {"fallback": {"reason": "x", "at": "t"}}) == SEED
    assert draw_key_of(SEED, {"randomness": randomness.hex()}) == key
    assert draw_order(key, PARTICIPANTS) != draw_order(SEED, PARTICIPANTS)


def test_a_document_drawn_with_a_real_round_checks_out() -> None:
    doc = drawn_document()
    assert verify_document(doc) == []
    key = mixed_key(SEED, QUICK_123.randomness)
    assert verify_document({**doc, "order": draw_order(key, PARTICIPANTS)}) == []
    # the order by the seed alone is not this draw's
    assert verify_document({**doc, "order": draw_order(SEED, PARTICIPANTS)}) != []


@pytest.mark.parametrize("change, problem", [
    ({"signature": QUICK_123.signature[:-2] + "93"}, "does not check out"),   # forged
    ({"randomness": "00" * 32}, "not sha256 of the round's signature"),
    ({"round": 124}, "the draw used round 124, not round 123"),
])
def test_a_forged_or_wrong_round_is_found(change: dict[str, Any], problem: str) -> None:
    doc = drawn_document()
    doc["beacon"]["outcome"].update(change)
    assert any(problem in p for p in verify_document(doc)), verify_document(doc)


def test_a_round_published_before_the_pre_queue_closed_is_refused() -> None:
    """Round 123 was public when the pre-queue closed: participants could still change
    after it was known, so the draw must have used round 124."""
    doc = drawn_document(closed_at=iso(DUE_123 + 1))
    assert any("not round 124" in p for p in verify_document(doc))


def test_a_round_not_recorded_yet_and_a_malformed_part() -> None:
    assert verify_document(drawn_document(outcome=None)) == [
        "the beacon round is not recorded yet"]
    assert "malformed" in verify_document(drawn_document(closed_at="yesterday"))[0]


def test_the_seed_alone_and_the_operators_fallback_are_said_so() -> None:
    alone = {"seed": SEED, "commitment": commitment(SEED), "participants": PARTICIPANTS,
             "beacon": None}
    assert verify_document(alone) == []
    assert "seed alone" in check_beacon(None)[2][0]
    fell = drawn_document(outcome={"fallback": {"reason": "drand unreachable", "at": "t"}})
    assert verify_document(fell) == []
    randomness, problems, notes = check_beacon(fell["beacon"])
    assert (randomness, problems) == (None, [])
    assert "drand unreachable" in notes[0] and "round 123" in notes[0]


def test_the_command_prints_the_order_and_the_notes(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "draw.json"
    good.write_text(json.dumps(drawn_document()))
    assert main([str(good)]) == 0
    out, err = capsys.readouterr()
    key = mixed_key(SEED, QUICK_123.randomness)
    assert out.splitlines()[0] == f"1 {draw_order(key, PARTICIPANTS)[0]}"
    assert err == ""
    forged = drawn_document()
    forged["beacon"]["outcome"]["signature"] = QUICK_123.signature[:-2] + "93"
    good.write_text(json.dumps(forged))
    assert main([str(good)]) == 1
    assert "FAILED: the beacon round does not check out" in capsys.readouterr().err


def test_another_chain_is_read_from_its_info_and_flagged() -> None:
    info = {"public_key": QUICKNET.public_key, "period": 3, "genesis_time": 1692803367,
            "hash": "ab" * 32, "schemeID": "bls-unchained-g1-rfc9380"}
    chain = chain_from_info(info)
    assert chain.hash == "ab" * 32 and chain.name == "abababababab"
    doc = drawn_document()
    doc["beacon"]["commitment"]["chain"] = chain.document()
    assert verify_document(doc) == []  # the same key signed it
    assert "not one this verifier knows" in check_beacon(doc["beacon"])[2][0]


@pytest.mark.parametrize("info", [
    {"public_key": "zz", "period": 3, "genesis_time": 1, "hash": "ab", "schemeID": "x"},
    {"public_key": "ab", "period": 3, "genesis_time": 1, "hash": "ab", "schemeID": "bls"},
    {"public_key": "ab", "period": 0, "genesis_time": 1, "hash": "ab",
     "schemeID": "pedersen-bls-chained"},
    {**QUICKNET.document(), "public_key": MAINNET.public_key},  # quicknet's hash, not its key
    {"period": 3},
])
def test_a_chain_that_is_not_one_is_refused(info: dict[str, Any]) -> None:
    with pytest.raises(ChainError):
        chain_from_info(info)


def test_the_setting(tmp_path: Path) -> None:
    assert chain_setting("off") is None and chain_setting("") is None
    assert chain_setting("quicknet") == QUICKNET and chain_setting(" mainnet ") == MAINNET
    info = tmp_path / "chain.json"
    info.write_text(json.dumps({**QUICKNET.document(), "name": "mine", "hash": "cd" * 32}))
    assert chain_setting(str(info)).name == "mine"  # type: ignore[union-attr]
    for bad in ("testnet", str(tmp_path / "missing.json")):
        with pytest.raises(ChainError):
            chain_setting(bad)
    info.write_text("[1]")
    with pytest.raises(ChainError):
        chain_setting(str(info))


def test_what_the_event_page_shows() -> None:
    committed = commitment_document(QUICKNET, DUE_123 - 1)
    assert beacon_summary(None, None) is None
    waiting = beacon_summary(committed, None)
    assert waiting == {"chain": "quicknet", "chain_hash": QUICKNET.hash, "round": 123,
                       "due_at": iso(DUE_123), "state": "waiting", "drawn_round": None,
                       "fallback_reason": None}
    assert beacon_summary(committed, {"round": 124})["drawn_round"] == 124  # type: ignore[index]
    fell = beacon_summary(committed, {"fallback": {"reason": "relays down", "at": "t"}})
    assert fell is not None and (fell["state"], fell["fallback_reason"]) == (
        "fallback", "relays down")


def test_when_the_operator_may_fall_back() -> None:
    committed = commitment_document(QUICKNET, DUE_123 - 1)
    onsale = DUE_123 - 1

    def refusal(**kw: Any) -> str | None:
        args: dict[str, Any] = dict(committed=committed, closed_at=None, onsale_at=onsale,
                                    outcome=None, revealed=False, now=DUE_123 + 120,
                                    grace=120)
        args.update(kw)
        found = fallback_refusal(**args)
        return None if found is None else found.code

    assert refusal() is None                                    # 120 s overdue
    assert refusal(now=DUE_123 + 119) == "beacon_not_overdue"
    assert refusal(closed_at=DUE_123 + 30, now=DUE_123 + 150) == "beacon_not_overdue"
    assert refusal(closed_at=DUE_123 + 30, now=DUE_123 + 153) is None  # round 134 + 120 s
    assert refusal(committed=None) == "beacon_not_committed"
    assert refusal(outcome={"round": 123}) == "beacon_recorded"
    assert refusal(revealed=True) == "beacon_recorded"
