"""Schema changes, in two kinds of file (docs/operations.md#migrations):

* numbered migrations, ``core/migrations/NNNN_name.sql``: DDL (tables, columns,
  constraints, indexes, triggers) and data changes, never a function; applied once
  each, in order, and never edited afterwards (checksummed);
* SQL functions, ``core/sql/functions/<name>.sql``: one function per file, named
  after it (or a group that changes together, named after the main one), written as
  ``CREATE OR REPLACE FUNCTION``; applied again whenever the file's text changes
  (checksummed too). A changed signature or meaning gets a new name (``_v2``) and the
  old function is dropped by a later migration (docs/operations.md#changing-a-function).

Both run under one session advisory lock. A run applies the pending migrations, then
every function file whose checksum differs from the one recorded (or whose function
is missing from the database), each in its own transaction.

Ordering: a file's leading comment may say ``-- requires: name[, name...]``, naming
function files. A function file is applied after the ones it requires (otherwise in
name order); a migration applies the function files it requires, when they are not
current, in its own transaction just before its SQL, so a trigger, a DEFAULT, a CHECK
or a data change can call a function that the function phase would create only later.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
FUNCTIONS_DIR = Path(__file__).parent / "sql" / "functions"
SCHEMA_FILE = Path(__file__).parent / "schema.sql"
_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
_FUNCTION_FILE = re.compile(r"^([a-z][a-z0-9_]*)\.sql$")
_REQUIRES = re.compile(r"^--\s*requires:(.*)$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_DEFINES = re.compile(
    r"\bCREATE\s+OR\s+REPLACE\s+(?:FUNCTION|PROCEDURE)\s+(?:public\.)?([a-z_][a-z0-9_]*)\s*\(",
    re.IGNORECASE)
_PLAIN_CREATE = re.compile(r"\bCREATE\s+(?:FUNCTION|PROCEDURE)\b", re.IGNORECASE)
_LOCK_KEY = 0x6F6E73616C65  # 'onsale'
_INVALID_FUNCTION_DEFINITION = "42P13"  # e.g. "cannot change return type of existing function"


class MigrationError(RuntimeError):
    pass


def _requires(sql: str) -> tuple[str, ...]:
    """The names listed on ``-- requires:`` lines of the file's leading comment block."""
    names: list[str] = []
    for line in sql.splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("--"):
            break
        match = _REQUIRES.match(line)
        if match:
            names.extend(n.strip() for n in match.group(1).split(",") if n.strip())
    return tuple(names)


def _checksum(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return _checksum(self.sql)

    @property
    def requires(self) -> tuple[str, ...]:
        return _requires(self.sql)


@dataclass(frozen=True)
class FunctionFile:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return _checksum(self.sql)

    @property
    def requires(self) -> tuple[str, ...]:
        return _requires(self.sql)

    @property
    def defines(self) -> tuple[str, ...]:
        """The functions (and procedures) the file creates, by name."""
        return tuple(dict.fromkeys(m.lower() for m in _DEFINES.findall(self.sql)))


@dataclass(frozen=True)
class MigrateResult:
    """What one run applied: migration versions and function file names, in order."""

    migrations: list[int] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.migrations or self.functions)

    def describe(self) -> str:
        """What ``onsale migrate`` prints: ``applied migrations [1, 2]; functions
        onsale_hold, onsale_sweep`` or ``schema is up to date``."""
        parts = []
        if self.migrations:
            parts.append(f"migrations {self.migrations}")
        if self.functions:
            parts.append(f"functions {', '.join(self.functions)}")
        return "applied " + "; ".join(parts) if parts else "schema is up to date"


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(directory.iterdir()):
        match = _FILE.match(path.name)
        if match is None:
            continue
        found.append(Migration(int(match.group(1)), match.group(2), path.read_text()))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise MigrationError(f"migrations must be numbered 1..n without gaps, found {versions}")
    return found


def load_functions(directory: Path = FUNCTIONS_DIR) -> list[FunctionFile]:
    """The function files, in the order they are applied: every file after the files it
    requires, otherwise by name. Refuses a file that does not define the function it is
    named after, uses a plain CREATE FUNCTION (it could not be applied twice), or
    requires an unknown file or itself (directly or in a cycle)."""
    files: dict[str, FunctionFile] = {}
    for path in sorted(directory.iterdir()):
        match = _FUNCTION_FILE.match(path.name)
        if match is None or not path.is_file():
            continue
        f = FunctionFile(match.group(1), path.read_text())
        if f.name not in f.defines:
            raise MigrationError(
                f"function file {path.name} must CREATE OR REPLACE FUNCTION {f.name}(...)")
        if _PLAIN_CREATE.search(f.sql):
            raise MigrationError(
                f"function file {path.name} must use CREATE OR REPLACE, not CREATE FUNCTION")
        files[f.name] = f
    for f in files.values():
        unknown = [n for n in f.requires if n not in files or n == f.name]
        if unknown:
            raise MigrationError(f"function file {f.name}.sql requires unknown {unknown}")
    ordered: list[FunctionFile] = []
    done: set[str] = set()
    while len(ordered) < len(files):
        ready = [f for f in files.values()
                 if f.name not in done and all(n in done for n in f.requires)]
        if not ready:
            stuck = sorted(n for n in files if n not in done)
            raise MigrationError(f"function files require each other in a cycle: {stuck}")
        first = min(ready, key=lambda f: f.name)
        ordered.append(first)
        done.add(first.name)
    return ordered


def _closure(names: tuple[str, ...], files: list[FunctionFile]) -> list[FunctionFile]:
    """The named function files and everything they require, in application order."""
    by_name = {f.name: f for f in files}
    wanted: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(by_name[name].requires)
    return [f for f in files if f.name in wanted]


async def _present(conn: Any) -> set[str]:
    rows = await conn.fetch(
        "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace")
    return {r["proname"] for r in rows}


async def _apply_function(conn: Any, f: FunctionFile) -> None:
    """Run one function file and record its checksum; the caller holds a transaction."""
    try:
        await conn.execute(f.sql)
    except Exception as exc:
        if getattr(exc, "sqlstate", None) == _INVALID_FUNCTION_DEFINITION:
            raise MigrationError(
                f"function file {f.name}.sql cannot replace the existing function ({exc}); "
                "a changed signature or result needs a new name, e.g. "
                f"{f.name}_v2 (docs/operations.md#changing-a-function)") from exc
        raise
    await conn.execute(
        """INSERT INTO schema_functions (name, checksum) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()""",
        f.name, f.checksum,
    )


async def migrate(conn: Any, directory: Path = MIGRATIONS_DIR,
                  functions: Path = FUNCTIONS_DIR) -> MigrateResult:
    """Apply pending migrations, then every function file that changed; refuse if an
    applied migration was edited. Returns what was applied."""
    result = MigrateResult()
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_functions (
                   name text PRIMARY KEY,
                   checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        migrations = load_migrations(directory)
        files = load_functions(functions)
        known = {f.name for f in files}
        for m in migrations:
            unknown = [n for n in m.requires if n not in known]
            if unknown:
                raise MigrationError(
                    f"migration {m.version:04d}_{m.name} requires unknown function files "
                    f"{unknown}")
        applied = {
            r["version"]: r["checksum"]
            for r in await conn.fetch("SELECT version, checksum FROM schema_migrations")
        }
        for m in migrations:
            if m.version in applied and applied[m.version] != m.checksum:
                raise MigrationError(
                    f"migration {m.version:04d}_{m.name} was changed after it was applied"
                )
        recorded: dict[str, str] = {
            r["name"]: r["checksum"]
            for r in await conn.fetch("SELECT name, checksum FROM schema_functions")
        }

        def current(f: FunctionFile, present: set[str]) -> bool:
            return recorded.get(f.name) == f.checksum and set(f.defines) <= present

        for m in migrations:
            if m.version in applied:
                continue
            needed = _closure(m.requires, files) if m.requires else []
            present = await _present(conn) if needed else set()
            stale = [f for f in needed if not current(f, present)]
            async with conn.transaction():
                for f in stale:
                    await _apply_function(conn, f)
                await conn.execute(m.sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    m.version, m.name, m.checksum,
                )
            for f in stale:
                recorded[f.name] = f.checksum
                result.functions.append(f.name)
            result.migrations.append(m.version)

        present = await _present(conn)
        for f in files:
            if current(f, present):
                continue
            async with conn.transaction():
                await _apply_function(conn, f)
            recorded[f.name] = f.checksum
            present.update(f.defines)
            result.functions.append(f.name)
        # A removed file is forgotten, so a file of that name added later is applied.
        await conn.execute("DELETE FROM schema_functions WHERE name <> ALL ($1::text[])",
                           sorted(known))
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return result
