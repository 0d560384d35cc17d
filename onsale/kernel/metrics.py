"""``GET /metrics``: a process's Prometheus registry, which its tiers register into,
and the HTTP servers' write-side figures (``onsale.kernel.http_writes``)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from onsale.kernel.http_writes import LEDGERS


class HttpWritesCollector(Collector):
    """Unsent bytes, aborted slow readers and refused large answers, summed over the
    process's HTTP servers when scraped."""

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield GaugeMetricFamily(
            "onsale_http_unsent_bytes",
            "Bytes of answers this process holds for clients that have not read them",
            value=sum(ledger.total for ledger in LEDGERS))
        yield CounterMetricFamily(
            "onsale_http_write_timeouts",
            "Connections aborted because their client left answers unread past "
            "ONSALE_HTTP_WRITE_TIMEOUT", value=sum(ledger.aborted for ledger in LEDGERS))
        yield CounterMetricFamily(
            "onsale_http_large_answers_refused",
            "Large answers refused with 503 overloaded at ONSALE_HTTP_MAX_UNSENT_BYTES",
            value=sum(ledger.refused for ledger in LEDGERS))


def metrics_route(registry: CollectorRegistry) -> Route:
    registry.register(HttpWritesCollector())

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", metrics, methods=["GET"])
