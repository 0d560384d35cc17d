"""The admission gate in front of the seat map (snapshot and WebSocket).

The seat map is a sales route like holds and checkout: the signed-in account
must carry a valid admission token for the event, from its current session
(docs/edge.md#the-gate). The check needs the app's ``sessions``
(``core.sessions.Sessions``) and ``gate`` (an ``edge.gate.Gate``); core
provides both, and ``install`` gives a seat-map-only process its own, with a
Redis connection for both revocation checks.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import HTTPConnection

from onsale.edge.gate import Gate
from onsale.edge.queue_store import QueueStore
from onsale.edge.tokens import Admission, AdmissionCodec, Verdict, admission_keys
from onsale.kernel.config import Settings
from onsale.kernel.cookies import settings_cookie_policy
from onsale.kernel.dependency import request_redis_for
from onsale.kernel.problems import Problem
from onsale.kernel.session_store import SessionStore
from onsale.kernel.sessions import Sessions, build_sessions, current_account


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


async def admission_gate(connection: HTTPConnection, event_id: int) -> SeatmapAdmission:
    """Refuse (``Problem``) unless the account is admitted to this event."""
    gate: Gate = connection.app.state.gate
    sessions: Sessions = connection.app.state.sessions
    admission = await gate.check(connection, event_id, await current_account(connection))
    return SeatmapAdmission(gate, admission, sessions, sessions.token(connection))


def install(app: Starlette, settings: Settings) -> None:
    """Give a seat-map process the session codec and a gate whose Redis
    connection lives as long as the app (around its own lifespan)."""
    app.state.sessions = sessions = build_sessions(settings)
    gate = Gate(AdmissionCodec(admission_keys(settings.admission_keys, settings.secret_key),
                               settings.admission_ttl_seconds), None,
                cookie_prefix=settings_cookie_policy(settings).prefix)
    app.state.gate = gate
    inner = app.router.lifespan_context
    redis_url = settings.redis_url

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The request path's client, bounded; the seat map's lifespan reuses it.
        redis = request_redis_for(settings) if redis_url else None
        if redis is not None:
            app.state.redis = redis
            gate.attach(QueueStore(redis))
            sessions.attach(SessionStore(redis))
        gate.start()
        try:
            async with inner(app):
                yield
        finally:
            await gate.stop()
            if redis is not None:
                app.state.redis = None
                await redis.aclose()

    app.router.lifespan_context = lifespan
