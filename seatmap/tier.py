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
from onsale.seatmap.capture import Capture
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
                          metrics: SeatmapMetrics) -> AsyncIterator[Capture]:
    """A replication consumer per shard (each streaming, or a standby waiting for its
    lease), started from the directory's shard list, for the duration of the block."""
    redis = background_redis(require_redis(settings, "cdc"))
    capture = Capture(settings.database_url, redis, seatmap, metrics)
    task = asyncio.create_task(capture.run(), name="onsale-seatmap-capture")
    try:
        yield capture
    finally:
        await stop_background([task])
        await redis.aclose()


@contextlib.asynccontextmanager
async def running_seatmap(shared: Shared, seatmap: SeatmapSettings, metrics: SeatmapMetrics,
                          *, gate: Gate = allow_all) -> AsyncIterator[Seatmap]:
    """The hub, reading each event's stream once for all this process's sockets; the
    snapshot falls back to the event's shard (the process's shard set) when the stream
    has none or the shard's consumer is not live."""
    redis_url = require_redis(shared.settings, "seatmap")
    if shared.redis is None:
        raise ConfigError("the seat map needs the process's Redis client")
    async with contextlib.AsyncExitStack() as stack:
        # The channels block on XREAD (2 s): a client of their own, with a longer wait.
        reader = background_redis(redis_url, socket_timeout=READ_SOCKET_TIMEOUT)
        stack.push_async_callback(reader.aclose)
        hub = Hub(shared.redis, seatmap, metrics, reader=reader, shards=shared.shards)
        hub.start()
        stack.push_async_callback(hub.stop)
        settings = shared.settings
        yield Seatmap(seatmap, Bus(shared.redis, seatmap.stream_maxlen), hub, shared.db, gate,
                      origins=public_origins(settings.public_url, settings.allowed_origins),
                      shards=shared.shards)


def seatmap_health_route() -> Route:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "live": seatmap_state(request).hub.live})

    return Route("/healthz", healthz, methods=["GET"])


def capture_state(connection: HTTPConnection) -> Capture:
    return cast(Capture, connection.app.state.capture)


def capture_health_route() -> Route:
    """Reports whether this process streams (holds a slot's lease): ``active`` for any
    shard, ``shards`` for each."""
    async def healthz(request: Request) -> Response:
        capture = capture_state(request)
        return JSONResponse({"status": "ok", "active": capture.active,
                             "shards": capture.shards()})

    return Route("/healthz", healthz, methods=["GET"])
