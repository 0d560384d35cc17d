"""The directory's shard list on real PostgreSQL servers (docs/scaling.md): a second
server added as shard 2, ids that name their shard, the epoch that only moves forward,
an existing database that becomes shard 1 with its old ids still found there, and the
``onsale shard`` and ``onsale migrate`` commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from onsale.core.migrate import MIGRATIONS_DIR, MigrationError, migrate
from onsale.core.shard_directory import add_shard, migrate_shards
from onsale.embedded import EmbeddedPostgres, start_postgres
from onsale.kernel.db import init_connection
from onsale.kernel.shards import load_placement
from tests.conftest import fresh_database


async def _connect(dsn: str) -> Any:
    conn = await asyncpg.connect(dsn)
    await init_connection(conn)
    return conn


@pytest.fixture(scope="module")
def second_server() -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL server of its own: the second shard."""
    base = Path(tempfile.mkdtemp(prefix="onsale-test-shard-"))
    server = start_postgres(base / "data", fast=True)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


async def _empty_db(server: EmbeddedPostgres) -> str:
    name = f"s{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(server.url)
    try:
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return server.url_for(name)


@pytest.fixture
async def directory(db_url: str) -> AsyncIterator[Any]:
    conn = await _connect(db_url)
    try:
        yield conn
    finally:
        await conn.close()


async def test_a_second_server_becomes_shard_2_and_its_ids_name_it(
        directory: Any, second_server: EmbeddedPostgres) -> None:
    dsn = await _empty_db(second_server)
    shard_id, applied = await add_shard(directory, dsn, _connect)
    assert shard_id == 2 and applied.migrations  # migrated from nothing
    placement = await load_placement(directory)
    assert sorted(placement.shards) == [1, 2]
    assert placement.shards[2].dsn == dsn and placement.shards[2].epoch == 1
    assert placement.shards[1].dsn == ""  # the directory's own database

    shard = await _connect(dsn)
    try:
        assert await shard.fetchval("SELECT shard_id FROM shard_identity") == 2
        # Nothing of the directory is copied to a shard.
        assert await shard.fetchval("SELECT count(*) FROM shards") == 0
        made = [await shard.fetchval("SELECT onsale_new_id()") for _ in range(50)]
    finally:
        await shard.close()
    here = [await directory.fetchval("SELECT onsale_new_id()") for _ in range(50)]
    assert len(set(made + here)) == 100
    assert {placement.shard_of_id(i) for i in made} == {2}
    assert {placement.shard_of_id(i) for i in here} == {1}
    assert all(i.version == 7 for i in made + here)


async def test_a_shard_is_added_once_and_the_directory_is_no_second_shard(
        directory: Any, db_url: str, second_server: EmbeddedPostgres) -> None:
    dsn = await _empty_db(second_server)
    await add_shard(directory, dsn, _connect)
    with pytest.raises(MigrationError, match="is shard 2 already"):
        await add_shard(directory, dsn, _connect)
    with pytest.raises(MigrationError, match="this database is shard 1, not shard 3"):
        await add_shard(directory, db_url, _connect)
    # A database that another directory made its shard keeps its number.
    other = await _empty_db(second_server)
    conn = await _connect(other)
    try:
        await migrate(conn, shard_id=7, holds_directory=False)
    finally:
        await conn.close()
    with pytest.raises(MigrationError, match="this database is shard 7, not shard 3"):
        await add_shard(directory, other, _connect)
    assert [r["shard_id"] for r in await directory.fetch("SELECT shard_id FROM shards")] == [
        1, 2]


async def test_the_epoch_only_moves_forward(directory: Any) -> None:
    await directory.execute("UPDATE shards SET epoch = 3 WHERE shard_id = 1")
    with pytest.raises(asyncpg.CheckViolationError, match="only move forward"):
        await directory.execute("UPDATE shards SET epoch = 2 WHERE shard_id = 1")
    with pytest.raises(asyncpg.CheckViolationError, match="keeps its number"):
        await directory.execute(
            "UPDATE shards SET stamped_since = now() - interval '1 day' WHERE shard_id = 1")
    assert await directory.fetchval("SELECT epoch FROM shards WHERE shard_id = 1") == 3


async def test_migrate_reaches_every_shard(directory: Any,
                                           second_server: EmbeddedPostgres) -> None:
    dsn = await _empty_db(second_server)
    await add_shard(directory, dsn, _connect)
    done = await migrate_shards(directory, _connect)
    assert list(done) == [2] and not done[2].migrations  # current already


async def test_an_existing_database_becomes_shard_1_and_keeps_finding_its_old_ids(
        pg: EmbeddedPostgres, tmp_path: Path) -> None:
    """A database migrated by the previous release, with an event, an order and its
    ids made by uuidv7() alone: 0007 makes it shard 1, places its event there, and
    every old id still resolves to shard 1 while new ones carry the number."""
    before = tmp_path / "before"
    before.mkdir()
    for f in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if f.name < "0007":
            shutil.copy(f, before / f.name)
    url = await fresh_database(pg, "template0")
    conn = await _connect(url)
    try:
        await migrate(conn, before)
        event_id = await conn.fetchval(
            "INSERT INTO events (name, starts_at, onsale_at, hold_ttl_seconds,"
            " max_tickets_per_account, max_seats_per_hold, seat_count)"
            " VALUES ('Old night', now() + interval '1 day', now(), 300, 6, 6, 0)"
            " RETURNING event_id")
        old_ids = [await conn.fetchval("SELECT uuidv7()") for _ in range(20)]
        await migrate(conn)  # 0007 now
        placement = await load_placement(conn)
        assert placement.events == {event_id: 1}
        assert {placement.shard_of_id(i) for i in old_ids} == {1}
        new = await conn.fetchval("SELECT onsale_new_id()")
        assert new.bytes[10:12] == b"\x00\x01" and placement.shard_of_id(new) == 1
    finally:
        await conn.close()


def _onsale(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": url}
    return subprocess.run([sys.executable, "-m", "onsale.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)


async def test_the_shard_commands(db_url: str, second_server: EmbeddedPostgres) -> None:
    dsn = await _empty_db(second_server)
    added = _onsale("shard", "add", dsn, url=db_url)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("shard 2 added: ")
    again = _onsale("shard", "add", dsn, url=db_url)
    assert again.returncode == 2 and "is shard 2 already" in again.stderr
    listed = _onsale("shard", "list", "--json", url=db_url)
    assert listed.returncode == 0, listed.stderr
    shards = json.loads(listed.stdout)
    assert [(s["shard"], s["state"], s["epoch"]) for s in shards] == [
        (1, "active", 1), (2, "active", 1)]
    assert shards[0]["dsn"] == "(the directory's database)"
    table = _onsale("shard", "list", url=db_url)
    assert table.returncode == 0 and table.stdout.splitlines()[0].split()[:3] == [
        "shard", "state", "epoch"]
    migrated = _onsale("migrate", url=db_url)
    assert migrated.returncode == 0, migrated.stderr
    assert [line.split(":")[0] for line in migrated.stdout.splitlines()] == [
        "directory", "shard 2"]


# --- the process's shard set: placement cached, refreshed on change ----------------------

async def _event(conn: Any, name: str) -> int:
    return int(await conn.fetchval(
        "INSERT INTO events (name, starts_at, onsale_at, hold_ttl_seconds,"
        " max_tickets_per_account, max_seats_per_hold, seat_count)"
        " VALUES ($1, now() + interval '1 day', now(), 300, 6, 6, 0) RETURNING event_id",
        name))


async def test_a_process_routes_by_cached_placement_and_hears_of_changes(
        directory: Any, db_url: str, second_server: EmbeddedPostgres) -> None:
    import asyncio
    import dataclasses

    from onsale.kernel.config import Settings
    from onsale.kernel.db import Database, create_pool
    from onsale.kernel.problems import Problem
    from onsale.kernel.shards import running_shards

    dsn = await _empty_db(second_server)
    await add_shard(directory, dsn, _connect)
    early = await _event(directory, "Early")
    await directory.execute("INSERT INTO event_placement VALUES ($1, 2)", early)
    settings = dataclasses.replace(Settings(database_url=db_url), db_pool_min=0)
    pool = await create_pool(settings)
    own = Database.from_settings(pool, settings)
    try:
        async with running_shards(settings, own) as shards:
            reads = shards.directory_reads
            assert sorted(shards.pools) == [1, 2]
            assert (await shards.for_event(early)).dsn == dsn
            async with (await shards.for_event(early)).connection() as c:
                assert await c.fetchval("SELECT shard_id FROM shard_identity") == 2
            assert shards.directory_reads == reads  # the cache answered

            late = await _event(directory, "Late")
            await directory.execute("INSERT INTO event_placement VALUES ($1, 1)", late)
            for _ in range(100):  # the NOTIFY reloads the placement
                if shards.placement.shard_of_event(late) == 1:
                    break
                await asyncio.sleep(0.05)
            assert (await shards.for_event(late)) is own

            with pytest.raises(Problem) as missing:
                await shards.for_event(10**9)
            assert missing.value.status == 404
            shard2 = await _connect(dsn)
            try:
                made = await shard2.fetchval("SELECT onsale_new_id()")
            finally:
                await shard2.close()
            assert shards.for_id(made, "order_not_found").dsn == dsn
            with pytest.raises(Problem) as unknown:
                shards.for_id(uuid.uuid4(), "order_not_found")
            assert (unknown.value.status, unknown.value.code) == (404, "order_not_found")
    finally:
        await pool.close()


async def test_audit_runs_on_every_shard_and_names_the_one_that_fails(
        db_url: str, second_server: EmbeddedPostgres) -> None:
    dsn = await _empty_db(second_server)
    assert _onsale("shard", "add", dsn, url=db_url).returncode == 0
    clean = _onsale("audit", url=db_url)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "== shard 1" in clean.stdout and "== shard 2" in clean.stdout
    assert clean.stdout.rstrip().endswith("audit: no violations on shards 1, 2")

    # A confirmed hold whose seat was never sold, on shard 2 only.
    shard = await _connect(dsn)
    try:
        event_id = await _event(shard, "Broken")
        await shard.execute(
            "INSERT INTO holds (hold_id, event_id, account_id, idempotency_key, status,"
            " seat_ids, seats, seat_count, amount_minor, currency, expires_at)"
            " VALUES (onsale_new_id(), $1, $2, 'k', 'CONFIRMED', '{1}', '[]', 1, 100, 'EUR',"
            " now())", event_id, uuid.uuid4())
    finally:
        await shard.close()
    dirty = _onsale("audit", url=db_url)
    assert dirty.returncode == 1
    two = dirty.stdout.split("== shard 2")[1]
    assert "FAIL confirmed_holds_agree_with_their_seats (1)" in two
    assert "FAIL" not in dirty.stdout.split("== shard 2")[0]
    last = dirty.stdout.rstrip().splitlines()[-1]
    assert last.startswith("audit: ") and last.endswith(" violation(s) on shards 1, 2")
    assert _onsale("audit", "--shard", "1", url=db_url).returncode == 0
    assert _onsale("audit", "--shard", "2", url=db_url).returncode == 1
    missing = _onsale("audit", "--shard", "9", url=db_url)
    assert missing.returncode == 2 and "no shard 9" in missing.stderr


async def test_readiness_reports_each_shard_and_a_down_one_leaves_the_process_ready(
        db_url: str, directory: Any) -> None:
    """Shard 2 on a server of its own, stopped: /readyz stays 200, says degraded and
    names shard 2; the directory's own shard answers."""
    import dataclasses

    import httpx

    from onsale.compose import Tiers, app_for
    from onsale.kernel.config import Settings

    base = Path(tempfile.mkdtemp(prefix="onsale-test-shard-down-"))
    server = start_postgres(base / "data", fast=True)
    try:
        dsn = await _empty_db(server)
        await add_shard(directory, dsn, _connect)
        settings = dataclasses.replace(
            Settings(database_url=db_url, secret_key="s" * 32, admin_token="a" * 32),
            db_pool_min=0, db_request_timeout_ms=300, db_acquire_timeout=0.5)
        app = app_for(Tiers(core=True), settings)
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                up = await client.get("/readyz")
                assert up.status_code == 200
                assert up.json() == {"status": "ready",
                                     "checks": {"database": "ok", "shard 2": "ok"}}
                server.stop()
                down = await client.get("/readyz")
                assert down.status_code == 200
                assert down.json() == {"status": "degraded",
                                       "checks": {"database": "ok", "shard 2": "unavailable"}}
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


async def test_seat_and_ga_holds_name_their_shard(api: Any, conn: Any) -> None:
    """Every hold id a hold transaction makes carries this database's number, 1."""
    import json as _json

    from tests.integration.test_ga_holds import floor, ga_event

    seats_event = await api.create_event(seats=10)
    me = await api.account(conn)
    seat_hold = await conn.fetchrow("SELECT * FROM onsale_hold($1, $2, 'k1', 'd', $3)",
                                    seats_event, me, [1, 2])
    ga_id = await ga_event(api, floor())
    ga_hold = await conn.fetchrow(
        "SELECT * FROM onsale_ga_hold($1, $2, 'k2', 'd', 1::smallint, 2, false)", ga_id, me)
    placement = await load_placement(conn)
    ids = [uuid.UUID(_json.loads(r["body"])["hold_id"]) if isinstance(r["body"], str)
           else uuid.UUID(r["body"]["hold_id"]) for r in (seat_hold, ga_hold)]
    assert [i.bytes[10:12] for i in ids] == [b"\x00\x01", b"\x00\x01"]
    assert {placement.shard_of_id(i) for i in ids} == {1}
