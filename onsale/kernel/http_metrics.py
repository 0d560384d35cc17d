"""Per-route request counts and latencies, on every role (docs/operations.md#metrics):
one histogram labelled by the route's template (``/api/events/{event_id}/holds``, never
the path itself: bounded labels), the method and the status. Its ``_count`` is the
request count. Observed by the app (kernel/fast_lane.py) once the answer has started;
the labelled child is looked up once per label set."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Histogram

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
UNMATCHED = "unmatched"  # no route: a 404 (or 405) of the router, whatever its path


class HttpMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.seconds = Histogram(
            "onsale_http_request_duration_seconds", "HTTP requests by route template, "
            "method and status: time to the end of the handler (the answer's body may "
            "still be on its way); _count is the request count",
            ["route", "method", "status"], buckets=BUCKETS, registry=registry)
        self._children: dict[tuple[str, str, int], Any] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.seconds.labels(
                route, method if method in METHODS else "other", str(status))
        child.observe(seconds)
