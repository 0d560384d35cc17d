"""The composition root: one function builds the app for a role from settings."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from onsale.core.app import build_core_app, build_payments, healthz
from onsale.core.background import start_background
from onsale.core.metrics import Metrics, metrics_endpoint
from onsale.core.reconciler import run_reconciler
from onsale.core.sweeper import run_sweeper
from onsale.edge.app import build_edge_app, mount_edge
from onsale.edge.seatmap_gate import admission_gate
from onsale.edge.seatmap_gate import install as install_admission_gate
from onsale.kernel.config import Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.dependency import background_redis
from onsale.kernel.problems import http_exception_handler
from onsale.kernel.tasks import stop_background
from onsale.seatmap.app import build_cdc_app, build_seatmap_app, mount_seatmap
from onsale.seatmap.config import SeatmapSettings
from onsale.web.page_errors import install as install_page_errors
from onsale.web.pages import page_routes

ROLES = ("core", "worker", "edge", "cdc", "seatmap")
SECRETLESS_ROLES = ("worker", "cdc")  # they sign and verify nothing


def build_worker_app(settings: Settings) -> Starlette:
    """Background work with /metrics for scraping: the expiry sweeper; with
    REDIS_URL set the outbox relay and the ticket consumer (docs/outbox.md); with
    ONSALE_PSP_URL set the payment reconciler (docs/payments.md)."""
    metrics = Metrics()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        pool = await create_pool(settings, request_path=False)  # background bounds
        task = asyncio.create_task(
            run_sweeper(pool, metrics, settings.sweep_interval, settings.sweep_batch)
        )
        redis = background_redis(settings.redis_url) if settings.redis_url else None
        background = [] if redis is None else await start_background(
            pool, redis, metrics, stream_maxlen=settings.outbox_stream_maxlen,
            retention_seconds=settings.outbox_retention_seconds, crash_at=settings.crash_at)
        payments = build_payments(Database.from_settings(pool, settings), settings, metrics)
        if payments is not None:
            background.append(asyncio.create_task(
                run_reconciler(payments, settings.reconcile_interval), name="onsale-reconciler"))
        try:
            yield
        finally:
            await stop_background(background)
            if payments is not None:
                await payments.drain()
                await payments.client.close()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if redis is not None:
                await redis.aclose()
            await pool.close()

    app = Starlette(
        routes=[Route("/metrics", metrics_endpoint), Route("/healthz", healthz)],
        exception_handlers={HTTPException: http_exception_handler},
        lifespan=lifespan,
    )
    app.state.metrics = metrics
    return app


def build_app(role: str, settings: Settings, *,
              seatmap: SeatmapSettings | None = None) -> Starlette:
    """``seatmap``: the ONSALE_SEATMAP_* settings (read from the environment when None)."""
    if role == "cdc":  # the seat-map change-capture consumer, or its standby
        return build_cdc_app(settings, seatmap or SeatmapSettings.from_env())
    if role == "seatmap":  # the seat-map snapshot and WebSocket fan-out (needs REDIS_URL)
        app = build_seatmap_app(settings, seatmap or SeatmapSettings.from_env(),
                                gate=admission_gate)
        install_admission_gate(app, settings)  # verifies the admission tokens edge signs
        return app
    if role == "core":  # the API, and the pages (they read the database like the API)
        core = build_core_app(settings, sweeper=False)
        core.router.routes[:0] = page_routes()
        install_page_errors(core)
        return core
    if role == "worker":
        return build_worker_app(settings)
    if role == "edge":  # the waiting room and the admitter (needs REDIS_URL)
        return build_edge_app(settings, admitter=True)
    if role == "dev":
        core = build_core_app(settings, sweeper=True)
        core.router.routes[:0] = page_routes()
        install_page_errors(core)
        if settings.redis_url is None:  # onsale dev always has one; without it no queue
            return core
        mount_edge(core, settings, admitter=True)
        # The seat map with its change capture in this process too.
        return mount_seatmap(core, settings, seatmap or SeatmapSettings.from_env(),
                             gate=admission_gate, consumer=True)
    raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")


def tune_gc() -> None:
    """Fewer young-generation collections on the request path.

    Each request allocates many short-lived objects; with the default threshold
    (700) the collector runs every few requests. Objects alive at start-up are
    frozen out of collection. Measured with bench/holds.py (docs/benchmarks.md).
    """
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def tune_malloc() -> None:
    """Give large freed blocks back to the system at once.

    glibc raises its mmap threshold each time a large block is freed, so blocks
    after the first are carved from a thread's heap arena and stay there. Each
    argon2id check takes 19 MiB in a hashing thread: with the dynamic threshold
    a process kept 38 MiB more RSS after a sign-in burst than before it; with the
    threshold fixed at 128 KiB it keeps none (docs/benchmarks.md#hostile-traffic).
    Not glibc: nothing to do.
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD; setting it disables the dynamic rise
    except (OSError, AttributeError):
        return


def app_from_env() -> Starlette:
    """Factory for multi-process serving: role from ONSALE_ROLE, settings from the environment."""
    import os

    tune_gc()
    tune_malloc()
    role = os.environ.get("ONSALE_ROLE", "core")
    settings = Settings.from_env(require_secrets=role not in SECRETLESS_ROLES)
    if role in ("core", "worker"):
        from onsale.core.psp_client import check_provider

        check_provider(settings)  # ConfigError against the simulator (docs/security.md)
    return build_app(role, settings)
