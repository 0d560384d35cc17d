"""Core's typed state in a process, and the admission check the root injects."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol, cast

import asyncpg
from starlette.requests import HTTPConnection

from onsale.core.ga_batch import GABatcher
from onsale.core.metrics import Metrics
from onsale.core.password_pool import PasswordPool
from onsale.core.payments import Payments
from onsale.core.seat_batch import SeatBatcher
from onsale.core.signin_throttle import SigninThrottle
from onsale.core.venues import VenueLayouts
from onsale.core.webhook_batch import WebhookRecords
from onsale.kernel.config import Settings
from onsale.kernel.db import Database
from onsale.kernel.problems import Problem
from onsale.kernel.shards import ShardSet


class Admission(Protocol):
    """The waiting room's admission check, which sales routes call before any other
    work (docs/edge.md#the-gate). The root injects the edge's gate."""

    async def check(self, connection: HTTPConnection, event_id: int,
                    account: uuid.UUID) -> object:
        """Return if the account is admitted to the event; raise a Problem otherwise."""

    def presented(self, connection: HTTPConnection) -> bool:
        """Whether the request carries any admission token at all."""


class _NoAdmission:
    """For a process that serves no sales route (a worker): refuses, fail closed."""

    async def check(self, connection: HTTPConnection, event_id: int,
                    account: uuid.UUID) -> object:
        raise Problem(503, "admission_unavailable")

    def presented(self, connection: HTTPConnection) -> bool:
        return False


NO_ADMISSION: Admission = _NoAdmission()


@dataclass(frozen=True)
class CoreState:
    """Built complete by ``core.tier.running_core``, once everything it names is open."""

    settings: Settings
    db: Database
    metrics: Metrics
    admission: Admission
    throttle: SigninThrottle
    passwords: PasswordPool
    # The shards and the cached placement (docs/scaling.md#routing), shared by the
    # process's tiers: every inventory read and write goes to its event's shard.
    shards: ShardSet
    payments: Payments | None = None  # None: no provider configured
    ga_batcher: GABatcher | None = None  # None: every GA hold alone (ONSALE_GA_BATCH_MAX=1)
    seat_batcher: SeatBatcher | None = None  # None: every seat hold alone (…SEAT_BATCH_MAX=1)
    webhook_records: WebhookRecords | None = None  # record-only deliveries, batched per shard
    # The venue layouts, read on a small pool of their own (where the API runs)
    venues: VenueLayouts | None = None
    # onsale dev: the background loops' own pool (background statement timeout)
    background_pool: asyncpg.Pool | None = None


def core_state(connection: HTTPConnection) -> CoreState:
    """Core's state in this process (set by the composition root's lifespan)."""
    return cast(CoreState, connection.app.state.core)
