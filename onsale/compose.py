"""The composition root: which tiers each role runs, in one process, in one lifespan.

Each tier exposes its routes and a context manager that starts what it needs and yields
typed state (``CoreState``, ``Edge``, ``Seatmap``, ``Consumer``). ``build_app`` builds the
app of a role with every route and one lifespan: it opens the shared parts (the
database pool, the request path's Redis client, the sessions), builds the one admission
gate, injects it where core and the seat map need it, enters the tiers in order and
puts each one's state on ``app.state``. Nothing is spliced in after construction.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from onsale.core.metrics import Metrics
from onsale.core.openapi import CORE_API
from onsale.core.state import NO_ADMISSION
from onsale.core.tier import core_routes, running_core
from onsale.edge.gate import Gate, running_gate
from onsale.edge.metrics import EdgeMetrics
from onsale.edge.openapi import EDGE_API
from onsale.edge.pow import RiskHook, builtin_risk
from onsale.edge.routes import quick_poll
from onsale.edge.seatmap_gate import seatmap_admission
from onsale.edge.tier import edge_routes, require_redis, running_edge
from onsale.kernel.config import CommandSettings, ConfigError, Settings
from onsale.kernel.errors import error_handlers, healthz
from onsale.kernel.fast_lane import App, HotRoute
from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.http_metrics import HttpMetrics
from onsale.kernel.metrics import metrics_route
from onsale.kernel.openapi import ApiSpec, openapi_route, reference_routes
from onsale.kernel.ops_listener import PUBLIC, Listener, OpsSettings
from onsale.kernel.process import Needs, running_shared, unopened
from onsale.kernel.security import security_middleware, security_policy
from onsale.readiness import ProviderProbe, needed_by, readyz_route
from onsale.roles import ROLES, SECRETLESS_ROLES
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.openapi import SEATMAP_API
from onsale.seatmap.routes import Gate as SeatmapGate
from onsale.seatmap.routes import seatmap_routes
from onsale.seatmap.status import capture_status
from onsale.seatmap.tier import (
    capture_health_route,
    running_capture,
    running_seatmap,
    seatmap_health_route,
)
from onsale.web.page_errors import page_handlers
from onsale.web.pages import page_routes
from onsale.web.templating import HERE

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


@dataclass(frozen=True)
class Tiers:
    """What one process runs."""

    core: bool = False        # core's API (accounts, events, holds, checkout, webhooks)
    background: bool = False  # sweeper, reconciler, outbox relay, ticket consumer
    pages: bool = False       # the shopper pages and the operator console
    edge: bool = False        # the waiting room and the operators' routes
    admitter: bool = False
    seatmap: bool = False     # the snapshot route, the WebSocket and the hub
    capture: bool = False     # the change-capture consumer (or its standby)

    @property
    def gate(self) -> bool:
        return self.core or self.edge or self.seatmap

    def needs(self) -> Needs:
        api = self.core or self.edge or self.seatmap
        return Needs(database=not self.capture or api or self.background,
                     redis=api, request_path=api,
                     small_pool=self.seatmap and not (self.core or self.edge))


ROLE_TIERS: dict[str, Tiers] = {
    "dev": Tiers(core=True, background=True, pages=True, edge=True, admitter=True,
                 seatmap=True, capture=True),
    "core": Tiers(core=True, pages=True),   # the API, and the pages (they read like it)
    "worker": Tiers(background=True),
    "edge": Tiers(edge=True, admitter=True),
    "cdc": Tiers(capture=True),
    "seatmap": Tiers(seatmap=True),
}


def tiers_for(role: str, settings: Settings) -> Tiers:
    tiers = ROLE_TIERS.get(role)
    if tiers is None:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    if role == "dev" and settings.redis_url is None:
        # onsale dev always has Redis; without one: core and the pages, no queue
        return Tiers(core=True, background=True, pages=True)
    if tiers.edge:
        require_redis(settings)
    if tiers.seatmap or tiers.capture:
        if not settings.redis_url:
            name = "seatmap" if tiers.seatmap else "cdc"
            raise ConfigError(f"REDIS_URL must be set for the {name} role "
                              "(the seat-map streams)")
    return tiers


def api_specs(tiers: Tiers) -> list[ApiSpec]:
    """The parts of the OpenAPI document of an app with these tiers."""
    return [spec for on, spec in ((tiers.core, CORE_API), (tiers.edge, EDGE_API),
                                  (tiers.seatmap, SEATMAP_API)) if on]


def routes_for(tiers: Tiers, settings: Settings) -> list[BaseRoute]:
    out: list[BaseRoute] = []
    if tiers.pages:
        out += page_routes()  # in front: /events/... pages before the API's paths
    if tiers.core:
        out += core_routes()
    if tiers.edge:
        out += edge_routes()
    if tiers.seatmap:
        out += seatmap_routes()
    if not (tiers.capture and not tiers.seatmap and not tiers.core):  # cdc takes no traffic
        provider = (ProviderProbe(settings.stripe_api_base)
                    if tiers.core and settings.payments_configured else None)
        needed = needed_by(core=tiers.core, edge=tiers.edge, seatmap=tiers.seatmap,
                           capture=tiers.capture, background=tiers.background)
        out.append(Route("/readyz", readyz_route(needed, provider), methods=["GET"]))
    if tiers.capture and not tiers.seatmap and not tiers.core:
        out.append(capture_health_route())
    elif tiers.seatmap and not tiers.core and not tiers.edge:
        out.append(seatmap_health_route())
    else:
        out.append(Route("/healthz", healthz, methods=["GET"]))
    specs = api_specs(tiers)
    if specs:
        out.append(openapi_route(specs))
    if tiers.pages:  # the reference of the whole public API, as one host serves it
        out += reference_routes(api_specs(Tiers(core=True, edge=True, seatmap=True)),
                                HERE / "static" / "api-reference.html")
    return out


def lifespan_for(tiers: Tiers, settings: Settings, seatmap: SeatmapSettings,
                 registry: CollectorRegistry, risk: RiskHook = builtin_risk,
                 seatmap_gate: SeatmapGate | None = None) -> Lifespan:
    """The one lifespan: shared parts, the gate, then each tier, stopped in reverse."""
    metrics = Metrics(registry) if tiers.core or tiers.background else None
    seatmap_metrics = (SeatmapMetrics(registry) if tiers.seatmap or tiers.capture else None)
    edge_metrics = EdgeMetrics(registry) if tiers.edge else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            shared = await stack.enter_async_context(running_shared(
                settings, tiers.needs(), app.state.shared.sessions))
            app.state.shared = shared
            stack.callback(setattr, app.state, "shared", unopened(settings))
            gate: Gate | None = None
            if tiers.gate:
                gate = await stack.enter_async_context(running_gate(settings, shared.redis))
            if metrics is not None:  # a worker serves no sales route: no gate, none needed
                app.state.core = await stack.enter_async_context(running_core(
                    shared, metrics, gate or NO_ADMISSION, api=tiers.core,
                    background=tiers.background))
            if tiers.edge and gate is not None:
                status = None
                if shared.db is not None and shared.redis is not None:
                    status = functools.partial(capture_status, shared.db, shared.redis,
                                               seatmap.slot, shared.shards)
                app.state.edge = await stack.enter_async_context(running_edge(
                    shared, gate, admitter=tiers.admitter, risk=risk, capture_status=status,
                    metrics=edge_metrics))
            if seatmap_metrics is not None and tiers.seatmap and gate is not None:
                app.state.seatmap = await stack.enter_async_context(running_seatmap(
                    shared, seatmap, seatmap_metrics,
                    gate=seatmap_gate or seatmap_admission(gate, shared.sessions)))
            if seatmap_metrics is not None and tiers.capture:
                app.state.capture = await stack.enter_async_context(
                    running_capture(settings, seatmap, seatmap_metrics))
            yield

    return lifespan


@dataclass(frozen=True)
class WebSocketLimits:
    """What the server applies to seat-map sockets (``onsale.cli._serve``)."""

    ping_interval: float = 20.0
    max_message_bytes: int = 16


def websocket_limits(role: str, seatmap: SeatmapSettings | None = None) -> WebSocketLimits:
    if role not in ("dev", "seatmap"):
        return WebSocketLimits()
    found = seatmap or SeatmapSettings.from_env()
    return WebSocketLimits(found.ping_interval_s, found.client_max_message_bytes)


def build_app(role: str, settings: Settings, *,
              seatmap: SeatmapSettings | None = None) -> Starlette:
    """The app of a role. ``seatmap``: the ONSALE_SEATMAP_* settings (read from the
    environment when None)."""
    return app_for(tiers_for(role, settings), settings, seatmap=seatmap)


# The few routes that carry the load, served ahead of Starlette's layers (kernel.fast_lane):
# a queue poll, a hold attempt and the order page's status read.
HOT_ROUTES = (("GET", "/api/events/{event_id}/queue"), ("POST", "/api/events/{event_id}/holds"),
              ("GET", "/api/orders/{order_id}"))


# Their answers from the raw scope, where one exists (kernel.fast_lane.Quick).
QUICK = {("GET", "/api/events/{event_id}/queue"): quick_poll}


def hot_routes(routes: list[BaseRoute]) -> list[HotRoute]:
    """The hot routes among ``routes``, each with the endpoint of its one ``Route``."""
    return [HotRoute(route.path, method, route.endpoint, QUICK.get((method, path)))
            for route in routes if isinstance(route, Route)
            for method, path in HOT_ROUTES
            if route.path == path and method in (route.methods or ())]


def app_for(tiers: Tiers, settings: Settings, *, seatmap: SeatmapSettings | None = None,
            risk: RiskHook = builtin_risk, seatmap_gate: SeatmapGate | None = None) -> Starlette:
    """The app of any set of tiers (a role's, or a test's). ``risk``: the edge's hook
    for asking a suspicious join for more proof of work; ``seatmap_gate``: the seat
    map's admission check instead of the edge's gate (tests of the fan-out alone)."""
    registry = CollectorRegistry()
    for collector in (ProcessCollector, PlatformCollector, GCCollector):  # process_*, python_*
        collector(registry=registry)
    routes = routes_for(tiers, settings)
    if tiers.core or tiers.background or tiers.seatmap or tiers.capture or tiers.edge:
        routes.append(metrics_route(registry))
    handlers = error_handlers()
    served = tiers.core or tiers.edge or tiers.seatmap
    policy = security_policy(settings)
    app = App(
        routes=routes,
        exception_handlers=page_handlers(handlers) if tiers.pages else handlers,
        middleware=[security_middleware(settings, policy)] if served else [],
        lifespan=lifespan_for(tiers, settings, seatmap or SeatmapSettings.from_env(),
                              registry, risk, seatmap_gate),
        hot=hot_routes(routes) if served else (), policy=policy,
        http_metrics=HttpMetrics(registry),
    )
    app.state.shared = unopened(settings)  # the settings and session codec; no I/O yet
    return app


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
    threshold fixed at 128 KiB it keeps none (docs/benchmarks.md#hostile-traffic-benchhostilepy).
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


def app_from_env() -> Any:
    """Factory for servers that take an import string (``uvicorn --factory``): role from
    ONSALE_ROLE, settings from the environment. The app answers public paths on the
    server's port and starts its own ops listener on ONSALE_OPS_PORT (required here: the
    factory does not know the public port) once its lifespan has started: so one process
    per ops port, and a second worker of ``--workers N`` fails at start-up instead of
    serving metrics a scrape would reach at random (docs/operations.md#processes)."""
    import os

    tune_gc()
    tune_malloc()
    from onsale.environment import report_unknown
    from onsale.kernel.settings import load

    report_unknown(os.environ, "onsale")
    role = load(CommandSettings, os.environ).role
    settings = Settings.from_env(require_secrets=role not in SECRETLESS_ROLES)
    if role in ("core", "worker"):
        from onsale.core.psp_client import check_provider

        check_provider(settings)  # ConfigError against the simulator (docs/security.md)
    ops = OpsSettings.from_env(os.environ)
    if not ops.ops_port:
        raise ConfigError("the app factory needs ONSALE_OPS_PORT: its ops listener "
                          "(/metrics, /readyz, /healthz, /openapi.json) has no default here")
    app = build_app(role, settings)
    with_ops(app, ops.ops_host, ops.ops_port, HttpLimits.from_env(os.environ))
    return Listener(app, PUBLIC)


def with_ops(app: Starlette, host: str, port: int, limits: HttpLimits) -> None:
    """``app``'s lifespan, with its ops listener started inside it."""
    from onsale.kernel.ops_server import ops_listener

    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with inner(a) as state, ops_listener(app, host, port, limits):
            yield state

    app.router.lifespan_context = lifespan
