"""onsale_ga_hold_batch called directly, on the paths every other test missed
(docs/invariants.md#mutation-testing): the sale opening at exactly its time, a decoy
event whose tier has the same number, elements asking too much, exactly what is left,
nothing, or exactly the most a hold may, expired holds of the tier (and others' that are
not), one key text of two accounts on both paths, both account limits in every hold
state and across tiers, the stripe locked and the buckets changed, and the lock wait
each element reports."""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.conftest import Api

BATCH = ("SELECT i, status_code, body, lock_wait_ms, replayed FROM onsale_ga_hold_batch("
         "$1, $2::smallint, $3::uuid[], $4::text[], $5::text[], $6::int[]) ORDER BY i")


async def batch(conn: Any, event_id: int, elements: list[tuple[uuid.UUID, int]],
                tier_id: int = 1, keys: list[str] | None = None) -> list[dict[str, Any]]:
    keys = keys or [uuid.uuid4().hex for _ in elements]
    rows = await conn.fetch(BATCH, event_id, tier_id, [a for a, _ in elements], keys,
                            ["d"] * len(elements), [q for _, q in elements])
    out = []
    for r in rows:
        body = r["body"]
        out.append({"status": r["status_code"], "replayed": r["replayed"],
                    "wait": r["lock_wait_ms"],
                    "body": json.loads(body) if isinstance(body, str) else body})
    return out


def tier(name: str, price: int, capacity: int = 20, stripes: int = 1,
         **extra: Any) -> dict[str, Any]:
    return {"name": name, "price_minor": price, "capacity": capacity, "stripes": stripes,
            "max_per_hold": 4, **extra}


async def expired_hold(conn: Any, api: Api, event_id: int, tier_id: int = 1) -> uuid.UUID:
    """A GA hold of the tier past its deadline, not swept yet."""
    [made] = await batch(conn, event_id, [(await api.account(conn), 1)], tier_id)
    assert made["status"] == 201, made
    hold_id = uuid.UUID(made["body"]["hold_id"])
    await conn.execute("UPDATE holds SET expires_at = now() - interval '1 minute' "
                       "WHERE hold_id = $1", hold_id)
    return hold_id


async def test_the_sale_opens_at_exactly_its_time_and_the_tier_is_this_events(
        api: Api, conn: Any) -> None:
    decoy = await api.create_event(seats=0, ga_tiers=[tier("Decoy", 7000, max_per_hold=1)])
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    account = await api.account(conn)
    async with conn.transaction():  # now() is the transaction's
        await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1", event_id)
        [made] = await batch(conn, event_id, [(account, 3)])
    assert made["status"] == 201, made
    assert made["body"]["status"] == "HELD" and made["body"]["amount_minor"] == 15_000
    left = await conn.fetchval("SELECT sum(available) FROM ga_buckets WHERE event_id = $1",
                               decoy)
    assert left == 20  # the decoy's stripe untouched


async def test_what_fits_is_taken_and_what_does_not_is_refused_here(api: Api, conn: Any) -> None:
    """Three places left: an element of 4 is refused at once (the decoy's places do not
    count), one of exactly 3 goes on; a zero and one of exactly the most a hold may are
    judged as onsale_ga_hold would."""
    await api.create_event(seats=0, ga_tiers=[tier("Decoy", 1000)])
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000),
                                                         tier("Balcony", 3000)])
    await conn.execute("UPDATE ga_buckets SET available = 3, sold = 17 WHERE event_id = $1 "
                       "AND tier_id = 1", event_id)
    a, b, c = [await api.account(conn) for _ in range(3)]
    big, exact = await batch(conn, event_id, [(a, 4), (b, 3)])
    assert (big["status"], big["body"]["code"]) == (409, "insufficient_quantity")
    assert exact["status"] == 201 and big["wait"] == 0
    zero, most = await batch(conn, await api.create_event(
        seats=0, ga_tiers=[tier("Floor", 5000)]), [(a, 0), (c, 4)])
    assert zero["status"] is None and most["status"] == 201


async def test_only_this_tiers_held_holds_past_their_deadline_wait_for_the_lock(
        api: Api, conn: Any) -> None:
    """Sold out: an element is refused at once, unless a hold of this tier is held past
    its deadline (its places may come back: the locked path decides, here 0, the spread
    stage alone). Another event's, another tier's, or an ended hold's do not count."""
    decoy = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000),
                                                         tier("Balcony", 3000)])
    await expired_hold(conn, api, decoy)
    await expired_hold(conn, api, event_id, tier_id=2)
    ended = await expired_hold(conn, api, event_id)
    await conn.execute("UPDATE holds SET status = 'EXPIRED' WHERE hold_id = $1", ended)
    due = await expired_hold(conn, api, event_id)  # live again until the end
    await conn.execute("UPDATE holds SET expires_at = now() + interval '1 hour' "
                       "WHERE hold_id = $1", due)
    await conn.execute("UPDATE ga_buckets SET available = 0, sold = 18 WHERE event_id = $1 "
                       "AND tier_id = 1", event_id)
    [refused] = await batch(conn, event_id, [(await api.account(conn), 2)])
    assert refused["status"] == 409
    async with conn.transaction():  # exactly at its deadline: due
        await conn.execute("UPDATE holds SET expires_at = now() WHERE hold_id = $1", due)
        [waited] = await batch(conn, event_id, [(await api.account(conn), 2)])
    assert waited["status"] == 0


async def test_a_key_is_the_accounts_own(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    alice, bob = await api.account(conn), await api.account(conn)
    [first] = await batch(conn, event_id, [(alice, 1)], keys=["shared"])
    assert first["status"] == 201
    [second] = await batch(conn, event_id, [(bob, 1)], keys=["shared"])
    assert second["status"] == 201 and not second["replayed"]
    assert second["body"]["hold_id"] != first["body"]["hold_id"]
    [again] = await batch(conn, event_id, [(bob, 1)], keys=["shared"])  # bob's replay
    assert again["replayed"] and again["body"] == second["body"] and again["wait"] == 0


async def test_both_limits_count_this_accounts_live_holds_only(api: Api, conn: Any) -> None:
    tiers = [tier("Floor", 5000, capacity=40, max_per_account=4),
             tier("Balcony", 3000, capacity=40)]
    decoy = await api.create_event(seats=0, ga_tiers=tiers, max_tickets_per_account=5)
    event_id = await api.create_event(seats=0, ga_tiers=tiers, max_tickets_per_account=5)
    alice, bob = await api.account(conn), await api.account(conn)
    assert (await batch(conn, decoy, [(alice, 3)]))[0]["status"] == 201  # another event
    assert (await batch(conn, event_id, [(bob, 3)]))[0]["status"] == 201  # another account

    async def alices(quantity: int, status: str, deadline: str = "expires_at",
                     tier_id: int = 1) -> None:
        [made] = await batch(conn, event_id, [(alice, quantity)], tier_id)
        assert made["status"] == 201, made
        await conn.execute(f"UPDATE holds SET status = $2, expires_at = {deadline} "
                           "WHERE hold_id = $1", uuid.UUID(made["body"]["hold_id"]), status)

    await alices(3, "HELD", "now() - interval '1 minute'")  # past its deadline
    await alices(3, "RELEASED")  # given back
    await alices(1, "CONFIRMED")
    await alices(1, "PAYMENT_PENDING")
    await alices(1, "HELD")
    [at_tier_limit] = await batch(conn, event_id, [(alice, 1)])  # 3 + 1: the tier's 4
    assert at_tier_limit["status"] == 201
    [over_tier] = await batch(conn, event_id, [(alice, 1)])
    assert over_tier["body"] == {"code": "ticket_limit_exceeded", "limit": 4, "owned": 4,
                                 "requested": 1, "tier_id": 1}
    [at_event_limit] = await batch(conn, event_id, [(alice, 1)], tier_id=2)  # 4 + 1: 5
    assert at_event_limit["status"] == 201
    [over_event] = await batch(conn, event_id, [(alice, 1)], tier_id=2)
    assert over_event["body"] == {"code": "ticket_limit_exceeded", "limit": 5, "owned": 5,
                                  "requested": 1}


async def test_an_exact_deadline_ends_a_holds_count(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000,
                                                              max_per_account=2)],
                                      max_tickets_per_account=2)
    account = await api.account(conn)
    [made] = await batch(conn, event_id, [(account, 2)])
    async with conn.transaction():
        await conn.execute("UPDATE holds SET expires_at = now() WHERE hold_id = $1",
                           uuid.UUID(made["body"]["hold_id"]))
        assert (await batch(conn, event_id, [(account, 2)]))[0]["status"] == 201


async def test_the_stripe_is_this_tiers_and_only_it_is_taken_from(api: Api, conn: Any) -> None:
    """One place left on the one stripe, and a hold of the tier past its deadline (so
    the locked path runs): an element of 2 goes to the spread stage; the decoy's stripe
    with the same number keeps its places whatever happens."""
    decoy = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    await expired_hold(conn, api, event_id)
    await conn.execute("UPDATE ga_buckets SET available = 1, sold = sold + available - 1 "
                       "WHERE event_id = $1", event_id)
    [spread] = await batch(conn, event_id, [(await api.account(conn), 2)])
    assert spread["status"] == 0
    [made] = await batch(conn, event_id, [(await api.account(conn), 1)])
    assert made["status"] == 201 and made["wait"] > 0
    assert await conn.fetchval("SELECT available FROM ga_buckets WHERE event_id = $1",
                               decoy) == 20


async def test_a_refusal_at_once_replays_only_the_accounts_own_key(api: Api, conn: Any) -> None:
    """Sold out, so the element is judged before any lock: bob's key text is alice's,
    with the same request digest, and still bob is told there is nothing left."""
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000)])
    alice, bob = await api.account(conn), await api.account(conn)
    [first] = await batch(conn, event_id, [(alice, 1)], keys=["shared"])
    assert first["status"] == 201
    await conn.execute("UPDATE ga_buckets SET available = 0, sold = sold + available "
                       "WHERE event_id = $1", event_id)
    [refused] = await batch(conn, event_id, [(bob, 1)], keys=["shared"])
    assert (refused["status"], refused["replayed"]) == (409, False), refused
    assert refused["body"]["code"] == "sold_out"
    [again] = await batch(conn, event_id, [(alice, 1)], keys=["shared"])  # alice's own
    assert again["replayed"] and again["body"] == first["body"] and again["wait"] == 0


async def test_the_tier_limit_counts_this_tiers_holds_and_only_its_buckets_change(
        api: Api, conn: Any) -> None:
    """Alice holds 2 of the Balcony; the Floor's own limit of 2 still lets her take 2
    there, and the Balcony's stripe of the same number keeps its places. In one batch,
    a replay of a made hold reports no lock wait, the new hold beside it does."""
    event_id = await api.create_event(
        seats=0, ga_tiers=[tier("Floor", 5000, max_per_account=2), tier("Balcony", 3000)],
        max_tickets_per_account=10)
    alice, bob = await api.account(conn), await api.account(conn)
    [balcony] = await batch(conn, event_id, [(alice, 2)], tier_id=2, keys=["b"])
    assert balcony["status"] == 201
    [floor] = await batch(conn, event_id, [(alice, 2)], keys=["f"])
    assert floor["status"] == 201, floor
    buckets = await conn.fetch("SELECT tier_id, available, held FROM ga_buckets "
                               "WHERE event_id = $1 ORDER BY tier_id", event_id)
    assert [tuple(b) for b in buckets] == [(1, 18, 2), (2, 18, 2)]
    replay, made = await batch(conn, event_id, [(alice, 2), (bob, 1)], keys=["f", "g"])
    assert replay["replayed"] and replay["status"] == 201 and replay["wait"] == 0
    assert made["status"] == 201 and not made["replayed"] and made["wait"] > 0


async def test_the_locked_stripe_is_the_one_the_hold_takes_from(api: Api, conn: Any) -> None:
    """Two stripes, one full: an element either lands on the free stripe (201, its
    places from there) or is sent to the spread stage untouched, the full stripe's
    version unchanged. Each try is rolled back; both outcomes must be seen."""
    event_id = await api.create_event(seats=0, ga_tiers=[tier("Floor", 5000, capacity=10,
                                                              stripes=2)])
    await conn.execute("UPDATE ga_buckets SET available = 0, sold = 5 "
                       "WHERE event_id = $1 AND stripe = 0", event_id)
    async def buckets() -> dict[int, tuple[int, int]]:
        return {s: (a, v) for s, a, v in await conn.fetch(
            "SELECT stripe, available, version FROM ga_buckets WHERE event_id = $1",
            event_id)}

    before = await buckets()
    seen = set()
    for _ in range(40):
        tr = conn.transaction()
        await tr.start()
        try:
            [r] = await batch(conn, event_id, [(await api.account(conn), 1)])
            rows = await buckets()
            if r["status"] == 201:
                stripe = await conn.fetchval("SELECT stripe FROM ga_hold_places "
                                             "WHERE hold_id = $1",
                                             uuid.UUID(r["body"]["hold_id"]))
                assert stripe == 1 and rows[1][0] == 4
            else:
                assert r["status"] == 0, r
                assert rows == before, rows
            seen.add(r["status"])
        finally:
            await tr.rollback()
    assert seen == {0, 201}
