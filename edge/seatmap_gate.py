"""The admission gate in front of the seat map (snapshot and WebSocket).

The seat map is a sales route like holds and checkout: the signed-in account
must carry a valid admission token for the event, from its current session
(docs/edge.md#the-gate). The check needs the process's ``sessions`` and its one
``gate``; the composition root builds it with both and hands it to the seat map.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from onsale.edge.gate import Gate
from onsale.edge.tokens import Admission, Verdict
from onsale.kernel.auth import current_account
from onsale.kernel.problems import Problem
from onsale.kernel.sessions import Sessions


@dataclass(frozen=True)
class SeatmapAdmission:
    """What the seat map keeps of an admission (``seatmap.sockets.Admitted``): the
    account (sockets per account are capped), the token's expiry (an open socket is
    closed then) and a re-check of the session (closed once it was revoked)."""

    gate: Gate
    admission: Admission
    sessions: Sessions | None = None   # the sign-in session behind the socket, re-checked
    session_token: str | None = None   # too: signing out closes the socket

    @property
    def account(self) -> str:
        return str(self.admission.account_id)

    @property
    def expires_at(self) -> float:
        return float(self.admission.expires_at)

    async def lapsed(self) -> str | None:
        """None while the session is the account's current one; else the problem
        code. Redis unreachable: None (the socket stays; its expiry still ends it)."""
        a = self.admission
        try:
            current = await self.gate.current_session(a.event_id, a.account_id, a.session_id)
            signed_in = (self.sessions is None
                         or await self.sessions.account(self.session_token) is not None)
        except Problem:
            return None
        if not signed_in:  # signed out (here or everywhere): the session is gone
            return "authentication_required"
        if current is None:
            return Verdict.EXPIRED.code
        if current != a.session_id:
            return Verdict.REVOKED.code
        return None


SeatmapCheck = Callable[[HTTPConnection, int], Awaitable["SeatmapAdmission"]]


def seatmap_admission(gate: Gate, sessions: Sessions) -> SeatmapCheck:
    """The seat map's check (``onsale.seatmap.routes.Gate``): refuse (``Problem``)
    unless the signed-in account is admitted to this event."""

    async def check(connection: HTTPConnection, event_id: int) -> SeatmapAdmission:
        admission = await gate.check(connection, event_id, await current_account(connection))
        return SeatmapAdmission(gate, admission, sessions, sessions.token(connection))

    return check
