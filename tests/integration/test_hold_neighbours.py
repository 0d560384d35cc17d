"""A hold's reads and writes stay with its own event, its own hold and the price its
seats carry, beside neighbours that share its seat ids, its account or its tier: a
decoy event with the same seat numbers at another price, the account's other holds, a
newer price version. Issue 22, part 5: each case kills a slip that every other test let
through, because every other test had one event and one price (scripts/mutants.py:
onsale_hold_commit, onsale_release)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import Api, audit_clean


async def _hold(conn: Any, event_id: int, account: uuid.UUID, seats: list[int]) -> Any:
    row = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, $3, 'd', $4)",
                              event_id, account, uuid.uuid4().hex, seats)
    assert row["status_code"] == 201, dict(row)
    return row["body"]


async def _decoy(api: Api, conn: Any) -> int:
    """An event made first, with the same seat ids at another price, and a live hold."""
    decoy = await api.create_event(seats=10, price_tiers=[{"name": "Decoy", "price_minor": 999}])
    await _hold(conn, decoy, await api.account(conn), [1, 2, 3])
    return decoy


async def test_a_hold_is_priced_from_its_own_events_seats(api: Api, conn: Any) -> None:
    decoy = await _decoy(api, conn)
    event_id = await api.create_event(seats=10,
                                      price_tiers=[{"name": "Stalls", "price_minor": 5000}])
    body = await _hold(conn, event_id, await api.account(conn), [1, 2])
    assert [s["seat_id"] for s in body["seats"]] == [1, 2]
    assert {s["tier"] for s in body["seats"]} == {"Stalls"}
    assert body["amount_minor"] == 10_000
    assert await conn.fetchval("SELECT count(*) FROM seat_inventory WHERE event_id = $1 "
                               "AND status = 'HELD'", decoy) == 3
    await audit_clean(conn)


async def test_a_hold_is_priced_at_the_version_its_seats_carry(api: Api, conn: Any) -> None:
    """A newer price version for later sales (the seats still carry the first)."""
    event_id = await api.create_event(seats=10,
                                      price_tiers=[{"name": "Stalls", "price_minor": 5000}])
    await conn.execute(
        "INSERT INTO price_tiers (event_id, tier_id, price_version, name, price_minor) "
        "SELECT event_id, tier_id, price_version + 1, name, price_minor * 2 "
        "FROM price_tiers WHERE event_id = $1", event_id)
    body = await _hold(conn, event_id, await api.account(conn), [4])
    assert (len(body["seats"]), body["amount_minor"]) == (1, 5000)
    await audit_clean(conn)


async def test_a_seat_taken_over_from_an_expired_hold_is_logged_as_reclaimed(
        api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=10, hold_ttl_seconds=1)
    first = await _hold(conn, event_id, await api.account(conn), [5])
    await conn.execute("UPDATE seat_inventory SET hold_expires_at = now() - interval '1 s' "
                       "WHERE event_id = $1 AND seat_id = 5", event_id)
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 s' "
                       "WHERE hold_id = $1", uuid.UUID(first["hold_id"]))
    await _hold(conn, event_id, await api.account(conn), [5])  # before any sweep
    logged = await conn.fetch("SELECT hold_id, seat_id, prior_status, reason "
                              "FROM hold_releases WHERE event_id = $1", event_id)
    assert [(str(r["hold_id"]), r["seat_id"], r["prior_status"], r["reason"])
            for r in logged] == [(first["hold_id"], 5, "HELD", "reclaimed")]
    await audit_clean(conn)


async def test_releasing_one_hold_leaves_the_accounts_others(api: Api, conn: Any) -> None:
    """Three holds of one account, released one at a time in an order that is neither
    theirs nor its reverse: each release ends that hold and frees its seat only."""
    event_id = await api.create_event(seats=10, max_tickets_per_account=6)
    account = await api.account(conn)
    holds = [(await _hold(conn, event_id, account, [n]))["hold_id"] for n in (1, 2, 3)]
    released: set[str] = set()
    for n in (1, 2, 0):
        await conn.execute("SELECT onsale_release($1, $2)", uuid.UUID(holds[n]), account)
        released.add(holds[n])
        statuses = {str(r["hold_id"]): r["status"] for r in await conn.fetch(
            "SELECT hold_id, status FROM holds WHERE event_id = $1", event_id)}
        assert statuses == {h: "RELEASED" if h in released else "HELD" for h in holds}
        seats = [r["status"] for r in await conn.fetch(
            "SELECT status FROM seat_inventory WHERE event_id = $1 AND seat_id IN (1, 2, 3) "
            "ORDER BY seat_id", event_id)]
        assert seats == ["AVAILABLE" if h in released else "HELD" for h in holds]
    await audit_clean(conn)
