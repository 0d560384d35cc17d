"""The edge tier as a Starlette app (role ``edge``) or mounted into another
app (``onsale dev`` mounts it into core). Needs REDIS_URL and DATABASE_URL
(the event settings live in Postgres; the edge only reads them, and the
operator routes write the waiting-room columns)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

from onsale.edge import ops, ops_dashboard, routes
from onsale.edge.pow import RiskHook, no_risk
from onsale.edge.runtime import build_edge, start_edge, stop_edge
from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.dependency import background_redis, request_redis_for
from onsale.kernel.security import install as install_security
from onsale.kernel.session_store import SessionStore
from onsale.kernel.sessions import Sessions, build_sessions

Lifespan = Callable[[Starlette], contextlib.AbstractAsyncContextManager[Any]]


def edge_routes() -> list[Route]:
    return [*routes.routes, *ops.routes, *ops_dashboard.routes]


def edge_lifespan(settings: Settings, *, admitter: bool, risk: RiskHook = no_risk,
                  inner: Lifespan | None = None) -> Lifespan:
    """Run ``inner`` (core's lifespan, when mounted) first, then the edge: it
    reuses the app's database pool if there is one."""
    if settings.redis_url is None:
        raise ConfigError("the edge needs REDIS_URL (the waiting room lives in Redis)")
    redis_url = settings.redis_url

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if inner is not None:
                await stack.enter_async_context(inner(app))
            db: Database | None = getattr(app.state, "db", None)
            if db is None:
                pool = await create_pool(settings)
                stack.push_async_callback(pool.close)
                db = Database.from_settings(pool, settings)
            # The request path's client: core's when mounted there (one circuit breaker
            # per process), else a bounded one of its own.
            redis = getattr(app.state, "redis", None)
            if redis is None:
                redis = request_redis_for(settings)
                stack.push_async_callback(redis.aclose)
                app.state.redis = redis
                stack.callback(setattr, app.state, "redis", None)
            bulk = None
            if admitter:
                bulk = background_redis(redis_url)
                stack.push_async_callback(bulk.aclose)
            sessions: Sessions = app.state.sessions
            if sessions.store is None:  # mounted in core, core's already has one
                sessions.attach(SessionStore(redis))
            edge = build_edge(settings, db, redis, risk=risk)
            shared = getattr(app.state, "gate", None)
            if shared is not None and shared.store is not None:
                edge.gate = shared  # mounted in core: one revocation cache for both
            app.state.edge = edge
            start_edge(edge, admitter=admitter, bulk=bulk)
            stack.push_async_callback(stop_edge, edge)
            yield

    return lifespan


def build_edge_app(settings: Settings, *, admitter: bool = True,
                   risk: RiskHook = no_risk) -> Starlette:
    from onsale.core.app import error_handlers, healthz
    from onsale.core.openapi import openapi_endpoint

    app = Starlette(
        routes=[*edge_routes(), Route("/healthz", healthz, methods=["GET"]),
                Route("/openapi.json", openapi_endpoint, methods=["GET"])],
        exception_handlers=error_handlers(),
        lifespan=edge_lifespan(settings, admitter=admitter, risk=risk),
    )
    install_security(app, settings)  # origin check and headers (docs/security.md)
    app.state.settings = settings
    app.state.sessions = build_sessions(settings)  # its store: attached in the lifespan
    app.state.openapi_parts = ("edge",)
    return app


def mount_edge(app: Starlette, settings: Settings, *, admitter: bool = True,
               risk: RiskHook = no_risk) -> Starlette:
    """Serve the edge routes from ``app`` too, with its lifespan around core's."""
    app.router.routes.extend(edge_routes())
    app.router.lifespan_context = edge_lifespan(
        settings, admitter=admitter, risk=risk, inner=app.router.lifespan_context)
    app.state.openapi_parts = (*getattr(app.state, "openapi_parts", ("core",)), "edge")
    return app
