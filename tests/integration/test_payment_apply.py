"""onsale_payment_apply on its own (no provider): authorizations that must not
be sold are voided and their seats freed at once."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api, audit_clean


async def begin(api: Api, conn: Any, seats: list[int]) -> tuple[int, Any]:
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                              event_id, account, seats)
    begun = await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, 'pay', 'd', 'card_4242', 600, 0, 30)",
        uuid.UUID(row["body"]["hold_id"]), account)
    return event_id, begun


async def apply(conn: Any, operation_id: uuid.UUID, outcome: str, ref: str | None = None,
                failure: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = await conn.fetchval(
        "SELECT onsale_payment_apply($1, $2, $3, $4, NULL, 'test', 5)",
        operation_id, outcome, ref, failure)
    return result


async def seats_of(conn: Any, event_id: int) -> list[str]:
    rows = await conn.fetch("SELECT status FROM seat_inventory WHERE event_id = $1 "
                            "AND seat_id IN (1, 2) ORDER BY seat_id", event_id)
    return [r["status"] for r in rows]


async def test_an_abandoned_authorization_is_voided_never_sold(api: Api, conn: Any) -> None:
    event_id, begun = await begin(api, conn, [1, 2])
    op = begun["operation_id"]
    await apply(conn, op, "REQUIRES_ACTION", "pi_1")
    void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')", op)
    # The shopper finishes 3-D Secure before the cancel reaches the provider.
    late = await apply(conn, op, "AUTHORIZED", "pi_1")
    assert (late["order_status"], late["follow_up"]["operation_id"]) == \
        ("FAILED", str(void_id))
    assert await seats_of(conn, event_id) == ["AVAILABLE", "AVAILABLE"]
    assert await conn.fetchval("SELECT cancel_reason FROM orders") == "payment_abandoned"
    done = await apply(conn, void_id, "VOIDED", "pi_1")
    assert (done["order_status"], done["payment_status"]) == ("FAILED", "VOIDED")
    assert await conn.fetchval("SELECT count(*) FROM order_items") == 0
    await audit_clean(conn)


async def test_an_authorization_that_cannot_be_sold_frees_the_seats(api: Api, conn: Any) -> None:
    event_id, begun = await begin(api, conn, [1, 2])
    # The total no longer matches (as a price change would make it).
    await conn.execute("UPDATE orders SET amount_minor = amount_minor + 1")
    result = await apply(conn, begun["operation_id"], "AUTHORIZED", "pi_2")
    assert (result["order_status"], result["follow_up"]["kind"]) == ("FAILED", "VOID")
    assert await conn.fetchval("SELECT cancel_reason FROM orders") == "hold_lost"
    assert await seats_of(conn, event_id) == ["AVAILABLE", "AVAILABLE"]
    await apply(conn, uuid.UUID(result["follow_up"]["operation_id"]), "VOIDED", "pi_2")
    await audit_clean(conn)


async def test_a_late_authorization_reopens_a_void_that_found_nothing(
        api: Api, conn: Any) -> None:
    _, begun = await begin(api, conn, [1])
    op = begun["operation_id"]
    void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, NULL)", op)
    gone = await apply(conn, void_id, "VOIDED", None, "not_found")
    assert gone["order_status"] == "FAILED"
    late = await apply(conn, op, "AUTHORIZED", "pi_3")
    assert late["follow_up"] == {"operation_id": str(void_id), "kind": "VOID",
                                 "provider_ref": "pi_3"}
    row = await conn.fetchrow("SELECT status, provider_ref FROM payment_operations "
                              "WHERE operation_id = $1", void_id)
    assert (row["status"], row["provider_ref"]) == ("PENDING", "pi_3")
    await apply(conn, void_id, "VOIDED", "pi_3")
    await audit_clean(conn)
