"""The payment reconciler: converge every operation whose outcome is not known.

Each pass leases a batch of due operations (SKIP LOCKED, so reconcilers on
several workers share the work), asks the provider, and applies what it says:
- an authorization is looked up by its operation id. Found: its state is
  applied (an authorization sells or is voided; 3-D Secure still pending past
  the grace is voided first). Not found: the seats are released only once the
  grace has passed; before that, we look again later;
- a capture or a void is re-sent with its own idempotency key.
An answer whose PaymentIntent contradicts the operation (another id, amount or
currency than it recorded) is never applied, captured or voided: the operation
stays UNKNOWN, the answer is logged and counted, and it is looked at again only
every MISMATCH_RECHECK_SECONDS (docs/payments.md#answers-that-do-not-match-their-operation).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.payment_rules import (
    AUTHORIZE,
    MISMATCH,
    MISMATCH_RECHECK_SECONDS,
    VOID,
    Outcome,
    Recorded,
    after_lookup,
    mismatch,
    mismatched,
)
from onsale.core.payment_state import PaymentOutcome
from onsale.core.payments import Payments
from onsale.core.psp_client import search_hit
from onsale.core.queries import queries
from onsale.kernel.dependency import is_outage

log = logging.getLogger("onsale.reconciler")
LEASE_SECONDS = 60
CONCURRENCY = 8


def _recorded(op: Any, authorization_id: Any) -> Recorded:
    return Recorded(int(op["amount_minor"]), op["currency"], op["provider_ref"],
                    str(authorization_id))


async def _authorization(payments: Payments, op: Any) -> str:
    answered, found = search_hit(await payments.client.find_by_operation(op["operation_id"]))
    if not answered:
        return "wait"
    recorded = _recorded(op, op["operation_id"])
    decision = after_lookup(found, bool(op["past_grace"]), recorded)
    if decision.action == "wait":
        return "wait"
    assert decision.outcome is not None
    if decision.action == "mismatch":
        assert decision.outcome.failure_code is not None
        payments.mismatch(op["operation_id"], AUTHORIZE,
                          decision.outcome.failure_code.removeprefix(MISMATCH),
                          "reconciler", decision.outcome.provider_ref)
        await payments.apply(op["operation_id"], decision.outcome, "reconciler")
        return "mismatch"
    if decision.action == "abandon":
        async with payments.db.connection() as conn:
            void_id = await conn.fetchval(queries("payments")["abandon"], op["operation_id"],
                                          decision.outcome.provider_ref)
        if void_id is not None:
            await payments.send(void_id, VOID, decision.outcome.provider_ref, recorded,
                                "reconciler")
        return "abandon"
    result = await payments.apply(op["operation_id"], decision.outcome, "reconciler")
    if result.get("mismatch"):
        return "mismatch"
    await payments.follow_up(result, recorded, "reconciler")
    return decision.outcome.outcome.lower()


async def _follow_up(payments: Payments, op: Any) -> str:
    recorded = _recorded(op, op["parent_operation_id"])
    intent_id = op["provider_ref"]
    if intent_id is None:  # a void for an authorization never found by id
        answered, found = search_hit(
            await payments.client.find_by_operation(op["parent_operation_id"]))
        if not answered:
            return "wait"
        if found is None:
            await payments.apply(op["operation_id"],
                                 Outcome(PaymentOutcome.VOIDED, None, "not_found"), "reconciler")
            return "voided"
        field = mismatch(recorded, found)
        if field is not None:  # not the authorization we would void: leave it to an operator
            payments.mismatch(op["operation_id"], op["kind"], field, "reconciler",
                              found.get("id"))
            await payments.apply(op["operation_id"], mismatched(field, found), "reconciler")
            return "mismatch"
        intent_id = found["id"]
    result = await payments.send(op["operation_id"], op["kind"], intent_id, recorded,
                                 "reconciler")
    return "mismatch" if result is not None and result.get("mismatch") else "resent"


async def reconcile_once(payments: Payments, batch: int = 100) -> dict[str, int]:
    """One pass over due operations. Returns counts by action (for tests and metrics)."""
    q = queries("payments")
    async with payments.db.connection() as conn:
        due = await conn.fetch(q["claim_due"], batch, LEASE_SECONDS)
    counts: dict[str, int] = {}
    # A few at a time: a slow provider must not outlast the batch's lease
    # (the work would be leased again elsewhere) nor be flooded.
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(op: Any) -> None:
        async with gate:
            try:
                if op["kind"] == AUTHORIZE:
                    action = await _authorization(payments, op)
                else:
                    action = await _follow_up(payments, op)
            except Exception:
                log.exception("reconciling %s %s failed", op["kind"], op["operation_id"])
                action = "error"
            if action in ("wait", "error", "mismatch"):
                # A contradicting answer will not change by itself: look again rarely.
                delay = MISMATCH_RECHECK_SECONDS if action == "mismatch" else \
                    payments.settings.payment_retry_seconds
                async with payments.db.connection() as conn:
                    await conn.execute(q["recheck_later"], op["operation_id"], delay)
        payments.metrics.reconciled.labels(action=action).inc()
        counts[action] = counts.get(action, 0) + 1

    await asyncio.gather(*(one(op) for op in due))
    return counts


async def update_backlog(payments: Payments, metrics: Metrics) -> None:
    async with payments.db.connection() as conn:
        row = await conn.fetchrow(queries("payments")["backlog"])
    metrics.reconcile_backlog.set(row["open_operations"])
    metrics.oldest_unknown.set(float(row["oldest_unknown_age"]))


async def run_reconciler(payments: Payments, interval: float) -> None:
    """Reconcile forever; a failed pass is logged, counted and retried."""
    while True:
        try:
            while sum((await reconcile_once(payments)).values()) >= 100:
                pass
            await update_backlog(payments, payments.metrics)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            payments.metrics.reconcile_errors.inc()
            if not is_outage(exc):  # an outage: its breaker said so once already
                log.exception("reconciler pass failed")
        await asyncio.sleep(interval)

