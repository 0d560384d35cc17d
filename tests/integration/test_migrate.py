"""Migrations and function files against a real PostgreSQL.

The numbered migrations plus the function files, applied to one fresh database, build
exactly the catalogue that core/schema.sql declares plus the same function files (each
body lives only in its file), applied to another: tables and columns, constraints,
indexes, triggers, function signatures and bodies
(tests/schema_catalogue.py). Then: a changed function file is applied again (and only
it), an unchanged one is not, an edited applied migration is still refused, a
migration can require a function file, and concurrent runs apply everything once.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from onsale.core.migrate import (
    FUNCTIONS_DIR,
    MIGRATIONS_DIR,
    SCHEMA_FILE,
    MigrateResult,
    MigrationError,
    load_functions,
    load_migrations,
    migrate,
)
from onsale.embedded import EmbeddedPostgres, _pg_bin
from tests.schema_catalogue import Catalogue, catalogue, diff


def _dump(url: str) -> str:
    out = subprocess.run(
        [str(_pg_bin() / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges",
         "--exclude-table=schema_migrations", "--exclude-table=schema_functions", url],
        capture_output=True, text=True, check=True,
    ).stdout
    keep = []
    for line in out.splitlines():
        if line.startswith(("--", "\\restrict", "\\unrestrict", "SET ", "SELECT pg_catalog")):
            continue
        if line.strip():
            keep.append(line.rstrip())
    return "\n".join(keep)


async def _new_db(pg: EmbeddedPostgres, name: str, template: str | None = None) -> str:
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {name}")
        await conn.execute(f"CREATE DATABASE {name}"
                           + (f" TEMPLATE {template}" if template else ""))
    finally:
        await conn.close()
    return pg.url_for(name)


async def _catalogue(url: str) -> Catalogue:
    conn = await asyncpg.connect(url)
    try:
        return await catalogue(conn)
    finally:
        await conn.close()


@pytest.fixture(scope="module")
async def declared(pg: EmbeddedPostgres) -> str:
    """A database built from core/schema.sql and then the function files, each body
    written once, in its file (the name of the database)."""
    url = await _new_db(pg, "schema_declared")
    conn = await asyncpg.connect(url)
    try:
        # The functions first, their bodies unchecked until the tables exist: the
        # schema's defaults and triggers call them (onsale_new_id, the shard guards).
        await conn.execute("SET check_function_bodies = off")
        for function in load_functions():
            await conn.execute(function.sql)
        await conn.execute("RESET check_function_bodies")
        await conn.execute(SCHEMA_FILE.read_text())
    finally:
        await conn.close()
    return "schema_declared"


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    """The real migrations and function files, copied where a test may edit them."""
    migrations, functions = tmp_path / "migrations", tmp_path / "functions"
    shutil.copytree(MIGRATIONS_DIR, migrations)
    shutil.copytree(FUNCTIONS_DIR, functions)
    return migrations, functions


async def _functions_state(conn: Any) -> dict[str, tuple[str, str]]:
    """(xmin of the pg_proc row, definition) per function: xmin changes on every
    CREATE OR REPLACE, even one that leaves the text as it was."""
    rows = await conn.fetch(
        """SELECT p.proname, p.xmin::text AS xmin, pg_get_functiondef(p.oid) AS def
           FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace""")
    return {r["proname"]: (r["xmin"], r["def"]) for r in rows}


# --- the migrated schema is the declared schema ---------------------------------------------


async def test_migrations_produce_the_declared_schema(pg: EmbeddedPostgres,
                                                      declared: str) -> None:
    migrated_url = await _new_db(pg, "schema_migrated")
    conn = await asyncpg.connect(migrated_url)
    try:
        applied = await migrate(conn)
        assert applied.migrations == [m.version for m in load_migrations()]
        # Each file once: those a migration requires with it, the rest after, in order.
        assert sorted(applied.functions) == sorted(f.name for f in load_functions())
        assert len(applied.functions) == len(set(applied.functions))
        assert await migrate(conn) == MigrateResult()  # a second run applies nothing
        recorded = {r["name"]: r["checksum"]
                    for r in await conn.fetch("SELECT name, checksum FROM schema_functions")}
        assert recorded == {f.name: f.checksum for f in load_functions()}
    finally:
        await conn.close()

    migrated, declared_cat = await _catalogue(migrated_url), await _catalogue(
        pg.url_for(declared))
    # Not vacuous: the catalogue holds the objects we know of, of every kind compared.
    assert "seat_inventory" in migrated["relations"]
    assert "fillfactor=80" in migrated["relations"]["seat_inventory"]
    assert "seat_inventory.seat_inventory_check2" in migrated["constraints"]
    assert "order_items_one_valid_sale" in migrated["indexes"]
    assert "onsale_hold(bigint,uuid,text,text,integer[])" in migrated["functions"]
    assert len(migrated["functions"]) == sum(len(f.defines) for f in load_functions())
    assert not [k for k in migrated["functions"] if k.startswith("onsale_confirm_hold")]
    assert diff(migrated, declared_cat, ("migrations", "schema.sql")) == []
    # And pg_dump, which sees a few things the catalogue query does not, agrees.
    assert _dump(migrated_url) == _dump(pg.url_for(declared))


async def test_the_comparison_sees_every_kind_of_difference(pg: EmbeddedPostgres,
                                                            declared: str) -> None:
    url = await _new_db(pg, "schema_altered", template=declared)
    conn = await asyncpg.connect(url)
    try:
        for sql in [
            "ALTER TABLE holds ADD COLUMN note text",
            "ALTER TABLE events ALTER COLUMN venue_name SET DEFAULT 'Other'",
            "ALTER TABLE tickets ALTER COLUMN issued_at DROP NOT NULL",
            "ALTER TABLE outbox ALTER COLUMN event_type TYPE varchar(100)",
            "ALTER TABLE seat_inventory SET (fillfactor = 90)",
            "ALTER TABLE holds DROP CONSTRAINT holds_amount_minor_check",
            "ALTER TABLE holds ADD CONSTRAINT holds_amount_minor_check CHECK (amount_minor > 0)",
            "CREATE INDEX holds_extra_idx ON holds (created_at)",
            "DROP INDEX seats_rank_idx",
            "CREATE INDEX seats_rank_idx ON seats (rank)",
            """CREATE FUNCTION onsale_touch() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN NEW.updated_at := now(); RETURN NEW; END $$""",
            """CREATE TRIGGER holds_touch BEFORE UPDATE ON holds
               FOR EACH ROW EXECUTE FUNCTION onsale_touch()""",
            "DROP FUNCTION onsale_expire_hold(uuid)",
        ]:
            await conn.execute(sql)
        # The same signature, one character more in the body.
        await conn.execute(
            (FUNCTIONS_DIR / "onsale_sweep.sql").read_text().replace("END $$;", "END; $$;"))
    finally:
        await conn.close()
    lines = diff(await _catalogue(pg.url_for(declared)), await _catalogue(url),
                 ("declared", "altered"))
    text = "\n".join(lines)
    for expected in [
        "columns holds.note: only in altered",
        "columns events.venue_name: differs",
        "columns tickets.issued_at: differs",
        "columns outbox.event_type: differs",
        "relations holds: differs",  # the new column, in the column list
        "relations seat_inventory: differs",
        "constraints holds.holds_amount_minor_check: differs",
        "constraints tickets.tickets_issued_at_not_null: only in declared",
        "indexes holds_extra_idx: only in altered",
        "indexes seats_rank_idx: differs",
        "functions onsale_touch(): only in altered",
        "triggers holds.holds_touch: only in altered",
        "functions onsale_expire_hold(uuid): only in declared",
        "functions onsale_sweep(integer): differs",
    ]:
        assert expected in text, f"{expected!r} not reported in:\n{text}"


# --- function files: applied when changed, and only then ----------------------------------


async def test_a_changed_function_file_is_reapplied_alone(pg: EmbeddedPostgres,
                                                          tmp_path: Path) -> None:
    migrations, functions = _copy(tmp_path)
    url = await _new_db(pg, "functions_changed")
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn, migrations, functions)
        before = await _functions_state(conn)

        # Unchanged files: nothing is applied, no pg_proc row is even rewritten.
        assert await migrate(conn, migrations, functions) == MigrateResult()
        assert await _functions_state(conn) == before

        path = functions / "onsale_expire_hold.sql"
        old = path.read_text()
        path.write_text(old.replace("    RETURN v_n;\n", "    RETURN v_n + 0;\n"))
        assert await migrate(conn, migrations, functions) == MigrateResult([], [
            "onsale_expire_hold"])
        after = await _functions_state(conn)
        changed = {name for name in before if before[name] != after[name]}
        assert changed == {"onsale_expire_hold"}
        assert "RETURN v_n + 0;" in after["onsale_expire_hold"][1]
        checksum = await conn.fetchval(
            "SELECT checksum FROM schema_functions WHERE name = 'onsale_expire_hold'")
        assert checksum == next(f.checksum for f in load_functions(functions)
                                if f.name == "onsale_expire_hold")
        assert await migrate(conn, migrations, functions) == MigrateResult()

        # A comment outside the body changes the file, not the function: applied again
        # all the same (the checksum is of the file), harmlessly.
        path.write_text("-- reworded\n" + path.read_text())
        assert (await migrate(conn, migrations, functions)).functions == [
            "onsale_expire_hold"]
        assert (await _functions_state(conn))["onsale_expire_hold"][1] == after[
            "onsale_expire_hold"][1]

        # Back to the original text: applied again, and the catalogue is the real one.
        path.write_text(old)
        assert (await migrate(conn, migrations, functions)).functions == [
            "onsale_expire_hold"]
        assert (await _functions_state(conn))["onsale_expire_hold"][1] == before[
            "onsale_expire_hold"][1]
    finally:
        await conn.close()


async def test_a_dropped_function_is_created_again(pg: EmbeddedPostgres,
                                                   tmp_path: Path) -> None:
    """Recorded as current but missing from the database (dropped by hand or by a
    migration while its file stayed): the next run creates it again."""
    migrations, functions = _copy(tmp_path)
    url = await _new_db(pg, "functions_dropped")
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn, migrations, functions)
        await conn.execute("DROP FUNCTION onsale_issue_tickets(uuid)")
        assert (await migrate(conn, migrations, functions)).functions == [
            "onsale_issue_tickets"]
        assert await conn.fetchval("SELECT to_regprocedure('onsale_issue_tickets(uuid)')")
    finally:
        await conn.close()


async def test_a_changed_signature_is_refused_with_a_hint(pg: EmbeddedPostgres,
                                                          tmp_path: Path) -> None:
    migrations, functions = _copy(tmp_path)
    url = await _new_db(pg, "functions_signature")
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn, migrations, functions)
        path = functions / "onsale_issue_tickets.sql"
        path.write_text(path.read_text().replace("RETURNS text", "RETURNS varchar"))
        with pytest.raises(MigrationError, match=r"new name, e\.g\. onsale_issue_tickets_v2"):
            await migrate(conn, migrations, functions)
        # Nothing changed, and the lock was released: another run can take it.
        assert await conn.fetchval(
            "SELECT pg_get_function_result('onsale_issue_tickets(uuid)'::regprocedure)"
        ) == "text"
        assert await conn.fetchval("SELECT pg_try_advisory_lock(x'6F6E73616C65'::bigint)")
    finally:
        await conn.close()


async def test_a_removed_function_file_is_forgotten(pg: EmbeddedPostgres,
                                                   tmp_path: Path) -> None:
    """Its record goes, so a file of that name added again later is applied."""
    migrations, functions = _copy(tmp_path)
    extra = functions / "onsale_extra.sql"
    extra.write_text("CREATE OR REPLACE FUNCTION onsale_extra() RETURNS int "
                     "LANGUAGE sql AS $$ SELECT 1 $$;\n")
    url = await _new_db(pg, "functions_removed")
    conn = await asyncpg.connect(url)
    try:
        assert "onsale_extra" in (await migrate(conn, migrations, functions)).functions
        extra.unlink()
        assert await migrate(conn, migrations, functions) == MigrateResult()
        assert not await conn.fetchval(
            "SELECT count(*) FROM schema_functions WHERE name = 'onsale_extra'")
        assert await conn.fetchval("SELECT count(*) FROM schema_functions") == len(
            load_functions(functions))
    finally:
        await conn.close()


async def test_a_failing_step_keeps_what_committed_before_it(pg: EmbeddedPostgres,
                                                             tmp_path: Path) -> None:
    """Each step is one transaction: a migration that fails leaves the ones before it
    recorded, and neither itself nor the function files it applied first; the lock
    is released. Fixed, the next run goes on from there."""
    migrations, functions = _copy(tmp_path)
    last = len(load_migrations(migrations))
    bad = migrations / f"{last + 1:04d}_broken.sql"
    bad.write_text("-- requires: onsale_issue_tickets\nSELECT no_such_column FROM events;\n")
    url = await _new_db(pg, "migrate_step_fails")
    conn = await asyncpg.connect(url)
    try:
        with pytest.raises(asyncpg.UndefinedColumnError):
            await migrate(conn, migrations, functions)
        versions = [r[0] for r in await conn.fetch(
            "SELECT version FROM schema_migrations ORDER BY 1")]
        assert versions == list(range(1, last + 1))
        # Only the files the committed migrations required (0007's) were applied.
        required = sorted({name for m in load_migrations(migrations)[:last]
                           for name in m.requires})
        assert required and sorted(r[0] for r in await conn.fetch(
            "SELECT name FROM schema_functions")) == required
        assert not await conn.fetchval("SELECT to_regprocedure('onsale_issue_tickets(uuid)')")
        assert await conn.fetchval("SELECT pg_try_advisory_lock(x'6F6E73616C65'::bigint)")
        await conn.execute("SELECT pg_advisory_unlock(x'6F6E73616C65'::bigint)")
        bad.write_text("-- requires: onsale_issue_tickets\nSELECT 1;\n")
        result = await migrate(conn, migrations, functions)
        assert result.migrations == [last + 1]
        assert result.functions[0] == "onsale_issue_tickets"  # with the migration
        assert sorted(result.functions + required) == sorted(
            f.name for f in load_functions(functions))
    finally:
        await conn.close()


# --- numbered migrations ------------------------------------------------------------------


async def test_an_edited_migration_is_refused(pg: EmbeddedPostgres, tmp_path: Path) -> None:
    migrations, functions = _copy(tmp_path)
    url = await _new_db(pg, "schema_edited")
    conn: Any = await asyncpg.connect(url)
    try:
        await migrate(conn, migrations, functions)
        before = await _functions_state(conn)
        first = migrations / "0001_inventory.sql"
        first.write_text(first.read_text() + "\n-- edited\n")
        sweep = functions / "onsale_sweep.sql"
        sweep.write_text(sweep.read_text().replace("END $$;", "END; $$;"))
        with pytest.raises(MigrationError, match="0001_inventory was changed after it was applied"):
            await migrate(conn, migrations, functions)
        # Refused before anything ran: the changed function file was not applied either.
        assert await _functions_state(conn) == before
    finally:
        await conn.close()


_TOUCH = """-- touch: a trigger function and a LANGUAGE sql function (checked at creation)
CREATE OR REPLACE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.touched := NEW.touched + 1;
    RETURN NEW;
END $$;
"""
_BASE = """CREATE OR REPLACE FUNCTION z_base() RETURNS integer LANGUAGE sql
AS $$ SELECT 40 $$;
"""
_TOTAL = """-- a_total: a LANGUAGE sql function is checked when created, so z_base must exist.
-- requires: z_base
CREATE OR REPLACE FUNCTION a_total() RETURNS integer LANGUAGE sql
AS $$ SELECT z_base() + 2 $$;
"""
_TRIGGER = """-- 0001: a table and a trigger on a function from a function file.
-- requires: touch
CREATE TABLE t (id integer PRIMARY KEY, touched integer NOT NULL DEFAULT 0);
CREATE TRIGGER t_touch BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION touch();
"""


def _write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


async def test_a_migration_can_require_a_function(pg: EmbeddedPostgres, tmp_path: Path) -> None:
    migrations = _write(tmp_path / "m", {"0001_t.sql": _TRIGGER})
    functions = _write(tmp_path / "f", {"touch.sql": _TOUCH, "z_base.sql": _BASE,
                                        "a_total.sql": _TOTAL})
    url = await _new_db(pg, "functions_required")
    conn = await asyncpg.connect(url)
    try:
        result = await migrate(conn, migrations, functions)
        # touch with migration 1, in its transaction; then z_base before a_total although
        # a_total sorts first, because a_total requires it.
        assert result == MigrateResult([1], ["touch", "z_base", "a_total"])
        await conn.execute("INSERT INTO t (id) VALUES (1)")
        await conn.execute("UPDATE t SET id = 1")
        assert await conn.fetchval("SELECT touched FROM t") == 1
        assert await conn.fetchval("SELECT a_total()") == 42

        # The trigger function changes: applied again, the trigger (DDL) stays.
        (functions / "touch.sql").write_text(_TOUCH.replace("+ 1", "+ 10"))
        assert await migrate(conn, migrations, functions) == MigrateResult([], ["touch"])
        await conn.execute("UPDATE t SET id = 1")
        assert await conn.fetchval("SELECT touched FROM t") == 11
    finally:
        await conn.close()


async def test_without_requires_the_order_would_fail(pg: EmbeddedPostgres,
                                                     tmp_path: Path) -> None:
    """What `-- requires:` is for: the same files without it cannot be applied."""
    migrations = _write(tmp_path / "m", {"0001_t.sql": _TRIGGER.replace("-- requires: touch\n",
                                                                        "")})
    functions = _write(tmp_path / "f", {"touch.sql": _TOUCH})
    url = await _new_db(pg, "functions_unrequired")
    conn = await asyncpg.connect(url)
    try:
        with pytest.raises(asyncpg.UndefinedFunctionError):
            await migrate(conn, migrations, functions)
    finally:
        await conn.close()
    migrations = _write(tmp_path / "m2", {"0001_t.sql": "CREATE TABLE t (id integer);"})
    functions = _write(tmp_path / "f2", {"z_base.sql": _BASE, "a_total.sql": _TOTAL.replace(
        "-- requires: z_base\n", "")})
    url = await _new_db(pg, "functions_unordered")
    conn = await asyncpg.connect(url)
    try:
        with pytest.raises(asyncpg.UndefinedFunctionError):
            await migrate(conn, migrations, functions)
    finally:
        await conn.close()


async def test_concurrent_runs_apply_everything_once(pg: EmbeddedPostgres) -> None:
    url = await _new_db(pg, "schema_concurrent")
    conns = [await asyncpg.connect(url) for _ in range(3)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
    finally:
        for c in conns:
            await c.close()
    first = max(results, key=bool)
    assert sorted(results, key=bool) == [MigrateResult(), MigrateResult(), first]
    assert first.migrations == [m.version for m in load_migrations()]
    assert sorted(first.functions) == sorted(f.name for f in load_functions())


async def test_a_migration_reports_each_step_and_a_second_run_only_the_end(
        pg: EmbeddedPostgres) -> None:
    url = await _new_db(pg, "schema_progress")
    conn = await asyncpg.connect(url)
    try:
        steps: list[tuple[str, int, int]] = []
        await migrate(conn, progress=lambda what, done, total: steps.append((what, done, total)))
        names = [f"{m.version:04d}_{m.name}" for m in load_migrations()]
        total = len(names) + 1
        assert steps == [*((n, i, total) for i, n in enumerate(names)),
                         ("functions", total - 1, total), ("done", total, total)]
        again: list[tuple[str, int, int]] = []
        await migrate(conn, progress=lambda what, done, total: again.append((what, done, total)))
        assert again == [("functions", 0, 1), ("done", 1, 1)]
    finally:
        await conn.close()


# --- the move to Stripe's protocol keeps earlier payments readable --------------------------

async def test_payments_from_before_stripe_are_marked_and_stay_readable(
        pg: EmbeddedPostgres, tmp_path: Path) -> None:
    """Rows written under the simulator's earlier dialect are 'onsale-v0' after
    0004, with their references as they were; rows written after are 'stripe'."""
    migrations, functions = _copy(tmp_path)
    later = sorted(migrations.glob("0004_*.sql"))
    assert later, "the migration to Stripe's protocol is 0004"
    held_back = tmp_path / "later"
    held_back.mkdir()
    for path in sorted(migrations.glob("*.sql")):
        if path.name >= later[0].name:
            path.rename(held_back / path.name)
    url = await _new_db(pg, "stripe_mapping")
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn, migrations, functions)
        # The rows alone (this checks the data mapping): foreign keys are not checked.
        await conn.execute("SET session_replication_role = replica")
        order = uuid.uuid4()
        await conn.execute(
            "INSERT INTO payment_operations (order_id, kind, status, amount_minor, currency, "
            "payment_method, provider_ref) VALUES ($1, 'AUTHORIZE', 'SUCCEEDED', 100, 'USD', "
            "'card_4242', 'pi_0123456789abcdef01234567')", order)
        await conn.execute(
            "INSERT INTO webhook_events (provider_event_id, event_type, provider_ref, outcome, "
            "payload) VALUES ('evt_old', 'payment_intent.succeeded', "
            "'pi_0123456789abcdef01234567', 'applied', '{}')")
        await conn.execute("RESET session_replication_role")
        for path in sorted(held_back.glob("*.sql")):
            path.rename(migrations / path.name)
        await migrate(conn, migrations, functions)
        old = await conn.fetchrow("SELECT protocol, payment_method, provider_ref "
                                  "FROM payment_operations WHERE order_id = $1", order)
        assert dict(old) == {"protocol": "onsale-v0", "payment_method": "card_4242",
                             "provider_ref": "pi_0123456789abcdef01234567"}
        assert await conn.fetchval("SELECT protocol FROM webhook_events "
                                   "WHERE provider_event_id = 'evt_old'") == "onsale-v0"
        await conn.execute(
            "INSERT INTO webhook_events (provider_event_id, event_type, outcome, payload) "
            "VALUES ('evt_new', 'payment_intent.succeeded', 'applied', '{}')")
        assert await conn.fetchval("SELECT protocol FROM webhook_events "
                                   "WHERE provider_event_id = 'evt_new'") == "stripe"
    finally:
        await conn.close()
