"""Admission arithmetic (pure): how many to admit this tick, queue positions,
the measured admission rate, ETAs and poll intervals.

A queue is two numbers, as in AWS's virtual waiting room: the place a
visitor was given when joining, and the "now serving" number the admitter
advances. Everyone whose place is at or below the serving number has been
admitted. Places of visitors who left are skipped, so ``place - serving`` is
an upper bound of the real position.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    admit: int       # visitors to admit now
    carry: float     # fractional allowance kept for the next tick


def admit_budget(*, rate_per_min: float, elapsed: float, carry: float, cap: int,
                 occupied: int, paused: bool, burst_seconds: float = 1.0) -> Budget:
    """Token bucket at ``rate_per_min`` that never fills beyond ``burst_seconds``
    of rate (at least one visitor), limited by the free room under ``cap``.

    ``occupied`` = active shoppers + admitted visitors who have not arrived yet:
    both hold a place under the cap. Paused, or without room, the allowance is
    dropped rather than saved, so admission resumes at the rate, not in a burst.
    """
    if paused or rate_per_min <= 0:
        return Budget(0, 0.0)
    per_second = rate_per_min / 60.0
    ceiling = max(1.0, per_second * burst_seconds)
    allowance = min(ceiling, carry + per_second * max(0.0, elapsed))
    room = max(0, cap - occupied)
    admit = min(int(allowance), room)
    if room == 0:
        return Budget(0, 0.0)
    return Budget(admit, allowance - admit)


def position(place: int, serving: int) -> int:
    """Visitors (at most) still ahead of this place, counting itself: 0 = admitted."""
    return max(0, place - serving)


def eta_seconds(position_: int, rate_per_min: float) -> int | None:
    """Seconds until admission at the measured rate; None when nothing moves."""
    if position_ <= 0:
        return 0
    if rate_per_min <= 0:
        return None
    return math.ceil(position_ * 60.0 / rate_per_min)


def poll_after(eta: int | None, base: int, longest: int) -> int:
    """The next poll: ``base`` seconds when admission is near (or unknown), up to
    ``longest`` for visitors far back (a tenth of their ETA). ``longest`` must
    stay well under the abandon grace."""
    if eta is None:
        return base
    return max(base, min(longest, eta // 10))


class RateMeter:
    """Admissions per minute over a sliding window, from a running total."""

    def __init__(self, window: float = 60.0) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def record(self, now: float, total: int) -> None:
        self._samples.append((now, total))
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
            self._samples.popleft()

    def per_minute(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        if t1 - t0 <= 0:
            return 0.0
        return max(0.0, (n1 - n0) * 60.0 / (t1 - t0))
