"""The edge tier (the waiting room, its admitter and the operators' routes): its
routes, and what it runs in a process, yielded as typed state (``Edge``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.routing import BaseRoute

from onsale.edge import draw_routes, ops, ops_arrivals, ops_dashboard, ops_draw, routes
from onsale.edge.admitter import Admitter
from onsale.edge.gate import Gate
from onsale.edge.metrics import EdgeMetrics
from onsale.edge.pow import RiskHook, no_risk
from onsale.edge.queue_store import QueueStore
from onsale.edge.runtime import CaptureStatus, Edge, build_edge, start_refreshers
from onsale.kernel.config import ConfigError, Settings
from onsale.kernel.dependency import background_redis
from onsale.kernel.shared import Shared
from onsale.kernel.tasks import stop_background


def edge_routes() -> list[BaseRoute]:
    return [*routes.routes, *draw_routes.routes, *ops.routes, *ops_dashboard.routes,
            *ops_arrivals.routes, *ops_draw.routes]


def require_redis(settings: Settings) -> str:
    if settings.redis_url is None:
        raise ConfigError("the edge needs REDIS_URL (the waiting room lives in Redis)")
    return settings.redis_url


@contextlib.asynccontextmanager
async def running_edge(shared: Shared, gate: Gate, *, admitter: bool,
                       risk: RiskHook = no_risk, capture_status: CaptureStatus | None = None,
                       metrics: EdgeMetrics | None = None) -> AsyncIterator[Edge]:
    """The refreshers and the "seen" writer; with ``admitter`` the admitter too, with a
    background Redis client of its own for the draw's large replies. The admitter is
    this context's own: no handler reads it, so ``Edge`` does not carry it."""
    redis_url = require_redis(shared.settings)
    if shared.redis is None:
        raise ConfigError("the edge needs the process's Redis client")
    edge = build_edge(shared.settings, shared.database, shared.redis, gate, risk=risk,
                      capture_status=capture_status, shards=shared.shards, metrics=metrics)
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(edge.ops.lab.close)  # the fairness lab's worker
        running: Admitter | None = None
        if admitter:
            bulk = background_redis(redis_url)
            stack.push_async_callback(bulk.aclose)
            shards = shared.shard_set
            running = Admitter(edge, bulk=QueueStore(bulk),
                               shard_of=lambda e: shards.placement.shard_of_event(e))
        tasks = start_refreshers(edge)
        stack.push_async_callback(stop_background, tasks)  # before the client closes
        if running is not None:
            tasks.append(asyncio.create_task(running.run(), name="onsale-admitter"))
        yield edge
