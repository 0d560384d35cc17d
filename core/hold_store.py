"""Thin adapter from hold requests to the hold SQL functions (one round trip)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg

from onsale.core.ga_batch import GABatcher
from onsale.core.hold_rules import BestAvailableRequest, GARequest, HoldRequest, SeatsRequest
from onsale.core.metrics import Metrics
from onsale.core.queries import queries
from onsale.core.seat_batch import SeatBatcher
from onsale.kernel.db import UNAVAILABLE, Database
from onsale.kernel.problems import RESUMING, Problem

DEADLOCK_RETRIES = 3
_STATUS_BY_CLASS = {"OS400": 400, "OS404": 404, "OS409": 409, "OS503": 503}


@dataclass(frozen=True)
class HoldOutcome:
    status_code: int
    body: dict[str, Any]
    replayed: bool


def problem_from_db(exc: asyncpg.PostgresError) -> Problem | None:
    """Map a raised onsale SQLSTATE ('OSnnn', MESSAGE = code, DETAIL = JSON)."""
    state = getattr(exc, "sqlstate", "") or ""
    if state not in _STATUS_BY_CLASS:
        return None
    try:
        extra = json.loads(getattr(exc, "detail", None) or "{}")
    except ValueError:
        extra = {}
    if not isinstance(extra, dict):
        extra = {}
    for reserved in ("status", "code", "detail"):  # Problem's own fields
        if reserved in extra:
            extra[f"db_{reserved}"] = extra.pop(reserved)
    detail = RESUMING if state == "OS503" else None
    return Problem(_STATUS_BY_CLASS[state], str(getattr(exc, "message", exc)), detail, **extra)


@contextmanager
def refusals_as_problems() -> Iterator[None]:
    """Around the statements that call an onsale SQL function (hold, release,
    checkout): a refusal it raises (SQLSTATE ``OS400``/``OS404``/``OS409``) comes out
    as that problem (``problem_from_db``); any other error passes through unchanged."""
    try:
        yield
    except asyncpg.PostgresError as exc:
        problem = problem_from_db(exc)
        if problem is None:
            raise
        raise problem from exc


async def create_hold(
    conn: Any,
    metrics: Metrics,
    event_id: int,
    account_id: uuid.UUID,
    key: str,
    digest: str,
    request: HoldRequest,
    *,
    spread: bool = False,
    started: float | None = None,
) -> HoldOutcome:
    """Run one hold decision. Deadlocks (should one ever happen) are retried, and
    so is losing the idempotency insert to a concurrent twin (the retry replays). A GA
    hold whose stripe had too few is run once more across every stripe: each attempt
    must be its own transaction (``conn`` in autocommit, never inside a transaction
    block), so the first one's row lock is gone before the second locks in order.
    ``spread``: a GA hold a batch found its stripe short for, straight to that stage;
    ``started``: when the request began (its latency metric), if before this call."""
    q = queries("holds")
    started = time.perf_counter() if started is None else started
    try:
        for attempt in range(DEADLOCK_RETRIES + 2):  # + the GA spread stage
            try:
                with refusals_as_problems():
                    if isinstance(request, SeatsRequest):
                        row = await conn.fetchrow(
                            q["hold_seats"], event_id, account_id, key, digest,
                            list(request.seat_ids),
                        )
                    elif isinstance(request, GARequest):
                        row = await conn.fetchrow(
                            q["hold_ga"], event_id, account_id, key, digest,
                            request.tier_id, request.quantity, spread,
                        )
                    else:
                        assert isinstance(request, BestAvailableRequest)
                        row = await conn.fetchrow(
                            q["hold_best"], event_id, account_id, key, digest,
                            request.quantity, request.section, request.together,
                        )
                if row["status_code"] == 0 and not spread:
                    spread = True  # its stripe had too few: again, across all (GA only)
                    continue
                break
            except (asyncpg.DeadlockDetectedError, asyncpg.SerializationError):
                metrics.deadlock_retries.inc()
                if attempt >= DEADLOCK_RETRIES:
                    raise
            except asyncpg.UniqueViolationError as exc:
                if getattr(exc, "constraint_name", "") == "holds_account_key_idx":
                    raise Problem(
                        409, "idempotency_conflict",
                        detail="This key was used for an earlier hold whose record has expired.",
                    ) from exc
                raise
            except asyncpg.PostgresError as exc:
                if getattr(exc, "sqlstate", "") == "OSRTY" and attempt < DEADLOCK_RETRIES:
                    continue  # a twin request with our key committed first: replay it
                raise
    except Problem as problem:
        record(metrics, started, problem.code)
        raise
    except UNAVAILABLE:
        record(metrics, started, "inventory_unavailable")  # core/db.py: the 503
        raise
    except BaseException:
        record(metrics, started, "internal_error")
        raise
    return answered(metrics, row, started)


def answered(metrics: Metrics, row: Any, started: float) -> HoldOutcome:
    """A hold statement's answer row as the outcome, or its refusal as the Problem; the
    request's outcome and latency recorded either way."""
    body = row["body"]
    if row["lock_wait_ms"] > 0:  # 0: answered before the lock stage (replay, fail fast)
        metrics.lock_wait.observe(float(row["lock_wait_ms"]) / 1000)
    if row["status_code"] >= 400:  # an answer, not an error: no hold was written
        # (a GA spread stage may have ended expired holds of the tier on the way)
        extra = dict(body)
        problem = Problem(int(row["status_code"]), str(extra.pop("code")), **extra)
        record(metrics, started, problem.code)
        raise problem
    outcome = HoldOutcome(int(row["status_code"]), body, bool(row["replayed"]))
    record(metrics, started, "replayed" if outcome.replayed else "created")
    return outcome


def record(metrics: Metrics, started: float, code: str) -> None:
    metrics.hold_latency.observe(time.perf_counter() - started)
    metrics.hold_outcomes.labels(code=code).inc()


async def create_batched_hold(
    db: Database,
    batcher: GABatcher | SeatBatcher,
    metrics: Metrics,
    event_id: int,
    account_id: uuid.UUID,
    key: str,
    digest: str,
    request: GARequest | SeatsRequest,
) -> HoldOutcome:
    """A GA or seat hold through this process's batcher (core/ga_batch.py,
    core/seat_batch.py); what a batch could not settle runs alone (``create_hold``), on
    a connection of its own."""
    started = time.perf_counter()
    try:
        if isinstance(request, GARequest):
            assert isinstance(batcher, GABatcher)
            row = await batcher.hold(event_id, request.tier_id, account_id, key, digest,
                                     request.quantity, db)
        else:
            assert isinstance(batcher, SeatBatcher)
            row = await batcher.hold(event_id, account_id, key, digest, request.seat_ids, db)
    except Problem as problem:  # the batch's 503
        record(metrics, started, problem.code)
        raise
    except BaseException:
        record(metrics, started, "internal_error")
        raise
    if row is None or row["status_code"] in (None, 0):
        spread = row is not None and row["status_code"] == 0
        if isinstance(request, GARequest):
            metrics.ga_batch_alone.labels(reason="spread" if spread else "alone").inc()
        else:
            metrics.seat_batch_alone.inc()
        alone = False
        try:
            async with db.connection() as conn:
                alone = True  # from here create_hold records the outcome
                return await create_hold(conn, metrics, event_id, account_id, key, digest,
                                         request, spread=spread, started=started)
        except Problem as problem:
            if not alone:  # no connection for it (the 503)
                record(metrics, started, problem.code)
            raise
    return answered(metrics, row, started)
