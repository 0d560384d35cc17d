"""Drive payment operations: send to the provider, apply the answer, follow up.

Thin I/O around core/payment_rules.py (what an answer means) and the SQL
function onsale_payment_apply (the state change). No database transaction is
open while the provider is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import os
import signal
import uuid
from typing import Any

from onsale.core.capture_batch import CaptureRecords
from onsale.core.in_flight import InFlight
from onsale.core.metrics import Metrics
from onsale.core.payment_rules import (
    AUTHORIZE,
    CAPTURE,
    VOID,
    Outcome,
    ProviderAnswer,
    Recorded,
    checked,
    is_mismatch,
)
from onsale.core.queries import queries
from onsale.core.stripe_provider import StripeProvider
from onsale.kernel.config import Settings
from onsale.kernel.db import Database

log = logging.getLogger("onsale.payments")
# The log line an operator alerts on (with onsale_payment_mismatch_total): a provider
# answer about another PaymentIntent, amount or currency than the operation's.
MISMATCH_LOG = "payment answer does not match its operation"


def crash_point(settings: Settings, name: str) -> None:
    """Test hook (ONSALE_CRASH_AT): die here as kill -9 would, mid-protocol."""
    if settings.crash_at == name:
        os.kill(os.getpid(), signal.SIGKILL)


class Payments:
    def __init__(self, db: Database, client: StripeProvider, settings: Settings,
                 metrics: Metrics, captures: CaptureRecords | None = None) -> None:
        self.db = db
        self.client = client
        self.settings = settings
        self.metrics = metrics
        self.captures = captures  # None: every capture answer applied alone
        self._background: set[asyncio.Task[None]] = set()
        self.in_flight = InFlight()  # shared by every shard's view (``on``), as the above

    def on(self, db: Database, metrics: Metrics | None = None) -> Payments:
        """This driver on another shard's database: the same provider client, settings
        and follow-ups (``drain`` waits for every shard's); ``metrics``: that shard's
        view (a background loop's figures carry its shard)."""
        if db is self.db and metrics is None:
            return self
        other = copy.copy(self)
        other.db = db
        other.metrics = metrics or self.metrics
        return other

    def mismatch(self, operation_id: uuid.UUID, kind: str | None, field: str, source: str,
                 intent_ref: str | None) -> None:
        """Alert: a provider answer contradicts its operation (held UNKNOWN, never applied)."""
        self.metrics.payment_mismatches.labels(source=source, field=field).inc()
        log.error("%s: operation %s (%s), the PaymentIntent's %s differs (intent %s, from "
                  "the %s); held as UNKNOWN for an operator", MISMATCH_LOG, operation_id,
                  kind or "payment", field, intent_ref, source)

    def judge(self, operation_id: uuid.UUID, kind: str, answer: ProviderAnswer,
              recorded: Recorded, source: str) -> Outcome:
        """What an answer means for the operation, cross-checked against what it recorded."""
        outcome, field = checked(kind, answer, recorded)
        if field is not None:
            self.mismatch(operation_id, kind, field, source, outcome.provider_ref)
        return outcome

    def _applied(self, operation_id: uuid.UUID, outcome: Outcome, source: str,
                 result: Any) -> dict[str, Any]:
        self.metrics.payment_outcomes.labels(outcome=outcome.outcome, source=source).inc()
        doc: dict[str, Any] = result if isinstance(result, dict) else json.loads(result)
        if doc.get("mismatch") and not is_mismatch(outcome):
            # Found by the database, under the operation's lock: another intent id than
            # the one recorded (two answers raced, the other one first).
            self.mismatch(operation_id, None, "id", source, outcome.provider_ref)
        return doc

    async def apply(self, operation_id: uuid.UUID, outcome: Outcome, source: str,
                    conn: Any | None = None, *, capture: bool = False) -> dict[str, Any]:
        """Record one answer; returns the order's state and any follow-up to send.
        ``capture``: a capture's answer, applied with the shard's others when a batcher
        runs (core/capture_batch.py)."""
        if capture and conn is None and self.captures is not None:
            result = await self.captures.apply(self.db, operation_id, outcome, source)
            if result is not None:
                return self._applied(operation_id, outcome, source, result)
        args = (operation_id, outcome.outcome, outcome.provider_ref, outcome.failure_code,
                outcome.next_action, source, self.settings.payment_retry_seconds)
        if conn is not None:
            result = await conn.fetchval(queries("payments")["apply"], *args)
        else:
            async with self.db.connection() as c:
                result = await c.fetchval(queries("payments")["apply"], *args)
        return self._applied(operation_id, outcome, source, result)

    async def apply_webhook(self, conn: Any, event: tuple[str, str, str | None, Any],
                            operation_id: uuid.UUID, outcome: Outcome) -> dict[str, Any] | None:
        """Record a webhook delivery ``event`` (id, type, intent id, payload) and apply its
        one outcome in one statement; None when the delivery was recorded before."""
        result = await conn.fetchval(
            queries("payments")["record_and_apply"], *event, operation_id, outcome.outcome,
            outcome.provider_ref, outcome.failure_code, outcome.next_action,
            self.settings.payment_retry_seconds)
        if result is None:
            return None
        return self._applied(operation_id, outcome, "webhook", result)

    async def authorize(self, operation_id: uuid.UUID, order_id: uuid.UUID, amount_minor: int,
                        currency: str, payment_method: str) -> dict[str, Any]:
        with self.in_flight.sending(str(operation_id)):  # a webhook about it waits for it
            answer = await self.client.authorize(
                operation_id, order_id, amount_minor, currency, payment_method,
                f"{self.settings.public_url}/orders/{order_id}")
            crash_point(self.settings, "after_authorize_sent")
            # The intent must be for what this operation asked: its amount, its currency,
            # and (metadata) this operation; the database checks the id against a
            # recorded one.
            recorded = Recorded(amount_minor, currency, None, str(operation_id))
            outcome = self.judge(operation_id, AUTHORIZE, answer, recorded, "response")
            result = await self.apply(operation_id, outcome, "response")
        # The sale has committed: the shopper's answer does not wait for the capture
        # ("sold, capture pending"; the order page follows it). It is sent from here at
        # once, and if this process dies first, the reconciler sends it.
        self.follow_up_soon(result, recorded)
        return result

    async def follow_up(self, result: dict[str, Any], recorded: Recorded,
                        source: str = "response") -> None:
        """Send the capture (after the sale committed) or the void the answer asked for;
        ``recorded``: the authorization it follows."""
        follow = result.get("follow_up")
        if not follow:
            return
        if follow["kind"] == CAPTURE:
            crash_point(self.settings, "after_sale_commit")
        await self.send(uuid.UUID(follow["operation_id"]), follow["kind"], follow["provider_ref"],
                        recorded.for_intent(follow["provider_ref"]), source)

    async def send(self, operation_id: uuid.UUID, kind: str, intent_id: str | None,
                   recorded: Recorded, source: str = "response") -> dict[str, Any] | None:
        """Send (or re-send, same idempotency key) a capture or a void, and apply it;
        ``recorded``: the operation's amount and currency, ``intent_id`` its intent."""
        if intent_id is None:
            return None  # nothing known to act on; the reconciler looks it up
        authorization = recorded.authorization_id
        with (self.in_flight.sending(authorization) if authorization is not None
              else contextlib.nullcontext()):
            if kind == CAPTURE:
                answer = await self.client.capture(operation_id, intent_id)
                crash_point(self.settings, "after_capture_sent")
            else:
                kind = VOID
                answer = await self.client.cancel(operation_id, intent_id)
            outcome = self.judge(operation_id, kind, answer, recorded.for_intent(intent_id),
                                 source)
            return await self.apply(operation_id, outcome, source, capture=kind == CAPTURE)

    def follow_up_soon(self, result: dict[str, Any], recorded: Recorded) -> None:
        """Follow up without holding the caller (a webhook answer must be quick).
        If this process dies first, the reconciler sends it."""
        if not result.get("follow_up"):
            return
        task = asyncio.create_task(self._follow_up_logged(result, recorded))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _follow_up_logged(self, result: dict[str, Any], recorded: Recorded) -> None:
        try:
            await self.follow_up(result, recorded)
        except Exception:  # the reconciler converges it
            log.exception("follow-up %s failed; the reconciler will retry", result.get("follow_up"))

    async def drain(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
