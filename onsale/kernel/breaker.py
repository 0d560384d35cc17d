"""A circuit breaker for one dependency (pure: no I/O, the clock is injected).

CLOSED: calls go out. ``threshold`` failures in a row open it.
OPEN: calls are refused at once for ``backoff`` seconds, then the breaker is
HALF_OPEN: exactly one call (the probe) goes out, the others are refused.
The probe's success closes it; its failure opens it again for twice the last
back-off, up to ``max_backoff``. A success of any call closes it (the
dependency answered).

``allow``, ``success`` and ``failure`` return a ``Change`` when the state
changed in a way worth one log line: ``OPENED`` (the dependency went away) or
``CLOSED`` (it came back). The async glue (``kernel.dependency``) logs them.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable


class State(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Change(enum.StrEnum):
    OPENED = "opened"    # went away: refusing calls
    CLOSED = "closed"    # came back


class Breaker:
    def __init__(self, *, backoff: float = 0.5, max_backoff: float = 2.0, threshold: int = 2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if backoff <= 0 or max_backoff < backoff or threshold < 1:
            raise ValueError("0 < backoff <= max_backoff and threshold >= 1 are required")
        self.initial_backoff = backoff
        self.max_backoff = max_backoff
        self.threshold = threshold
        self._clock = clock
        self.state = State.CLOSED
        self.failures = 0            # in a row, while closed
        self.backoff = backoff       # the current (or next) open period
        self.open_until = 0.0
        self.opened_at = 0.0         # when it last went from closed to open
        self.probing = False         # half-open: the probe is out

    def allow(self) -> bool:
        """Whether a call may go out now (and, half-open, take the probe)."""
        if self.state is State.CLOSED:
            return True
        if self.state is State.OPEN:
            if self._clock() < self.open_until:
                return False
            self.state = State.HALF_OPEN
            self.probing = False
        if self.probing:
            return False
        self.probing = True
        return True

    def retry_in(self) -> float:
        """Seconds until a call may be tried again (0 unless open)."""
        if self.state is not State.OPEN:
            return 0.0
        return max(0.0, self.open_until - self._clock())

    def down_for(self) -> float:
        """Seconds since the breaker last opened."""
        return self._clock() - self.opened_at

    def success(self) -> Change | None:
        self.failures = 0
        self.probing = False
        if self.state is State.CLOSED:
            return None
        self.state = State.CLOSED
        self.backoff = self.initial_backoff
        return Change.CLOSED

    def failure(self) -> Change | None:
        now = self._clock()
        if self.state is State.HALF_OPEN:  # the probe failed: longer this time
            self.backoff = min(self.max_backoff, self.backoff * 2)
            self._open(now)
            return None
        if self.state is State.OPEN:  # a call from before it opened
            return None
        self.failures += 1
        if self.failures < self.threshold:
            return None
        self.opened_at = now
        self._open(now)
        return Change.OPENED

    def abandon(self) -> None:
        """A call ended without a verdict (cancelled): the next one may probe."""
        if self.state is State.HALF_OPEN:
            self.probing = False

    def _open(self, now: float) -> None:
        self.state = State.OPEN
        self.failures = 0
        self.probing = False
        self.open_until = now + self.backoff
