"""The admission gate in front of the seat map (snapshot and WebSocket).

The seat map is a sales route like holds and checkout: the signed-in account
must carry a valid admission token for the event, from its current session
(docs/edge.md#the-gate). The check needs the app's ``sessions`` (the session
cookie codec) and ``gate`` (an ``edge.gate.Gate``); core provides both, and
``install`` gives a seat-map-only process its own, with a Redis connection
for the revocation check.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import HTTPConnection

from core.config import Settings
from core.sessions import SessionCodec, current_account
from edge.gate import Gate
from edge.queue_store import QueueStore, connect
from edge.tokens import AdmissionCodec, admission_keys


async def admission_gate(connection: HTTPConnection, event_id: int) -> None:
    """Refuse (``Problem``) unless the account is admitted to this event."""
    gate: Gate = connection.app.state.gate
    await gate.check(connection, event_id, current_account(connection))


def install(app: Starlette, settings: Settings) -> None:
    """Give a seat-map process the session codec and a gate whose Redis
    connection lives as long as the app (around its own lifespan)."""
    app.state.sessions = SessionCodec(settings.secret_key, settings.session_max_age,
                                      settings.cookie_secure)
    gate = Gate(AdmissionCodec(admission_keys(settings.admission_keys, settings.secret_key),
                               settings.admission_ttl_seconds), None)
    app.state.gate = gate
    inner = app.router.lifespan_context
    redis_url = settings.redis_url

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        redis = connect(redis_url) if redis_url else None
        if redis is not None:
            gate.attach(QueueStore(redis))
        gate.start()
        try:
            async with inner(app):
                yield
        finally:
            await gate.stop()
            if redis is not None:
                await redis.aclose()

    app.router.lifespan_context = lifespan
