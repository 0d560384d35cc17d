"""``onsale event list`` and ``onsale event show`` in words (core/event_report.py): the
times at the venue, from the UTC instants the directory keeps (``--json`` keeps those)."""

from __future__ import annotations

from typing import Any

from onsale.core.event_report import list_text, show_text


def row(**overrides: Any) -> dict[str, Any]:
    """An event as ``event_list``/``event_show`` give it: instants as ISO 8601 text."""
    doc: dict[str, Any] = {
        "event_id": 7, "name": "Spring forward", "venue_name": "Philharmonie",
        # Berlin's clocks go forward at 01:00 UTC on 29 March 2026: the queue opens
        # before the change (CET), the sale after it (CEST)
        "prequeue_at": "2026-03-29T00:30:00+00:00", "onsale_at": "2026-03-29T01:30:00+00:00",
        "starts_at": "2026-04-03T17:30:00+00:00", "time_zone": "Europe/Berlin",
        "currency": "EUR", "seat_count": 120, "hold_ttl_seconds": 300,
        "max_tickets_per_account": 6, "max_seats_per_hold": 6, "queue_policy": "fifo",
        "admission_rate_min": 60, "admission_rate_max": 6000, "active_cap": 10_000,
        "pow_difficulty": 0, "admission_paused": False, "draw_commitment": None,
        "shard_id": 2, "seats": {"AVAILABLE": 120}, "ga_tiers": []}
    doc.update(overrides)
    return doc


def test_show_says_the_times_at_the_venue_on_both_sides_of_a_change() -> None:
    text = show_text(row())
    assert "event 7: Spring forward at Philharmonie (shard 2), time zone Europe/Berlin" in text
    assert ("on sale Sun 29 Mar 2026, 03:30 CEST, starts Fri 3 Apr 2026, 19:30 CEST, "
            "queue opens Sun 29 Mar 2026, 01:30 CET") in text


def test_show_in_new_york_as_the_clocks_fall_back() -> None:
    # 01:30 happens twice in New York on 1 November 2026: EDT, then EST an hour later
    text = show_text(row(time_zone="America/New_York", prequeue_at="2026-11-01T05:30:00Z",
                         onsale_at="2026-11-01T06:30:00Z"))
    assert "on sale Sun 1 Nov 2026, 01:30 EST" in text
    assert "queue opens Sun 1 Nov 2026, 01:30 EDT" in text


def test_an_event_without_a_zone_or_a_pre_queue_is_shown_in_utc() -> None:
    text = show_text(row(time_zone="UTC", prequeue_at=None))
    assert "on sale Sun 29 Mar 2026, 01:30 UTC, starts Fri 3 Apr 2026, 17:30 UTC\n" in text
    assert "queue opens" not in text


def test_the_list_gives_each_events_on_sale_time_at_its_venue() -> None:
    lines = list_text([row(), row(event_id=8, name="Fall back", time_zone="America/New_York",
                              onsale_at="2026-11-01T06:30:00Z", shard_id=1)]).splitlines()
    assert lines[0].split() == ["event", "shard", "on", "sale", "(venue", "time)", "seats",
                                "queue", "name"]
    assert lines[1].split() == ["7", "2", "Sun", "29", "Mar", "2026,", "03:30", "CEST", "120",
                                "fifo", "Spring", "forward"]
    assert "Sun 1 Nov 2026, 01:30 EST" in lines[2] and lines[2].endswith("Fall back")
    assert list_text([]) == "no events"
