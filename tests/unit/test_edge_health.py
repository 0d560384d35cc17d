"""Core's health reports (core.health) and how the admitter folds them (edge.health)."""

from __future__ import annotations

from onsale.core.health import p99_ms, report, snapshot
from onsale.core.metrics import Metrics
from onsale.edge.health import fold


def test_p99_is_the_upper_bound_of_its_bucket_between_two_snapshots() -> None:
    before = {"0.01": 5.0, "0.1": 5.0, "+Inf": 5.0}
    after = {"0.01": 95.0, "0.1": 104.0, "+Inf": 105.0}
    assert p99_ms(before, after) == 100.0  # 99 of 100 new ones are within 0.1 s
    assert p99_ms(after, after) is None
    tail = {"0.01": 5.0, "0.1": 5.0, "+Inf": 105.0}
    assert p99_ms(before, tail) == 200.0  # past the last bound: twice that bound


def test_a_report_from_metric_deltas() -> None:
    m = Metrics()
    first = snapshot(m)
    for _ in range(8):
        m.hold_latency.observe(0.004)
        m.hold_outcomes.labels(code="created").inc()
    for _ in range(2):
        m.hold_latency.observe(0.4)
        m.hold_outcomes.labels(code="seats_unavailable").inc()
    m.payment_outcomes.labels(outcome="AUTHORIZED", source="response").inc(3)
    m.payment_outcomes.labels(outcome="UNKNOWN", source="response").inc()
    doc = report(first, snapshot(m), db_ok=True)
    assert doc["hold_p99_ms"] == 500.0 and doc["lock_wait_p99_ms"] is None
    assert (doc["attempts"], doc["conflicts"], doc["created"]) == (10, 2, 8)
    assert (doc["answers"], doc["payment_errors"], doc["authorized"]) == (4, 1, 3)
    assert doc["db_ok"] is True


def test_fold_pools_rates_and_takes_the_worst_latency() -> None:
    now = 1000.0
    a = {"t": now - 1, "db_ok": True, "hold_p99_ms": 50.0, "attempts": 10, "conflicts": 1,
         "answers": 0, "payment_errors": 0, "created": 5, "authorized": 1}
    b = {"t": now - 2, "db_ok": True, "hold_p99_ms": 300.0, "attempts": 30, "conflicts": 3,
         "answers": 10, "payment_errors": 1, "created": 5, "authorized": 4}
    h = fold([a, b], now, active=7, cap=10)
    assert h.core_ok and h.redis_ok and h.hold_p99_ms == 300.0
    assert h.conflict_rate == 0.1 and h.payment_error_rate == 0.1 and h.completion_rate == 0.5
    assert (h.active, h.cap) == (7, 10)
    assert fold([{**a, "t": now - 30}], now, active=0, cap=10).core_ok is False  # stale
    assert fold([], now, active=0, cap=10).core_ok is False
    assert fold([a, {**b, "db_ok": False}], now, active=0, cap=10).core_ok is False


def test_a_shard_that_does_not_answer_pauses_only_its_own_events() -> None:
    """Each report names the shards it asked (docs/scaling.md#a-shard-that-is-down):
    shard 2 down makes the health of shard 2's events bad, and no other event's."""
    now = 1000.0
    a = {"t": now - 1, "db_ok": True, "shards_ok": {"2": False, "3": True}}
    b = {"t": now - 1, "db_ok": True, "shards_ok": {"2": True, "3": True}}
    assert fold([a, b], now, active=0, cap=10, shard=2).core_ok is False
    assert fold([a, b], now, active=0, cap=10, shard=3).core_ok is True
    assert fold([a, b], now, active=0, cap=10, shard=1).core_ok is True
    assert fold([a, b], now, active=0, cap=10).core_ok is True  # an event of no shard known
    # A shard a report does not name (not open in that process yet) is not held against it;
    # the directory down is every event's problem.
    assert fold([b], now, active=0, cap=10, shard=4).core_ok is True
    assert fold([{**b, "db_ok": False}], now, active=0, cap=10, shard=3).core_ok is False


def test_a_report_names_each_other_shard() -> None:
    m = Metrics()
    doc = report(snapshot(m), snapshot(m), True, {"2": False})
    assert doc["shards_ok"] == {"2": False} and doc["db_ok"] is True
    assert report(snapshot(m), snapshot(m), True)["shards_ok"] == {}
