"""onsale_payment_apply's tail (captures, voids, follow-ups) on the paths every other
test missed (docs/invariants.md#mutation-testing): answers about a capture or a void
delivered twice, a failed capture's own status, a void beside another order in payment,
and the follow-up found again for a late duplicate, also once it went unknown."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api, audit_clean
from tests.integration.test_payment_paths import apply, paying


async def _status(conn: Any, operation_id: uuid.UUID) -> str:
    status: str = await conn.fetchval("SELECT status FROM payment_operations "
                                      "WHERE operation_id = $1", operation_id)
    return status


async def _events(conn: Any, operation_id: uuid.UUID, action: str) -> int:
    n: int = await conn.fetchval("SELECT count(*) FROM payment_events WHERE operation_id = $1 "
                                 "AND action = $2", operation_id, action)
    return n


async def test_a_capture_answered_twice_is_applied_once(api: Api, conn: Any) -> None:
    p = await paying(api, conn)
    capture = uuid.UUID((await apply(conn, p.operation_id, "AUTHORIZED"))["follow_up"]
                        ["operation_id"])
    assert (await apply(conn, capture, "CAPTURED"))["applied"] is True
    assert (await apply(conn, capture, "CAPTURED"))["applied"] is False
    assert await _events(conn, capture, "capture:captured") == 1
    await audit_clean(conn)


async def test_a_failed_capture_is_recorded_failed(api: Api, conn: Any) -> None:
    p = await paying(api, conn)
    capture = uuid.UUID((await apply(conn, p.operation_id, "AUTHORIZED"))["follow_up"]
                        ["operation_id"])
    await apply(conn, capture, "CAPTURE_FAILED", None, "expired_for_capture")
    assert await _status(conn, capture) == "FAILED"
    await audit_clean(conn)


async def test_a_void_answered_twice_marks_only_its_own_order(api: Api, conn: Any) -> None:
    p = await paying(api, conn)
    other = await paying(api, conn)  # another order in payment, its authorization open
    await apply(conn, p.operation_id, "REQUIRES_ACTION")
    void_id = await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_1')", p.operation_id)
    assert (await apply(conn, void_id, "VOIDED"))["applied"] is True
    assert (await apply(conn, void_id, "VOIDED"))["applied"] is False
    assert await _events(conn, void_id, "void:voided") == 1
    row = await conn.fetchrow("SELECT status, payment_status FROM orders WHERE order_id = $1",
                              other.order_id)
    assert (row["status"], row["payment_status"]) == ("PENDING", "PENDING")
    await audit_clean(conn)


async def test_a_stray_authorization_delivered_again_finds_its_own_void(
        api: Api, conn: Any) -> None:
    """A declined card whose intent reports an authorization after all gets a void; the
    same report delivered again names that void (not another order's pending void),
    also once the void's own answer went unknown."""
    other = await paying(api, conn)  # another order whose void is pending
    await conn.fetchval("SELECT onsale_payment_abandon($1, 'pi_0')", other.operation_id)
    p = await paying(api, conn)
    await apply(conn, p.operation_id, "DECLINED", "pi_1", "card_declined")
    stray = await apply(conn, p.operation_id, "AUTHORIZED", "pi_1")
    void_id = uuid.UUID(stray["follow_up"]["operation_id"])
    again = await apply(conn, p.operation_id, "AUTHORIZED", "pi_1")
    assert uuid.UUID(again["follow_up"]["operation_id"]) == void_id
    await apply(conn, void_id, "UNKNOWN", None)  # the void's answer lost: still ours
    again = await apply(conn, p.operation_id, "AUTHORIZED", "pi_1")
    assert uuid.UUID(again["follow_up"]["operation_id"]) == void_id
    await audit_clean(conn)
