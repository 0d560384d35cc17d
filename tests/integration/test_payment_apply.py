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


async def trail(conn: Any, operation_id: uuid.UUID) -> list[tuple[str, Any]]:
    rows = await conn.fetch("SELECT action, detail FROM payment_events WHERE operation_id = $1 "
                            "ORDER BY payment_event_id", operation_id)
    return [(r["action"], r["detail"]) for r in rows]


async def test_an_answer_about_another_intent_is_held_unknown_never_applied(
        api: Api, conn: Any) -> None:
    """Checked under the operation's lock: an intent id other than the recorded one
    sells, captures, compensates and releases nothing (docs/payments.md)."""
    event_id, begun = await begin(api, conn, [1, 2])
    op = begun["operation_id"]
    await apply(conn, op, "REQUIRES_ACTION", "pi_1")
    for outcome in ("AUTHORIZED", "DECLINED", "NO_AUTHORIZATION"):
        other = await apply(conn, op, outcome, "pi_2", "card_declined")
        assert (other["applied"], other["mismatch"], other["order_status"],
                other["follow_up"]) == (False, True, "PENDING", None), outcome
        assert await seats_of(conn, event_id) == ["PAYMENT_PENDING", "PAYMENT_PENDING"]
    row = await conn.fetchrow("SELECT status, provider_ref FROM payment_operations "
                              "WHERE operation_id = $1", op)
    assert (row["status"], row["provider_ref"]) == ("REQUIRES_ACTION", "pi_1")
    mismatches = [d for action, d in await trail(conn, op) if action == "authorize:mismatch"]
    assert len(mismatches) == 3
    assert {k: mismatches[0][k] for k in ("failure_code", "provider_ref", "recorded_ref")} == \
        {"failure_code": "mismatch_id", "provider_ref": "pi_2", "recorded_ref": "pi_1"}
    await audit_clean(conn)
    # The recorded intent still sells; then a capture answer about another intent
    # neither captures nor compensates the sale.
    sold = await apply(conn, op, "AUTHORIZED", "pi_1")
    assert (sold["order_status"], sold["mismatch"]) == ("CONFIRMED", False)
    capture = uuid.UUID(sold["follow_up"]["operation_id"])
    for outcome in ("CAPTURED", "CAPTURE_FAILED"):
        result = await apply(conn, capture, outcome, "pi_3", "expired")
        assert (result["mismatch"], result["order_status"], result["payment_status"]) == \
            (True, "CONFIRMED", "UNKNOWN"), outcome
    assert await seats_of(conn, event_id) == ["SOLD", "SOLD"]
    assert [a for a, _ in await trail(conn, capture)] == ["capture:mismatch"] * 2
    done = await apply(conn, capture, "CAPTURED", "pi_1")
    assert (done["mismatch"], done["payment_status"]) == (False, "CAPTURED")
    await audit_clean(conn)


async def test_a_mismatch_found_by_core_is_recorded_as_unknown(api: Api, conn: Any) -> None:
    """core/payment_rules.py found the amount or currency wrong: UNKNOWN, in the trail."""
    event_id, begun = await begin(api, conn, [1])
    op = begun["operation_id"]
    result = await apply(conn, op, "UNKNOWN", "pi_4", "mismatch_amount")
    assert (result["applied"], result["mismatch"], result["payment_status"]) == \
        (True, True, "UNKNOWN")
    assert await conn.fetchval("SELECT status FROM payment_operations WHERE operation_id = $1",
                               op) == "UNKNOWN"
    [(action, detail)] = [t for t in await trail(conn, op) if t[0] != "checkout_started"]
    assert (action, detail["failure_code"], detail["provider_ref"], detail["applied"]) == \
        ("authorize:mismatch", "mismatch_amount", "pi_4", True)
    plain = await apply(conn, op, "UNKNOWN")  # a timeout is no mismatch
    assert plain["mismatch"] is False
    assert await seats_of(conn, event_id) == ["PAYMENT_PENDING", "AVAILABLE"]
    await audit_clean(conn)
