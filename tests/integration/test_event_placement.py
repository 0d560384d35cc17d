"""Placing events on shards, reading them there, and moving them before their queue
opens (docs/scaling.md#placing-an-event, #moving-an-event), on two real PostgreSQL
servers: the directory (shard 1) and shard 2."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from onsale.core.event_rows import read_rows, tables_on, write_rows
from onsale.core.event_store import sync_event_copy
from onsale.core.read_model import event_listing
from tests.conftest import ADMIN_TOKEN, Api, TwoShards, asyncpg_connect, audit_clean, hold
from tests.integration.test_cli import env_for, run

INVENTORY = ("price_tiers", "seats", "seat_inventory", "ga_tiers", "ga_buckets")
GA = [{"name": "Floor", "price_minor": 5000, "capacity": 40, "stripes": 4}]
LATER = (datetime.now(UTC) + timedelta(days=1)).isoformat()


async def counts(conn: Any, event_id: int) -> dict[str, int]:
    """The event's rows per table on one database."""
    return {t: await conn.fetchval(f"SELECT count(*) FROM {t} WHERE event_id = $1", event_id)
            for t in ("events", "venue_layouts", "event_draw_secrets", *INVENTORY)}


async def placed(directory: Any, event_id: int) -> int | None:
    return await directory.fetchval(  # type: ignore[no-any-return]
        "SELECT shard_id FROM event_placement WHERE event_id = $1", event_id)


async def create(api: Api, **body: Any) -> dict[str, Any]:
    body.setdefault("name", "Placed night")
    body.setdefault("seats", 60)
    body.setdefault("queue_policy", "passthrough")
    r = await api.admin_post("/api/ops/events", body)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def move(api: Api, event_id: int, shard: Any) -> Any:
    return await api.admin_post(f"/api/ops/events/{event_id}/move", {"shard": shard})


async def test_an_event_created_on_shard_2_keeps_its_inventory_there(
        sharded_api: Api, two_shards: TwoShards) -> None:
    doc = await create(sharded_api, shard=2, seats=60, ga_tiers=GA, queue_policy="random",
                       hold_ttl_seconds=77, time_zone="Asia/Kolkata")
    event_id = doc["event_id"]
    assert doc["shard"] == 2 and len(doc["ga_tiers"]) == 1 and doc["seat_count"] == 60
    assert doc["time_zone"] == "Asia/Kolkata"  # read back on shard 2, in the transaction
    assert doc["links"]["venue"].startswith(f"/api/events/{event_id}/venue/")  # its hash
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        assert await placed(d, event_id) == 2
        # The directory: the catalogue row, the draw's secret, the layout; no inventory.
        assert await counts(d, event_id) == {
            "events": 1, "venue_layouts": 1, "event_draw_secrets": 1, "price_tiers": 0,
            "seats": 0, "seat_inventory": 0, "ga_tiers": 0, "ga_buckets": 0}
        # Shard 2: the events row the hold functions read, and all of the inventory.
        assert await counts(s2, event_id) == {
            "events": 1, "venue_layouts": 1, "event_draw_secrets": 0, "price_tiers": 3,
            "seats": 60, "seat_inventory": 60, "ga_tiers": 1, "ga_buckets": 4}
        on_d = await d.fetchrow("SELECT * FROM events WHERE event_id = $1", event_id)
        on_s2 = await s2.fetchrow("SELECT * FROM events WHERE event_id = $1", event_id)
        same = {k: v for k, v in on_d.items() if k != "created_at"}  # each its own now()
        assert same == {k: v for k, v in on_s2.items() if k != "created_at"}
        assert on_s2["hold_ttl_seconds"] == 77 and on_s2["time_zone"] == "Asia/Kolkata"
        assert on_s2["draw_commitment"] is not None
        etags = [await c.fetchval("SELECT etag FROM venue_layouts WHERE event_id = $1",
                                  event_id) for c in (d, s2)]
        assert etags[0] == etags[1]
        # The id is the directory's: the next one there comes after it.
        assert await d.fetchval("SELECT max(event_id) FROM events") == event_id
        await audit_clean(d)
        await audit_clean(s2)
    # The layout routes read the directory's copy; they serve the hash the document names.
    async with sharded_api.client() as c:
        venue = await c.get(doc["links"]["venue"])
        read = await c.get(f"/api/events/{event_id}")  # on shard 2, through the placement
    assert venue.status_code == 200 and venue.json()["event_id"] == event_id
    assert read.json()["time_zone"] == "Asia/Kolkata"


async def test_a_new_event_goes_to_the_shard_with_fewest_events_on_sale(
        sharded_api: Api, two_shards: TwoShards) -> None:
    # On sale now (the default): each one counts for its shard; the lowest on a tie.
    homes = [(await create(sharded_api))["shard"] for _ in range(3)]
    assert homes == [1, 2, 1]
    # Not on sale yet: counts for nothing, so shard 2 (one on sale) against shard 1 (two).
    assert (await create(sharded_api, onsale_at=LATER))["shard"] == 2
    assert (await create(sharded_api, onsale_at=LATER))["shard"] == 2


async def test_a_shard_not_listed_or_not_active_is_refused(
        sharded_api: Api, two_shards: TwoShards) -> None:
    async with asyncpg_connect(two_shards.directory) as d:
        before = await d.fetchval("SELECT count(*) FROM events")
        missing = await sharded_api.admin_post("/api/ops/events", {"name": "x", "shard": 9})
        assert (missing.status_code, missing.json()["code"]) == (422, "shard_not_found")
        malformed = await sharded_api.admin_post("/api/ops/events", {"name": "x", "shard": "2"})
        assert (malformed.status_code, malformed.json()["code"]) == (400, "invalid_request")
        await d.execute("UPDATE shards SET state = 'retired' WHERE shard_id = 2")
        retired = await sharded_api.admin_post("/api/ops/events", {"name": "x", "shard": 2})
        assert (retired.status_code, retired.json()["code"]) == (409, "shard_not_active")
        # Not asked for: the retired shard is never chosen.
        assert (await create(sharded_api, onsale_at=LATER))["shard"] == 1
        assert await d.fetchval("SELECT count(*) FROM events") == before + 1


async def test_a_retried_create_on_shard_2_answers_the_first_event(
        sharded_api: Api, two_shards: TwoShards) -> None:
    body = {"name": "Keyed night", "seats": 30, "shard": 2, "queue_policy": "passthrough"}
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Idempotency-Key": "create-once"}
    async with sharded_api.client() as c:
        first = await c.post("/api/ops/events", json=body, headers=headers)
        again = await c.post("/api/ops/events", json=body, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true" and again.json() == first.json()
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        assert await d.fetchval("SELECT count(*) FROM events WHERE name = 'Keyed night'") == 1
        assert await s2.fetchval("SELECT count(*) FROM events") == 1
        # The key is the directory's; shard 2 has none.
        assert await s2.fetchval("SELECT count(*) FROM idempotency_keys") == 0


async def test_events_are_read_on_their_own_shards(sharded_api: Api,
                                                   two_shards: TwoShards) -> None:
    early = await create(sharded_api, name="On two", shard=2, ga_tiers=GA,
                         onsale_at=(datetime.now(UTC) + timedelta(hours=1)).isoformat())
    late = await create(sharded_api, name="On one", shard=1, onsale_at=LATER)
    first = await create(sharded_api, name="Now on two", shard=2)
    async with asyncpg_connect(two_shards.shard2) as s2:  # a GA place goes: read live there
        await s2.execute("UPDATE ga_buckets SET available = available - 1 "
                         "WHERE event_id = $1 AND stripe = 0", early["event_id"])
    async with sharded_api.client() as c:
        one = await c.get(f"/api/events/{early['event_id']}")
        listing = await c.get("/api/events")
        unknown = await c.get("/api/events/999999")
    assert one.status_code == 200 and one.json()["ga_tiers"][0]["available"] == 39
    assert "shard" not in one.json()  # the shoppers' document does not say
    assert [e["event_id"] for e in listing.json()["events"]] == [
        first["event_id"], early["event_id"], late["event_id"]]  # by on-sale time
    assert [e["name"] for e in listing.json()["events"]] == ["Now on two", "On two", "On one"]
    assert unknown.status_code == 404 and unknown.json()["code"] == "event_not_found"
    # The operator's console (web/ops_pages.py) reads each event with its shard.
    listing = await event_listing(sharded_api.app.state.shared.shard_set, operator=True)
    assert [(e["event_id"], e["shard"]) for e in listing.events] == [
        (first["event_id"], 2), (early["event_id"], 2), (late["event_id"], 1)]


async def test_an_event_moves_before_its_queue_opens_and_sells_there(
        sharded_api: Api, two_shards: TwoShards) -> None:
    doc = await create(sharded_api, shard=1, seats=40, ga_tiers=GA, onsale_at=LATER,
                       time_zone="America/New_York")
    event_id = doc["event_id"]
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        before = await counts(d, event_id)
        # The operator changes the queue in the directory before the move: it travels.
        await d.execute("UPDATE events SET admission_rate_max = 1234 WHERE event_id = $1",
                        event_id)
        r = await move(sharded_api, event_id, 2)
        assert r.status_code == 200, r.text
        assert (r.json()["shard"], r.json()["moved_from"]) == (2, 1)
        assert r.json()["rows_copied"]["seat_inventory"] == 40
        assert r.json()["time_zone"] == "America/New_York"  # read on shard 2 after the switch
        assert await placed(d, event_id) == 2
        after_d, after_s2 = await counts(d, event_id), await counts(s2, event_id)
        assert all(after_d[t] == 0 for t in INVENTORY)  # gone from the directory's shard
        assert {t: after_s2[t] for t in INVENTORY} == {t: before[t] for t in INVENTORY}
        assert (after_d["events"], after_d["venue_layouts"]) == (1, 1)  # the catalogue stays
        assert await s2.fetchval("SELECT admission_rate_max FROM events WHERE event_id = $1",
                                 event_id) == 1234
        # Read there now, and sold there once the sale opens.
        async with sharded_api.client() as c:
            read = await c.get(f"/api/events/{event_id}")
        assert read.status_code == 200 and read.json()["ga_tiers"][0]["available"] == 40
        assert read.json()["time_zone"] == "America/New_York"
        for conn in (d, s2):
            await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1",
                               event_id)
        account = await sharded_api.account(d)
        async with sharded_api.client(account) as c:
            held = await hold(c, event_id, [3, 4])
        assert held.status_code == 201, held.text
        hold_id = uuid.UUID(held.json()["hold_id"])
        assert await s2.fetchval("SELECT status FROM holds WHERE hold_id = $1", hold_id) == "HELD"
        assert await d.fetchval("SELECT count(*) FROM holds WHERE event_id = $1", event_id) == 0
        await audit_clean(d)
        await audit_clean(s2)


async def test_an_event_moves_back_to_the_directory_s_shard(
        sharded_api: Api, two_shards: TwoShards) -> None:
    doc = await create(sharded_api, shard=2, seats=20, ga_tiers=GA, onsale_at=LATER,
                       time_zone="Europe/Berlin")
    event_id = doc["event_id"]
    r = await move(sharded_api, event_id, 1)
    assert r.status_code == 200, r.text
    assert r.json()["time_zone"] == "Europe/Berlin"  # the directory's own row now
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        assert await placed(d, event_id) == 1
        assert await counts(s2, event_id) == dict.fromkeys(
            ("events", "venue_layouts", "event_draw_secrets", *INVENTORY), 0)
        on_d = await counts(d, event_id)
        assert (on_d["seat_inventory"], on_d["ga_buckets"], on_d["events"]) == (20, 4, 1)
        await audit_clean(d)
        await audit_clean(s2)


async def test_a_move_is_refused_once_the_queue_is_close_or_open(
        sharded_api: Api, two_shards: TwoShards) -> None:
    open_now = (await create(sharded_api, shard=1))["event_id"]  # on sale now
    soon = (await create(sharded_api, shard=1, onsale_at=LATER,
                         prequeue_at=(datetime.now(UTC) + timedelta(minutes=2)).isoformat())
            )["event_id"]
    for event_id in (open_now, soon):
        r = await move(sharded_api, event_id, 2)
        assert (r.status_code, r.json()["code"]) == (409, "event_already_open"), r.text
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        for event_id in (open_now, soon):
            assert await placed(d, event_id) == 1
            assert (await counts(d, event_id))["seat_inventory"] == 60
            assert (await counts(s2, event_id))["seat_inventory"] == 0
    bad = await move(sharded_api, soon, 9)
    assert (bad.status_code, bad.json()["code"]) == (422, "shard_not_found")
    missing = await move(sharded_api, 999999, 2)
    assert (missing.status_code, missing.json()["code"]) == (404, "event_not_found")


async def test_a_move_run_again_clears_what_a_crashed_one_left(
        sharded_api: Api, two_shards: TwoShards) -> None:
    """A move that crashed after its switch leaves the old copy, unrouted; the same
    move run again finds the event in place and removes that copy."""
    event_id = (await create(sharded_api, shard=2, ga_tiers=GA, onsale_at=LATER))["event_id"]
    inventory = tables_on(shard_is_directory=True)
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        async with d.transaction():  # the copy a crashed move 1 -> 2 would have left
            await write_rows(d, await read_rows(s2, event_id, inventory), inventory)
        assert (await counts(d, event_id))["seat_inventory"] == 60
        r = await move(sharded_api, event_id, 2)
        assert r.status_code == 200 and r.json()["moved_from"] == 2
        assert all(v == 0 for t, v in (await counts(d, event_id)).items() if t in INVENTORY)
        assert (await counts(s2, event_id))["seat_inventory"] == 60
        await audit_clean(d)
        await audit_clean(s2)


async def test_the_command_creates_on_a_shard_and_moves(two_shards: TwoShards) -> None:
    env = env_for(two_shards.directory)
    created = run("event", "create", "--name", "CLI placed", "--seats", "30", "--shard", "2",
                  "--onsale-at", LATER, env=env)
    assert created.returncode == 0, created.stderr
    event_id = int(created.stdout.strip())
    moved = run("event", "move", str(event_id), "--shard", "1", env=env)
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.startswith(f"event {event_id} moved from shard 2 to shard 1 (")
    again = run("event", "move", str(event_id), "--shard", "1", env=env)
    assert again.stdout.strip() == f"event {event_id} is on shard 1 already"
    refused = run("event", "create", "--name", "Nowhere", "--shard", "7", env=env)
    assert (refused.returncode, refused.stderr.strip()) == (
        2, "onsale event create: Shard 7 is not listed.")
    async with asyncpg_connect(two_shards.directory) as d:
        assert await placed(d, event_id) == 1
        assert (await counts(d, event_id))["seat_inventory"] == 30


async def test_a_queue_change_in_the_directory_reaches_the_shard_s_copy(
        sharded_api: Api, two_shards: TwoShards) -> None:
    """The event document is read on the shard: what the directory changes after the
    create (the waiting room's settings, the draw) is copied there by sync_event_copy."""
    event_id = (await create(sharded_api, shard=2, onsale_at=LATER))["event_id"]
    shards = sharded_api.app.state.shared.shard_set
    async with asyncpg_connect(two_shards.directory) as d, \
            asyncpg_connect(two_shards.shard2) as s2:
        await d.execute("UPDATE events SET queue_policy = 'fifo', pow_difficulty = 7, "
                        "draw_seed = 'abc', drawn_at = now() WHERE event_id = $1", event_id)
        await sync_event_copy(d, shards, event_id)
        row = await s2.fetchrow("SELECT queue_policy, pow_difficulty, draw_seed, "
                                "hold_ttl_seconds FROM events WHERE event_id = $1", event_id)
        assert tuple(row) == ("fifo", 7, "abc", 300)
    async with sharded_api.client() as c:
        queue = (await c.get(f"/api/events/{event_id}")).json()["queue"]
    assert (queue["policy"], queue["pow_difficulty"]) == ("fifo", 7)
