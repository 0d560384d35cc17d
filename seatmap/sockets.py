"""The seat-map socket's rules (pure; docs/security.md#websockets): who may open
one, what a client may send, and when an open one must close.

``seatmap/routes.py`` applies them at the handshake and while reading;
``seatmap/hub.py`` re-checks every open socket's admission on one timer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

# Close codes (docs/seatmap-protocol.md#close-codes).
CLOSE_POLICY = 1008     # too many messages
CLOSE_TOO_BIG = 1009    # a message over ONSALE_SEATMAP_CLIENT_MAX_MESSAGE_BYTES
CLOSE_EXPIRED = 4401    # the admission token expired, or the shopping session ended
CLOSE_REVOKED = 4403    # the account entered the sale on another device

_CLOSE_BY_CODE = {"admission_expired": CLOSE_EXPIRED, "admission_revoked": CLOSE_REVOKED,
                  "authentication_required": CLOSE_EXPIRED}  # signed out


class Admitted(Protocol):
    """What the gate hands the seat map for an admitted socket (edge.seatmap_gate)."""

    @property
    def account(self) -> str: ...

    @property
    def expires_at(self) -> float: ...  # unix seconds

    async def lapsed(self) -> str | None:
        """None while the admission holds; else its problem code."""
        ...

    @property
    def recheck(self) -> Recheck:
        """``lapsed`` for many admissions of one gate at once (one pipeline's reads)."""
        ...


class Recheck(Protocol):
    async def __call__(self, admitted: Sequence[Admitted]) -> list[str | None]: ...


def by_recheck(admitted: Sequence[Admitted]) -> list[tuple[Recheck, list[int]]]:
    """The admissions grouped by the re-check that answers them (one per gate), each
    group with its positions in ``admitted``, in order."""
    groups: dict[int, tuple[Recheck, list[int]]] = {}
    for n, a in enumerate(admitted):
        check = a.recheck
        groups.setdefault(id(check), (check, []))[1].append(n)
    return list(groups.values())


def origin_allowed(origin: str | None, allowed: frozenset[str] | None) -> bool:
    """A handshake's ``Origin`` against the site's origins (``kernel.origins.public_origins``).

    Browsers send ``Origin`` on every WebSocket handshake, so a page on another
    site (cross-site WebSocket hijacking with the shopper's cookies) is
    refused. No header: not a browser, nothing a page could forge with the
    shopper's cookies; its own credentials decide. ``allowed`` None: no check.
    """
    if allowed is None or origin is None:
        return True
    return origin.strip().lower() in allowed


def close_for(problem_code: str) -> tuple[int, str]:
    """The close (code, reason) for an admission that lapsed."""
    return _CLOSE_BY_CODE.get(problem_code, CLOSE_EXPIRED), problem_code


def expired(admitted: Admitted, now: float) -> bool:
    return admitted.expires_at <= now


class Inbound:
    """What a client sends (today nothing is meaningful): each message at most
    ``max_bytes``, at most ``per_second`` of them in any second."""

    def __init__(self, max_bytes: int, per_second: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_bytes = max_bytes
        self.per_second = per_second
        self._clock = clock
        self._window_start = 0.0
        self._count = 0

    def receive(self, size: int) -> tuple[int, str] | None:
        """None to keep reading; else the close (code, reason)."""
        if size > self.max_bytes:
            return CLOSE_TOO_BIG, "message too big"
        now = self._clock()
        if now - self._window_start >= 1.0:
            self._window_start, self._count = now, 0
        self._count += 1
        if self._count > self.per_second:
            return CLOSE_POLICY, "too many messages"
        return None


class AccountSockets:
    """Open sockets per account in this process, at most ``cap`` each."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._open: dict[str, int] = {}

    def take(self, account: str) -> bool:
        """Count one more socket for ``account``; False (nothing counted) over the cap."""
        n = self._open.get(account, 0)
        if n >= self.cap:
            return False
        self._open[account] = n + 1
        return True

    def give(self, account: str) -> None:
        n = self._open.get(account, 0) - 1
        if n > 0:
            self._open[account] = n
        else:
            self._open.pop(account, None)

    def count(self, account: str) -> int:
        return self._open.get(account, 0)
