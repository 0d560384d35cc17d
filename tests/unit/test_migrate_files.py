"""core.migrate: loading numbered migration files, checksums, and the apply loop
(driven with a fake connection; the real database path is an integration test)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from onsale.core.migrate import MIGRATIONS_DIR, Migration, MigrationError, load_migrations, migrate


def write(directory: Path, files: dict[str, str]) -> Path:
    for name, sql in files.items():
        (directory / name).write_text(sql)
    return directory


# --- the real directory --------------------------------------------------------------------


def test_real_migrations_are_numbered_one_to_n() -> None:
    found = load_migrations()
    assert found, "no migrations found"
    assert [m.version for m in found] == list(range(1, len(found) + 1))


def test_real_migrations_match_their_files() -> None:
    found = load_migrations(MIGRATIONS_DIR)
    files = sorted(p for p in MIGRATIONS_DIR.glob("*.sql"))
    assert [f"{m.version:04d}_{m.name}.sql" for m in found] == [p.name for p in files]
    for m, path in zip(found, files, strict=True):
        assert m.sql == path.read_text()
        assert m.sql.strip()


def test_real_migrations_start_with_inventory() -> None:
    first = load_migrations()[0]
    assert (first.version, first.name) == (1, "inventory")
    assert "CREATE TABLE" in first.sql


# --- temporary directories -----------------------------------------------------------------


def test_loads_in_version_order(tmp_path: Path) -> None:
    write(tmp_path, {"0002_b.sql": "B;", "0001_a.sql": "A;", "0003_c.sql": "C;"})
    found = load_migrations(tmp_path)
    assert found == [Migration(1, "a", "A;"), Migration(2, "b", "B;"), Migration(3, "c", "C;")]


def test_order_is_numeric_not_by_name(tmp_path: Path) -> None:
    files = {f"{i:04d}_{'z' * (12 - i)}.sql": f"-- {i}" for i in range(1, 12)}
    write(tmp_path, files)
    assert [m.version for m in load_migrations(tmp_path)] == list(range(1, 12))


def test_other_files_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, {
        "0001_a.sql": "A;",
        "README.md": "notes",
        "0002_b.sql.bak": "old",
        "0002_b.txt": "txt",
        "2_b.sql": "short number",
        "00002_b.sql": "long number",
        "0002-b.sql": "dash",
        "0002_.sql": "no name",
        "0002_b c.sql": "space",
    })
    (tmp_path / "0003_dir.sql.d").mkdir()
    assert load_migrations(tmp_path) == [Migration(1, "a", "A;")]


def test_empty_directory(tmp_path: Path) -> None:
    assert load_migrations(tmp_path) == []


@pytest.mark.parametrize(
    "names",
    [
        ["0001_a.sql", "0003_c.sql"],
        ["0002_b.sql"],
        ["0002_b.sql", "0003_c.sql"],
        ["0000_zero.sql", "0001_a.sql"],
        ["0001_a.sql", "0002_b.sql", "0004_d.sql"],
        ["0001_a.sql", "0001_again.sql"],
        ["0001_a.sql", "0002_b.sql", "0002_c.sql"],
    ],
    ids=["gap", "no-first", "starts-at-two", "zero", "gap-at-end", "duplicate-first",
         "duplicate"],
)
def test_bad_numbering_is_refused(tmp_path: Path, names: list[str]) -> None:
    write(tmp_path, dict.fromkeys(names, "SELECT 1;"))
    with pytest.raises(MigrationError) as info:
        load_migrations(tmp_path)
    assert "without gaps" in str(info.value)


def test_gap_error_lists_the_versions(tmp_path: Path) -> None:
    write(tmp_path, {"0001_a.sql": "", "0002_b.sql": "", "0005_e.sql": ""})
    with pytest.raises(MigrationError, match=r"\[1, 2, 5\]"):
        load_migrations(tmp_path)


def test_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_migrations(tmp_path / "nope")


# --- checksums -----------------------------------------------------------------------------


def test_checksum_is_sha256_of_the_sql() -> None:
    m = Migration(1, "a", "CREATE TABLE t (id int);")
    assert m.checksum == hashlib.sha256(b"CREATE TABLE t (id int);").hexdigest()


def test_checksum_changes_when_the_sql_changes() -> None:
    base = Migration(1, "a", "CREATE TABLE t (id int);")
    for sql in ["CREATE TABLE t (id bigint);", "CREATE TABLE t (id int); ",
                "CREATE TABLE t (id int);\n", ""]:
        assert Migration(1, "a", sql).checksum != base.checksum


def test_checksum_depends_only_on_the_sql() -> None:
    assert Migration(1, "a", "X").checksum == Migration(7, "other", "X").checksum


def test_checksum_follows_the_file(tmp_path: Path) -> None:
    write(tmp_path, {"0001_a.sql": "CREATE TABLE t (id int);"})
    before = load_migrations(tmp_path)[0].checksum
    assert load_migrations(tmp_path)[0].checksum == before
    write(tmp_path, {"0001_a.sql": "CREATE TABLE t (id bigint);"})
    assert load_migrations(tmp_path)[0].checksum != before


def test_real_checksums_are_distinct() -> None:
    sums = [m.checksum for m in load_migrations()]
    assert len(set(sums)) == len(sums)


# --- migrate() with a fake connection ------------------------------------------------------


class FakeConn:
    def __init__(self, applied: dict[int, str] | None = None) -> None:
        self.applied = dict(applied or {})
        self.log: list[tuple[str, tuple[Any, ...]]] = []
        self.in_transaction = False
        self.fail_on: str | None = None

    async def execute(self, sql: str, *args: Any) -> str:
        self.log.append((" ".join(sql.split()), args))
        if self.fail_on is not None and sql == self.fail_on:
            raise RuntimeError("boom")
        if sql.startswith("INSERT INTO schema_migrations"):
            assert self.in_transaction
            self.applied[args[0]] = args[2]
        return "OK"

    async def fetch(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        self.log.append((" ".join(sql.split()), args))
        return [{"version": v, "checksum": c} for v, c in self.applied.items()]

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[None]:
        self.in_transaction = True
        try:
            yield
        finally:
            self.in_transaction = False

    def transaction(self) -> Any:
        return self._tx()

    def statements(self) -> list[str]:
        return [sql for sql, _ in self.log]


@pytest.fixture
def three(tmp_path: Path) -> Path:
    return write(tmp_path, {"0001_a.sql": "SELECT 'a';", "0002_b.sql": "SELECT 'b';",
                            "0003_c.sql": "SELECT 'c';"})


async def test_migrate_applies_all_in_order(three: Path) -> None:
    conn = FakeConn()
    assert await migrate(conn, three) == [1, 2, 3]
    sql = conn.statements()
    assert sql[0] == "SELECT pg_advisory_lock($1)"
    assert sql[-1] == "SELECT pg_advisory_unlock($1)"
    assert conn.log[0][1] == conn.log[-1][1]
    applied_sql = [s for s in sql if s.startswith("SELECT '")]
    assert applied_sql == ["SELECT 'a';", "SELECT 'b';", "SELECT 'c';"]
    assert conn.applied == {m.version: m.checksum for m in load_migrations(three)}


async def test_migrate_skips_applied_versions(three: Path) -> None:
    done = {m.version: m.checksum for m in load_migrations(three)[:2]}
    conn = FakeConn(done)
    assert await migrate(conn, three) == [3]
    assert [s for s in conn.statements() if s.startswith("SELECT '")] == ["SELECT 'c';"]


async def test_migrate_is_a_no_op_when_up_to_date(three: Path) -> None:
    conn = FakeConn({m.version: m.checksum for m in load_migrations(three)})
    assert await migrate(conn, three) == []
    assert not [s for s in conn.statements() if s.startswith(("SELECT '", "INSERT"))]


async def test_migrate_refuses_an_edited_migration(three: Path) -> None:
    done = {m.version: m.checksum for m in load_migrations(three)}
    done[2] = hashlib.sha256(b"the old text").hexdigest()
    conn = FakeConn(done)
    with pytest.raises(MigrationError, match="0002_b"):
        await migrate(conn, three)
    assert conn.statements()[-1] == "SELECT pg_advisory_unlock($1)"


async def test_migrate_unlocks_when_a_migration_fails(three: Path) -> None:
    conn = FakeConn()
    conn.fail_on = "SELECT 'b';"
    with pytest.raises(RuntimeError, match="boom"):
        await migrate(conn, three)
    assert set(conn.applied) == {1}
    assert conn.statements()[-1] == "SELECT pg_advisory_unlock($1)"


async def test_migrate_refuses_a_gap_before_applying_anything(tmp_path: Path) -> None:
    write(tmp_path, {"0001_a.sql": "SELECT 'a';", "0003_c.sql": "SELECT 'c';"})
    conn = FakeConn()
    with pytest.raises(MigrationError):
        await migrate(conn, tmp_path)
    assert conn.applied == {}
    assert conn.statements()[-1] == "SELECT pg_advisory_unlock($1)"
