"""One edge process's parts, built from settings (nothing at import time), and
its background loops: the status and config refreshers and the batched "seen"
writer. The admitter is built beside them, by ``edge.tier.running_edge``."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from starlette.requests import HTTPConnection

from onsale.edge.caches import EventConfigs, Marks, StatusCache, every
from onsale.edge.draw_pages import DrawPages
from onsale.edge.gate import Gate
from onsale.edge.limits import RateLimiter
from onsale.edge.metrics import FIGURES_SECONDS, EdgeMetrics
from onsale.edge.ops_cache import OpsState
from onsale.edge.pow import PowCodec, RiskHook, builtin_risk
from onsale.edge.queue_store import QueueStore
from onsale.edge.risk_memory import RiskMemory
from onsale.edge.tokens import AdmissionCodec, TicketCodec, admission_keys
from onsale.kernel.config import Settings
from onsale.kernel.db import Database
from onsale.kernel.shards import ShardSet
from onsale.kernel.signed import Memo
from onsale.kernel.valkey import RedisClient

# The seat map's change capture as the operators' dashboard shows it (the root
# hands the edge seatmap.status.capture_status, bound to its pool and slot).
CaptureStatus = Callable[[], Awaitable[Mapping[str, object]]]


def _per_minute(limit: int) -> RateLimiter:
    return RateLimiter(rate=limit / 60.0, burst=max(5.0, limit / 6.0))


@dataclass(frozen=True)
class Edge:
    settings: Settings
    db: Database
    redis: RedisClient
    store: QueueStore
    configs: EventConfigs
    status: StatusCache
    seen: Marks
    tickets: TicketCodec
    admissions: AdmissionCodec
    gate: Gate
    pow: PowCodec
    risk: RiskHook = builtin_risk
    risk_memory: RiskMemory = field(default_factory=RiskMemory)  # what the scorer counts
    join_ip: RateLimiter = field(default_factory=lambda: _per_minute(600))
    join_account: RateLimiter = field(default_factory=lambda: _per_minute(30))
    poll_ip: RateLimiter = field(default_factory=lambda: _per_minute(6000))
    poll_account: RateLimiter = field(default_factory=lambda: _per_minute(120))
    draw_ip: RateLimiter = field(default_factory=lambda: _per_minute(120))
    draw_pages: DrawPages = field(default_factory=DrawPages)  # published draws' pages
    ops: OpsState = field(default_factory=OpsState)  # the operators' dashboard cache
    capture_status: CaptureStatus | None = None  # None: this process cannot see it
    # The process's shards (docs/scaling.md#routing): an event's payments and the audit
    # are read where the inventory is; None: the directory's database alone.
    shards: ShardSet | None = None
    metrics: EdgeMetrics | None = None  # edge/metrics.py; None: not counted (a test's)
    # The session and ticket cookies' names per event, as header bytes (the quick poll's)
    cookie_names: dict[int, tuple[bytes, bytes]] = field(default_factory=dict)
    # The quick poll's visitors: (event, raw Cookie header, raw Queue-Ticket header) ->
    # (session, when it was signed, ticket, ticket token), both signatures checked. A
    # browser sends the same header with every poll: one lookup instead of reading two
    # cookies and two memos (at most about 1.2 KiB an entry: edge.routes
    # MAX_REMEMBERED_HEADERS).
    visitors: Memo = field(default_factory=lambda: Memo(32_768))

    @functools.cached_property
    def longest_poll(self) -> int:
        """Far-back visitors poll less often, but well within the abandon grace."""
        return max(self.settings.queue_poll_seconds,
                   min(60, self.settings.queue_abandon_seconds // 5))


def edge_state(connection: HTTPConnection) -> Edge:
    """The edge's state in this process (set by the composition root's lifespan)."""
    return cast(Edge, connection.app.state.edge)


def build_edge(settings: Settings, db: Database, redis: RedisClient, gate: Gate, *,
               risk: RiskHook = builtin_risk,
               capture_status: CaptureStatus | None = None,
               shards: ShardSet | None = None, metrics: EdgeMetrics | None = None) -> Edge:
    """``gate``: the process's one gate (core's sales routes and the seat map check
    admissions with it too: one revocation cache)."""
    keys = admission_keys(settings.admission_keys, settings.secret_key)
    store = QueueStore(redis)
    return Edge(
        settings=settings, db=db, redis=redis, store=store, configs=EventConfigs(db),
        status=StatusCache(store), seen=Marks(store, "seen"), tickets=TicketCodec(keys),
        admissions=gate.codec, pow=PowCodec(keys), gate=gate, risk=risk,
        capture_status=capture_status, shards=shards, metrics=metrics,
        join_ip=_per_minute(settings.join_limit_ip),
        join_account=_per_minute(settings.join_limit_account),
        poll_ip=_per_minute(settings.poll_limit_ip),
        poll_account=_per_minute(settings.poll_limit_account),
        draw_ip=_per_minute(settings.draw_limit_ip),
        draw_pages=DrawPages(settings.draw_cache_mb * 2**20),
    )


def start_refreshers(edge: Edge) -> list[asyncio.Task[None]]:
    """The status and config refreshers and the "seen" writer (and the metrics' queue
    figures), as tasks the caller stops (``kernel.tasks.stop_background``)."""
    extra = []
    if edge.metrics is not None:
        edge.metrics.status = edge.status
        metrics = edge.metrics
        extra.append(asyncio.create_task(
            every(FIGURES_SECONDS, lambda: metrics.refresh(edge.store), "queue figures"),
            name="onsale-edge-figures"))
    return [*extra,
        asyncio.create_task(every(0.25, edge.status.refresh, "status refresh"),
                            name="onsale-edge-status"),
        asyncio.create_task(every(1.0, edge.configs.refresh, "config refresh"),
                            name="onsale-edge-configs"),
        asyncio.create_task(every(2.0, edge.seen.flush, "seen flush"),
                            name="onsale-edge-seen"),
    ]
