"""core.event_spec: validation of an event creation request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from onsale.core.event_spec import MAX_SEATS, EventSpec, parse_event_spec
from onsale.core.layout import DEFAULT_TIERS
from onsale.kernel.problems import Problem

NOW = datetime(2030, 1, 15, 9, 30, tzinfo=UTC)
DEFAULTS: dict[str, Any] = {"default_ttl": 300, "default_limit": 6, "default_max_hold": 6}


def parse(body: dict[str, Any], **overrides: Any) -> EventSpec:
    return parse_event_spec(body, **{**DEFAULTS, "now": NOW, **overrides})


def rejected(body: dict[str, Any], mentions: str | None = None, **overrides: Any) -> Problem:
    with pytest.raises(Problem) as info:
        parse(body, **overrides)
    problem = info.value
    assert problem.status == 400
    assert problem.code == "invalid_request"
    assert problem.detail
    if mentions is not None:
        assert mentions in problem.detail
    return problem


def test_defaults() -> None:
    spec = parse({"name": "Opening night"})
    assert spec == EventSpec(
        name="Opening night",
        seats=50_000,
        hold_ttl_seconds=300,
        max_tickets_per_account=6,
        max_seats_per_hold=6,
        onsale_at=NOW,
        starts_at=NOW + timedelta(days=30),
        venue_name="Main Arena",
        currency="USD",
        time_zone="UTC",
        tiers=DEFAULT_TIERS,
    )


def test_the_venues_time_zone_is_an_iana_name() -> None:
    assert parse({"name": "x", "time_zone": "Europe/Berlin"}).time_zone == "Europe/Berlin"
    for wrong in ("Europe/Atlantis", "CET+1", "../etc/passwd", "localtime", "right/UTC"):
        problem = rejected({"name": "x", "time_zone": wrong}, "time_zone")
        assert wrong in problem.detail


def test_server_defaults_are_used() -> None:
    spec = parse({"name": "x"}, default_ttl=90, default_limit=2, default_max_hold=4)
    assert (spec.hold_ttl_seconds, spec.max_tickets_per_account, spec.max_seats_per_hold) == (
        90, 2, 4,
    )


def test_now_defaults_to_the_current_time() -> None:
    before = datetime.now(UTC)
    spec = parse_event_spec({"name": "x"}, **DEFAULTS)
    after = datetime.now(UTC)
    assert before <= spec.onsale_at <= after
    assert spec.onsale_at.tzinfo is not None
    assert spec.starts_at == spec.onsale_at + timedelta(days=30)


def test_every_field_given() -> None:
    spec = parse({
        "name": "  Final  ",
        "seats": 1234,
        "hold_ttl_seconds": 3600,
        "max_tickets_per_account": 100,
        "max_seats_per_hold": 1,
        "onsale_at": "2030-02-01T10:00:00Z",
        "starts_at": "2030-03-01T20:00:00+01:00",
        "venue_name": "Small Hall",
        "currency": "eur",
        "price_tiers": [{"name": "Floor", "price_minor": 5000}, {"name": "Low", "price_minor": 1}],
    })
    assert spec.name == "Final"
    assert spec.seats == 1234
    assert spec.hold_ttl_seconds == 3600
    assert spec.max_tickets_per_account == 100
    assert spec.max_seats_per_hold == 1
    assert spec.onsale_at == datetime(2030, 2, 1, 10, tzinfo=UTC)
    assert spec.starts_at == datetime(2030, 3, 1, 19, tzinfo=UTC)
    assert spec.starts_at.utcoffset() == timedelta(hours=1)
    assert spec.venue_name == "Small Hall"
    assert spec.currency == "EUR"
    assert spec.tiers == (("Floor", 5000), ("Low", 1))


def test_starts_at_defaults_to_thirty_days_after_the_given_onsale() -> None:
    spec = parse({"name": "x", "onsale_at": "2031-06-01T00:00:00+02:00"})
    assert spec.onsale_at == datetime(2031, 6, 1, tzinfo=timezone(timedelta(hours=2)))
    assert spec.starts_at == spec.onsale_at + timedelta(days=30)


def test_explicit_null_times_mean_default() -> None:
    spec = parse({"name": "x", "onsale_at": None, "starts_at": None})
    assert spec.onsale_at == NOW
    assert spec.starts_at == NOW + timedelta(days=30)


# --- name, venue, currency -----------------------------------------------------------------


# The schema bounds the raw length (200); the name is stored without surrounding spaces.
@pytest.mark.parametrize("name", ["a", "x" * 200, "  " + "x" * 196 + "  "])
def test_name_lengths_accepted(name: str) -> None:
    assert parse({"name": name}).name == name.strip()


@pytest.mark.parametrize("name", [None, "", "   ", "x" * 201, 5, ["x"]])
def test_bad_names(name: Any) -> None:
    rejected({"name": name}, "name")


def test_missing_name() -> None:
    rejected({}, "name")


@pytest.mark.parametrize("venue", ["", "x" * 201, 7, None])
def test_bad_venue_names(venue: Any) -> None:
    rejected({"name": "x", "venue_name": venue}, "venue_name")


def test_venue_of_two_hundred_characters() -> None:
    assert parse({"name": "x", "venue_name": "v" * 200}).venue_name == "v" * 200


@pytest.mark.parametrize("currency", ["usd", "Gbp", "JPY"])
def test_currency_is_upper_cased(currency: str) -> None:
    assert parse({"name": "x", "currency": currency}).currency == currency.upper()


@pytest.mark.parametrize("currency", ["", "US", "USDX", "US1", "U D", "123", 840, None, ["USD"]])
def test_bad_currencies(currency: Any) -> None:
    rejected({"name": "x", "currency": currency}, "currency")


@pytest.mark.parametrize("currency", ["ßab", "éur", "ÄÖÜ"], ids=["sharp-s", "e-acute", "umlauts"])
def test_currency_must_be_ascii_letters(currency: str) -> None:
    """ISO 4217 codes are three ASCII letters; str.isalpha() accepts any Unicode letter, and
    'ßab'.upper() is 'SSAB' — four characters for a char(3) column."""
    rejected({"name": "x", "currency": currency}, "currency")


# --- integers ------------------------------------------------------------------------------

INT_FIELDS = [
    ("seats", 1, MAX_SEATS),
    ("hold_ttl_seconds", 1, 3600),
    ("max_tickets_per_account", 1, 100),
    ("max_seats_per_hold", 1, 100),
]


@pytest.mark.parametrize(("field", "lo", "hi"), INT_FIELDS)
def test_integer_bounds_are_inclusive(field: str, lo: int, hi: int) -> None:
    assert getattr(parse({"name": "x", field: lo}), field) == lo
    assert getattr(parse({"name": "x", field: hi}), field) == hi


@pytest.mark.parametrize(("field", "lo", "hi"), INT_FIELDS)
def test_integers_out_of_range(field: str, lo: int, hi: int) -> None:
    problem = rejected({"name": "x", field: lo - 1}, field)
    assert f">= {lo}" in (problem.detail or "")
    problem = rejected({"name": "x", field: hi + 1}, field)
    assert f"<= {hi}" in (problem.detail or "")


@pytest.mark.parametrize(("field", "lo", "hi"), INT_FIELDS)
@pytest.mark.parametrize("value", [True, False, 5.0, "5", None, [5]])
def test_integers_must_be_integers(field: str, lo: int, hi: int, value: Any) -> None:
    rejected({"name": "x", field: value}, field)


@pytest.mark.parametrize(
    "override",
    [{"default_ttl": 0}, {"default_ttl": 3601}, {"default_limit": 0}, {"default_max_hold": 101}],
)
def test_out_of_range_server_defaults_are_rejected(override: dict[str, Any]) -> None:
    rejected({"name": "x"}, **override)


# --- times ---------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["onsale_at", "starts_at"])
@pytest.mark.parametrize(
    "value", ["2030-02-01T10:00:00", "2030-02-01 10:00", "2030-02-01"],
    ids=["naive", "naive-space", "date-only"],
)
def test_time_zone_is_required(field: str, value: str) -> None:
    rejected({"name": "x", field: value}, field)


@pytest.mark.parametrize("field", ["onsale_at", "starts_at"])
@pytest.mark.parametrize("value", ["soon", "", "2030-13-01T00:00:00Z", 1_900_000_000, ["x"]])
def test_bad_times(field: str, value: Any) -> None:
    rejected({"name": "x", field: value}, field)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2030-02-01T10:00:00Z", datetime(2030, 2, 1, 10, tzinfo=UTC)),
        ("2030-02-01T10:00:00+00:00", datetime(2030, 2, 1, 10, tzinfo=UTC)),
        ("2030-02-01T12:00:00+02:00", datetime(2030, 2, 1, 10, tzinfo=UTC)),
        ("2030-02-01T10:00:00.250Z", datetime(2030, 2, 1, 10, 0, 0, 250_000, tzinfo=UTC)),
    ],
)
def test_time_formats(text: str, expected: datetime) -> None:
    spec = parse({"name": "x", "onsale_at": text})
    assert spec.onsale_at == expected
    assert spec.onsale_at.tzinfo is not None


# --- price tiers ---------------------------------------------------------------------------


def test_custom_tiers_keep_their_order() -> None:
    tiers = [{"name": f"T{i}", "price_minor": 100 * (10 - i)} for i in range(10)]
    spec = parse({"name": "x", "price_tiers": tiers})
    assert spec.tiers == tuple((t["name"], t["price_minor"]) for t in tiers)


def test_free_tiers_are_refused_and_prices_fit_a_provider_charge() -> None:
    # Checkout charges a card provider: a zero amount cannot be authorized, and
    # six seats must fit one charge (99,999,999 minor units).
    for price in (0, 99_999_999 // 6 + 1):
        with pytest.raises(Problem):
            parse({"name": "x", "price_tiers": [{"name": "T", "price_minor": price}]})
    assert parse({"name": "x", "price_tiers": [{"name": "T", "price_minor": 99_999_999 // 6}]}
                 ).tiers == (("T", 99_999_999 // 6),)


def test_null_tiers_mean_defaults() -> None:
    assert parse({"name": "x", "price_tiers": None}).tiers == DEFAULT_TIERS


def test_tier_extra_keys_are_ignored() -> None:
    spec = parse({"name": "x", "price_tiers": [{"name": "A", "price_minor": 1, "id": 9}]})
    assert spec.tiers == (("A", 1),)


@pytest.mark.parametrize(
    "tiers",
    [
        [],
        [{"name": f"T{i}", "price_minor": 1} for i in range(11)],
        {"name": "A", "price_minor": 1},
        "A",
        5,
    ],
    ids=["empty", "eleven", "object", "string", "int"],
)
def test_bad_tier_lists(tiers: Any) -> None:
    rejected({"name": "x", "price_tiers": tiers}, "price_tiers")


@pytest.mark.parametrize(
    "tier",
    [
        "A",
        ["A", 1],
        {"price_minor": 1},
        {"name": None, "price_minor": 1},
        {"name": 5, "price_minor": 1},
        {"name": "A"},
        {"name": "A", "price_minor": None},
        {"name": "A", "price_minor": -1},
        {"name": "A", "price_minor": 1.5},
        {"name": "A", "price_minor": 100.0},
        {"name": "A", "price_minor": "100"},
        {"name": "A", "price_minor": True},
    ],
)
def test_bad_tiers(tier: Any) -> None:
    rejected({"name": "x", "price_tiers": [{"name": "ok", "price_minor": 1}, tier]},
             "price_tiers[1]")


@pytest.mark.parametrize("tier", [{"name": "", "price_minor": 1},
                                  {"name": "   ", "price_minor": 1},
                                  {"name": "Huge", "price_minor": 10**8}])
def test_tier_names_and_prices_are_bounded(tier: dict[str, Any]) -> None:
    with pytest.raises(Problem) as info:
        parse_event_spec({"name": "x", "price_tiers": [tier]}, default_ttl=300,
                         default_limit=6, default_max_hold=6)
    assert info.value.code == "invalid_request"
