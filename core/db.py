"""The asyncpg pool, named SQL loading, and the mapping of outages to 503."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any

import asyncpg

from core.config import Settings
from core.problems import Problem

SQL_DIR = Path(__file__).parent / "sql"
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)

# Errors that mean "the database cannot answer now": never guess, refuse.
UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.ConnectionFailureError,
    asyncpg.exceptions.QueryCanceledError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.InterfaceError,
)


@cache
def queries(name: str) -> dict[str, str]:
    """Load ``core/sql/<name>.sql``: blocks introduced by ``-- name: query_name``."""
    text = (SQL_DIR / f"{name}.sql").read_text()
    parts = _NAME.split(text)
    out: dict[str, str] = {}
    for i in range(1, len(parts), 2):
        out[parts[i]] = parts[i + 1].strip().rstrip(";")
    return out


async def init_connection(conn: Any) -> None:
    """JSON and JSONB come back as Python objects."""
    for typename in ("json", "jsonb"):
        await conn.set_type_codec(
            typename, encoder=json.dumps, decoder=json.loads, schema="pg_catalog",
        )


async def keep_session(conn: Any) -> None:
    """Pool reset without a round trip.

    asyncpg's default reset runs ``RESET ALL; UNLISTEN *; ...`` on every release,
    a second round trip per request. Core never changes session state (settings
    come from ``server_settings``, advisory locks are transaction-scoped), and
    the pool still rolls back any open transaction before calling this.
    """


async def create_pool(settings: Settings) -> Any:
    return await asyncpg.create_pool(
        settings.database_url,
        init=init_connection,
        reset=keep_session,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        command_timeout=settings.db_statement_timeout_ms / 1000 + 1,
        server_settings={
            "statement_timeout": str(settings.db_statement_timeout_ms),
            "application_name": "onsale-core",
        },
    )


class Database:
    """A pool plus the acquire timeout; outages surface as 503 problems."""

    def __init__(self, pool: Any, acquire_timeout: float) -> None:
        self.pool = pool
        self.acquire_timeout = acquire_timeout

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        try:
            async with self.pool.acquire(timeout=self.acquire_timeout) as conn:
                yield conn
        except UNAVAILABLE as exc:
            raise Problem(503, "inventory_unavailable", detail=type(exc).__name__) from exc
