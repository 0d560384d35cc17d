"""edge.controller: AIMD between the operator's bounds from literal health snapshots."""

from __future__ import annotations

from onsale.edge.controller import (
    DECREASING,
    HOLDING,
    INCREASING,
    PAUSED,
    UNHEALTHY,
    Bounds,
    Health,
    Targets,
    decide,
)

BOUNDS = Bounds(min_rate=100, max_rate=1100)
TARGETS = Targets()
HEALTHY = Health(core_ok=True, redis_ok=True, hold_p99_ms=40, lock_wait_p99_ms=2,
                 conflict_rate=0.1, payment_error_rate=0.0, completion_rate=0.5,
                 active=100, cap=10_000)


def test_healthy_increases_additively_up_to_the_maximum() -> None:
    d = decide(500, HEALTHY, BOUNDS, TARGETS)
    assert (d.rate, d.state, d.admitting) == (550, INCREASING, True)
    assert decide(1090, HEALTHY, BOUNDS, TARGETS).rate == 1100
    top = decide(1100, HEALTHY, BOUNDS, TARGETS)
    assert (top.rate, top.state) == (1100, HOLDING)


def test_a_breach_decreases_multiplicatively_down_to_the_minimum() -> None:
    slow = Health(**{**HEALTHY.__dict__, "hold_p99_ms": 450.0})
    d = decide(800, slow, BOUNDS, TARGETS)
    assert (d.rate, d.state) == (400, DECREASING)
    assert d.reasons == ("hold_p99_ms 450 > 300",)
    assert decide(150, slow, BOUNDS, TARGETS).rate == 100


def test_every_signal_can_breach() -> None:
    for field, value in (("lock_wait_p99_ms", 500.0), ("conflict_rate", 0.9),
                         ("payment_error_rate", 0.2)):
        d = decide(800, Health(**{**HEALTHY.__dict__, field: value}), BOUNDS, TARGETS)
        assert d.state == DECREASING and d.reasons[0].startswith(field)


def test_no_data_is_not_a_breach() -> None:
    idle = Health(core_ok=True, redis_ok=True)
    assert decide(500, idle, BOUNDS, TARGETS).state == INCREASING


def test_near_the_cap_or_low_completion_holds_the_rate() -> None:
    full = Health(**{**HEALTHY.__dict__, "active": 9_500})
    assert (decide(500, full, BOUNDS, TARGETS).state, decide(500, full, BOUNDS, TARGETS).rate) \
        == (HOLDING, 500)
    picky = Targets(completion_floor=0.8)
    assert decide(500, HEALTHY, BOUNDS, picky).state == HOLDING


def test_unhealthy_core_or_redis_pauses_and_restarts_at_the_minimum_rate() -> None:
    """A shard that failed over is unhealthy until it is resumed; admission then grows
    again from the minimum rate, not from where it was (docs/operations.md#failover)."""
    d = decide(500, Health(**{**HEALTHY.__dict__, "core_ok": False}), BOUNDS, TARGETS)
    assert (d.rate, d.state, d.admitting) == (BOUNDS.min_rate, UNHEALTHY, False)
    assert BOUNDS.min_rate < 500
    assert d.reasons == ("core unhealthy",)
    d = decide(500, Health(core_ok=False, redis_ok=False), BOUNDS, TARGETS)
    assert d.reasons == ("core unhealthy", "redis unhealthy")


def test_operator_pause_wins_and_the_rate_stays_in_bounds() -> None:
    d = decide(5000, HEALTHY, BOUNDS, TARGETS, operator_paused=True)
    assert (d.rate, d.state, d.admitting) == (1100, PAUSED, False)
    assert Bounds(10, 20, step=3).increase == 3
    assert Bounds(10, 20).increase == 1
