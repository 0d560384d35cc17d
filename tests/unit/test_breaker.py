"""kernel.breaker: the circuit breaker, with literal inputs and a hand-driven clock."""

from __future__ import annotations

import pytest

from onsale.kernel.breaker import Breaker, Change, State


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def breaker(clock: Clock, **kw: float) -> Breaker:
    params: dict[str, float] = {"backoff": 0.5, "max_backoff": 2.0, "threshold": 2, **kw}
    return Breaker(backoff=params["backoff"], max_backoff=params["max_backoff"],
                   threshold=int(params["threshold"]), clock=clock)


def test_closed_lets_everything_through() -> None:
    b = breaker(Clock())
    assert [b.allow() for _ in range(5)] == [True] * 5
    assert b.state is State.CLOSED and b.retry_in() == 0.0


def test_opens_after_threshold_failures_in_a_row() -> None:
    clock = Clock()
    b = breaker(clock)
    assert b.failure() is None          # one failure: still closed
    assert b.success() is None          # a success resets the count
    assert b.failure() is None
    assert b.failure() is Change.OPENED
    assert b.state is State.OPEN
    assert b.allow() is False
    assert b.retry_in() == pytest.approx(0.5)


def test_open_refuses_until_the_backoff_ends_then_lets_one_probe_through() -> None:
    clock = Clock()
    b = breaker(clock, threshold=1)
    assert b.failure() is Change.OPENED
    clock.now += 0.49
    assert b.allow() is False
    clock.now += 0.02
    assert b.allow() is True            # the probe
    assert b.state is State.HALF_OPEN
    assert b.allow() is False           # everyone else waits for its verdict
    assert b.allow() is False
    assert b.success() is Change.CLOSED
    assert b.state is State.CLOSED
    assert b.allow() is True and b.allow() is True


def test_a_failed_probe_doubles_the_backoff_up_to_the_cap() -> None:
    clock = Clock()
    b = breaker(clock, threshold=1, backoff=0.5, max_backoff=2.0)
    assert b.failure() is Change.OPENED
    periods = []
    for _ in range(4):
        clock.now += b.retry_in()
        assert b.allow() is True        # probe
        assert b.failure() is None      # fails again: no second "went away"
        periods.append(b.retry_in())
    assert periods == [1.0, 2.0, 2.0, 2.0]
    clock.now += 2.0
    assert b.allow() is True
    assert b.success() is Change.CLOSED
    assert b.failure() is Change.OPENED  # a new outage starts at the first back-off
    assert b.retry_in() == 0.5


def test_late_failures_while_open_change_nothing() -> None:
    clock = Clock()
    b = breaker(clock, threshold=1)
    assert b.failure() is Change.OPENED
    clock.now += 0.3
    assert b.failure() is None          # a call that started before it opened
    assert b.retry_in() == pytest.approx(0.2)


def test_any_success_closes_an_open_breaker() -> None:
    clock = Clock()
    b = breaker(clock, threshold=1)
    b.failure()
    assert b.success() is Change.CLOSED  # a call from before answered after all
    assert b.allow() is True


def test_an_abandoned_probe_lets_the_next_call_probe() -> None:
    clock = Clock()
    b = breaker(clock, threshold=1)
    b.failure()
    clock.now += 0.5
    assert b.allow() is True
    b.abandon()                         # the probe's caller was cancelled
    assert b.allow() is True
    assert b.allow() is False


@pytest.mark.parametrize("kw", [{"backoff": 0}, {"backoff": 2, "max_backoff": 1},
                                {"threshold": 0}])
def test_bad_parameters(kw: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        breaker(Clock(), **kw)


def test_down_for_counts_from_the_opening() -> None:
    clock = Clock()
    b = breaker(clock, threshold=1)
    b.failure()
    clock.now += 1.5
    b.allow()
    b.failure()
    clock.now += 0.25
    assert b.down_for() == pytest.approx(1.75)
