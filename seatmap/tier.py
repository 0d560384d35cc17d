"""The seat-map tier: the fan-out (the snapshot route, the WebSocket, the hub) and the
change-capture consumer, each run as a context manager that yields typed state
(``Seatmap``, ``Consumer``); and their health answers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import cast

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.dependency import background_redis
from onsale.kernel.origins import public_origins
from onsale.kernel.shared import Shared
from onsale.kernel.tasks import stop_background
from onsale.seatmap.bus import Bus
from onsale.seatmap.cdc import Consumer
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.hub import Hub
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.routes import Gate, Seatmap, allow_all, seatmap_state

READ_SOCKET_TIMEOUT = 5.0  # > the hub's XREAD block (2 s)

def require_redis(settings: Settings, role: str) -> str:
    if not settings.redis_url:
        raise ConfigError(f"REDIS_URL must be set for the {role} role (the seat-map streams)")
    return settings.redis_url


@contextlib.asynccontextmanager
async def running_capture(settings: Settings, seatmap: SeatmapSettings,
                          metrics: SeatmapMetrics) -> AsyncIterator[Consumer]:
    """One replication consumer (or a standby waiting for the lease) as a background
    task for the duration of the block."""
    redis = background_redis(require_redis(settings, "cdc"))
    consumer = Consumer(settings.database_url, redis, seatmap, metrics)
    task = asyncio.create_task(consumer.run(), name="onsale-seatmap-cdc")
    try:
        yield consumer
    finally:
        await stop_background([task])
        await redis.aclose()


@contextlib.asynccontextmanager
async def running_seatmap(shared: Shared, seatmap: SeatmapSettings, metrics: SeatmapMetrics,
                          *, gate: Gate = allow_all) -> AsyncIterator[Seatmap]:
    """The hub, reading each event's stream once for all this process's sockets; the
    snapshot falls back to the database (the shared pool) when the stream has none."""
    redis_url = require_redis(shared.settings, "seatmap")
    if shared.redis is None:
        raise ConfigError("the seat map needs the process's Redis client")
    async with contextlib.AsyncExitStack() as stack:
        # The channels block on XREAD (2 s): a client of their own, with a longer wait.
        reader = background_redis(redis_url, socket_timeout=READ_SOCKET_TIMEOUT)
        stack.push_async_callback(reader.aclose)
        hub = Hub(shared.redis, seatmap, metrics, reader=reader)
        hub.start()
        stack.push_async_callback(hub.stop)
        settings = shared.settings
        yield Seatmap(seatmap, Bus(shared.redis, seatmap.stream_maxlen), hub, shared.db, gate,
                      origins=public_origins(settings.public_url, settings.allowed_origins))


def seatmap_health_route() -> Route:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "live": seatmap_state(request).hub.live})

    return Route("/healthz", healthz, methods=["GET"])


def capture_state(connection: HTTPConnection) -> Consumer:
    return cast(Consumer, connection.app.state.capture)


def capture_health_route() -> Route:
    """Reports whether this consumer is the active one (holds the lease)."""
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "active": capture_state(request).active})

    return Route("/healthz", healthz, methods=["GET"])
