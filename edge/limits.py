"""In-process rate limits (pure): token buckets keyed by IP or account, with
bounded memory.

Polls must not touch Redis, so each edge process limits on its own. With N
edge processes behind a load balancer a client gets at most N times the
per-process rate in the worst case (and about the rate with sticky or
hash-based balancing); the limits are set for that (docs/edge.md).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """``rate`` requests per second with bursts of ``burst``, per key.

    At most ``max_keys`` buckets are kept; the least recently used is dropped
    first. A dropped key starts again with a full bucket, so memory is bounded
    at the price of forgiving the oldest idle keys, never the busy ones.
    """

    def __init__(self, rate: float, burst: float, max_keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1 or max_keys < 1:
            raise ValueError("rate > 0, burst >= 1 and max_keys >= 1 are required")
        self.rate = rate
        self.burst = burst
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def allow(self, key: Hashable) -> float:
        """0.0 if allowed (one token taken), else the seconds until it would be."""
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(self.burst, now)
            self._buckets[key] = bucket
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            tokens = bucket.tokens + (now - bucket.updated) * self.rate
            bucket.tokens = tokens if tokens < self.burst else self.burst
            bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self.rate


def retry_after(seconds: float) -> str:
    """The Retry-After header value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
