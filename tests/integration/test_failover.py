"""A shard's primary dies mid-sale (issue 24; docs/operations.md#failover): the shard is a
Patroni cluster of three nodes in strict synchronous mode with etcd holding the lease,
and onsale reaches it through HAProxy, which routes the shard's one address to the
leader. Real etcd, Patroni, PostgreSQL and HAProxy; core, the worker, the edge and the
payment simulator as separate processes (tests/stack.py).

The unplanned failover waits out Patroni's real 20 s lease; no shortcut.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis.asyncio

from onsale.core.migrate import migrate
from onsale.kernel import patroni_api
from onsale.kernel.timeline import QUERY as TIMELINE_QUERY
from onsale.patroni import (
    Etcd,
    HAProxy,
    PatroniCluster,
    start_etcd,
    start_haproxy,
    start_patroni_cluster,
)
from onsale.seatmap.bus import capture_keys
from tests.conftest import ADMIN_TOKEN, asyncpg_connect, audit_clean
from tests.integration.test_seatmap_crash import caught_up, start_cdc
from tests.seatmap_support import seatmap_settings
from tests.stack import APPROVE, Stack, eventually

SCOPE = "shard1"


@dataclass
class Ha:
    etcd: Etcd
    cluster: PatroniCluster
    proxy: HAProxy

    @property
    def dsn(self) -> str:
        return self.proxy.dsn(SCOPE)


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ha]:
    base = tmp_path_factory.mktemp("ha")
    etcd = start_etcd(base / "etcd")
    cluster: PatroniCluster | None = None
    proxy: HAProxy | None = None
    try:
        cluster = start_patroni_cluster(base, etcd, SCOPE, fast=True)
        proxy = start_haproxy(base / "haproxy", [cluster])
        yield Ha(etcd, cluster, proxy)
    finally:
        if proxy is not None:
            proxy.stop()
        if cluster is not None:
            cluster.stop()
        etcd.stop()


@pytest.fixture(scope="module")
async def ha_stack(ha: Ha, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with asyncpg_connect(ha.dsn) as conn:
        await migrate(conn)
    stack = Stack(ha.dsn, tmp_path_factory.mktemp("ha-stack"))
    try:
        stack.start_psp()
        stack.start_core()
        stack.start_worker(stack.ensure_redis())
        yield stack
    finally:
        stack.stop()


@dataclass
class Load:
    """What the shoppers were told: every 2xx kept, every refusal counted."""

    holds: dict[str, list[int]] = field(default_factory=dict)  # acknowledged: seats
    ga_holds: set[str] = field(default_factory=set)
    orders: set[str] = field(default_factory=set)
    refused: int = 0  # 503 inventory_unavailable
    unknown: int = 0  # no answer (a timeout, a cut connection): retried by key
    accepted_at: list[float] = field(default_factory=list)  # monotonic time of each 201
    served_at: list[float] = field(default_factory=list)  # each 201 or 409: an answer

    def first_accepted_after(self, t: float) -> float | None:
        return next((a for a in sorted(self.accepted_at) if a > t), None)

    def first_served_after(self, t: float) -> float | None:
        return next((a for a in sorted(self.served_at) if a > t), None)


async def _shop(stack: Stack, account: uuid.UUID, event_id: int, ga_event_id: int,
                seats: int, load: Load, stop: asyncio.Event, rng: random.Random) -> None:
    async with stack.client(account) as c:
        while not stop.is_set():
            key = uuid.uuid4().hex
            ga = rng.random() < 0.3
            body: dict[str, Any] = ({"ga": {"tier_id": 1, "quantity": 1}} if ga
                                    else {"seat_ids": rng.sample(range(1, seats + 1), 2)})
            target = ga_event_id if ga else event_id
            for _ in range(3):  # an unknown outcome is retried with the same key
                try:
                    r = await c.post(f"/api/events/{target}/holds", json=body,
                                     headers={"Idempotency-Key": key}, timeout=10)
                except httpx.HTTPError:
                    load.unknown += 1
                    continue
                break
            else:
                continue
            if r.status_code == 503:
                load.refused += 1
                await asyncio.sleep(0.2)
                continue
            if r.status_code == 409:  # taken, or the account's limit: served all the same
                load.served_at.append(time.monotonic())
            if r.status_code != 201:
                continue
            load.accepted_at.append(time.monotonic())
            load.served_at.append(time.monotonic())
            hold_id = r.json()["hold_id"]
            if ga:
                load.ga_holds.add(hold_id)
            else:
                load.holds[hold_id] = sorted(body["seat_ids"])
            if rng.random() < 0.5:
                with contextlib.suppress(httpx.HTTPError):
                    pay = await c.post(f"/api/holds/{hold_id}/checkout",
                                       json={"payment_method": APPROVE},
                                       headers={"Idempotency-Key": uuid.uuid4().hex},
                                       timeout=10)
                    if pay.status_code in (200, 201, 202):
                        load.orders.add(pay.json()["order_id"])
                    elif pay.status_code == 503:
                        load.refused += 1


async def _accounts(dsn: str, n: int) -> list[uuid.UUID]:
    async with asyncpg_connect(dsn) as conn:
        return [await conn.fetchval(
            "INSERT INTO accounts (email, password_hash) VALUES ($1, 'x') RETURNING account_id",
            f"f{uuid.uuid4().hex[:12]}@example.com") for _ in range(n)]


async def _event(stack: Stack, **body: Any) -> int:
    async with httpx.AsyncClient(base_url=stack.core_url, timeout=60) as c:
        r = await c.post("/api/ops/events", json={"name": "Failover night",
                                                  "queue_policy": "passthrough", **body},
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text
    return int(r.json()["event_id"])


async def _primary_conn(dsn: str, within: float = 60) -> Any:
    deadline = time.monotonic() + within
    while True:
        try:
            conn = await asyncpg.connect(dsn, timeout=2)
            if not await conn.fetchval("SELECT pg_is_in_recovery()"):
                return conn
            await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)


async def test_a_killed_primary_fails_over_and_every_acknowledged_write_survives(
        ha: Ha, ha_stack: Stack) -> None:
    """Concurrent seat holds, GA holds and checkouts; ``kill -9`` of the leader's Patroni
    and postmaster; the load goes on through the real 20 s lease. Every hold and order
    answered 2xx, before or after the kill, is on the new primary; the audit is clean;
    no seat has two sold orders; the seat map, streamed by a change-capture process
    through the same address, converges to what the new primary holds."""
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # a settled cluster
    # Room for every account to go on buying after the failover: at the default limit
    # of 6 tickets, 24 accounts reached it within the 4 s before the kill on a quiet
    # machine, and every hold after the failover was a 409 (nothing to accept again).
    seats = 10_000
    event_id = await _event(ha_stack, seats=seats, max_tickets_per_account=100)
    ga_event_id = await _event(ha_stack, seats=0, max_tickets_per_account=100,
                               ga_tiers=[{"name": "Floor", "price_minor": 5000,
                                          "capacity": 5000, "stripes": 4}])
    accounts = await _accounts(ha.dsn, 24)
    settings = seatmap_settings()
    assert patroni_api.declare_slot([n.rest for n in ha.cluster.nodes], settings.slot,
                                    ha.cluster.database)
    await asyncio.to_thread(ha.cluster.wait_slot, settings.slot)
    cdc, _ = start_cdc(ha.dsn, ha_stack.ensure_redis(), settings)
    meta = capture_keys(1).meta
    load, stop, rng = Load(), asyncio.Event(), random.Random(24)
    shoppers = [asyncio.create_task(_shop(ha_stack, a, event_id, ga_event_id, seats, load,
                                          stop, random.Random(rng.random())))
                for a in accounts]
    try:
        await asyncio.sleep(4)
        before = len(load.holds) + len(load.ga_holds)
        assert before > 0, "no hold was accepted before the kill"
        old = ha.cluster.leader()
        assert old is not None
        killed_at, lines_before = time.monotonic(), len(cdc.output)
        old.kill()
        new = await asyncio.to_thread(ha.cluster.wait_leader, 90, other_than=old.name)
        deadline = time.monotonic() + 60
        while load.first_accepted_after(killed_at + 0.5) is None:
            assert time.monotonic() < deadline, "holds were not accepted again"
            await asyncio.sleep(0.2)
        resumed = load.first_accepted_after(killed_at + 0.5)
        assert resumed is not None
        await asyncio.sleep(3)  # the load continues on the new primary
    finally:
        stop.set()
        await asyncio.gather(*shoppers, return_exceptions=True)
    print(f"\nfailover: leader {old.name} -> {new.name}; holds accepted again "
          f"{resumed - killed_at:.1f} s after the kill; {load.refused} refused (503), "
          f"{load.unknown} unknown outcomes retried; {len(load.holds)} seat holds, "
          f"{len(load.ga_holds)} GA holds, {len(load.orders)} orders acknowledged")

    conn = await _primary_conn(ha.dsn)
    try:
        rows = await conn.fetch("SELECT hold_id::text, seat_ids FROM holds "
                                "WHERE hold_id = ANY($1::uuid[])", list(load.holds))
        assert {r["hold_id"]: sorted(r["seat_ids"]) for r in rows} == load.holds
        kept = await conn.fetchval("SELECT count(*) FROM holds WHERE hold_id = ANY($1::uuid[])",
                                   list(load.ga_holds))
        assert kept == len(load.ga_holds)
        orders = await conn.fetchval(
            "SELECT count(*) FROM orders WHERE order_id = ANY($1::uuid[])", list(load.orders))
        assert orders == len(load.orders)
        seat_map = redis.asyncio.Redis.from_url(ha_stack.ensure_redis())
        try:  # from Patroni's copy of the slot, or rebuilt if the kill left it in doubt
            await eventually(lambda: caught_up(conn, seat_map, event_id), within=90)
            await eventually(lambda: caught_up(conn, seat_map, ga_event_id), within=30)
            timeline = (await conn.fetchrow(TIMELINE_QUERY))["timeline"]
            await eventually(lambda: _meta_timeline(seat_map, meta, timeline), within=30)
            rebuilt = [line.split(": ", 1)[-1].strip() for line in cdc.output[lines_before:]
                       if "rebuilding the seat maps" in line]
            print("seat map after the failover: " + (f"rebuilt ({rebuilt[-1]})" if rebuilt
                  else "went on from Patroni's copy of the slot, no refetch"))
        finally:
            await seat_map.aclose()
            cdc.stop()
            await asyncio.to_thread(ha.cluster.forget_slot, settings.slot)
        twice = await conn.fetchval(
            """SELECT count(*) FROM (SELECT oi.event_id, oi.seat_id FROM order_items oi
                 JOIN orders o USING (order_id) WHERE o.status = 'CONFIRMED' AND oi.valid
                 GROUP BY 1, 2 HAVING count(*) > 1) AS d""")
        assert twice == 0
        await audit_clean(conn)
    finally:
        await conn.close()
    # The old primary rejoins as a replica (rewound if it had to be) and refuses writes.
    ha.cluster.start_node(old)
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)
    await asyncio.to_thread(ha.cluster.forget_slot, settings.slot)  # its copy on the old one
    conn = await asyncpg.connect(old.dsn(), timeout=5)
    try:
        assert await conn.fetchval("SELECT pg_is_in_recovery()") is True
        with pytest.raises(asyncpg.exceptions.ReadOnlySQLTransactionError):
            await conn.execute("INSERT INTO accounts (email, password_hash) "
                               "VALUES ('late@example.com', 'x')")
    finally:
        await conn.close()


async def test_a_process_never_uses_a_node_on_an_older_timeline(ha: Ha) -> None:
    """Straight to a node: a standby is refused, and so is a primary on a timeline below
    one this process has seen at that address (what a deposed primary would be)."""
    from onsale.kernel.db import init_primary
    from onsale.kernel.timeline import NotThePrimary, Timelines

    leader = ha.cluster.leader()
    assert leader is not None
    standby = next(n for n in ha.cluster.nodes if n.name != leader.name)
    seen = Timelines()
    conn = await asyncpg.connect(leader.dsn(), timeout=5)
    try:
        await init_primary(conn, address="shard", timelines=seen)
        current = seen.highest("shard")
        assert current >= 1
        seen.seen["shard"] = current + 1  # as if a later promotion had been seen
        with pytest.raises(NotThePrimary, match="deposed"):
            await init_primary(conn, address="shard", timelines=seen)
    finally:
        await conn.close()
    conn = await asyncpg.connect(standby.dsn(), timeout=5)
    try:
        with pytest.raises(NotThePrimary, match="standby"):
            await init_primary(conn, address="shard", timelines=Timelines())
    finally:
        await conn.close()


def test_the_cluster_is_three_nodes_in_strict_synchronous_mode(ha: Ha) -> None:
    members = ha.cluster.members()
    roles = sorted(m["role"] for m in members)
    assert len(members) == 3 and roles.count("leader") == 1, members
    assert "sync_standby" in roles, members
    config = Path(ha.cluster.nodes[0].dir / "patroni.yml").read_text()
    assert '"synchronous_mode_strict": true' in config


def _start_worker(stack: Stack, crash_at: str | None = None) -> int | None:
    """A worker; with ``crash_at``, its exit status once that crash point killed it."""
    try:
        worker = stack.start_worker(stack.ensure_redis(), crash_at=crash_at)
    except RuntimeError:  # it died before it said it was serving
        assert stack.worker is None or stack.worker.proc.poll() is not None
        return -9
    if crash_at is None:
        return None
    return worker.wait_exit(120)


async def _hold_answer(stack: Stack, account: uuid.UUID, event_id: int,
                       within: float = 60) -> httpx.Response:
    """The first answer to a hold that is not a connection failure."""
    deadline = time.monotonic() + within
    async with stack.client(account) as c:
        while True:
            r = await c.post(f"/api/events/{event_id}/holds",
                             json={"seat_ids": [random.randrange(1, 200)]},
                             headers={"Idempotency-Key": uuid.uuid4().hex}, timeout=10)
            if r.status_code != 503 or r.json().get("resuming") or time.monotonic() > deadline:
                return r
            await asyncio.sleep(0.2)


async def test_the_sale_pauses_until_resumed_and_each_resume_step_survives_a_crash(
        ha: Ha, ha_stack: Stack) -> None:
    """Shortened: the leader key is deleted in etcd right after the kill, so Patroni
    promotes at once instead of after the 20 s lease. With no worker running, the new
    primary refuses holds (503, ``resuming``); a worker killed right after each resume
    step leaves it paused; a worker that runs them all resumes it, and the shard records
    the new timeline (and the directory its epoch)."""
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # a settled cluster
    event_id = await _event(ha_stack, seats=200)
    account = (await _accounts(ha.dsn, 1))[0]
    first = await _hold_answer(ha_stack, account, event_id)  # admitted before the failover
    assert first.status_code == 201, first.text
    assert ha_stack.worker is not None
    ha_stack.worker.stop()
    old = ha.cluster.leader()
    assert old is not None
    old.kill()
    ha.etcd.delete_leader(SCOPE)
    await asyncio.to_thread(ha.cluster.wait_leader, 60, other_than=old.name)
    paused = await _hold_answer(ha_stack, account, event_id)
    assert paused.status_code == 503, paused.text
    assert (paused.json()["code"], paused.json()["resuming"]) == ("inventory_unavailable", True)
    for step in ("resume_after_seatmap", "resume_after_reconcile", "resume_after_audit"):
        assert _start_worker(ha_stack, crash_at=step) == -9, step
        again = await _hold_answer(ha_stack, account, event_id)
        assert again.status_code == 503 and again.json()["resuming"] is True, (step, again.text)
    _start_worker(ha_stack)
    deadline = time.monotonic() + 60
    while (r := await _hold_answer(ha_stack, account, event_id)).status_code == 503:
        assert time.monotonic() < deadline, r.text
        await asyncio.sleep(0.5)
    assert r.status_code in (201, 409), r.text
    conn = await _primary_conn(ha.dsn)
    try:
        timeline = await conn.fetchval(
            "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int")
        assert timeline >= 2
        assert await conn.fetchval("SELECT timeline FROM shard_identity") == timeline
        assert await conn.fetchval("SELECT epoch FROM shards WHERE shard_id = 1") == timeline
        await audit_clean(conn)
    finally:
        await conn.close()
    ha.cluster.start_node(old)
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)


async def _until_accepted(stack: Stack, account: uuid.UUID, event_id: int,
                          within: float = 90) -> float:
    """Seconds until a hold is accepted (201) or refused as taken (409): served again."""
    started = time.monotonic()
    async with stack.client(account) as c:
        while True:
            try:
                r = await c.post(f"/api/events/{event_id}/holds",
                                 json={"seat_ids": [random.randrange(1, 200)]},
                                 headers={"Idempotency-Key": uuid.uuid4().hex}, timeout=10)
                if r.status_code in (201, 409):
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            assert time.monotonic() - started < within, "holds were not accepted again"
            await asyncio.sleep(0.2)


def _onsale(dsn: str, *args: str, env: dict[str, str] | None = None) -> str:
    import subprocess

    from tests.stack import ONSALE

    done = subprocess.run([ONSALE, *args],
                          env={**__import__("os").environ, "DATABASE_URL": dsn, **(env or {})},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _meta_timeline(r: redis.asyncio.Redis, meta: str, timeline: int) -> bool:
    return await r.hget(meta, "timeline") == str(timeline).encode()


async def test_a_planned_switchover_and_a_failover_back(ha: Ha, ha_stack: Stack) -> None:
    """``onsale shard switchover`` through Patroni's API: the sync standby takes over,
    the shard resumes on the new timeline and ``onsale shard list`` shows it; then the
    new leader is killed (shortened: its leader key deleted) and another node leads."""
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # a settled cluster
    import json

    event_id = await _event(ha_stack, seats=200)
    account = (await _accounts(ha.dsn, 1))[0]
    await _until_accepted(ha_stack, account, event_id)
    if ha_stack.worker is None or ha_stack.worker.proc.poll() is not None:
        _start_worker(ha_stack)
    # The change capture's slot, declared permanent by `onsale shard patroni`: Patroni
    # copies it to the standbys, and the seat maps go on across the switchover.
    settings = seatmap_settings()
    out = _onsale(ha.dsn, "shard", "patroni", "1", *(n.rest for n in ha.cluster.nodes),
                  env={"ONSALE_SEATMAP_SLOT": settings.slot})
    assert f"slot {settings.slot} declared permanent in Patroni" in out
    await asyncio.to_thread(ha.cluster.wait_slot, settings.slot)
    cdc, _ = start_cdc(ha.dsn, ha_stack.ensure_redis(), settings)
    seat_map = redis.asyncio.Redis.from_url(ha_stack.ensure_redis())
    meta = capture_keys(1).meta
    conn = await _primary_conn(ha.dsn)
    try:
        await eventually(lambda: caught_up(conn, seat_map, event_id), within=60)
    finally:
        await conn.close()
    generation = await seat_map.hget(meta, "generation")
    await asyncio.to_thread(ha.cluster.wait_slot, settings.slot)  # the copies still there
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # a copy restarts a standby
    before = ha.cluster.leader()
    assert before is not None
    started = time.monotonic()
    out = _onsale(ha.dsn, "shard", "switchover", "--shard", "1")
    assert f"switchover from {before.name}" in out
    after = await asyncio.to_thread(ha.cluster.wait_leader, 60, other_than=before.name)
    served = await _until_accepted(ha_stack, account, event_id)
    print(f"\nswitchover {before.name} -> {after.name}: holds accepted again "
          f"{time.monotonic() - started:.1f} s after the request ({served:.1f} s of waiting)")
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # the old leader rejoined
    listed = json.loads(_onsale(ha.dsn, "shard", "list", "--json"))[0]
    leaders = [m for m in listed["members"] if m["role"] == "leader"]
    assert [m["name"] for m in leaders] == [after.name]
    assert listed["epoch"] == leaders[0]["timeline"] >= 2
    assert all(m["pid"] for m in listed["members"]), listed  # all local here
    # A clean switchover leaves nothing in doubt: the capture goes on from Patroni's copy
    # of its slot on the new primary, the same generation, so no client refetches.
    await _until_accepted(ha_stack, account, event_id)
    conn = await _primary_conn(ha.dsn)
    try:
        await eventually(lambda: caught_up(conn, seat_map, event_id), within=60)
        await eventually(lambda: _meta_timeline(seat_map, meta, listed["epoch"]), within=30)
        assert await seat_map.hget(meta, "generation") == generation
    finally:
        await conn.close()
        await seat_map.aclose()
        cdc.stop()
        await asyncio.to_thread(ha.cluster.forget_slot, settings.slot)
    # And back, once the old leader streams again as a standby (strict synchronous mode
    # promotes only a synchronous standby): the new leader dies, another node leads.
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)
    after.kill()
    ha.etcd.delete_leader(SCOPE)
    third = await asyncio.to_thread(ha.cluster.wait_leader, 60, other_than=after.name)
    await _until_accepted(ha_stack, account, event_id)
    conn = await _primary_conn(ha.dsn)
    try:
        assert await conn.fetchval("SELECT timeline FROM shard_identity") > listed["epoch"]
        await audit_clean(conn)
    finally:
        await conn.close()
    assert third.name != after.name
    ha.cluster.start_node(after)
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)


async def test_a_postmaster_crash_is_restarted_in_place_without_a_failover(
        ha: Ha, ha_stack: Stack) -> None:
    """``kill -9`` of the leader's postmaster alone: Patroni restarts it on the same node
    and timeline, so nothing needs resuming; holds come back by themselves."""
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # a settled cluster
    import os
    import signal

    event_id = await _event(ha_stack, seats=200)
    account = (await _accounts(ha.dsn, 1))[0]
    await _until_accepted(ha_stack, account, event_id)
    leader = ha.cluster.leader()
    assert leader is not None
    conn = await _primary_conn(ha.dsn)
    try:
        timeline = await conn.fetchval("SELECT timeline FROM shard_identity")
    finally:
        await conn.close()
    pid = leader.postmaster_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    served = await _until_accepted(ha_stack, account, event_id)
    print(f"\npostmaster crash: holds accepted again after {served:.1f} s")
    assert (await asyncio.to_thread(ha.cluster.wait_leader, 30)).name == leader.name
    conn = await _primary_conn(ha.dsn)
    try:
        assert await conn.fetchval("SELECT timeline FROM shard_identity") == timeline
        await audit_clean(conn)
    finally:
        await conn.close()


async def test_a_frozen_patroni_never_answers_from_the_old_primary(
        ha: Ha, ha_stack: Stack) -> None:
    """``SIGSTOP`` of the leader's Patroni alone: its PostgreSQL runs on as a primary.
    Shortened: the leader key is deleted, so another node is promoted at once, while the
    frozen one still believes it leads. HAProxy stops routing to it within seconds (its
    /primary no longer answers) and cuts its sessions; a write that reached it waits for
    a synchronous standby that now follows the new leader, so it is never acknowledged.
    Every hold acknowledged, before or after, is on the new primary; after SIGCONT the
    old node rejoins as a replica."""
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)  # a settled cluster
    import os
    import signal

    event_id = await _event(ha_stack, seats=200)
    accounts = await _accounts(ha.dsn, 8)
    load, stop = Load(), asyncio.Event()
    shoppers = [asyncio.create_task(_shop(ha_stack, a, event_id, event_id, 200, load, stop,
                                          random.Random(i)))
                for i, a in enumerate(accounts)]
    old = ha.cluster.leader()
    assert old is not None and old.process is not None
    try:
        await asyncio.sleep(2)
        os.kill(old.process.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        ha.etcd.delete_leader(SCOPE)
        await asyncio.to_thread(ha.cluster.wait_leader, 60, other_than=old.name)
        while load.first_served_after(frozen_at + 1) is None:
            assert time.monotonic() - frozen_at < 90, "holds were not served again"
            await asyncio.sleep(0.2)
        await asyncio.sleep(2)
    finally:
        stop.set()
        await asyncio.gather(*shoppers, return_exceptions=True)
        os.kill(old.process.pid, signal.SIGCONT)
    conn = await _primary_conn(ha.dsn)
    try:
        rows = await conn.fetch("SELECT hold_id::text, seat_ids FROM holds "
                                "WHERE hold_id = ANY($1::uuid[])", list(load.holds))
        assert {r["hold_id"]: sorted(r["seat_ids"]) for r in rows} == load.holds
        await audit_clean(conn)
    finally:
        await conn.close()
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 120)
    members = {m["name"]: m["role"] for m in ha.cluster.members()}
    assert members[old.name] in ("replica", "sync_standby"), members


async def test_a_replay_answers_only_once_its_commit_is_replicated(
        ha: Ha, ha_stack: Stack) -> None:
    """Both standbys stopped, so the primary can commit nothing through synchronous
    replication. The replay of an acknowledged hold is then not answered (503) rather
    than read back at once: a replay commits through the synchronous path before it
    answers (onsale_durable), so a deposed primary could never acknowledge a row only it
    holds. With the standbys back, the same key answers the original hold."""
    await asyncio.to_thread(ha.cluster.wait_streaming, 2, 90)
    event_id = await _event(ha_stack, seats=200)
    account = (await _accounts(ha.dsn, 1))[0]
    body, key = {"seat_ids": [7]}, uuid.uuid4().hex
    async with ha_stack.client(account) as c:
        first = await c.post(f"/api/events/{event_id}/holds", json=body,
                             headers={"Idempotency-Key": key}, timeout=10)
        assert first.status_code == 201, first.text
        leader = ha.cluster.leader()
        assert leader is not None
        standbys = [n for n in ha.cluster.nodes if n.name != leader.name]
        for node in standbys:
            node.kill()
        try:
            unanswered = await c.post(f"/api/events/{event_id}/holds", json=body,
                                      headers={"Idempotency-Key": key}, timeout=10)
            assert unanswered.status_code == 503, unanswered.text
        except httpx.TimeoutException:
            pass  # no answer at all is as good: never a replayed 201
        finally:
            for node in standbys:
                ha.cluster.start_node(node)
        await asyncio.to_thread(ha.cluster.wait_streaming, 2, 120)
        deadline = time.monotonic() + 60
        while True:
            again = await c.post(f"/api/events/{event_id}/holds", json=body,
                                 headers={"Idempotency-Key": key}, timeout=10)
            if again.status_code != 503 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    assert again.status_code == 201, again.text
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["hold_id"] == first.json()["hold_id"]
