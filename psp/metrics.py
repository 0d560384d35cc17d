"""The simulator's metrics (docs/psp.md#metrics), on a listener of their own
(``ONSALE_PSP_METRICS_PORT``; off by default): the per-route request histogram every onsale
role has, the process collectors, and the simulator's own figures read from its store
when scraped (intents by status, webhook events by state)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route

from onsale.kernel.http_metrics import UNMATCHED, HttpMetrics
from onsale.kernel.metrics import metrics_route


class StoreFigures(Collector):
    """``onsale_psp_intents{status}`` and ``onsale_psp_webhook_events{state}``, counted in
    the store at each scrape (``stats``: the simulator's own ``/_sim/stats``)."""

    def __init__(self, stats: Callable[[], dict[str, Any]]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            stats = self.stats()
        except RuntimeError:  # not started yet
            return
        intents = GaugeMetricFamily("onsale_psp_intents", "PaymentIntents by status",
                                    labels=["status"])
        for status, count in sorted(stats["intents_by_status"].items()):
            intents.add_metric([status], count)
        yield intents
        events = GaugeMetricFamily("onsale_psp_webhook_events",
                                   "Webhook events by delivery state", labels=["state"])
        for state, count in sorted(stats["webhooks_by_state"].items()):
            events.add_metric([state], count)
        yield events


def registry_for(stats: Callable[[], dict[str, Any]]) -> tuple[CollectorRegistry, HttpMetrics]:
    registry = CollectorRegistry()
    for collector in (ProcessCollector, PlatformCollector, GCCollector):
        collector(registry=registry)
    registry.register(StoreFigures(stats))
    return registry, HttpMetrics(registry)


def route_template(routes: Sequence[BaseRoute], scope: dict[str, Any]) -> str:
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL and isinstance(route, Route):
            return route.path
    return UNMATCHED


class Observed:
    """Times each HTTP request into the histogram, labelled by its route's template."""

    def __init__(self, app: Any, metrics: HttpMetrics, routes: Sequence[BaseRoute]) -> None:
        self.app, self.metrics, self.routes = app, metrics, routes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]

        async def seen(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, seen)
        finally:
            self.metrics.observe(route_template(self.routes, scope), scope["method"],
                                 status[0], time.perf_counter() - started)


def metrics_app(registry: CollectorRegistry) -> Starlette:
    """What the metrics listener serves: ``/metrics`` and ``/healthz``."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(routes=[metrics_route(registry), Route("/healthz", healthz)])
