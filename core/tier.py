"""The core tier: its routes, and what it runs in a process (the API's parts and,
where the role says so, the background work), yielded as typed state.

The composition root (``onsale.compose``) opens the shared parts and injects the
admission check: core never imports the waiting room."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

from starlette.routing import BaseRoute

from onsale.core import accounts, checkout, events, ga_routes, holds, ticket_routes, webhooks
from onsale.core.capture_batch import CaptureRecords
from onsale.core.ga_batch import GABatcher
from onsale.core.health import run_health_reporter
from onsale.core.metrics import Metrics
from onsale.core.password_pool import PasswordPool
from onsale.core.payments import Payments
from onsale.core.seat_batch import SeatBatcher
from onsale.core.shard_loops import LoopParts, run_shard_loops
from onsale.core.signin_throttle import SigninThrottle, signin_limits
from onsale.core.state import Admission, CoreState
from onsale.core.stripe_provider import StripeProvider
from onsale.core.venues import running_venues
from onsale.core.webhook_batch import WebhookRecords
from onsale.kernel.config import Settings
from onsale.kernel.db import Database, create_pool
from onsale.kernel.dependency import background_redis
from onsale.kernel.shared import Shared
from onsale.kernel.tasks import stop_background
from onsale.kernel.valkey import RedisClient


def core_routes() -> list[BaseRoute]:
    return [
        *accounts.routes,
        *events.routes,
        *holds.routes,
        *ga_routes.routes,
        *checkout.routes,
        *ticket_routes.routes,
        *webhooks.routes,
    ]


def build_payments(db: Database, settings: Settings, metrics: Metrics) -> Payments | None:
    """The provider client and payment driver, when a provider is configured."""
    if not settings.payments_configured:
        return None
    client = StripeProvider(settings.stripe_api_base, settings.stripe_secret_key,
                            settings.stripe_timeout, allow_simulator=settings.allow_simulator)
    return Payments(db, client, settings, metrics,
                    CaptureRecords(db, settings.payment_retry_seconds, metrics))


@contextlib.asynccontextmanager
async def running_core(shared: Shared, metrics: Metrics, admission: Admission, *,
                       api: bool = True, background: bool = False) -> AsyncIterator[CoreState]:
    """``api``: the parts the routes use, and the health reports the admitter reads.
    ``background``: the expiry sweeper, the payment reconciler and (with Redis) the
    outbox relay and ticket consumer, in this process (a worker; ``onsale dev``).

    Everything ``CoreState`` names is opened first and the state is built complete;
    the background loops start last and stop first."""
    settings, db = shared.settings, shared.database
    async with contextlib.AsyncExitStack() as stack:
        payments = build_payments(db, settings, metrics)
        if payments is not None:
            stack.push_async_callback(payments.client.close)
            stack.push_async_callback(payments.drain)  # runs first: drain, then close
        passwords = PasswordPool(settings.password_workers, settings.password_queue)
        stack.callback(passwords.close)
        venues = None
        if api:
            # Venue layouts are read on a small pool of their own: a flood of them
            # never takes a connection that a hold would have used.
            venues = await stack.enter_async_context(running_venues(settings))
        background_pool = None
        if background and api:
            # One process serves requests and runs the background loops (onsale dev):
            # the loops get a small pool of their own with the background bounds
            # (ONSALE_DB_STATEMENT_TIMEOUT_MS), as in a worker. On the request pool's
            # 500 ms, a relay batch that took longer on a busy machine was cancelled
            # after Redis had it, and published again.
            background_pool = await create_pool(
                dataclasses.replace(settings, db_pool_min=1, db_pool_max=3),
                request_path=False)
            stack.push_async_callback(background_pool.close)
        bulk: RedisClient | None = None
        if background and settings.redis_url is not None:
            bulk = background_redis(settings.redis_url)  # blocking reads (XREADGROUP)
            stack.push_async_callback(bulk.aclose)
        state = CoreState(
            settings, db, metrics, admission,
            SigninThrottle(signin_limits(settings), shared.redis if api else None,
                           timeout=settings.session_store_timeout),
            passwords, shared.shard_set, payments,
            ga_batcher=GABatcher(db, metrics, max_batch=settings.ga_batch_max,
                                 inflight=settings.ga_batch_inflight)
            if api and settings.ga_batch_max > 1 else None,
            seat_batcher=SeatBatcher(db, metrics, max_batch=settings.seat_batch_max,
                                     inflight=settings.seat_batch_inflight)
            if api and settings.seat_batch_max > 1 else None,
            webhook_records=WebhookRecords(db, metrics) if api else None,
            venues=venues, background_pool=background_pool)
        tasks: list[asyncio.Task[None]] = []
        stack.push_async_callback(stop_background, tasks)
        if api and shared.redis is not None:
            tasks.append(asyncio.create_task(
                run_health_reporter(db, shared.redis, metrics, shards=state.shards),
                name="onsale-core-health"))
        if background:
            pool = db.pool if background_pool is None else background_pool
            parts = LoopParts(settings, metrics, payments, bulk,
                              own_pools=background_pool is not None)
            tasks.append(asyncio.create_task(run_shard_loops(state.shards, parts, pool),
                                             name="onsale-shard-loops"))
        yield state
