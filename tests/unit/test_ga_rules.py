"""General admission's pure rules: the quota plane's plan, GA hold requests and their
digest, GA tiers in an event spec, the capacity split and the CLI's --ga-tier option."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from onsale.cli import parse_ga_tier_option
from onsale.core.event_spec import (
    MAX_GA_CAPACITY,
    MAX_GA_TIERS,
    MAX_STRIPES,
    EventSpec,
    GATierSpec,
    parse_event_spec,
    parse_ga_tiers,
)
from onsale.core.event_store import split
from onsale.core.ga_quota import Stripe, plan_rebalance
from onsale.core.hold_rules import (
    BestAvailableRequest,
    GARequest,
    SeatsRequest,
    parse_hold_request,
    request_digest,
)
from onsale.core.request_bodies import HARD_MAX_SEATS, MAX_GA_TIER_ID, GATierRequest
from onsale.kernel.problems import Problem

ROUTE = "POST /api/events/{event_id}/holds"
NOW = datetime(2030, 1, 15, 9, 30, tzinfo=UTC)
DEFAULTS: dict[str, Any] = {"default_ttl": 300, "default_limit": 6, "default_max_hold": 6}


def active(*available: int) -> list[Stripe]:
    """Active stripes 0, 1, ... with these available counts."""
    return [Stripe(i, True, a) for i, a in enumerate(available)]


def applied(stripes: Sequence[Stripe], plan: dict[int, int]) -> dict[int, int]:
    return {s.stripe: s.available + plan.get(s.stripe, 0) for s in stripes}


# --- plan_rebalance -------------------------------------------------------------------------


def test_even_stripes_need_no_move() -> None:
    assert plan_rebalance(active(5, 5, 5), low_water=6) == {}
    # One apart is as even as it goes (7 over 2), even below the low water.
    assert plan_rebalance(active(4, 3), low_water=6) == {}
    assert plan_rebalance(active(1, 2), low_water=6) == {}


def test_no_move_while_no_stripe_is_below_the_low_water() -> None:
    # Uneven, but every stripe can still serve the largest hold.
    assert plan_rebalance(active(40, 4, 10), low_water=4) == {}
    assert plan_rebalance(active(100, 6), low_water=6) == {}


def test_a_stripe_that_ran_dry_is_refilled_evenly() -> None:
    assert plan_rebalance(active(10, 0), low_water=4) == {0: -5, 1: 5}
    # Just below the low water is dry too.
    assert plan_rebalance(active(3, 11), low_water=4) == {0: 4, 1: -4}


def test_the_remainder_goes_to_the_lower_active_stripe_numbers() -> None:
    # 7 over 3: 3, 2, 2.
    assert plan_rebalance(active(0, 0, 7), low_water=2) == {0: 3, 1: 2, 2: -5}
    # The order the stripes come in does not matter.
    stripes = [Stripe(2, True, 9), Stripe(1, True, 0), Stripe(0, True, 2)]
    assert plan_rebalance(stripes, low_water=3) == {0: 2, 1: 4, 2: -6}  # 11: 4, 4, 3
    assert plan_rebalance([Stripe(1, True, 0), Stripe(0, True, 5)], low_water=3) \
        == {0: -2, 1: 2}


def test_retired_stripes_are_drained_even_when_the_active_ones_are_even() -> None:
    stripes = [Stripe(0, True, 4), Stripe(1, True, 4), Stripe(2, False, 2)]
    assert plan_rebalance(stripes, low_water=1) == {0: 1, 1: 1, 2: -2}


def test_a_retired_stripe_between_active_ones_gets_nothing() -> None:
    stripes = [Stripe(0, True, 0), Stripe(1, False, 5), Stripe(2, True, 0)]
    # 5 over the active stripes 0 and 2: the remainder to 0, the lower number.
    assert plan_rebalance(stripes, low_water=2) == {0: 3, 1: -5, 2: 2}


def test_an_empty_retired_stripe_needs_no_move() -> None:
    stripes = [Stripe(0, True, 5), Stripe(1, True, 5), Stripe(2, False, 0)]
    assert plan_rebalance(stripes, low_water=3) == {}
    # Nor does it make uneven active stripes that can still serve a hold move.
    stripes = [Stripe(0, True, 40), Stripe(1, True, 4), Stripe(2, False, 0)]
    assert plan_rebalance(stripes, low_water=4) == {}


def test_force_evens_out_whatever_the_cause() -> None:
    assert plan_rebalance(active(6, 4), low_water=1) == {}
    assert plan_rebalance(active(6, 4), low_water=1, force=True) == {0: -1, 1: 1}
    assert plan_rebalance(active(40, 4, 10), low_water=4, force=True) == {0: -22, 1: 14, 2: 8}
    # Already even: nothing to move, forced or not.
    assert plan_rebalance(active(5, 5), low_water=10, force=True) == {}
    assert plan_rebalance(active(4, 3), low_water=1, force=True) == {}


def test_no_active_stripe_means_no_plan() -> None:
    assert plan_rebalance([], low_water=1) == {}
    assert plan_rebalance([], low_water=1, force=True) == {}
    assert plan_rebalance([Stripe(0, False, 5), Stripe(1, False, 0)], low_water=6) == {}
    assert plan_rebalance([Stripe(0, False, 5)], low_water=6, force=True) == {}


PLANNED = [
    (active(10, 0), 4, False),
    (active(0, 0, 7), 2, False),
    (active(0, 1, 2, 97), 6, False),
    ([Stripe(0, True, 0), Stripe(1, False, 5), Stripe(2, True, 0)], 2, False),
    ([Stripe(0, True, 4), Stripe(1, True, 4), Stripe(2, False, 2), Stripe(3, False, 9)], 1,
     False),
    (active(40, 4, 10), 4, True),
    (active(13, 0, 0, 0, 0), 1, True),
]


@pytest.mark.parametrize(("stripes", "low_water", "force"), PLANNED)
def test_a_plan_only_moves_places_and_leaves_the_tier_even(
        stripes: list[Stripe], low_water: int, force: bool) -> None:
    plan = plan_rebalance(stripes, low_water=low_water, force=force)
    assert plan  # each of these needs moving
    assert sum(plan.values()) == 0
    assert 0 not in plan.values()  # a plan lists only stripes that change
    assert set(plan) <= {s.stripe for s in stripes}
    after = applied(stripes, plan)
    assert all(v >= 0 for v in after.values())
    assert sum(after.values()) == sum(s.available for s in stripes)
    levels = [after[s.stripe] for s in stripes if s.active]
    assert max(levels) - min(levels) <= 1
    assert all(after[s.stripe] == 0 for s in stripes if not s.active)
    # Applied, the plan leaves nothing more to do.
    again = [Stripe(s.stripe, s.active, after[s.stripe]) for s in stripes]
    assert plan_rebalance(again, low_water=low_water, force=force) == {}


# --- GA hold requests -----------------------------------------------------------------------


def ga_rejected(body: Any, code: str = "invalid_quantity") -> Problem:
    with pytest.raises(Problem) as info:
        parse_hold_request(body)
    problem = info.value
    assert (problem.status, problem.code) == (400, code)
    assert problem.detail
    return problem


def test_a_ga_request_is_parsed() -> None:
    assert parse_hold_request({"ga": {"tier_id": 1, "quantity": 2}}) == GARequest(1, 2)
    assert parse_hold_request({"ga": {"quantity": 3, "tier_id": 7}}) == GARequest(7, 3)


def test_ga_bounds_are_inclusive() -> None:
    assert parse_hold_request({"ga": {"tier_id": MAX_GA_TIER_ID, "quantity": HARD_MAX_SEATS}}) \
        == GARequest(MAX_GA_TIER_ID, HARD_MAX_SEATS)
    assert parse_hold_request({"ga": {"tier_id": 1, "quantity": 1}}) == GARequest(1, 1)


@pytest.mark.parametrize("ga", [
    None, "1", 1, [1, 2], [],
    {"tier_id": 1},
    {"quantity": 2},
    {},
    {"tier_id": 1, "quantity": 2, "section": "A"},
    {"tier_id": 0, "quantity": 1},
    {"tier_id": -1, "quantity": 1},
    {"tier_id": MAX_GA_TIER_ID + 1, "quantity": 1},
    {"tier_id": "1", "quantity": 1},
    {"tier_id": 1.0, "quantity": 1},
    {"tier_id": True, "quantity": 1},
    {"tier_id": None, "quantity": 1},
    {"tier_id": 1, "quantity": 0},
    {"tier_id": 1, "quantity": -2},
    {"tier_id": 1, "quantity": HARD_MAX_SEATS + 1},
    {"tier_id": 1, "quantity": "2"},
    {"tier_id": 1, "quantity": 2.0},
    {"tier_id": 1, "quantity": True},
    {"tier_id": 1, "quantity": None},
], ids=["null", "string", "int", "list", "empty-list", "no-quantity", "no-tier", "empty",
        "extra-field", "tier-zero", "tier-negative", "tier-too-large", "tier-string",
        "tier-float", "tier-bool", "tier-null", "quantity-zero", "quantity-negative",
        "quantity-too-large", "quantity-string", "quantity-float", "quantity-bool",
        "quantity-null"])
def test_bad_ga_requests_are_invalid_quantity(ga: Any) -> None:
    ga_rejected({"ga": ga})


@pytest.mark.parametrize("body", [
    {"ga": {"tier_id": 1, "quantity": 1}, "seat_ids": [1]},
    {"ga": {"tier_id": 1, "quantity": 1}, "best_available": {"quantity": 1}},
    {"ga": {"tier_id": 1, "quantity": 1}, "seat_ids": [1], "best_available": {"quantity": 1}},
    {},
    {"tier_id": 1, "quantity": 1},  # the GA fields without their "ga"
], ids=["ga-and-seats", "ga-and-best", "all-three", "none", "bare-fields"])
def test_exactly_one_kind_of_request(body: dict[str, Any]) -> None:
    ga_rejected(body, code="invalid_seats")


def test_a_null_ga_beside_seats_is_a_bad_ga() -> None:
    """ga is an object where it is given (the schema says so), so null is refused as a
    GA request before the kinds are counted."""
    ga_rejected({"ga": None, "seat_ids": [1]})


def test_the_digest_of_a_ga_request_follows_its_meaning() -> None:
    def digest(request: Any, scope: str = "acct-1") -> str:
        return request_digest(ROUTE, scope, request)

    two = parse_hold_request({"ga": {"tier_id": 1, "quantity": 2}})
    assert digest(two) == digest(parse_hold_request({"ga": {"quantity": 2, "tier_id": 1}}))
    assert digest(two) == digest(GARequest(1, 2))
    assert len(digest(two)) == 64
    assert digest(two) != digest(GARequest(1, 3))  # another quantity
    assert digest(two) != digest(GARequest(2, 2))  # another tier
    assert digest(two) != digest(two, scope="acct-2")
    # Not the digest of a best-available or a seat request that looks alike.
    assert digest(two) != digest(BestAvailableRequest(2, None, False))
    assert digest(GARequest(1, 1)) != digest(SeatsRequest((1,)))


# --- GA tiers in an event spec --------------------------------------------------------------


def parse(body: dict[str, Any], **overrides: Any) -> EventSpec:
    return parse_event_spec(body, **{**DEFAULTS, "now": NOW, **overrides})


def spec_rejected(body: dict[str, Any], mentions: str | None = None,
                  **overrides: Any) -> Problem:
    with pytest.raises(Problem) as info:
        parse(body, **overrides)
    problem = info.value
    assert (problem.status, problem.code) == (400, "invalid_request")
    assert problem.detail
    if mentions is not None:
        assert mentions in problem.detail
    return problem


def tier(**fields: Any) -> dict[str, Any]:
    return {"name": "Floor", "price_minor": 5000, "capacity": 100, **fields}


def test_a_ga_only_event() -> None:
    spec = parse({"name": "Rave", "seats": 0, "ga_tiers": [
        tier(name="  Floor  ", stripes=4, max_per_hold=8, max_per_account=10),
        {"name": "Balcony", "price_minor": 3000, "capacity": 7},
    ]})
    assert spec.seats == 0
    assert spec.ga_tiers == (
        GATierSpec(name="Floor", price_minor=5000, capacity=100, stripes=4, max_per_hold=8,
                   max_per_account=10),
        GATierSpec(name="Balcony", price_minor=3000, capacity=7, stripes=1, max_per_hold=6,
                   max_per_account=None),
    )


def test_ga_tier_defaults_come_from_the_event_defaults() -> None:
    spec = parse({"name": "Rave", "ga_tiers": [tier()]}, default_max_hold=4)
    (ga,) = spec.ga_tiers
    assert (ga.stripes, ga.max_per_hold, ga.max_per_account) == (1, 4, None)
    assert spec.seats == 50_000  # seats keep their default beside GA tiers
    # A default above what a GA tier allows is capped at 100.
    (capped,) = parse_ga_tiers([msgspec.convert(tier(), GATierRequest)], 150)
    assert capped.max_per_hold == 100


def test_ga_tier_bounds_are_inclusive() -> None:
    (ga,) = parse({"name": "Rave", "ga_tiers": [
        tier(capacity=MAX_GA_CAPACITY, stripes=MAX_STRIPES, max_per_hold=100,
             max_per_account=100)]}).ga_tiers
    assert (ga.capacity, ga.stripes, ga.max_per_hold, ga.max_per_account) \
        == (MAX_GA_CAPACITY, MAX_STRIPES, 100, 100)
    many = [tier(name=f"T{i}") for i in range(MAX_GA_TIERS)]
    assert len(parse({"name": "Rave", "ga_tiers": many}).ga_tiers) == MAX_GA_TIERS


def test_no_ga_tiers() -> None:
    assert parse({"name": "Concert"}).ga_tiers == ()
    assert parse({"name": "Concert", "ga_tiers": None}).ga_tiers == ()
    assert parse_ga_tiers(None, 6) == ()


@pytest.mark.parametrize(("ga_tiers", "mentions"), [
    ([{"name": "Floor", "price_minor": 100}], "capacity"),
    ([tier(capacity=0)], "capacity"),
    ([tier(capacity=MAX_GA_CAPACITY + 1)], "capacity"),
    ([tier(capacity="100")], "capacity"),
    ([tier(stripes=0)], "stripes"),
    ([tier(stripes=MAX_STRIPES + 1)], "stripes"),
    ([tier(stripes=True)], "stripes"),
    ([tier(), tier()], "distinct"),
    ([tier(name="Floor"), tier(name=" Floor ")], "distinct"),  # the same once trimmed
    ([tier(colour="red")], "colour"),
    ([tier(price_minor=0)], "price_minor"),
    ([{"name": "Floor", "capacity": 100}], "price_minor"),
    ([tier(max_per_hold=0)], "max_per_hold"),
    ([tier(max_per_hold=101)], "max_per_hold"),
    ([tier(max_per_account=0)], "max_per_account"),
    ([tier(max_per_account=101)], "max_per_account"),
    ([tier(max_per_account="3")], "max_per_account"),
    ([tier(name="")], "name"),
    ([tier(name="   ")], "name"),
    ([tier(name="x" * 51)], "name"),
    ([tier(name=7)], "name"),
    (["Floor"], "object"),
    ([], "ga_tiers"),
    ("Floor", "ga_tiers"),
    ({"name": "Floor"}, "ga_tiers"),
    ([tier(name=f"T{i}") for i in range(MAX_GA_TIERS + 1)], "ga_tiers"),
], ids=["no-capacity", "capacity-zero", "capacity-too-large", "capacity-string",
        "stripes-zero", "stripes-65", "stripes-bool", "duplicate-names", "duplicate-trimmed",
        "unknown-field", "price-zero", "no-price", "per-hold-zero", "per-hold-101",
        "per-account-zero", "per-account-101", "per-account-string", "name-empty",
        "name-blank", "name-too-long", "name-int", "tier-not-object", "empty-list", "string",
        "object", "too-many"])
def test_bad_ga_tiers_are_invalid_requests(ga_tiers: Any, mentions: str) -> None:
    spec_rejected({"name": "Rave", "seats": 10, "ga_tiers": ga_tiers}, mentions)


def test_seats_may_be_zero_only_with_ga_tiers() -> None:
    spec_rejected({"name": "Nothing", "seats": 0}, "seats")
    spec_rejected({"name": "Nothing", "seats": 0, "ga_tiers": None}, "seats")
    spec_rejected({"name": "Rave", "seats": -1, "ga_tiers": [tier()]}, "seats")
    assert parse({"name": "Rave", "seats": 0, "ga_tiers": [tier()]}).seats == 0


# --- the capacity split ---------------------------------------------------------------------


@pytest.mark.parametrize(("capacity", "stripes", "expected"), [
    (10, 4, [3, 3, 2, 2]),
    (8, 4, [2, 2, 2, 2]),
    (7, 1, [7]),
    (1, 3, [1, 0, 0]),
    (65, 64, [2] + [1] * 63),
    (100, 3, [34, 33, 33]),
])
def test_split_spreads_the_capacity_first_stripes_first(
        capacity: int, stripes: int, expected: list[int]) -> None:
    parts = split(capacity, stripes)
    assert parts == expected
    assert sum(parts) == capacity and len(parts) == stripes


# --- the CLI's --ga-tier option -------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("Floor:5000:100", {"name": "Floor", "price_minor": 5000, "capacity": 100}),
    ("Floor:5000:100:4", {"name": "Floor", "price_minor": 5000, "capacity": 100,
                          "stripes": 4}),
    ("Floor:5000:100:4:8", {"name": "Floor", "price_minor": 5000, "capacity": 100,
                            "stripes": 4, "max_per_hold": 8}),
    ("VIP: Gold:5000:100", {"name": "VIP: Gold", "price_minor": 5000, "capacity": 100}),
    ("A:B:C:5000:100:4:8", {"name": "A:B:C", "price_minor": 5000, "capacity": 100,
                            "stripes": 4, "max_per_hold": 8}),
    ("Pit area:0:1", {"name": "Pit area", "price_minor": 0, "capacity": 1}),
])
def test_ga_tier_option(text: str, expected: dict[str, Any]) -> None:
    assert parse_ga_tier_option(text) == expected


def test_a_ga_tier_option_is_what_the_event_spec_takes() -> None:
    option = parse_ga_tier_option("VIP: Gold:5000:100:4:8")
    (ga,) = parse({"name": "Rave", "seats": 0, "ga_tiers": [option]}).ga_tiers
    assert ga == GATierSpec("VIP: Gold", 5000, 100, 4, 8, None)


@pytest.mark.parametrize("text", [
    "", "Floor", "Floor:5000", "Floor:abc:100", "Floor:5000:cap", "Floor:5000:100:x",
    "Floor:5000:100:4:x", "Floor:5000:100:", "Floor:-5:100", "Floor:5000:1.5", "::",
])
def test_a_malformed_ga_tier_option_raises(text: str) -> None:
    with pytest.raises(ValueError, match="NAME:PRICE_MINOR:CAPACITY"):
        parse_ga_tier_option(text)
