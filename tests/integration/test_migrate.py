"""Migrations: the migrated schema equals the declared schema (core/schema.sql)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from onsale.core.migrate import SCHEMA_FILE, MigrationError, load_migrations, migrate
from onsale.embedded import EmbeddedPostgres, _pg_bin


def _dump(url: str) -> str:
    out = subprocess.run(
        [str(_pg_bin() / "pg_dump"), "--schema-only", "--no-owner", "--no-privileges",
         "--exclude-table=schema_migrations", url],
        capture_output=True, text=True, check=True,
    ).stdout
    keep = []
    for line in out.splitlines():
        if line.startswith(("--", "\\restrict", "\\unrestrict", "SET ", "SELECT pg_catalog")):
            continue
        if line.strip():
            keep.append(line.rstrip())
    return "\n".join(keep)


async def _new_db(pg: EmbeddedPostgres, name: str) -> str:
    conn = await asyncpg.connect(pg.url)
    try:
        await conn.execute(f"DROP DATABASE IF EXISTS {name}")
        await conn.execute(f"CREATE DATABASE {name}")
    finally:
        await conn.close()
    return pg.url_for(name)


async def test_migrations_produce_the_declared_schema(pg: EmbeddedPostgres) -> None:
    migrated_url = await _new_db(pg, "schema_migrated")
    declared_url = await _new_db(pg, "schema_declared")
    conn = await asyncpg.connect(migrated_url)
    try:
        applied = await migrate(conn)
        assert applied == [m.version for m in load_migrations()]
        assert await migrate(conn) == []  # a second run applies nothing
    finally:
        await conn.close()
    conn = await asyncpg.connect(declared_url)
    try:
        await conn.execute(SCHEMA_FILE.read_text())
    finally:
        await conn.close()
    migrated, declared = _dump(migrated_url), _dump(declared_url)
    assert "CREATE TABLE public.seat_inventory" in migrated
    assert migrated == declared


async def test_an_edited_migration_is_refused(pg: EmbeddedPostgres, tmp_path: Path) -> None:
    url = await _new_db(pg, "schema_edited")
    files = [tmp_path / f"{m.version:04d}_{m.name}.sql" for m in load_migrations()]
    for path, m in zip(files, load_migrations(), strict=True):
        path.write_text(m.sql)
    conn: Any = await asyncpg.connect(url)
    try:
        await migrate(conn, tmp_path)
        first = files[0]
        first.write_text(first.read_text() + "\n-- edited\n")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await migrate(conn, tmp_path)
    finally:
        await conn.close()
