"""Failed operator-token attempts, limited per client address (pure: no I/O,
the clock is injected; docs/security.md#the-operator-token).

At most ``limit`` failed attempts per ``window`` seconds (a sliding window)
from one address bucket (``kernel.addresses``: IPv6 per /64). An address that
reached it is refused every operator request, the right token included, until
its oldest failure in the window is ``window`` seconds old; the token of a
refused request is not even compared, so the answer tells a guesser nothing.
Attempts refused that way are not counted (a flood does not lengthen the
wait), and a success does not clear the failures (an operator's console
polling from the same address would otherwise reset a guesser's count).
Other addresses are not affected, so an attacker cannot lock the operator out
from elsewhere.

Each process keeps its own counts (the operator routes must not depend on
Redis to be refused quickly): with N processes an address gets at most N times
``limit`` guesses per window. Memory is bounded: ``max_addresses`` buckets,
the least recently used dropped first (it forgets the oldest idle address's
failures, never a busy one's).
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable


class AdminThrottle:
    def __init__(self, limit: int = 10, window: float = 60.0, *, max_addresses: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1 or window <= 0 or max_addresses < 1:
            raise ValueError("limit >= 1, window > 0 and max_addresses >= 1 are required")
        self.limit = limit
        self.window = window
        self.max_addresses = max_addresses
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._failures)

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times

    def retry_in(self, address: str) -> float:
        """0.0 if an attempt from ``address`` may be checked now, else the
        seconds until one may."""
        now = self._clock()
        times = self._recent(address, now)
        if times is None or len(times) < self.limit:
            return 0.0
        return times[0] + self.window - now

    def failed(self, address: str) -> int:
        """Count a failed attempt; the address's failures in the window now."""
        now = self._clock()
        times = self._recent(address, now)
        if times is None:
            times = self._failures[address] = deque(maxlen=self.limit)
            if len(self._failures) > self.max_addresses:
                self._failures.popitem(last=False)
        else:
            self._failures.move_to_end(address)
        times.append(now)
        return len(times)
