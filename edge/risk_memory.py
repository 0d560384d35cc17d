"""What the risk scorer counts, in the edge process's memory (sans-I/O: a clock is
passed in; no Redis, no database).

Joins from a new device are counted per device, per address, per IPv6 /64 and per
account; polls are timed per account. In memory rather than in Valkey because a poll
must cost no Valkey command (docs/edge.md) and a join must not pay a second round trip
for a signal that only slows visitors down: with N edge processes each counts what it
sees (about everything with hash-based balancing by address, a 1/N share otherwise),
which is the same trade the rate limits make. Memory is bounded: at most ``max_keys``
entries per kind, the least recently used dropped first (a dropped key starts again from
nothing: it forgives the oldest idle keys, never the busy ones).

Counts decay exponentially with ``window`` seconds as the time constant, so a count is
"joins in about the last ``window`` seconds" without keeping each join.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from onsale.kernel.addresses import address_bucket

V = TypeVar("V")

# The headers that, with the address, make a "device" before it has a ticket.
DEVICE_HEADERS = ("user-agent", "accept-language", "sec-ch-ua", "sec-ch-ua-platform")


@dataclass(frozen=True)
class Recent:
    """The counts a join was scored with (this join included)."""

    device_joins: float = 0.0
    address_joins: float = 0.0
    net_joins: float = 0.0
    account_joins: float = 0.0
    poll_gaps: tuple[float, ...] = ()


QUIET = Recent()  # nothing counted (a hook called outside a join, a test's)


class _Lru(Generic[V]):
    def __init__(self, max_keys: int) -> None:
        if max_keys < 1:
            raise ValueError("max_keys >= 1 is required")
        self.max_keys = max_keys
        self.items: OrderedDict[Hashable, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self.items)

    def get(self, key: Hashable) -> V | None:
        found = self.items.get(key)
        if found is not None:
            self.items.move_to_end(key)
        return found

    def put(self, key: Hashable, value: V) -> None:
        self.items[key] = value
        self.items.move_to_end(key)
        if len(self.items) > self.max_keys:
            self.items.popitem(last=False)


class DecayingCounts:
    """Per key, a count that decays by e every ``window`` seconds."""

    def __init__(self, window: float, max_keys: int) -> None:
        self.window = window
        self._counts: _Lru[tuple[float, float]] = _Lru(max_keys)

    def __len__(self) -> int:
        return len(self._counts)

    def add(self, key: Hashable, now: float) -> float:
        """One more for ``key``; the count now."""
        found = self._counts.get(key)
        count = 1.0
        if found is not None:
            value, at = found
            count += value * math.exp(-max(0.0, now - at) / self.window)
        self._counts.put(key, (count, now))
        return count


def device_key(ip: str, headers: Mapping[str, str]) -> str:
    """A device before it has a ticket: its address and browser headers, hashed."""
    text = "\n".join([ip, *(headers.get(h, "") for h in DEVICE_HEADERS)])
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


class RiskMemory:
    def __init__(self, window: float = 60.0, max_keys: int = 100_000, gaps: int = 8,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.devices = DecayingCounts(window, max_keys)
        self.addresses = DecayingCounts(window, max_keys)
        self.nets = DecayingCounts(window, max_keys)
        self.accounts = DecayingCounts(window, max_keys)
        self.polls: _Lru[deque[float]] = _Lru(max_keys)
        self.gaps = gaps

    def joined(self, account: uuid.UUID, ip: str, headers: Mapping[str, str]) -> Recent:
        """Count a join from a new device; the counts it is scored with."""
        now = self._clock()
        bucket = address_bucket(ip)
        net = self.nets.add(bucket, now) if bucket != ip and "/" in bucket else 0.0
        return Recent(device_joins=self.devices.add(device_key(ip, headers), now),
                      address_joins=self.addresses.add(ip, now), net_joins=net,
                      account_joins=self.accounts.add(account, now),
                      poll_gaps=self.poll_gaps(account))

    def polled(self, account: uuid.UUID) -> None:
        """A poll of the account (memory only: polls cost no Valkey command)."""
        times = self.polls.get(account)
        if times is None:
            times = deque(maxlen=self.gaps + 1)
            self.polls.put(account, times)
        times.append(self._clock())

    def poll_gaps(self, account: uuid.UUID) -> tuple[float, ...]:
        times = self.polls.get(account)
        if times is None:
            return ()
        t = list(times)
        return tuple(b - a for a, b in itertools.pairwise(t))
