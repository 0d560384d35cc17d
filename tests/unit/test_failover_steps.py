"""When a shard must be resumed after a failover (core/failover.py)."""

from __future__ import annotations

from onsale.core.failover import STEPS, steps_to_run


def test_a_new_timeline_runs_every_step_in_order() -> None:
    assert steps_to_run(2, 1) == STEPS == ("seatmap", "reconcile", "audit", "serve")
    assert steps_to_run(7, 3) == STEPS


def test_the_timeline_already_resumed_on_or_a_lower_one_runs_nothing() -> None:
    assert steps_to_run(1, 1) == ()
    assert steps_to_run(3, 3) == ()
    assert steps_to_run(2, 3) == ()  # not this shard's primary: the pools refuse it anyway
