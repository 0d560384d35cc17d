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
is missing from the database), each in its own transaction.The decisions are pure
(``pending_migrations``, ``migration_step``, ``function_steps``, ``forgotten``);
``migrate()`` is the I/O around them.

Ordering: a file's leading comment may say ``-- requires: name[, name...]``, naming
function files. A function file is applied after the ones it requires (otherwise in
name order); a migration applies the function files it requires, when they are not
current, in its own transaction just before its SQL, so a trigger, a DEFAULT, a CHECK
or a data change can call a function that the function phase would create only later.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onsale.kernel.progress import Progress, silent

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


# --- the plan: pure decisions over what the files say and what the database has ------------
# Not one plan for the whole run: a migration may drop a function, so what is present
# is read again before each migration that requires function files, and before the
# function phase; each read feeds the same pure step below.


@dataclass(frozen=True)
class Step:
    """One transaction of a run: function files to (re)apply, in order, then a
    migration's SQL (or none, in the function phase: one file a step)."""

    functions: tuple[FunctionFile, ...]
    migration: Migration | None = None


def is_current(f: FunctionFile, recorded: Mapping[str, str], present: set[str]) -> bool:
    """A function file needs no run: its checksum is the one recorded, and every
    function it defines exists."""
    return recorded.get(f.name) == f.checksum and set(f.defines) <= present


def pending_migrations(migrations: list[Migration], files: list[FunctionFile],
                       applied: Mapping[int, str]) -> list[Migration]:
    """The migrations to apply, in order. Refuses, before anything is applied, a
    migration that requires an unknown function file and an applied one whose text
    changed since."""
    known = {f.name for f in files}
    for m in migrations:
        unknown = [n for n in m.requires if n not in known]
        if unknown:
            raise MigrationError(
                f"migration {m.version:04d}_{m.name} requires unknown function files "
                f"{unknown}")
    for m in migrations:
        if m.version in applied and applied[m.version] != m.checksum:
            raise MigrationError(
                f"migration {m.version:04d}_{m.name} was changed after it was applied")
    return [m for m in migrations if m.version not in applied]


def migration_step(m: Migration, files: list[FunctionFile], recorded: Mapping[str, str],
                   present: set[str]) -> Step:
    """A migration's transaction: the function files it requires (and theirs) that are
    not current, then its SQL."""
    needed = _closure(m.requires, files) if m.requires else []
    return Step(tuple(f for f in needed if not is_current(f, recorded, present)), m)


def function_steps(files: list[FunctionFile], recorded: Mapping[str, str],
                   present: set[str]) -> list[Step]:
    """The function phase: each file that is not current, in application order, in a
    transaction of its own."""
    steps: list[Step] = []
    present = set(present)
    for f in files:
        if not is_current(f, recorded, present):
            steps.append(Step((f,)))
            present.update(f.defines)
    return steps


def forgotten(recorded: Mapping[str, str], files: list[FunctionFile]) -> list[str]:
    """Recorded function files that no longer exist: forgotten, so that a file of the
    same name added later is applied."""
    known = {f.name for f in files}
    return sorted(name for name in recorded if name not in known)


# --- the run: the I/O around the plan ----------------------------------------------------------


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


async def _run_step(conn: Any, step: Step, recorded: dict[str, str],
                    result: MigrateResult) -> None:
    """One step in one transaction; what it applied is recorded once it committed."""
    async with conn.transaction():
        for f in step.functions:
            await _apply_function(conn, f)
        m = step.migration
        if m is not None:
            await conn.execute(m.sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                m.version, m.name, m.checksum)
    for f in step.functions:
        recorded[f.name] = f.checksum
        result.functions.append(f.name)
    if step.migration is not None:
        result.migrations.append(step.migration.version)


async def migrate(conn: Any, directory: Path = MIGRATIONS_DIR,
                  functions: Path = FUNCTIONS_DIR, *, shard_id: int = 1,
                  holds_directory: bool = True, progress: Progress = silent) -> MigrateResult:
    """Apply pending migrations, then every function file that changed; refuse if an
    applied migration was edited. Then give the database its shard number, once
    (``shard_id``; a database that is already another shard is refused) and, where it
    ``holds_directory``, list it there as its own shard when the list is empty.
    Returns what was applied; ``progress`` hears of each pending migration and then of
    the function files."""
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
        applied = {
            r["version"]: r["checksum"]
            for r in await conn.fetch("SELECT version, checksum FROM schema_migrations")
        }
        pending = pending_migrations(migrations, files, applied)
        recorded: dict[str, str] = {
            r["name"]: r["checksum"]
            for r in await conn.fetch("SELECT name, checksum FROM schema_functions")
        }
        total = len(pending) + 1  # and the function files, one step
        for done, m in enumerate(pending):
            progress(f"{m.version:04d}_{m.name}", done, total)
            present = await _present(conn) if m.requires else set()
            await _run_step(conn, migration_step(m, files, recorded, present), recorded, result)
        progress("functions", total - 1, total)
        for step in function_steps(files, recorded, await _present(conn)):
            await _run_step(conn, step, recorded, result)
        progress("done", total, total)
        gone = forgotten(recorded, files)
        if gone:
            await conn.execute("DELETE FROM schema_functions WHERE name = ANY ($1::text[])",
                               gone)
        if await conn.fetchval("SELECT to_regclass('shard_identity') IS NOT NULL"):
            await claim_identity(conn, shard_id, holds_directory=holds_directory)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    return result


async def claim_identity(conn: Any, shard_id: int, *, holds_directory: bool) -> None:
    """Make this database shard ``shard_id`` (docs/scaling.md#adding-a-shard), or
    refuse if it is another; in the directory, list it as shard ``shard_id`` with the
    directory's own connection (dsn '') while no shard is listed."""
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO shard_identity (shard_id) VALUES ($1) ON CONFLICT DO NOTHING",
            shard_id)
        found = await conn.fetchval("SELECT shard_id FROM shard_identity")
        if found != shard_id:
            raise MigrationError(f"this database is shard {found}, not shard {shard_id}")
        if holds_directory:
            await conn.execute(
                """INSERT INTO shards (shard_id, dsn, stamped_since)
                   SELECT shard_id, '', stamped_since FROM shard_identity
                   WHERE NOT EXISTS (SELECT FROM shards)""")
