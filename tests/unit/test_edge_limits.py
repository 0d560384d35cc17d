"""edge.limits: token buckets per key with bounded memory."""

from __future__ import annotations

import pytest

from onsale.edge.limits import RateLimiter, retry_after


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2, burst=3, clock=clock)
    assert [limiter.allow("ip") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.allow("ip") == 0.5
    clock.now += 0.5
    assert limiter.allow("ip") == 0.0
    assert limiter.allow("other") == 0.0  # keys are independent


def test_memory_is_bounded_and_busy_keys_stay() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1, burst=1, max_keys=3, clock=clock)
    for key in ("a", "b", "c"):
        assert limiter.allow(key) == 0.0
    assert limiter.allow("a") > 0  # a is the most recently used now
    assert limiter.allow("d") == 0.0
    assert len(limiter) == 3
    assert limiter.allow("a") > 0  # still limited: b (least recent) was dropped
    assert limiter.allow("b") == 0.0  # b starts again


def test_retry_after_is_whole_seconds() -> None:
    assert retry_after(0.01) == "1"
    assert retry_after(2.2) == "3"
    with pytest.raises(ValueError):
        RateLimiter(rate=0, burst=1)
