"""GA holds check out through the same path as seat holds, against the provider
simulator over HTTP: sale, decline, grace, compensation and tickets per place."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from onsale.embedded import EmbeddedPostgres
from tests.conftest import audit_clean
from tests.integration.test_checkout import (
    LAPSED_CAPTURE,
    checkout,
    checkout_until_cancelled,
    new_account,
    new_event,
    order,
    settle,
)
from tests.stack import APPROVE, DECLINE, Stack, connected, started_stack


@pytest.fixture(scope="module")
async def stack(pg: EmbeddedPostgres, template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("ga")) as s:
        yield s


@pytest.fixture
async def db(stack: Stack) -> AsyncIterator[Any]:
    async with connected(stack) as conn:
        yield conn


FLOOR = {"name": "Floor", "price_minor": 4500, "capacity": 30, "stripes": 3}


async def ga_held(c: httpx.AsyncClient, event_id: int, quantity: int) -> dict[str, Any]:
    r = await c.post(f"/api/events/{event_id}/holds",
                     json={"ga": {"tier_id": 1, "quantity": quantity}},
                     headers={"Idempotency-Key": uuid.uuid4().hex})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def counts(db: Any, event_id: int) -> tuple[int, int, int]:
    row = await db.fetchrow("SELECT sum(available) AS a, sum(held) AS h, sum(sold) AS s "
                            "FROM ga_buckets WHERE event_id = $1", event_id)
    return int(row["a"]), int(row["h"]), int(row["s"])


async def test_an_approved_card_sells_the_places_and_tickets_come_per_place(
        stack: Stack, db: Any) -> None:
    event_id = await new_event(stack, ga_tiers=[FLOOR])
    async with stack.client(await new_account(db)) as c:
        hold = await ga_held(c, event_id, 3)
        assert await counts(db, event_id) == (27, 3, 0)
        r = await checkout(c, hold["hold_id"], APPROVE)
        assert r.status_code == 201, r.text
        body = await settle(c, r.json(), ("CONFIRMED", "CAPTURED"))
        assert body["amount_minor"] == 3 * 4500 and body["seats"] == []
        assert body["ga"] == {"tier_id": 1, "name": "Floor", "quantity": 3, "price_minor": 4500}
        assert await counts(db, event_id) == (27, 0, 3)
        order_id = uuid.UUID(body["order_id"])
        item = await db.fetchrow("SELECT quantity, price_minor, valid FROM ga_order_items "
                                 "WHERE order_id = $1", order_id)
        assert tuple(item) == (3, 4500, True)
        # The ticket consumer's step (run here directly): one ticket per place, once.
        assert await db.fetchval("SELECT onsale_issue_tickets($1)", order_id) == "issued"
        assert await db.fetchval("SELECT onsale_issue_tickets($1)", order_id) == "duplicate"
        tickets = (await order(c, body["order_id"]))["tickets"]
        assert [(t["ga_tier_id"], t["place"]) for t in tickets] == [(1, 1), (1, 2), (1, 3)]
        assert len({t["code"] for t in tickets}) == 3 and "seat_id" not in tickets[0]
    await audit_clean(db)


async def test_a_decline_keeps_the_places_held_for_another_card(stack: Stack, db: Any) -> None:
    event_id = await new_event(stack, ga_tiers=[FLOOR])
    async with stack.client(await new_account(db)) as c:
        hold = await ga_held(c, event_id, 2)
        first = await checkout(c, hold["hold_id"], DECLINE)
        assert first.json()["payment_status"] == "DECLINED"
        assert (await c.get(f"/api/holds/{hold['hold_id']}")).json()["status"] == "HELD"
        assert await counts(db, event_id) == (28, 2, 0)
        again = await checkout(c, hold["hold_id"], APPROVE)
        await settle(c, again.json(), ("CONFIRMED", "CAPTURED"))
    assert await counts(db, event_id) == (28, 0, 2)
    await audit_clean(db)


async def test_released_after_checkout_is_refused_and_the_sold_places_stay_sold(
        stack: Stack, db: Any) -> None:
    event_id = await new_event(stack, ga_tiers=[FLOOR])
    async with stack.client(await new_account(db)) as c:
        hold = await ga_held(c, event_id, 1)
        body = await settle(c, (await checkout(c, hold["hold_id"], APPROVE)).json(),
                            ("CONFIRMED", "CAPTURED"))
        r = await c.delete(f"/api/holds/{hold['hold_id']}")
        assert r.status_code == 409 and r.json()["code"] == "hold_not_releasable"
        assert (await order(c, body["order_id"]))["order_status"] == "CONFIRMED"
    assert await counts(db, event_id) == (29, 0, 1)
    await audit_clean(db)


async def test_a_failed_capture_gives_the_places_back(
        pg: EmbeddedPostgres, template_db: str,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    async with started_stack(pg, template_db, tmp_path_factory.mktemp("galapse"),
                             auth_window_seconds=1) as stack, connected(stack) as conn:
        await stack.set_faults(rules=LAPSED_CAPTURE)
        event_id = await new_event(stack, ga_tiers=[FLOOR])
        async with stack.client(await new_account(conn)) as c:
            hold = await ga_held(c, event_id, 4)
            body = await checkout_until_cancelled(c, hold["hold_id"])
        assert body["payment_status"] == "CAPTURE_FAILED" and body["tickets"] == []
        assert await counts(conn, event_id) == (30, 0, 0)
        reasons = await conn.fetch("SELECT reason, prior_status, quantity FROM ga_releases "
                                   "WHERE hold_id = $1", uuid.UUID(hold["hold_id"]))
        assert {(r["reason"], r["prior_status"]) for r in reasons} == {("compensated", "SOLD")}
        assert sum(r["quantity"] for r in reasons) == 4
        assert await conn.fetchval("SELECT bool_and(NOT valid) FROM ga_order_items "
                                   "WHERE order_id = $1", uuid.UUID(body["order_id"]))
        await audit_clean(conn)
