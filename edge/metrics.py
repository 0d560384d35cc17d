"""The edge's metrics (docs/operations.md#the-waiting-room): what an on-sale is watched by.

Per process, counted as requests are answered: joins and polls by what they answered (the
visitor's state, or the problem: ``rate_limited`` is the 429s), proof-of-work
verdicts, and risk verdicts by band (and the built-in scorer's scores). Per event, read
from Valkey and so the same on every edge process (aggregate with ``max by (event)``):
queued, active, admitted per minute, the controller's rate and state, and the queue's
running totals (joined, admitted, abandoned, expired). The admission status comes from
the status cache the edge refreshes four times a second anyway; the counts from one
pipelined read per event every ``FIGURES_SECONDS`` (at most ``MAX_EVENTS`` events, the
most recently served first).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from onsale.edge.risk import BANDS
from onsale.kernel.http_metrics import LocalCounter

if TYPE_CHECKING:
    from onsale.edge.caches import StatusCache
    from onsale.edge.queue_store import QueueStore

FIGURES_SECONDS = 5.0
MAX_EVENTS = 50
# The controller's states (edge/controller.py), "waiting" before the sale, "passthrough".
STATES = ("waiting", "increasing", "holding", "decreasing", "paused", "unhealthy",
          "passthrough")
TOTALS = ("joined", "admitted", "abandoned", "no_show", "expired", "revoked")


class EdgeMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = LocalCounter(  # a poll's own count: no lock (kernel/http_metrics.py)
            "onsale_queue_requests", "Joins (POST) and polls (GET) of the waiting room, by "
            "what they answered: the visitor's state (admitted, waiting, paused, prequeue, "
            "expired) or the problem's code (rate_limited: the 429s, pow_required, "
            "queue_unavailable...)", ["kind", "outcome"], registry)
        self.pow = Counter(
            "onsale_pow_verdicts", "Proofs of work checked at a join, by verdict (ok, "
            "pow_required, pow_invalid, pow_replayed)", ["verdict"], registry=registry)
        self.risk = Counter(
            "onsale_risk_verdicts", "Risk verdicts on joins from a new device, by band "
            "(low, raised, high, refused)", ["band"], registry=registry)
        self.risk_scores = Histogram(
            "onsale_risk_score", "The built-in scorer's scores (0..100) of joins from a "
            "new device, whatever the event's thresholds", registry=registry,
            buckets=(0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100))
        for name in BANDS:  # every band shows, at 0 until it is seen
            self.risk.labels(name)
        self.figures: dict[int, dict[str, Any]] = {}  # event -> QueueStore.figures()
        self.status: StatusCache | None = None
        registry.register(_QueueCollector(self))

    def risk_verdict(self, band: str, score: int | None) -> None:
        """One risk verdict (``score``: None when the hook gave none)."""
        self.risk.labels(band).inc()
        if score is not None:
            self.risk_scores.observe(score)

    def answered(self, kind: str, outcome: str) -> None:
        """One join or poll answered."""
        self.requests.inc(kind, outcome)

    async def refresh(self, store: QueueStore) -> None:
        """The counts of the events this process serves (one pipelined read each)."""
        if self.status is None:
            return
        events = self.status.served()[:MAX_EVENTS]
        fresh = {e: await store.figures(e) for e in events}
        self.figures = fresh


class _QueueCollector(Collector):
    def __init__(self, metrics: EdgeMetrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        status = self.m.status.snapshot() if self.m.status is not None else {}
        gauges = {
            "serving": GaugeMetricFamily("onsale_queue_serving", "The last place admitted "
                                         "(a ticket at or below it may enter)", labels=["event"]),
            "rate": GaugeMetricFamily("onsale_queue_rate_per_minute", "The admission "
                                      "controller's rate", labels=["event"]),
            "measured": GaugeMetricFamily("onsale_queue_admitted_per_minute", "Admissions "
                                          "per minute, measured", labels=["event"]),
            "paused": GaugeMetricFamily("onsale_queue_paused", "1 while an operator has "
                                        "paused admission", labels=["event"]),
        }
        state = GaugeMetricFamily("onsale_queue_state", "1 for the controller's state",
                                  labels=["event", "state"])
        for event_id, s in sorted(status.items()):
            e = str(event_id)
            gauges["serving"].add_metric([e], s.serving)
            gauges["rate"].add_metric([e], s.rate)
            gauges["measured"].add_metric([e], s.measured)
            gauges["paused"].add_metric([e], 1.0 if s.paused else 0.0)
            for name in STATES:
                state.add_metric([e, name], 1.0 if s.state == name else 0.0)
        yield from gauges.values()
        yield state
        queued = GaugeMetricFamily("onsale_queue_queued", "Visitors waiting (and in the "
                                   "pre-queue)", labels=["event"])
        active = GaugeMetricFamily("onsale_queue_active", "Admitted visitors still active",
                                   labels=["event"])
        totals = CounterMetricFamily("onsale_queue_visitors", "The queue's running totals "
                                     "by what became of a visitor: joined, admitted, "
                                     "abandoned, no_show, expired, revoked",
                                     labels=["event", "outcome"])
        for event_id, f in sorted(self.m.figures.items()):
            e = str(event_id)
            queued.add_metric([e], f["queued"])
            active.add_metric([e], f["active"])
            for name in TOTALS:
                totals.add_metric([e, name], f["stats"].get(name, 0))
        yield queued
        yield active
        yield totals
