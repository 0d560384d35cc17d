"""edge.admission: the per-tick budget, positions, the measured rate, ETAs."""

from __future__ import annotations

from onsale.edge.admission import RateMeter, admit_budget, eta_seconds, poll_after, position


def test_budget_follows_the_rate() -> None:
    b = admit_budget(rate_per_min=600, elapsed=0.25, carry=0.0, cap=100, occupied=0,
                     paused=False)
    assert (b.admit, b.carry) == (2, 0.5)
    b = admit_budget(rate_per_min=600, elapsed=0.25, carry=b.carry, cap=100, occupied=0,
                     paused=False)
    assert (b.admit, b.carry) == (3, 0.0)


def test_budget_never_exceeds_the_room_under_the_cap() -> None:
    b = admit_budget(rate_per_min=60_000, elapsed=1.0, carry=0.0, cap=100, occupied=97,
                     paused=False)
    assert b.admit == 3
    b = admit_budget(rate_per_min=60_000, elapsed=1.0, carry=5.0, cap=100, occupied=100,
                     paused=False)
    assert (b.admit, b.carry) == (0, 0.0)
    b = admit_budget(rate_per_min=60_000, elapsed=1.0, carry=0.0, cap=100, occupied=150,
                     paused=False)
    assert b.admit == 0


def test_a_long_gap_is_not_a_burst() -> None:
    b = admit_budget(rate_per_min=120, elapsed=3600, carry=0.0, cap=10_000, occupied=0,
                     paused=False)
    assert b.admit == 2  # one second of rate at most
    slow = admit_budget(rate_per_min=6, elapsed=3600, carry=0.0, cap=10_000, occupied=0,
                        paused=False)
    assert slow.admit == 1  # a slow rate still admits one at a time


def test_paused_admits_nobody_and_drops_the_allowance() -> None:
    b = admit_budget(rate_per_min=600, elapsed=1.0, carry=3.0, cap=100, occupied=0,
                     paused=True)
    assert (b.admit, b.carry) == (0, 0.0)
    assert admit_budget(rate_per_min=0, elapsed=1.0, carry=0.0, cap=100, occupied=0,
                        paused=False).admit == 0


def test_positions_and_etas() -> None:
    assert position(10, 4) == 6
    assert position(3, 4) == 0
    assert eta_seconds(0, 0) == 0
    assert eta_seconds(6, 60) == 6
    assert eta_seconds(1, 7) == 9
    assert eta_seconds(5, 0) is None


def test_poll_interval_grows_with_the_eta_within_bounds() -> None:
    assert poll_after(None, 5, 60) == 5
    assert poll_after(10, 5, 60) == 5
    assert poll_after(300, 5, 60) == 30
    assert poll_after(100_000, 5, 60) == 60


def test_rate_meter_measures_over_its_window() -> None:
    meter = RateMeter(window=60)
    assert meter.per_minute() == 0.0
    meter.record(0.0, 0)
    meter.record(30.0, 50)
    assert meter.per_minute() == 100.0
    meter.record(90.0, 50)  # nothing for a minute
    meter.record(120.0, 50)
    assert meter.per_minute() == 0.0
