"""The admission gate in front of the seat map (snapshot and WebSocket).

The seat map is a sales route like holds and checkout: the signed-in account
must carry a valid admission token for the event, from its current session
(docs/edge.md#the-gate). The check needs the process's ``sessions`` and its one
``gate``; the composition root builds it with both and hands it to the seat map.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

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
    recheck: Recheck = field(default=None, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.recheck is None:
            object.__setattr__(self, "recheck", Recheck(self.gate, self.sessions))

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
        return lapse(signed_in, current, a.session_id)


def lapse(signed_in: bool, current: str | None, session_id: str) -> str | None:
    """An open socket's verdict: None while its sign-in session lives and its shopping
    session is the account's current one; else the problem code it closes with."""
    if not signed_in:  # signed out (here or everywhere): the session is gone
        return "authentication_required"
    if current is None:
        return Verdict.EXPIRED.code
    if current != session_id:
        return Verdict.REVOKED.code
    return None


class Recheck:
    """``lapsed`` for many open sockets of one gate: the shopping sessions read in one
    pipeline and the sign-in sessions in another, side by side, fresh (not from the
    caches, which learn them). Redis unreachable: every verdict None (the sockets stay;
    their expiry still ends them)."""

    def __init__(self, gate: Gate, sessions: Sessions | None) -> None:
        self.gate = gate
        self.sessions = sessions

    async def __call__(self, admitted: Sequence[Any]) -> list[str | None]:
        """``admitted``: this gate's ``SeatmapAdmission``s (the seat map's ``Admitted``)."""
        mine = cast(Sequence[SeatmapAdmission], admitted)
        pairs = [(m.admission.event_id, m.admission.account_id) for m in mine]
        reads: list[Awaitable[Any]] = [self.gate.current_sessions(pairs)]
        if self.sessions is not None:
            reads.append(self.sessions.live_all([m.session_token for m in mine]))
        found = await asyncio.gather(*reads, return_exceptions=True)
        for failed in found:
            if isinstance(failed, Problem):
                return [None] * len(mine)
            if isinstance(failed, BaseException):
                raise failed
        currents = cast(list[str | None], found[0])
        signed_in = cast(list[bool], found[1]) if self.sessions is not None else [True] * len(mine)
        return [lapse(s, c, m.admission.session_id)
                for m, c, s in zip(mine, currents, signed_in, strict=True)]


SeatmapCheck = Callable[[HTTPConnection, int], Awaitable["SeatmapAdmission"]]


def seatmap_admission(gate: Gate, sessions: Sessions) -> SeatmapCheck:
    """The seat map's check (``onsale.seatmap.routes.Gate``): refuse (``Problem``)
    unless the signed-in account is admitted to this event. Every admission it hands
    out shares one ``Recheck``, so the hub re-checks them all in one pipeline."""
    recheck = Recheck(gate, sessions)

    async def check(connection: HTTPConnection, event_id: int) -> SeatmapAdmission:
        admission = await gate.check(connection, event_id, await current_account(connection))
        return SeatmapAdmission(gate, admission, sessions, sessions.token(connection), recheck)

    return check
