"""Build the core Starlette app from settings (nothing is built at import time)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onsale.core import accounts, checkout, events, holds, webhooks
from onsale.core.background import start_background
from onsale.core.health import run_health_reporter
from onsale.core.metrics import Metrics, metrics_endpoint
from onsale.core.openapi import openapi_endpoint
from onsale.core.password_pool import PasswordPool
from onsale.core.payments import Payments
from onsale.core.psp_client import PspClient
from onsale.core.reconciler import run_reconciler
from onsale.core.signin_throttle import SigninThrottle, signin_limits
from onsale.core.sweeper import run_sweeper
from onsale.edge.gate import Gate
from onsale.edge.queue_store import QueueStore
from onsale.edge.tokens import AdmissionCodec, admission_keys
from onsale.kernel.config import Settings
from onsale.kernel.cookies import settings_cookie_policy
from onsale.kernel.db import Database, create_pool
from onsale.kernel.dependency import background_redis, is_outage, request_redis_for
from onsale.kernel.problems import Problem, ProblemResponse, http_exception_handler, problem_handler
from onsale.kernel.security import install as install_security
from onsale.kernel.session_store import SessionStore
from onsale.kernel.sessions import build_sessions
from onsale.kernel.tasks import stop_background

log = logging.getLogger("onsale.core")


async def internal_error(request: Request, exc: Exception) -> Response:
    outage = outage_problem(request, exc)
    if outage is not None:  # a dependency is down: its breaker logged it once already
        return await problem_handler(request, outage)
    if isinstance(exc, ClientDisconnect):  # nobody to answer (gone, or cut off at 413)
        return Response(status_code=400)
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return ProblemResponse(Problem(500, "internal_error"))


def error_handlers() -> dict[Any, Any]:
    """Every app's exception handlers. An outage (and a client that went away) is
    answered by Starlette's inner exception middleware, which does not re-raise: no
    traceback per request. Only a real bug reaches the outermost handler, which logs it
    and answers 500 (then Starlette re-raises it, and uvicorn logs it too)."""
    import redis.exceptions

    from onsale.kernel.db import UNAVAILABLE
    from onsale.kernel.dependency import DependencyUnavailable

    quiet = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
             DependencyUnavailable, ClientDisconnect, *UNAVAILABLE)
    handlers: dict[Any, Any] = {Problem: problem_handler,
                                HTTPException: http_exception_handler}
    handlers.update(dict.fromkeys(quiet, internal_error))
    handlers[Exception] = internal_error
    return handlers


def outage_problem(request: Request, exc: Exception) -> Problem | None:
    """The documented 503 for a dependency failure that no route caught: never a
    500 with a traceback per request (docs/security.md#dependencies-fail-fast)."""
    import redis.exceptions

    from onsale.kernel.db import UNAVAILABLE, outage_detail

    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        code = "queue_unavailable" if "/queue" in request.url.path else "admission_unavailable"
        return Problem(503, code, detail="The waiting room store did not answer; retry shortly.")
    if isinstance(exc, UNAVAILABLE) or is_outage(exc):
        return Problem(503, "inventory_unavailable", detail=outage_detail(exc))
    return None


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    db: Database = request.app.state.db
    async with db.connection() as conn:
        await conn.fetchval("SELECT 1")
    return JSONResponse({"status": "ready"})


def core_routes() -> list[Any]:
    return [
        *accounts.routes,
        *events.routes,
        *holds.routes,
        *checkout.routes,
        *webhooks.routes,
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/openapi.json", openapi_endpoint, methods=["GET"]),
    ]


def build_payments(db: Database, settings: Settings, metrics: Metrics) -> Payments | None:
    """The provider client and payment driver, when a provider is configured."""
    if settings.psp_url is None:
        return None
    client = PspClient(settings.psp_url, settings.psp_api_key, settings.psp_timeout,
                       allow_simulator=settings.allow_simulator)
    return Payments(db, client, settings, metrics)


def build_core_app(settings: Settings, *, sweeper: bool = True) -> Starlette:
    """The core tier. ``sweeper`` also runs the expiry sweeper and the payment
    reconciler in this process (development); production runs them in workers."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        pool = await create_pool(settings)
        app.state.db = Database.from_settings(pool, settings)
        payments = build_payments(app.state.db, settings, app.state.metrics)
        app.state.payments = payments
        tasks: list[asyncio.Task[None]] = []
        redis: Redis | None = None
        background: Redis | None = None
        if settings.redis_url is not None:
            # The gate's revocation check and the health reports for the admitter:
            # the request path's client (bounded, behind a circuit breaker), which the
            # edge and the seat map reuse when mounted here (one breaker per process).
            redis = request_redis_for(settings)
            app.state.redis = redis
            app.state.gate.attach(QueueStore(redis))
            app.state.sessions.attach(SessionStore(redis))
            app.state.throttle.attach(redis)
            tasks.append(asyncio.create_task(
                run_health_reporter(app.state.db, redis, app.state.metrics),
                name="onsale-core-health"))
        app.state.gate.start()
        if sweeper:
            tasks.append(asyncio.create_task(
                run_sweeper(pool, app.state.metrics, settings.sweep_interval, settings.sweep_batch)
            ))
            if payments is not None:
                tasks.append(asyncio.create_task(
                    run_reconciler(payments, settings.reconcile_interval)))
            if settings.redis_url is not None:
                # Blocking reads (XREADGROUP): a client of their own.
                background = background_redis(settings.redis_url)
                tasks += await start_background(
                    pool, background, app.state.metrics,
                    stream_maxlen=settings.outbox_stream_maxlen,
                    retention_seconds=settings.outbox_retention_seconds, crash_at=settings.crash_at)
        try:
            yield
        finally:
            await stop_background(tasks)
            await app.state.gate.stop()
            app.state.passwords.close()
            if redis is not None:
                app.state.redis = None
                await redis.aclose()
            if background is not None:
                await background.aclose()
            if payments is not None:
                await payments.drain()
                await payments.client.close()
            await pool.close()

    app = Starlette(
        routes=core_routes(),
        exception_handlers=error_handlers(),
        lifespan=lifespan,
    )
    install_security(app, settings)  # origin check and headers (docs/security.md)
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.state.payments = None
    # Sessions and sign-in throttling need Redis (attached in the lifespan);
    # without REDIS_URL they answer 503 session_unavailable: fail closed.
    app.state.sessions = build_sessions(settings)
    app.state.throttle = SigninThrottle(signin_limits(settings),
                                        timeout=settings.session_store_timeout)
    app.state.passwords = PasswordPool(settings.password_workers, settings.password_queue)
    # Holds and checkout re-verify admission (docs/edge.md#the-gate). Without
    # REDIS_URL the gate still checks signatures, then refuses: fail closed.
    app.state.gate = Gate(AdmissionCodec(
        admission_keys(settings.admission_keys, settings.secret_key),
        settings.admission_ttl_seconds), None,
        cookie_prefix=settings_cookie_policy(settings).prefix)
    return app
