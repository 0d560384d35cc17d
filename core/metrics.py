"""Prometheus metrics for core, in a registry owned by the app (not global)."""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0)


# The figures of one shard's background loops (core/shard_loops.py): labelled
# ``shard``. A Metrics is shard 1's; ``for_shard`` gives another shard's view.
SHARDED = ("sweeper_backlog", "oldest_overdue", "swept_seats", "sweeper_errors",
           "reconcile_backlog", "oldest_unknown", "reconciled", "reconcile_errors",
           "outbox_backlog", "outbox_oldest_unpublished", "outbox_published",
           "outbox_relay_errors", "ga_rebalanced", "ga_rebalance_skipped",
           "ga_rebalance_errors", "event_sold", "event_held", "tickets_unreconciled")


class _OneShard:
    """A family with a ``shard`` label and others: ``labels`` fills in the shard."""

    def __init__(self, family: Any, shard: str) -> None:
        self.family, self.shard = family, shard

    def labels(self, **labels: str) -> Any:
        return self.family.labels(shard=self.shard, **labels)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.hold_latency = Histogram(
            "onsale_hold_seconds", "Hold decision latency, request to outcome",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.hold_outcomes = Counter(
            "onsale_hold_outcomes_total", "Hold attempts by outcome code", ["code"], registry=r,
        )
        self.lock_wait = Histogram(
            "onsale_hold_lock_wait_seconds", "Time spent waiting for seat row locks",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.deadlock_retries = Counter(
            "onsale_deadlock_retries_total", "Hold transactions retried after a deadlock",
            registry=r,
        )
        self.sweeper_backlog = Gauge(
            "onsale_sweeper_backlog_holds", "Holds past their deadline not yet swept",
            ["shard"], registry=r,
        )
        self.oldest_overdue = Gauge(
            "onsale_sweeper_oldest_overdue_seconds",
            "Age of the oldest hold past its deadline", ["shard"], registry=r,
        )
        self.swept_seats = Counter(
            "onsale_sweeper_released_seats_total", "Seats (and GA places) released by the sweeper",
            ["shard"], registry=r,
        )
        self.sweeper_errors = Counter(
            "onsale_sweeper_errors_total", "Sweeper passes that failed", ["shard"], registry=r,
        )
        self.payment_outcomes = Counter(
            "onsale_payment_outcomes_total",
            "Provider answers applied to payment operations, by outcome and source",
            ["outcome", "source"], registry=r,
        )
        self.checkout_latency = Histogram(
            "onsale_checkout_seconds", "Checkout request latency, including the authorization",
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.reconcile_backlog = Gauge(
            "onsale_payment_open_operations",
            "Payment operations without a definitive outcome (pending, unknown, 3-D Secure)",
            ["shard"], registry=r,
        )
        self.oldest_unknown = Gauge(
            "onsale_payment_oldest_unknown_seconds",
            "Age of the oldest payment operation whose outcome is unknown", ["shard"], registry=r,
        )
        self.reconciled = Counter(
            "onsale_payment_reconciled_total", "Reconciler decisions by action",
            ["shard", "action"], registry=r,
        )
        self.reconcile_errors = Counter(
            "onsale_payment_reconcile_errors_total", "Reconciler passes that failed",
            ["shard"], registry=r,
        )
        self.webhooks = Counter(
            "onsale_payment_webhooks_total", "Provider webhooks by result", ["result"], registry=r,
        )
        self.payment_mismatches = Counter(
            "onsale_payment_mismatch_total",
            "Provider answers whose PaymentIntent contradicts the payment operation (id, "
            "operation, amount or currency), held as UNKNOWN: each one needs an operator",
            ["source", "field"], registry=r,
        )
        # The outbox relay and the ticket consumer (docs/outbox.md).
        self.outbox_backlog = Gauge(
            "onsale_outbox_backlog_rows", "Outbox rows not yet published", ["shard"], registry=r,
        )
        self.outbox_oldest_unpublished = Gauge(
            "onsale_outbox_oldest_unpublished_seconds",
            "Age of the oldest outbox row not yet published", ["shard"], registry=r,
        )
        self.outbox_published = Counter(
            "onsale_outbox_published_total", "Outbox rows published to the stream",
            ["shard"], registry=r,
        )
        self.outbox_relay_errors = Counter(
            "onsale_outbox_relay_errors_total", "Outbox relay passes that failed",
            ["shard"], registry=r,
        )
        self.tickets_issued = Counter(
            "onsale_tickets_issued_total", "Tickets issued by the ticket consumer", registry=r,
        )
        self.ticket_consumer_pending = Gauge(
            "onsale_ticket_consumer_pending",
            "Stream entries delivered to the tickets group and not yet acknowledged", registry=r,
        )
        self.ticket_consumer_errors = Counter(
            "onsale_ticket_consumer_errors_total",
            "Ticket consumer failures (passes that failed, malformed or trimmed entries)",
            registry=r,
        )
        self.ga_rebalanced = Counter(
            "onsale_ga_rebalanced_places_total",
            "Available GA places moved between the stripes of a tier by the quota plane",
            ["shard"], registry=r,
        )
        self.ga_rebalance_skipped = Counter(
            "onsale_ga_rebalance_skipped_total",
            "GA rebalances not applied (stripes busy past the lock timeout, or the plan "
            "went stale)", ["shard"], registry=r,
        )
        self.ga_batch_size = Histogram(
            "onsale_ga_batch_size", "GA hold requests sent to the database together "
            "(core/ga_batch.py)", buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=r,
        )
        self.ga_batch_alone = Counter(
            "onsale_ga_batch_alone_total", "GA hold requests a batch left to the single "
            "path: spread (their stripe was short) or alone (anything else, or the batch "
            "failed)", ["reason"], registry=r,
        )
        self.ga_batch_failures = Counter(
            "onsale_ga_batch_failures_total", "GA hold batches that failed with a database "
            "error that is not an outage (each request then ran alone), by SQLSTATE",
            ["sqlstate"], registry=r,
        )
        self.seat_batch_size = Histogram(
            "onsale_seat_batch_size", "Seat hold requests of one event sent to the database "
            "together (core/seat_batch.py)", buckets=(1, 2, 4, 8, 16, 32, 64), registry=r,
        )
        self.seat_batch_alone = Counter(
            "onsale_seat_batch_alone_total", "Seat hold requests a batch left to the single "
            "path (anything unusual, or the batch failed)", registry=r,
        )
        self.seat_batch_failures = Counter(
            "onsale_seat_batch_failures_total", "Seat hold batches that failed with a "
            "database error that is not an outage (each request then ran alone), by SQLSTATE",
            ["sqlstate"], registry=r,
        )
        self.webhook_batch_size = Histogram(
            "onsale_webhook_batch_size", "Record-only webhook deliveries of one shard "
            "recorded in one statement (core/webhook_batch.py)",
            buckets=(1, 2, 4, 8, 16, 32, 64), registry=r,
        )
        self.webhook_batch_failures = Counter(
            "onsale_webhook_batch_failures_total", "Webhook record batches that failed with "
            "a database error that is not an outage (each delivery then recorded alone)",
            ["sqlstate"], registry=r,
        )
        self.capture_batch_size = Histogram(
            "onsale_capture_batch_size", "Capture answers applied in one transaction "
            "(core/capture_batch.py)", buckets=(1, 2, 4, 8, 16, 32, 64), registry=r,
        )
        self.capture_batch_failures = Counter(
            "onsale_capture_batch_failures_total", "Capture batches that failed with a "
            "database error that is not an outage (each answer then applied alone)",
            ["sqlstate"], registry=r,
        )
        self.ga_rebalance_errors = Counter(
            "onsale_ga_rebalance_errors_total", "GA quota plane passes that failed",
            ["shard"], registry=r,
        )
        self.event_sold = Gauge(
            "onsale_event_sold", "Sold per event: kind=seats (seats SOLD), kind=places "
            "(GA places of confirmed orders); core/sale_figures.py, every 15 s",
            ["shard", "event", "kind"], registry=r,
        )
        self.event_held = Gauge(
            "onsale_event_held_seats", "Seats in a hold or in payment, per event",
            ["shard", "event"], registry=r,
        )
        self.tickets_unreconciled = Gauge(
            "onsale_tickets_unreconciled_orders", "Orders paid over a minute ago (within a "
            "day) whose tickets do not number their seats and places", ["shard"], registry=r,
        )
        self._families = {name: getattr(self, name) for name in SHARDED}
        self._bind("1")

    def _bind(self, shard: str) -> None:
        for name, family in self._families.items():
            others = [n for n in family._labelnames if n != "shard"]
            setattr(self, name, _OneShard(family, shard) if others
                    else family.labels(shard=shard))

    def for_shard(self, shard_id: int) -> Metrics:
        """The same registry, with the background loops' figures labelled ``shard_id``."""
        view = copy.copy(self)
        view._bind(str(shard_id))
        return view
