"""Prometheus metrics of the seat map (docs/seatmap.md#metrics), in a given registry
(the app's own, as core/metrics.py; ``onsale dev`` shares core's). The change capture's
carry a ``shard`` label: one process runs a consumer per shard, and each reads its own
view (``SeatmapMetrics.capture``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from onsale.core.metrics import LATENCY_BUCKETS

WAL_STATUSES = ("reserved", "extended", "unreserved", "lost", "missing")


class SeatmapMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry if registry is not None else CollectorRegistry()
        # The change-capture consumer.
        self.cdc_active = Gauge(
            "onsale_seatmap_cdc_active",
            "1 while this process holds the slot lease and streams; 0 on standby", ["shard"],
            registry=r)
        self.slot_lag_bytes = Gauge(
            "onsale_seatmap_slot_lag_bytes",
            "WAL bytes between the server's insert position and the slot's confirmed flush",
            ["shard"], registry=r)
        self.slot_lag_seconds = Gauge(
            "onsale_seatmap_slot_lag_seconds",
            "Age of the oldest heartbeat written to the WAL and not yet seen on the slot",
            ["shard"], registry=r)
        self.slot_wal_status = Gauge(
            "onsale_seatmap_slot_wal_status",
            "1 for the slot's current wal_status (missing: no slot)", ["shard", "wal_status"],
            registry=r)
        self.transactions = Counter(
            "onsale_seatmap_transactions_total",
            "Committed transactions decoded from the slot", ["shard"], registry=r)
        self.deltas_published = Counter(
            "onsale_seatmap_deltas_published_total",
            "Entries written to the per-event Redis streams", ["shard"], registry=r)
        self.replayed = Counter(
            "onsale_seatmap_replayed_total",
            "Per-event transactions skipped as already published (recognised by LSN)",
            ["shard"], registry=r)
        self.commit_to_publish = Histogram(
            "onsale_seatmap_commit_to_publish_seconds",
            "Commit time to the delta acknowledged by Redis", ["shard"],
            buckets=LATENCY_BUCKETS, registry=r)
        self.rebuilds = Counter(
            "onsale_seatmap_rebuilds_total", "Full rebuilds of the seat maps, by reason",
            ["shard", "reason"], registry=r)
        self.cdc_errors = Counter(
            "onsale_seatmap_cdc_errors_total", "Consumer sessions that ended in an error",
            ["shard"], registry=r)
        self.snapshots_written = Counter(
            "onsale_seatmap_snapshots_written_total", "Snapshots written to Redis", ["shard"],
            registry=r)
        # The WebSocket fan-out.
        self.clients = Gauge(
            "onsale_seatmap_clients", "Open seat-map WebSocket clients", registry=r)
        self.frames = Counter(
            "onsale_seatmap_frames_total",
            "Delta frames built (one per event per tick, serialized once)", registry=r)
        self.frames_sent = Counter(
            "onsale_seatmap_frames_sent_total", "Frames queued to client sockets", registry=r)
        self.overflows = Counter(
            "onsale_seatmap_client_overflows_total",
            "Clients cut off because their bounded queue overflowed", registry=r)
        self.connections = Counter(
            "onsale_seatmap_connections_total",
            "WebSocket clients accepted, by how frames reach them (direct: written to the "
            "transport once framed; queued: through ASGI)", ["writer"], registry=r)
        self.catch_ups = Counter(
            "onsale_seatmap_resumes_total",
            "WebSocket connects by how the client was brought up to date", ["how"],
            registry=r)
        self.stream_errors = Counter(
            "onsale_seatmap_stream_errors_total", "Failed reads of a Redis stream by the hub",
            registry=r)
        self.refusals = Counter(
            "onsale_seatmap_refusals_total",
            "WebSocket handshakes refused before the upgrade, by problem code", ["code"],
            registry=r)
        self.socket_closes = Counter(
            "onsale_seatmap_socket_closes_total",
            "Sockets the server closed for the client's doing or its admission, by reason",
            ["reason"], registry=r)
        self.fallback_snapshots = Counter(
            "onsale_seatmap_fallback_snapshots_total",
            "HTTP snapshots read from PostgreSQL because change capture was down", registry=r)

    def capture(self, shard_id: int) -> CaptureMetrics:
        """One shard's consumer's metrics."""
        shard = str(shard_id)
        return CaptureMetrics(
            shard, self, self.cdc_active.labels(shard), self.slot_lag_bytes.labels(shard),
            self.slot_lag_seconds.labels(shard), self.transactions.labels(shard),
            self.deltas_published.labels(shard), self.replayed.labels(shard),
            self.commit_to_publish.labels(shard), self.cdc_errors.labels(shard),
            self.snapshots_written.labels(shard))


@dataclass(frozen=True)
class CaptureMetrics:
    """The change-capture metrics of one shard's consumer, labelled with its shard."""

    shard: str
    all: SeatmapMetrics
    cdc_active: Any
    slot_lag_bytes: Any
    slot_lag_seconds: Any
    transactions: Any
    deltas_published: Any
    replayed: Any
    commit_to_publish: Any
    cdc_errors: Any
    snapshots_written: Any

    def rebuilt(self, reason: str) -> None:
        self.all.rebuilds.labels(self.shard, reason).inc()

    def set_wal_status(self, status: str) -> None:
        for name in WAL_STATUSES:
            self.all.slot_wal_status.labels(self.shard, name).set(1 if name == status else 0)
