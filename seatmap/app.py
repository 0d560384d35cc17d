"""The seat-map processes: the change-capture consumer (role ``cdc``) and the
fan-out (role ``seatmap``: the snapshot route, the WebSocket, the hub); and
``mount_seatmap`` to serve both from another app (``onsale dev``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core.metrics import metrics_endpoint
from onsale.core.openapi import openapi_endpoint
from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.dependency import background_redis, request_redis_for
from onsale.kernel.origins import public_origins
from onsale.kernel.problems import http_exception_handler
from onsale.kernel.security import install as install_security
from onsale.kernel.tasks import stop_background
from onsale.seatmap.bus import Bus
from onsale.seatmap.cdc import Consumer
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.hub import Hub
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.routes import Gate, Seatmap, allow_all, seatmap_routes

Lifespan = Callable[[Starlette], contextlib.AbstractAsyncContextManager[Any]]
READ_SOCKET_TIMEOUT = 5.0  # > the hub's XREAD block (2 s)


def require_redis(settings: Settings, role: str) -> str:
    if not settings.redis_url:
        raise ConfigError(f"REDIS_URL must be set for the {role} role (the seat-map streams)")
    return settings.redis_url


@contextlib.asynccontextmanager
async def running_consumer(settings: Settings, seatmap: SeatmapSettings,
                           metrics: SeatmapMetrics) -> AsyncIterator[Consumer]:
    """The consumer as a background task for the duration of the block."""
    redis = background_redis(require_redis(settings, "cdc"))
    consumer = Consumer(settings.database_url, redis, seatmap, metrics)
    task = asyncio.create_task(consumer.run(), name="onsale-seatmap-cdc")
    try:
        yield consumer
    finally:
        await stop_background([task])
        await redis.aclose()


def build_cdc_app(settings: Settings, seatmap: SeatmapSettings) -> Starlette:
    """One replication consumer (or a standby waiting for the lease), with
    /metrics and /healthz (which reports whether this one is active)."""
    require_redis(settings, "cdc")
    metrics = SeatmapMetrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with running_consumer(settings, seatmap, metrics) as consumer:
            app.state.consumer = consumer
            yield

    async def healthz(request: Request) -> Response:
        consumer: Consumer = request.app.state.consumer
        return JSONResponse({"status": "ok", "active": consumer.active})

    app = Starlette(
        routes=[Route("/metrics", metrics_endpoint), Route("/healthz", healthz)],
        exception_handlers={HTTPException: http_exception_handler},
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    return app


def seatmap_lifespan(settings: Settings, seatmap: SeatmapSettings, metrics: SeatmapMetrics, *,
                     gate: Gate = allow_all, consumer: bool = False,
                     inner: Lifespan | None = None) -> Lifespan:
    """The hub (and, with ``consumer``, the change capture) around ``inner``: the app's
    own lifespan when mounted, whose database pool is then reused for the fallback."""
    redis_url = require_redis(settings, "seatmap")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if inner is not None:
                await stack.enter_async_context(inner(app))
            db: Database | None = getattr(app.state, "db", None)
            if db is None:  # the fallback reads rarely: a small pool, opened lazily
                pool = await create_pool(dataclasses.replace(settings, db_pool_min=0,
                                                             db_pool_max=2))
                stack.push_async_callback(pool.close)
                db = Database.from_settings(pool, settings)
            # The request path's client (bounded, behind a circuit breaker): the gate's
            # when there is one (one breaker per process), else its own.
            redis = getattr(app.state, "redis", None)
            if redis is None:
                redis = request_redis_for(settings)
                stack.push_async_callback(redis.aclose)
            # The channels block on XREAD (2 s): a client of their own, with a longer wait.
            reader = background_redis(redis_url, socket_timeout=READ_SOCKET_TIMEOUT)
            stack.push_async_callback(reader.aclose)
            hub = Hub(redis, seatmap, metrics, reader=reader)
            hub.start()
            stack.push_async_callback(hub.stop)
            app.state.seatmap = Seatmap(seatmap, Bus(redis, seatmap.stream_maxlen), hub, db, gate,
                                        origins=public_origins(settings.public_url,
                                                               settings.allowed_origins))
            if consumer:
                app.state.seatmap_consumer = await stack.enter_async_context(
                    running_consumer(settings, seatmap, metrics))
            yield

    return lifespan


def build_seatmap_app(settings: Settings, seatmap: SeatmapSettings, *,
                      gate: Gate = allow_all) -> Starlette:
    """Any number of these: each reads an event's stream once for all its sockets."""
    from onsale.core.app import error_handlers  # a dependency failure no route caught: its 503

    metrics = SeatmapMetrics()

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "live": request.app.state.seatmap.hub.live})

    app = Starlette(
        routes=[*seatmap_routes(), Route("/metrics", metrics_endpoint),
                Route("/healthz", healthz), Route("/openapi.json", openapi_endpoint)],
        exception_handlers=error_handlers(),
        lifespan=seatmap_lifespan(settings, seatmap, metrics, gate=gate),
    )
    install_security(app, settings)  # origin check and headers (docs/security.md)
    app.state.metrics = metrics
    app.state.openapi_parts = ("seatmap",)
    app.state.ws_ping_interval = seatmap.ping_interval_s
    app.state.ws_max_size = seatmap.client_max_message_bytes
    return app


def mount_seatmap(app: Starlette, settings: Settings, seatmap: SeatmapSettings, *,
                  gate: Gate = allow_all, consumer: bool = True) -> Starlette:
    """Serve the seat map from ``app`` too (``onsale dev``), metrics in its registry."""
    metrics = SeatmapMetrics(app.state.metrics.registry)
    app.router.routes.extend(seatmap_routes())
    app.router.lifespan_context = seatmap_lifespan(
        settings, seatmap, metrics, gate=gate, consumer=consumer,
        inner=app.router.lifespan_context)
    app.state.openapi_parts = (*getattr(app.state, "openapi_parts", ("core",)), "seatmap")
    app.state.ws_ping_interval = seatmap.ping_interval_s
    app.state.ws_max_size = seatmap.client_max_message_bytes
    return app
