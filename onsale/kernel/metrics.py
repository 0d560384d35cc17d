"""``GET /metrics``: a process's Prometheus registry, which its tiers register into."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def metrics_route(registry: CollectorRegistry) -> Route:
    async def metrics(request: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", metrics, methods=["GET"])
