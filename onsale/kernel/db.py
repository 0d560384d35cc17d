"""The asyncpg pool, named SQL loading, and the mapping of outages to 503."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from onsale.kernel.breaker import Breaker
from onsale.kernel.config import Settings
from onsale.kernel.dependency import Dependency, DependencyUnavailable
from onsale.kernel.problems import Problem
from onsale.kernel.timeline import QUERY as TIMELINE_QUERY
from onsale.kernel.timeline import NotThePrimary, Timelines

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
    # A node demoted under a pooled connection (a switchover): not the primary any more.
    asyncpg.exceptions.ReadOnlySQLTransactionError,
)

# The highest timeline this process has seen at each database address (docs/design.md#failover).
TIMELINES = Timelines()


def named_queries(path: Path) -> dict[str, str]:
    """The blocks of a SQL file, each introduced by ``-- name: query_name``. Each tier
    loads its own folder (``onsale.core.queries``, ``onsale.edge.queries``, …)."""
    parts = _NAME.split(path.read_text())
    return {parts[i]: parts[i + 1].strip().rstrip(";") for i in range(1, len(parts), 2)}


async def init_connection(conn: Any) -> None:
    """JSON and JSONB come back as Python objects (read with orjson: every hold's answer
    and every outbox row is one, and it parses them several times faster than the
    standard library; written with the standard library, which also takes int keys)."""
    for typename in ("json", "jsonb"):
        await conn.set_type_codec(
            typename, encoder=json.dumps, decoder=orjson.loads, schema="pg_catalog",
        )


async def init_primary(conn: Any, *, address: str, timelines: Timelines = TIMELINES) -> None:
    """A new connection is used only on the primary, on the highest timeline seen at its
    address (kernel/timeline.py); raises NotThePrimary, an outage, otherwise."""
    row = await conn.fetchrow(TIMELINE_QUERY)
    timelines.admit(address, row["standby"], row["timeline"])
    await init_connection(conn)


async def keep_session(conn: Any) -> None:
    """Pool reset without a round trip.

    asyncpg's default reset runs ``RESET ALL; UNLISTEN *; ...`` on every release,
    a second round trip per request. Core never changes session state (settings
    come from ``server_settings``, advisory locks are transaction-scoped), and
    the pool still rolls back any open transaction before calling this.
    """


REQUEST_CLIENT_MARGIN = 0.25  # the client gives up this long after the server would cancel


def statement_bounds(settings: Settings, *, request_path: bool) -> tuple[int, float]:
    """(server ``statement_timeout`` in ms, client ``command_timeout`` in s). Request
    paths: ONSALE_DB_REQUEST_TIMEOUT_MS, and 250 ms more for a server that does not
    answer at all (stopped, or a network that drops packets). Background work (the
    worker's sweeper, relay, reconciler; an operator creating an event):
    ONSALE_DB_STATEMENT_TIMEOUT_MS and 1 s more."""
    if request_path:
        ms = settings.db_request_timeout_ms
        return ms, ms / 1000 + REQUEST_CLIENT_MARGIN
    ms = settings.db_statement_timeout_ms
    return ms, ms / 1000 + 1


async def create_pool(settings: Settings, *, request_path: bool = True,
                      application_name: str = "onsale-core") -> Any:
    server_ms, client_s = statement_bounds(settings, request_path=request_path)
    return await asyncpg.create_pool(
        settings.database_url,
        init=functools.partial(init_primary, address=settings.database_url),
        reset=keep_session,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        command_timeout=client_s,
        server_settings={
            "statement_timeout": str(server_ms),
            "application_name": application_name,
        },
    )


class _Refused(Exception):
    """The breaker opened while a request waited for a connection."""


# The server answered (it cancelled a statement that ran too long): a 503 for
# this request, but no reason to stop sending the others.
_ANSWERED = (asyncpg.exceptions.QueryCanceledError,)


def outage_detail(exc: BaseException) -> str:
    """What a 503 says about the database (a sentence, never an exception's name)."""
    if isinstance(exc, asyncpg.exceptions.QueryCanceledError):
        return "The database cancelled a statement that ran too long; retry."
    if isinstance(exc, TimeoutError):
        return "The database did not answer in time; retry with the same Idempotency-Key."
    if isinstance(exc, asyncpg.exceptions.TooManyConnectionsError):
        return "The database has no free connection; retry."
    if isinstance(exc, NotThePrimary | asyncpg.exceptions.ReadOnlySQLTransactionError):
        return ("The database is changing its primary; retry in a moment with the same "
                "Idempotency-Key.")
    if isinstance(exc, DependencyUnavailable):
        return "The database is not answering; retry in a moment."
    return "The connection to the database failed; retry with the same Idempotency-Key."


class Database:
    """A pool, the acquire timeout and a circuit breaker; outages surface as
    ``503 inventory_unavailable`` problems, at once while the breaker is open."""

    def __init__(self, pool: Any, acquire_timeout: float, *, dsn: str | None = None,
                 slow_timeout_ms: int = 5000, backoff: float = 0.5,
                 max_backoff: float = 2.0) -> None:
        self.pool = pool
        self.acquire_timeout = acquire_timeout
        self.dsn = dsn
        self.slow_timeout_ms = slow_timeout_ms
        self.dependency = Dependency(
            "PostgreSQL", timeout=None, outages=UNAVAILABLE,
            breaker=Breaker(backoff=backoff, max_backoff=max_backoff))

    @classmethod
    def from_settings(cls, pool: Any, settings: Settings) -> Database:
        return cls(pool, settings.db_acquire_timeout, dsn=settings.database_url,
                   slow_timeout_ms=settings.db_statement_timeout_ms,
                   backoff=settings.dependency_backoff,
                   max_backoff=settings.dependency_backoff_max)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        """A pool connection, bounded: the wait for one (ONSALE_DB_ACQUIRE_TIMEOUT) and
        each statement (the pool's timeouts). A statement that got no answer, or a
        connection that failed, counts against the breaker; waiting too long while
        every connection is in use (this process is busy) does not, unless it was the
        probe."""
        turn = self.dependency.admit()
        if turn is None:
            raise Problem(503, "inventory_unavailable", detail=outage_detail(
                self.dependency.refusal()))
        acquired = False
        try:
            async with self.pool.acquire(timeout=self.acquire_timeout) as conn:
                acquired = True
                if turn == "call" and self.dependency.went_away():
                    raise _Refused  # it went away while this one queued
                try:
                    yield conn
                except (TimeoutError, asyncpg.exceptions.ReadOnlySQLTransactionError):
                    # The client gave up on a statement: the server may be stopped, and
                    # asyncpg would wait (up to the acquire timeout) for its cancel to be
                    # acknowledged before reusing the connection. Or the node was demoted.
                    # Drop it instead.
                    conn.terminate()
                    raise
        except _Refused:
            raise Problem(503, "inventory_unavailable", detail=outage_detail(
                self.dependency.refusal())) from None
        except UNAVAILABLE as exc:
            if isinstance(exc, _ANSWERED):
                self.dependency.succeeded()
            elif isinstance(exc, TimeoutError) and not acquired and self._pool_full():
                self.dependency.busy(turn, exc)  # waited for a busy pool: this process
            else:
                self.dependency.failed(exc)
            raise Problem(503, "inventory_unavailable", detail=outage_detail(exc)) from exc
        except Exception:
            self.dependency.succeeded()  # an answer (or a bug), not an outage
            raise
        except BaseException:
            self.dependency.abandoned()
            raise
        self.dependency.succeeded()

    def _pool_full(self) -> bool:
        """Every connection exists (and was in use): an acquire that timed out waited
        for this process's own work. With room left, it waited for a new connection
        that the server did not accept in time: the server's failure."""
        size, most = getattr(self.pool, "get_size", None), getattr(self.pool, "get_max_size", None)
        if size is None or most is None:
            return True
        return bool(size() >= most())

    @asynccontextmanager
    async def slow_connection(self) -> AsyncIterator[Any]:
        """A connection of its own for the rare long statements of a request (an
        operator creating an event with its ANALYZE, the random draw): the
        background bounds (ONSALE_DB_STATEMENT_TIMEOUT_MS), not the request path's.
        Without a DSN (tests building a bare ``Database``), a pool connection."""
        if self.dsn is None:
            async with self.connection() as pooled:
                yield pooled
            return
        if not self.dependency.admit():
            raise Problem(503, "inventory_unavailable", detail=outage_detail(
                self.dependency.refusal()))
        try:
            conn = await asyncpg.connect(
                self.dsn, timeout=max(1.0, self.acquire_timeout),
                command_timeout=self.slow_timeout_ms / 1000 + 1,
                server_settings={"statement_timeout": str(self.slow_timeout_ms),
                                 "application_name": "onsale-core"})
        except UNAVAILABLE as exc:
            self.dependency.failed(exc)
            raise Problem(503, "inventory_unavailable", detail=outage_detail(exc)) from exc
        except BaseException:
            self.dependency.abandoned()
            raise
        try:
            await init_primary(conn, address=self.dsn)
            yield conn
        except UNAVAILABLE as exc:
            conn.terminate()
            if isinstance(exc, _ANSWERED):
                self.dependency.succeeded()
            else:
                self.dependency.failed(exc)
            raise Problem(503, "inventory_unavailable", detail=outage_detail(exc)) from exc
        except BaseException:
            conn.terminate()
            raise
        self.dependency.succeeded()
        try:
            await conn.close(timeout=1.0)
        except Exception:
            conn.terminate()
