"""core.event_move_rules: an event moves only before anything of its sale exists."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from onsale.core.event_move_rules import (
    MOVE_MARGIN,
    REFUSAL_STATUS,
    MoveFacts,
    MoveVerdict,
    decide_move,
    queue_opens_at,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=2)
FACTS = MoveFacts(now=NOW, onsale_at=LATER, prequeue_at=None, source=1, target=2,
                  target_state="active")


def facts(**over: object) -> MoveFacts:
    return dataclasses.replace(FACTS, **over)  # type: ignore[arg-type]


def test_an_event_far_from_its_queue_with_nothing_sold_moves() -> None:
    assert decide_move(FACTS).verdict is MoveVerdict.MOVE


def test_the_queue_opens_at_the_prequeue_else_at_the_sale() -> None:
    assert queue_opens_at(LATER, None) == LATER
    assert queue_opens_at(LATER, NOW + timedelta(minutes=30)) == NOW + timedelta(minutes=30)
    # A pre-queue an hour before the sale, the sale two hours away: 4 minutes to the
    # pre-queue is inside the margin, 6 is not.
    assert decide_move(facts(prequeue_at=NOW + timedelta(minutes=4))).code == (
        "event_already_open")
    assert decide_move(facts(prequeue_at=NOW + timedelta(minutes=6))).verdict is (
        MoveVerdict.MOVE)


def test_the_margin_is_exact() -> None:
    assert decide_move(facts(onsale_at=NOW + MOVE_MARGIN)).code == "event_already_open"
    just_past = NOW + MOVE_MARGIN + timedelta(microseconds=1)
    assert decide_move(facts(onsale_at=just_past)).verdict is MoveVerdict.MOVE


def test_an_open_queue_refuses_and_says_why() -> None:
    opened = decide_move(facts(onsale_at=NOW - timedelta(minutes=1)))
    assert (opened.verdict, opened.code) == (MoveVerdict.REFUSED, "event_already_open")
    assert opened.reasons == ("its queue is open",)
    soon = decide_move(facts(onsale_at=NOW + timedelta(minutes=1)))
    assert soon.reasons == ("its queue opens in less than 5 minutes",)
    assert REFUSAL_STATUS["event_already_open"] == 409


def test_a_hold_or_an_order_refuses_even_far_from_the_queue() -> None:
    held = decide_move(facts(holds=1))
    assert (held.code, held.reasons) == ("event_already_open", ("it has 1 hold(s)",))
    ordered = decide_move(facts(orders=2))
    assert (ordered.code, ordered.reasons) == ("event_already_open", ("it has 2 order(s)",))


def test_the_target_must_be_listed_and_active() -> None:
    missing = decide_move(facts(target_state=None, target=9))
    assert (missing.code, REFUSAL_STATUS["shard_not_found"]) == ("shard_not_found", 422)
    retired = decide_move(facts(target_state="retired"))
    assert (retired.code, REFUSAL_STATUS["shard_not_active"]) == ("shard_not_active", 409)


def test_a_move_to_where_it_is_only_clears_leftovers_even_when_open() -> None:
    there = decide_move(facts(target=1, onsale_at=NOW - timedelta(days=1), holds=5))
    assert (there.verdict, there.code) == (MoveVerdict.ALREADY_THERE, None)
