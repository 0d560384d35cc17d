"""A random draw that even the operator cannot predict, against real PostgreSQL and
Valkey: the event commits to a round of a beacon chain (the tests' own, served by an
HTTP relay, since there is no network here and nobody can make a public chain's future
round); at the sale the pre-queue closes and the draw waits, through a relay that is
down and one that lies, until the round is published; then the places follow
sha256(seed ‖ randomness), and the published document checks out with the verifier.
When the round never comes, the operator falls back to the seed alone, visibly, and
only once the round is overdue."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio

from onsale.core.audit import run_audit
from onsale.edge.admitter import Admitter
from onsale.edge.beacon import Round
from onsale.edge.beacon_relay import fetch_round
from onsale.edge.draw import check_beacon, draw_order, mixed_key, verify_document
from onsale.edge.draw_beacon import BeaconWait
from onsale.embedded import EmbeddedValkey
from onsale.kernel.beacon_chain import Chain, round_to_draw
from onsale.kernel.timefmt import parse_utc_iso
from onsale.web.pages import page_routes
from tests.conftest import Api
from tests.integration.beacon_support import OwnChain, Relay
from tests.integration.edge_support import (
    admitter_for,
    edge_api,
    join_all,
    keys,
    new_accounts,
    queue_event,
    refresh,
    tick_until,
)

RELAYS = ["http://liar", "http://honest"]


def beacon_settings(chain: OwnChain, tmp_path: Path) -> dict[str, Any]:
    return {"beacon": str(chain.info_file(tmp_path)), "beacon_relays": ",".join(RELAYS),
            "beacon_grace_seconds": 10}


def waiting_admitter(api: Api, relay: Relay) -> Admitter:
    admitter = admitter_for(api, targets=None)

    async def fetch(relays: Sequence[str], chain: Chain, number: int) -> Round | None:
        return await fetch_round(relays, chain, number,
                                 transport=httpx.ASGITransport(relay.app))
    admitter.beacons = BeaconWait(RELAYS, fetch=fetch)
    return admitter


async def open_sale_now(conn: Any, event_id: int, chain: OwnChain) -> int:
    """An operator moves the sale to now (the tests cannot wait for a date): the event
    commits to the first round due after it, as creating it then would have."""
    number = chain.chain.first_round_after(time.time())
    await conn.execute(
        "UPDATE events SET onsale_at = now(), "
        "beacon_commitment = jsonb_set(beacon_commitment, '{round}', to_jsonb($2::bigint)) "
        "WHERE event_id = $1", event_id, number)
    return number


async def documents(api: Api, event_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    async with api.client() as c:
        draw = (await c.get(f"/api/events/{event_id}/queue/draw")).json()
        event = (await c.get(f"/api/events/{event_id}")).json()["queue"]["draw"]
    return draw, event


async def pages(api: Api, event_id: int, shopper: uuid.UUID) -> str:
    """The event's page and its waiting room's, as a shopper reads them (words only)."""
    if not any(getattr(r, "path", "") == "/events/{event_id}" for r in api.app.router.routes):
        api.app.router.routes[:0] = page_routes()
    async with api.client(shopper, admit=False) as c:
        html = [(await c.get(f"/events/{event_id}{tail}")).text for tail in ("", "/queue")]
    return " ".join(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", h)) for h in html)


async def audit_clean(conn: Any) -> None:
    assert {name for name, rows in (await run_audit(conn)).items() if rows} == set()


async def test_the_draw_waits_for_the_committed_round_then_mixes_it_in(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any, tmp_path: Path) -> None:
    chain = OwnChain(period=1)
    relay = Relay(chain)
    relay.down = True
    async with edge_api(db_url, valkey.url, **beacon_settings(chain, tmp_path)) as api:
        event_id = await queue_event(api, queue_policy="random",
                                     onsale_at="2999-01-01T00:00:00Z")
        _, before = await documents(api, event_id)
        far = chain.chain.first_round_after(parse_utc_iso("2999-01-01T00:00:00Z").timestamp())
        assert before["beacon"]["round"] == far and before["beacon"]["state"] == "waiting"
        assert before["beacon"]["chain_hash"] == chain.chain.hash
        visitors = await join_all(api, await new_accounts(conn, 12), event_id,
                                  concurrently=False)
        committed_round = await open_sale_now(conn, event_id, chain)
        admitter = waiting_admitter(api, relay)
        await refresh(api)

        async def drawing() -> bool:
            status = await redis_client.hgetall(keys(event_id).status)
            return status.get(b"draw") == b"closed" and status.get(b"state") == b"drawing"
        await tick_until(admitter, drawing)
        # The relays are down: the pre-queue is closed, nothing is drawn or revealed.
        draw, event = await documents(api, event_id)
        assert draw["seed"] is None and draw["beacon"]["outcome"] is None
        assert draw["beacon"]["commitment"]["round"] == committed_round
        assert event["beacon"]["state"] == "waiting"
        await refresh(api)
        for visitor in visitors:
            await visitor.poll()
        assert {v.last["state"] for v in visitors} == {"prequeue"}
        assert {v.last.get("place") for v in visitors} <= {None, 0}

        relay.down = False  # the round comes out; one relay lies about it

        async def drawn() -> bool:
            return await redis_client.hget(keys(event_id).status, "draw") == b"drawn"
        await tick_until(admitter, drawn)
        draw, event = await documents(api, event_id)
        beacon = draw["beacon"]
        closed_at = parse_utc_iso(beacon["closed_at"]).timestamp()
        used = round_to_draw(beacon["commitment"], closed_at)
        assert beacon["outcome"]["round"] == used >= committed_round
        assert ("liar", used) in relay.asked and ("honest", used) in relay.asked
        assert beacon["outcome"]["signature"] == chain.sign(used)  # the honest relay's
        assert verify_document(draw) == []
        randomness, problems, notes = check_beacon(beacon)
        assert problems == [] and randomness == beacon["outcome"]["randomness"]
        assert "not one this verifier knows" in notes[0]  # the tests' chain
        order = draw_order(mixed_key(draw["seed"], bytes.fromhex(randomness)),
                           draw["participants"])
        assert order != draw_order(draw["seed"], draw["participants"])
        assert (event["beacon"]["state"], event["beacon"]["drawn_round"]) == ("drawn", used)
        shown = await pages(api, event_id, visitors[0].account)
        assert f"round {committed_round} of the public randomness beacon testnet" in shown
        assert f"The draw used round {used}." in shown
        assert "drew with the secret seed alone" not in shown
        await refresh(api)
        for visitor in visitors:
            await visitor.poll()
        assert {str(v.account): v.last["place"] for v in visitors} == {
            account: i for i, account in enumerate(order, start=1)}
        await audit_clean(conn)


async def test_the_operator_falls_back_to_the_seed_alone_only_when_the_round_is_overdue(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any, tmp_path: Path) -> None:
    chain = OwnChain(period=1)
    relay = Relay(chain)
    relay.down = True  # and stays down
    async with edge_api(db_url, valkey.url, **beacon_settings(chain, tmp_path)) as api:
        event_id = await queue_event(api, queue_policy="random",
                                     onsale_at="2999-01-01T00:00:00Z")
        fifo_id = await queue_event(api, onsale_at="2999-01-01T00:00:00Z")
        visitors = await join_all(api, await new_accounts(conn, 8), event_id,
                                  concurrently=False)
        await open_sale_now(conn, event_id, chain)
        admitter = waiting_admitter(api, relay)
        await refresh(api)

        async def drawing() -> bool:
            return await redis_client.hget(keys(event_id).status, "state") == b"drawing"
        await tick_until(admitter, drawing)
        url = f"/api/ops/events/{event_id}/draw/fallback"
        reason = {"reason": "The drand relays did not answer for an hour."}
        early = await api.admin_post(url, reason)
        assert (early.status_code, early.json()["code"]) == (409, "beacon_not_overdue")
        assert early.headers["content-type"] == "application/problem+json"
        async with api.client() as c:
            anonymous = await c.post(url, json=reason)
        assert anonymous.status_code == 401
        for bad in ({}, {"reason": ""}, {"reason": "   "}, {"reason": "x", "more": 1}):
            r = await api.admin_post(url, bad)
            assert (r.status_code, r.json()["code"]) == (400, "invalid_request"), bad
        unbeaconed = await api.admin_post(f"/api/ops/events/{fifo_id}/draw/fallback", reason)
        assert (unbeaconed.status_code, unbeaconed.json()["code"]) == (
            409, "beacon_not_committed")
        # An hour later (the clock moved for the test): the round is long overdue.
        hour_ago = time.time() - 3600
        await conn.execute(
            "UPDATE events SET draw_closed_at = to_timestamp($2), beacon_commitment = "
            "jsonb_set(beacon_commitment, '{round}', to_jsonb($3::bigint)) "
            "WHERE event_id = $1", event_id, hour_ago - 1,
            chain.chain.first_round_after(hour_ago - 1))
        fell = await api.admin_post(url, reason)
        assert fell.status_code == 200, fell.text
        assert fell.json()["outcome"]["fallback"]["reason"] == reason["reason"]

        async def drawn() -> bool:
            return await redis_client.hget(keys(event_id).status, "draw") == b"drawn"
        await tick_until(admitter, drawn)
        again = await api.admin_post(url, reason)
        assert (again.status_code, again.json()["code"]) == (409, "beacon_recorded")
        draw, event = await documents(api, event_id)
        assert verify_document(draw) == []
        _, problems, notes = check_beacon(draw["beacon"])
        assert problems == [] and any(reason["reason"] in n for n in notes)
        assert (event["beacon"]["state"], event["beacon"]["fallback_reason"]) == (
            "fallback", reason["reason"])
        shown = await pages(api, event_id, visitors[0].account)
        assert shown.count(reason["reason"]) == 2  # the event's page and the waiting room
        assert "drew with the secret seed alone" in shown
        order = draw_order(draw["seed"], draw["participants"])
        await refresh(api)
        for visitor in visitors:
            await visitor.poll()
        assert {str(v.account): v.last["place"] for v in visitors} == {
            account: i for i, account in enumerate(order, start=1)}
        await audit_clean(conn)
