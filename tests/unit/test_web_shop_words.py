"""The shopper pages' wording, money and redirect rules (web/shop_pages.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from onsale.web.shop_pages import (
    clock,
    event_view,
    money,
    parse_time,
    policy_words,
    safe_next,
    when,
)

ONSALE = datetime(2026, 12, 1, 14, 30, 5, tzinfo=UTC)


def test_each_policy_in_plain_words() -> None:
    assert policy_words("fifo", ONSALE) == "first come, first served"
    assert policy_words("random", ONSALE) == (
        "random draw at 14:30 UTC for everyone who arrives before")
    assert policy_words("passthrough", ONSALE) == "no queue: straight in"
    assert "_" not in policy_words("something_new", ONSALE)


def test_times_are_shown_at_the_venue_when_it_has_a_zone() -> None:
    assert clock(ONSALE, "Asia/Tokyo") == "23:30 JST"
    assert when(ONSALE, "America/New_York") == "Tue 1 Dec 2026, 09:30 EST"
    assert policy_words("random", ONSALE, "Europe/Berlin") == (
        "random draw at 15:30 CET for everyone who arrives before")


def test_times_are_shown_in_utc_whatever_the_offset() -> None:
    tokyo = ONSALE.astimezone(timezone(timedelta(hours=9)))
    assert clock(tokyo) == "14:30 UTC"
    assert when(tokyo) == "Tue 1 Dec 2026, 14:30 UTC"
    assert policy_words("random", tokyo).startswith("random draw at 14:30 UTC")
    assert parse_time("2026-12-01T14:30:05.000000Z") == ONSALE


def test_money_uses_minor_units_of_the_currency() -> None:
    assert money(15000, "USD") == "150.00 USD"
    assert money(123456789, "EUR") == "1,234,567.89 EUR"
    assert money(4500, "JPY") == "4,500 JPY"


@pytest.mark.parametrize("given, expected", [
    ("/events/3/queue", "/events/3/queue"),
    ("/events/3/queue?x=1", "/events/3/queue?x=1"),
    (None, "/"), ("", "/"),
    ("https://evil.example/", "/"), ("//evil.example/x", "/"), ("/\\evil.example", "/"),
    ("javascript:alert(1)", "/"), ("/a\nb", "/"),
])
def test_next_is_a_path_on_this_site_only(given: str | None, expected: str) -> None:
    assert safe_next(given) == expected


def doc(**queue: object) -> dict[str, object]:
    q: dict[str, object] = {"policy": "fifo", "prequeue_at": None, "pow_difficulty": 0,
                            "draw": None}
    q.update(queue)
    return {"event_id": 7, "name": "Gala", "venue_name": "Hall", "currency": "USD",
            "onsale_at": "2026-12-01T14:30:05.000000Z",
            "starts_at": "2026-12-31T20:00:00.000000Z",
            "price_tiers": [{"tier_id": 1, "name": "Front", "price_minor": 20000}],
            "queue": q}


def test_event_view_says_whether_the_sale_and_the_queue_are_open() -> None:
    before = event_view(doc(prequeue_at="2026-12-01T14:00:00.000000Z"),
                        ONSALE - timedelta(hours=1))
    assert not before["sale_open"] and not before["queue_open"] and not before["over"]
    assert before["prequeue_when"] == "Tue 1 Dec 2026, 14:00 UTC"
    assert before["tiers"] == [{"name": "Front", "price": "200.00 USD"}]
    during = event_view(doc(policy="random"), ONSALE + timedelta(minutes=1))
    assert during["sale_open"] and during["queue_open"] and not during["over"]
    assert during["policy_words"].startswith("random draw at 14:30 UTC")
    after = event_view(doc(), datetime(2027, 1, 1, tzinfo=UTC))
    assert after["over"]
