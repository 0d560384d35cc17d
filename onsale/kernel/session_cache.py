"""What one process remembers about session records (pure: no I/O, no clock).

The session store (``kernel.session_store``) is the authority; this cache only
saves round trips on the hot path (holds, checkout, the seat map). Its rules:

- "the record exists" is trusted for less than ``fresh_seconds`` (1 s by
  default) from the moment the read that learnt it was *sent*: a session
  revoked by another process stays usable here for at most that long;
- "the record is gone" is trusted until the entry is evicted. A session id is
  random and never reused, so a revoked or expired record never comes back;
- a session revoked by this process is gone here at once;
- an answer this cache does not have is ``Verdict.READ``: ask the store
  (``kernel.sessions.Sessions`` does, one read per key for a burst of requests).

Memory is bounded: at most ``max_entries`` keys, least recently used first out.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Hashable


class Verdict(enum.Enum):
    VALID = "valid"  # the record existed less than fresh_seconds ago
    GONE = "gone"    # revoked or expired: refuse without asking
    READ = "read"    # unknown or stale: ask the store


class SessionCache:
    def __init__(self, fresh_seconds: float = 1.0, max_entries: int = 100_000) -> None:
        if fresh_seconds < 0 or max_entries < 1:
            raise ValueError("fresh_seconds >= 0 and max_entries >= 1 are required")
        self.fresh_seconds = fresh_seconds
        self.max_entries = max_entries
        # key -> (exists, when the read that learnt it was sent); exists=False is final
        self._entries: OrderedDict[Hashable, tuple[bool, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def verdict(self, key: Hashable, now: float) -> Verdict:
        entry = self._entries.get(key)
        if entry is None:
            return Verdict.READ
        exists, read_at = entry
        if not exists:
            self._entries.move_to_end(key)
            return Verdict.GONE
        if 0 <= now - read_at < self.fresh_seconds:
            self._entries.move_to_end(key)
            return Verdict.VALID
        return Verdict.READ

    def learnt(self, key: Hashable, exists: bool, read_at: float) -> None:
        """The store answered a read sent at ``read_at``. A "gone" already known
        here wins over a late "exists" (a revocation raced the read)."""
        known = self._entries.get(key)
        if known is not None and not known[0]:
            return
        if known is not None and exists and known[1] > read_at:
            return  # a newer read already answered
        self._put(key, exists, read_at)

    def revoked(self, key: Hashable, now: float) -> None:
        """This process revoked the session: refuse it from now on."""
        self._put(key, False, now)

    def _put(self, key: Hashable, exists: bool, at: float) -> None:
        self._entries[key] = (exists, at)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
