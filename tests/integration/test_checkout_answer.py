"""A checkout answers with the order built from its authorization's apply
(core/read_model.py ``checkout_order_json``), not read again: every answer that
builds it must equal the document ``GET /api/orders/{id}`` reads at that moment
(``order_json`` over ``order_for_account``), for each way an authorization's answer
can leave the order; and where only a read can say, it builds nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from onsale.core.queries import queries
from onsale.core.read_model import checkout_order_json, order_json
from onsale.core.ticket_token import key_ring
from tests.conftest import Api, audit_clean
from tests.integration.test_ga_expiry import _ga_hold
from tests.integration.test_ga_holds import floor, ga_event

KEYS = key_ring("", "test-secret")


async def begin(conn: Any, account: uuid.UUID, hold_id: uuid.UUID,
                key: str = "pay") -> Any:
    return await conn.fetchrow(
        "SELECT * FROM onsale_checkout_begin($1, $2, $3, 'd', 'pm_card', 600, 0, 30)",
        hold_id, account, key)


async def seat_hold(api: Api, conn: Any, seats: list[int]) -> tuple[uuid.UUID, uuid.UUID]:
    event_id = await api.create_event(seats=10)
    account = await api.account(conn)
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k', 'd', $3)",
                              event_id, account, seats)
    return account, uuid.UUID(row["body"]["hold_id"])


async def apply(conn: Any, operation_id: uuid.UUID, outcome: str, ref: str | None = "pi_1",
                failure: str | None = None, next_action: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = await conn.fetchval(
        "SELECT onsale_payment_apply($1, $2, $3, $4, $5::jsonb, 'response', 5)",
        operation_id, outcome, ref, failure, next_action)
    return result


async def read(conn: Any, order_id: Any, account: uuid.UUID) -> dict[str, Any]:
    row = await conn.fetchrow(queries("payments")["order_for_account"],
                              uuid.UUID(str(order_id)), account)
    return order_json(row, KEYS)


@pytest.mark.parametrize("outcome,failure,expired", [
    ("AUTHORIZED", None, False),         # sold: CONFIRMED, AUTHORIZED, a capture to send
    ("DECLINED", "card_declined", False),  # the hold back to HELD for another card
    ("DECLINED", "card_declined", True),   # past the deadline: released, FAILED
    ("NO_AUTHORIZATION", None, False),   # FAILED, payment_not_completed
    ("UNKNOWN", None, False),            # still PENDING, the reconciler asks
])
async def test_the_built_answer_is_the_order_read_back(
        api: Api, conn: Any, outcome: str, failure: str | None, expired: bool) -> None:
    account, hold_id = await seat_hold(api, conn, [1, 2])
    begun = await begin(conn, account, hold_id)
    if expired:
        await conn.execute("UPDATE holds SET expires_at = now() - interval '1 second' "
                           "WHERE hold_id = $1", hold_id)
    result = await apply(conn, begun["operation_id"], outcome, failure=failure)
    built = checkout_order_json(result)
    assert built is not None
    assert built == await read(conn, begun["order_id"], account)
    assert list(built) == list(await read(conn, begun["order_id"], account))  # same key order
    await audit_clean(conn)


async def test_a_sale_the_hold_no_longer_covers_is_built_as_failed(
        api: Api, conn: Any) -> None:
    account, hold_id = await seat_hold(api, conn, [3])
    begun = await begin(conn, account, hold_id)
    await conn.execute("UPDATE orders SET amount_minor = amount_minor + 1")  # a price change
    result = await apply(conn, begun["operation_id"], "AUTHORIZED")
    built = checkout_order_json(result)
    assert built is not None and (built["order_status"], built["cancel_reason"]) == \
        ("FAILED", "hold_lost")
    assert built == await read(conn, begun["order_id"], account)
    await apply(conn, uuid.UUID(result["follow_up"]["operation_id"]), "VOIDED")
    await audit_clean(conn)


async def test_a_general_admission_sale_is_built_with_its_places(api: Api, conn: Any) -> None:
    event_id = await ga_event(api, floor(stripes=1))
    account = await api.account(conn)
    hold_id = await _ga_hold(conn, event_id, 2, account)
    begun = await begin(conn, account, hold_id)
    result = await apply(conn, begun["operation_id"], "AUTHORIZED")
    built = checkout_order_json(result)
    assert built is not None and built["ga"] is not None and built["ga"]["quantity"] == 2
    assert built == await read(conn, begun["order_id"], account)


async def test_a_second_card_after_a_decline_is_built_on_the_same_order(
        api: Api, conn: Any) -> None:
    account, hold_id = await seat_hold(api, conn, [4])
    first = await begin(conn, account, hold_id, "first")
    await apply(conn, first["operation_id"], "DECLINED", failure="card_declined")
    again = await begin(conn, account, hold_id, "second")
    assert again["order_id"] == first["order_id"]
    result = await apply(conn, again["operation_id"], "AUTHORIZED", ref="pi_2")
    built = checkout_order_json(result)
    assert built is not None and built["order_status"] == "CONFIRMED"
    assert built == await read(conn, first["order_id"], account)


async def test_only_a_read_can_say_after_a_next_action_a_late_answer_or_a_capture(
        api: Api, conn: Any) -> None:
    account, hold_id = await seat_hold(api, conn, [5])
    begun = await begin(conn, account, hold_id)
    op = begun["operation_id"]
    action = await apply(conn, op, "REQUIRES_ACTION",
                         next_action='{"type": "redirect_to_url"}')
    assert action["applied"] and checkout_order_json(action) is None  # next_action: read
    sold = await apply(conn, op, "AUTHORIZED")
    assert checkout_order_json(sold) is not None
    late = await apply(conn, op, "AUTHORIZED")  # the webhook's, after the response's
    assert not late["applied"] and checkout_order_json(late) is None
    captured = await apply(conn, uuid.UUID(sold["follow_up"]["operation_id"]), "CAPTURED")
    assert captured["order"] is None and checkout_order_json(captured) is None
    mismatched = await apply(conn, op, "UNKNOWN", failure="mismatch_amount")
    assert checkout_order_json(mismatched) is None
    await audit_clean(conn)
