"""core.hold_rules: hold request parsing, the idempotency digest, derived status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from onsale.core.hold_rules import (
    BestAvailableRequest,
    SeatsRequest,
    effective_status,
    parse_hold_request,
    request_digest,
)
from onsale.core.hold_state import HoldState
from onsale.core.request_bodies import HARD_MAX_SEATS, MAX_SEAT_ID
from onsale.kernel.problems import Problem

ROUTE = "POST /api/events/{event_id}/holds"


def rejected(body: Any) -> Problem:
    with pytest.raises(Problem) as info:
        parse_hold_request(body)
    problem = info.value
    assert problem.status == 400
    assert problem.code == "invalid_seats"
    assert problem.detail
    return problem


# --- seat_ids ------------------------------------------------------------------------------


def test_seat_ids_are_sorted() -> None:
    assert parse_hold_request({"seat_ids": [30, 2, 17, 5]}) == SeatsRequest((2, 5, 17, 30))


def test_single_seat() -> None:
    assert parse_hold_request({"seat_ids": [1]}) == SeatsRequest((1,))


def test_seat_id_bounds_are_inclusive() -> None:
    assert parse_hold_request({"seat_ids": [MAX_SEAT_ID, 1]}) == SeatsRequest((1, MAX_SEAT_ID))


def test_hard_max_seats_is_accepted() -> None:
    ids = list(range(HARD_MAX_SEATS, 0, -1))
    request = parse_hold_request({"seat_ids": ids})
    assert isinstance(request, SeatsRequest)
    assert request.seat_ids == tuple(range(1, HARD_MAX_SEATS + 1))


def test_one_more_than_hard_max_is_rejected() -> None:
    problem = rejected({"seat_ids": list(range(1, HARD_MAX_SEATS + 2))})
    assert str(HARD_MAX_SEATS) in (problem.detail or "")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"seat_ids": [1], "best_available": {"quantity": 1}},
        {"seats": [1]},
        {"seat_ids": []},
        {"seat_ids": None},
        {"seat_ids": 5},
        {"seat_ids": "1,2"},
        {"seat_ids": {"1": 1}},
    ],
    ids=["empty-body", "both-shapes", "unknown-key", "empty-list", "null", "scalar", "string",
         "object"],
)
def test_malformed_bodies_are_rejected(body: dict[str, Any]) -> None:
    rejected(body)


@pytest.mark.parametrize(
    "bad",
    [0, -1, MAX_SEAT_ID + 1, 1.0, 2.5, "3", None, [4], True, False],
    ids=["zero", "negative", "too-large", "float-int", "float", "string", "null", "list",
         "true", "false"],
)
def test_bad_seat_ids_are_rejected(bad: Any) -> None:
    rejected({"seat_ids": [1, bad]})


def test_bool_alone_is_not_a_seat_id() -> None:
    # True == 1 and hash(True) == hash(1): a bool must not sneak in as seat 1.
    rejected({"seat_ids": [True]})


def test_duplicates_are_listed_sorted_and_distinct() -> None:
    problem = rejected({"seat_ids": [9, 3, 9, 4, 3, 9, 1]})
    assert problem.extra == {"duplicate_seat_ids": [3, 9]}
    assert problem.body()["duplicate_seat_ids"] == [3, 9]


def test_single_duplicate() -> None:
    problem = rejected({"seat_ids": [7, 7]})
    assert problem.extra["duplicate_seat_ids"] == [7]


def test_other_rejections_carry_no_duplicate_list() -> None:
    assert "duplicate_seat_ids" not in rejected({"seat_ids": [0, 0]}).extra
    assert "duplicate_seat_ids" not in rejected({"seat_ids": []}).extra


def test_parse_does_not_mutate_the_body() -> None:
    ids = [3, 1, 2]
    parse_hold_request({"seat_ids": ids})
    assert ids == [3, 1, 2]


# --- best_available ------------------------------------------------------------------------


def test_best_available_defaults() -> None:
    request = parse_hold_request({"best_available": {"quantity": 2}})
    assert request == BestAvailableRequest(quantity=2, section=None, together=False)


def test_best_available_all_fields() -> None:
    request = parse_hold_request(
        {"best_available": {"quantity": 4, "section": "S3", "together": True}}
    )
    assert request == BestAvailableRequest(quantity=4, section="S3", together=True)


def test_best_available_quantity_bounds() -> None:
    low = parse_hold_request({"best_available": {"quantity": 1}})
    assert isinstance(low, BestAvailableRequest)
    assert low.quantity == 1
    top = parse_hold_request({"best_available": {"quantity": HARD_MAX_SEATS}})
    assert isinstance(top, BestAvailableRequest)
    assert top.quantity == HARD_MAX_SEATS


def test_best_available_section_of_fifty_characters() -> None:
    request = parse_hold_request({"best_available": {"quantity": 1, "section": "x" * 50}})
    assert isinstance(request, BestAvailableRequest)
    assert request.section == "x" * 50


def test_best_available_explicit_null_section() -> None:
    request = parse_hold_request({"best_available": {"quantity": 1, "section": None}})
    assert isinstance(request, BestAvailableRequest)
    assert request.section is None


@pytest.mark.parametrize(
    "best",
    [
        None,
        [],
        "2",
        3,
        {},
        {"quantity": 0},
        {"quantity": -2},
        {"quantity": HARD_MAX_SEATS + 1},
        {"quantity": 2.0},
        {"quantity": "2"},
        {"quantity": True},
        {"quantity": None},
        {"quantity": 2, "section": ""},
        {"quantity": 2, "section": "x" * 51},
        {"quantity": 2, "section": 5},
        {"quantity": 2, "section": ["S1"]},
        {"quantity": 2, "together": "yes"},
        {"quantity": 2, "together": 1},
        {"quantity": 2, "together": None},
    ],
    ids=["null", "list", "string", "int", "no-quantity", "quantity-zero", "quantity-negative",
         "quantity-too-big", "quantity-float", "quantity-string", "quantity-bool",
         "quantity-null", "section-empty", "section-too-long", "section-int", "section-list",
         "together-string", "together-int", "together-null"],
)
def test_bad_best_available_is_rejected(best: Any) -> None:
    rejected({"best_available": best})


# --- request_digest ------------------------------------------------------------------------


def digest(body: dict[str, Any], route: str = ROUTE, scope: str = "1") -> str:
    return request_digest(route, scope, parse_hold_request(body))


def test_digest_is_hex_sha256() -> None:
    d = digest({"seat_ids": [1, 2]})
    assert len(d) == 64
    int(d, 16)


def test_digest_ignores_seat_order() -> None:
    assert digest({"seat_ids": [3, 1, 2]}) == digest({"seat_ids": [1, 2, 3]})
    assert digest({"seat_ids": [2, 1]}) == digest({"seat_ids": [1, 2]})


def test_digest_differs_for_different_seats() -> None:
    assert digest({"seat_ids": [1, 2]}) != digest({"seat_ids": [1, 3]})
    assert digest({"seat_ids": [1, 2]}) != digest({"seat_ids": [1, 2, 3]})


def test_digest_differs_by_route_and_scope() -> None:
    body = {"seat_ids": [1, 2]}
    base = digest(body)
    assert digest(body, route="POST /api/other") != base
    assert digest(body, scope="2") != base
    assert digest(body, scope="") != base


def test_digest_is_stable() -> None:
    body = {"best_available": {"quantity": 2, "section": "S1", "together": True}}
    assert digest(body) == digest(dict(body))


def test_digest_is_the_same_across_releases() -> None:
    """The digest is stored with each idempotency record (24 h): a release that
    computed it differently (another key order, another layout) would answer a retry
    across the deploy with idempotency_conflict instead of its replay."""
    assert digest({"seat_ids": [2, 1]}) == \
        "ff4162da9510eb44405773f70c11d383aefa018e63c4245a0adff94b6c717ddc"
    assert digest({"ga": {"tier_id": 1, "quantity": 2}}) == \
        "67add384d1bd0d55b2aa5e11765b921bc7f3dac7ebb09964e48e6657f6a82f37"


def test_best_available_defaults_have_the_same_meaning() -> None:
    implicit = digest({"best_available": {"quantity": 2}})
    explicit = digest({"best_available": {"quantity": 2, "section": None, "together": False}})
    assert implicit == explicit


@pytest.mark.parametrize(
    "other",
    [
        {"quantity": 3},
        {"quantity": 2, "section": "S1"},
        {"quantity": 2, "together": True},
    ],
)
def test_best_available_digest_depends_on_every_field(other: dict[str, Any]) -> None:
    assert digest({"best_available": {"quantity": 2}}) != digest({"best_available": other})


def test_seats_and_best_available_never_share_a_digest() -> None:
    assert digest({"seat_ids": [2]}) != digest({"best_available": {"quantity": 2}})


def test_digest_does_not_confuse_route_and_scope() -> None:
    request = SeatsRequest((1,))
    assert request_digest("a", "b", request) != request_digest("b", "a", request)
    assert request_digest("ab", "", request) != request_digest("a", "b", request)


# --- effective_status ----------------------------------------------------------------------

NOW = datetime(2030, 5, 1, 12, 0, 0, tzinfo=UTC)
TICK = timedelta(microseconds=1)


def test_held_at_the_deadline_is_expired() -> None:
    assert effective_status("HELD", expires_at=NOW, now=NOW) == "EXPIRED"


def test_held_one_microsecond_before_the_deadline_is_held() -> None:
    assert effective_status("HELD", expires_at=NOW + TICK, now=NOW) == "HELD"


def test_held_long_past_the_deadline_is_expired() -> None:
    assert effective_status("HELD", expires_at=NOW - timedelta(days=1), now=NOW) == "EXPIRED"


def test_boundary_holds_across_time_zones() -> None:
    plus_two = datetime(2030, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert plus_two == NOW
    assert effective_status("HELD", expires_at=plus_two, now=NOW) == "EXPIRED"
    assert effective_status("HELD", expires_at=plus_two + TICK, now=NOW) == "HELD"


@pytest.mark.parametrize("state", [s.value for s in HoldState if s is not HoldState.HELD])
@pytest.mark.parametrize("delta", [-timedelta(hours=1), timedelta(0), timedelta(hours=1)])
def test_other_states_are_unchanged(state: str, delta: timedelta) -> None:
    assert effective_status(state, expires_at=NOW + delta, now=NOW) is HoldState(state)


def test_hold_states() -> None:
    assert set(HoldState) == {"HELD", "PAYMENT_PENDING", "CONFIRMED", "RELEASED", "EXPIRED"}


def test_the_derived_status_is_a_hold_state() -> None:
    assert effective_status("HELD", expires_at=NOW, now=NOW) is HoldState.EXPIRED
    assert effective_status("HELD", expires_at=NOW + TICK, now=NOW) is HoldState.HELD
    with pytest.raises(ValueError):
        effective_status("SOLD", expires_at=NOW, now=NOW)  # a seat state, not a hold's
