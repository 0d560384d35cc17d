"""kill -9 of the core process at each step of a checkout, then restart: the
system converges with no double charge, no lost order and no seat sold twice.

Core runs as its own process with ONSALE_CRASH_AT set: it SIGKILLs itself at
that point of the protocol, exactly as kill -9 would. The provider simulator
keeps running (and keeps retrying its webhooks); the reconciler runs from the
test, as a worker would.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from onsale.core.reconciler import reconcile_once
from onsale.embedded import EmbeddedPostgres, EmbeddedValkey
from tests.conftest import audit_clean, fresh_database
from tests.integration.test_checkout import (
    LAPSED_CAPTURE,
    checkout,
    checkout_until_cancelled,
    held,
    new_account,
    new_event,
    order,
    settle,
)
from tests.stack import APPROVE, Stack, connected, eventually, payments_for, started_stack


@pytest.fixture
async def fresh_stack(pg: EmbeddedPostgres, template_db: str,
                      tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    s = Stack(await fresh_database(pg, template_db), tmp_path_factory.mktemp("crash"),
              grace_seconds=1)
    try:
        s.start_psp()
        yield s
    finally:
        s.stop()


@pytest.fixture
async def db(fresh_stack: Stack) -> AsyncIterator[Any]:
    async with connected(fresh_stack) as conn:
        yield conn


async def crash_during_checkout(stack: Stack, db: Any, crash_at: str, key: str,
                                seats: list[int], **event: Any) -> tuple[uuid.UUID, int, str]:
    """Start core with the crash point, check out, and watch it die."""
    stack.start_core(crash_at=crash_at)
    event_id = await new_event(stack, **event)
    account = await new_account(db)
    async with stack.client(account) as c:
        hold_id = await held(c, event_id, seats)
        # Usually the request dies with the process. When the provider's webhook
        # reported the authorization first, the capture (and so the crash) runs
        # just after the answer; either way the process must die.
        with contextlib.suppress(httpx.TransportError):
            await checkout(c, hold_id, APPROVE, key=key)
    assert stack.core is not None
    assert stack.core.wait_exit() == -9
    return account, event_id, hold_id


async def the_order(db: Any, hold_id: str) -> Any:
    return await db.fetchrow("SELECT order_id, status, payment_status FROM orders "
                             "WHERE hold_id = $1", uuid.UUID(hold_id))


async def one_charge(stack: Stack, order_id: uuid.UUID) -> None:
    async with stack.psp_client() as c:
        intents = (await c.get("/_sim/intents", params={
            "metadata_key": "order_id", "metadata_value": str(order_id)})).json()
    intents = intents["data"] if isinstance(intents, dict) else intents
    assert len(intents) == 1, intents
    assert intents[0]["status"] == "succeeded"
    stats = await stack.psp_stats()
    assert stats["duplicate_operation_ids"] == [], stats


async def converge(stack: Stack, db: Any, hold_id: str, want: tuple[str, str]) -> Any:
    async with payments_for(stack) as payments:
        async def done() -> Any:
            await reconcile_once(payments)
            row = await the_order(db, hold_id)
            return row if row and (row["status"], row["payment_status"]) == want else None
        return await eventually(done)


async def test_crash_after_the_checkout_commit_then_the_retry_resumes(
        fresh_stack: Stack, db: Any) -> None:
    account, _, hold_id = await crash_during_checkout(
        fresh_stack, db, "after_checkout_commit", "k1", [1, 2])
    row = await the_order(db, hold_id)
    assert (row["status"], row["payment_status"]) == ("PENDING", "PENDING")
    fresh_stack.start_core()
    async with fresh_stack.client(account) as c:
        r = await checkout(c, hold_id, APPROVE, key="k1")
        assert r.status_code == 200 and r.json()["order_id"] == str(row["order_id"])
        await settle(c, r.json(), ("CONFIRMED", "CAPTURED"))
    await one_charge(fresh_stack, row["order_id"])
    await audit_clean(db)


async def test_crash_after_the_checkout_commit_without_retry_releases_after_the_grace(
        fresh_stack: Stack, db: Any) -> None:
    _, event_id, hold_id = await crash_during_checkout(
        fresh_stack, db, "after_checkout_commit", "k1", [3], hold_ttl_seconds=2)
    fresh_stack.start_core()
    row = await converge(fresh_stack, db, hold_id, ("FAILED", "FAILED"))
    seat = await db.fetchrow("SELECT status, hold_id FROM seat_inventory WHERE event_id = $1 "
                             "AND seat_id = 3", event_id)
    assert (seat["status"], seat["hold_id"]) == ("AVAILABLE", None)
    assert await db.fetchval("SELECT failure_code FROM payment_operations WHERE order_id = $1",
                             row["order_id"]) == "not_found"
    await audit_clean(db)


@pytest.mark.parametrize("crash_at", ["after_authorize_sent", "after_sale_commit",
                                      "after_capture_sent"])
async def test_crash_later_in_the_protocol_converges_to_one_capture(
        fresh_stack: Stack, db: Any, crash_at: str) -> None:
    account, event_id, hold_id = await crash_during_checkout(
        fresh_stack, db, crash_at, "k1", [4, 5])
    fresh_stack.start_core()
    row = await converge(fresh_stack, db, hold_id, ("CONFIRMED", "CAPTURED"))
    async with fresh_stack.client(account) as c:
        body = await order(c, str(row["order_id"]))
        assert [s["seat_id"] for s in body["seats"]] == [4, 5]
    sold = await db.fetch("SELECT order_id FROM seat_inventory WHERE event_id = $1 "
                          "AND status = 'SOLD'", event_id)
    assert [r["order_id"] for r in sold] == [row["order_id"]] * 2
    await one_charge(fresh_stack, row["order_id"])
    await audit_clean(db)


async def test_an_authorization_after_the_release_is_voided_never_sold(
        fresh_stack: Stack, db: Any) -> None:
    """The authorize request is lost (500, nothing done), the grace passes, the
    reconciler finds nothing and releases; then the delayed request reaches the
    provider after all. Its authorization must be voided, the seat not resold."""
    fresh_stack.start_core()
    await fresh_stack.set_faults(rules=[{"op": "authorize", "fault": "error_500", "count": 1}])
    event_id = await new_event(fresh_stack, hold_ttl_seconds=1)
    async with fresh_stack.client(await new_account(db)) as c:
        hold_id = await held(c, event_id, [6])
        body = (await checkout(c, hold_id, APPROVE)).json()
        assert body["payment_status"] == "UNKNOWN"
    row = await converge(fresh_stack, db, hold_id, ("FAILED", "FAILED"))
    async with fresh_stack.client(await new_account(db)) as next_buyer:
        assert (await held(next_buyer, event_id, [6]))
    op = await db.fetchrow("SELECT operation_id, amount_minor FROM payment_operations "
                           "WHERE order_id = $1 AND kind = 'AUTHORIZE'", row["order_id"])
    async with payments_for(fresh_stack) as payments:  # the delayed request lands now
        late = await payments.client.authorize(op["operation_id"], row["order_id"],
                                               op["amount_minor"], "USD", APPROVE, "http://x")
        assert late.status_code == 200 and late.body is not None
        assert late.body["status"] == "requires_capture"

        async def voided() -> bool:
            await reconcile_once(payments)
            got = await the_order(db, hold_id)
            return bool(got["payment_status"] == "VOIDED")
        await eventually(voided)
    async with payments_for(fresh_stack) as payments:  # what the provider says, via the SDK
        intent = (await payments.client.retrieve(late.body["id"])).body
    assert intent is not None and intent["status"] == "canceled"
    seat = await db.fetchrow("SELECT status, hold_id FROM seat_inventory WHERE event_id = $1 "
                             "AND seat_id = 6", event_id)
    assert seat["status"] == "HELD" and seat["hold_id"] != uuid.UUID(hold_id)
    await audit_clean(db)


async def test_a_capture_that_definitively_failed_is_compensated_before_tickets(
        pg: EmbeddedPostgres, template_db: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("lapse"),
                             auth_window_seconds=1) as stack, connected(stack) as conn:
        await stack.set_faults(rules=LAPSED_CAPTURE)
        event_id = await new_event(stack)
        async with stack.client(await new_account(conn)) as c:
            body = await checkout_until_cancelled(c, await held(c, event_id, [7, 8]))
        assert (body["order_status"], body["payment_status"]) == ("CANCELLED", "CAPTURE_FAILED")
        assert body["cancel_reason"] == "capture_failed" and body["tickets"] == []
        seats = await conn.fetch("SELECT status FROM seat_inventory WHERE event_id = $1 "
                                 "AND seat_id IN (7, 8)", event_id)
        assert [s["status"] for s in seats] == ["AVAILABLE", "AVAILABLE"]
        trail = await conn.fetch("SELECT action FROM payment_events WHERE order_id = $1 "
                                 "ORDER BY payment_event_id", uuid.UUID(body["order_id"]))
        assert "compensated" in [t["action"] for t in trail]
        assert await conn.fetchval(
            "SELECT count(*) FROM outbox WHERE aggregate_id = $1 AND event_type = "
            "'order.cancelled'", uuid.UUID(body["order_id"])) == 1
        await audit_clean(conn)


@pytest.mark.parametrize("crash_at", ["before_outbox_publish", "after_outbox_publish"])
async def test_relay_crash_around_the_publish_issues_tickets_once(
        fresh_stack: Stack, db: Any, valkey: EmbeddedValkey, crash_at: str) -> None:
    """The worker dies (SIGKILL) with order.confirmed committed but not yet
    published, or published to Redis but not yet marked: after a restart the
    tickets are issued exactly once."""
    import redis.asyncio

    client = redis.asyncio.Redis.from_url(valkey.url)
    await client.flushdb()
    fresh_stack.start_core()
    event_id = await new_event(fresh_stack)
    account = await new_account(db)
    async with fresh_stack.client(account) as c:
        hold_id = await held(c, event_id, [9, 10])
        body = await settle(c, (await checkout(c, hold_id, APPROVE)).json(),
                            ("CONFIRMED", "CAPTURED"))
        worker = fresh_stack.start_worker(valkey.url, crash_at=crash_at)
        assert worker.wait_exit() == -9
        published = await db.fetchval("SELECT published_at FROM outbox WHERE aggregate_id = $1 "
                                      "AND event_type = 'order.confirmed'",
                                      uuid.UUID(body["order_id"]))
        assert published is None  # the batch was never marked
        fresh_stack.start_worker(valkey.url)

        async def ticketed() -> Any:
            o = await order(c, body["order_id"])
            return o if len(o["tickets"]) == 2 else None
        got = await eventually(ticketed)
    assert sorted(t["seat_id"] for t in got["tickets"]) == [9, 10]
    assert await db.fetchval("SELECT count(*) FROM tickets WHERE order_id = $1",
                             uuid.UUID(body["order_id"])) == 2
    entries = await client.xrange("onsale:outbox")
    confirmed = [e for _, e in entries if e[b"type"] == b"order.confirmed"
                 and json.loads(e[b"payload"])["order_id"] == body["order_id"]]
    assert len(confirmed) == (2 if crash_at == "after_outbox_publish" else 1)
    await client.aclose()
    await audit_clean(db)
