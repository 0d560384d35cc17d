"""The directory's shard list and event placement (docs/scaling.md): read it, add a
shard, migrate every shard. The decisions are in ``onsale.kernel.placement``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from onsale.core.event_move_rules import REFUSAL_STATUS
from onsale.core.migrate import MigrateResult, MigrationError, migrate
from onsale.core.queries import queries
from onsale.kernel.placement import ShardRow, home_of_new_event, masked_dsn
from onsale.kernel.problems import Problem
from onsale.kernel.progress import Progress, silent

Connect = Callable[[str], Awaitable[Any]]  # a DSN -> an open asyncpg connection


async def shard_summary(conn: Any) -> list[dict[str, Any]]:
    """``onsale shard list``: each shard with its events, placed and on sale."""
    rows = await conn.fetch(
        """SELECT s.shard_id, s.dsn, s.state, s.epoch, s.added_at, s.patroni,
                  count(p.event_id) AS events,
                  count(p.event_id) FILTER (WHERE e.onsale_at <= now()
                                            AND e.starts_at > now()) AS on_sale
           FROM shards s
           LEFT JOIN event_placement p ON p.shard_id = s.shard_id
           LEFT JOIN events e ON e.event_id = p.event_id
           GROUP BY s.shard_id ORDER BY s.shard_id""")
    return [{"shard": r["shard_id"], "dsn": masked_dsn(r["dsn"]), "state": r["state"],
             "epoch": r["epoch"], "events": r["events"], "on_sale": r["on_sale"],
             "added_at": r["added_at"].isoformat(), "patroni": list(r["patroni"])}
            for r in rows]


async def new_event_home(conn: Any, requested: int | None) -> ShardRow:
    """The shard a new event goes to (the one asked for, or the active one with the
    fewest events on sale), read from the directory in the caller's transaction; a
    shard not listed or not active is refused."""
    rows = await conn.fetch(queries("events")["shards_on_sale"])
    shards = {r["shard_id"]: ShardRow(r["shard_id"], r["dsn"], r["state"], r["epoch"])
              for r in rows}
    home = home_of_new_event(shards, {r["shard_id"]: r["on_sale"] for r in rows}, requested)
    if home.shard_id is None:
        code = home.refusal or "shard_not_active"
        detail = ("No shard is active." if requested is None
                  else f"Shard {requested} is not listed." if code == "shard_not_found"
                  else f"Shard {requested} is {shards[requested].state}.")
        raise Problem(REFUSAL_STATUS[code], code, detail=detail)
    return shards[home.shard_id]


async def set_patroni(directory: Any, shard_id: int, urls: list[str]) -> None:
    """Record the REST APIs of the shard's Patroni nodes ([] for a single server)."""
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise MigrationError(f"a Patroni REST API is an http(s) URL: {', '.join(bad)}")
    found = await directory.fetchval(
        "UPDATE shards SET patroni = $2 WHERE shard_id = $1 RETURNING shard_id",
        shard_id, [u.rstrip("/") for u in urls])
    if found is None:
        raise MigrationError(f"no shard {shard_id} (onsale shard list)")


async def add_shard(directory: Any, dsn: str, connect: Connect) -> tuple[int, MigrateResult]:
    """Migrate the database at ``dsn`` as the next shard and list it in the directory.
    Refused when the DSN is listed already, or the database is a shard already (the
    directory's own database is shard 1): ``migrate`` keeps a database's number."""
    if not dsn:
        raise MigrationError("a shard needs a DSN")
    listed = await directory.fetchval("SELECT shard_id FROM shards WHERE dsn = $1", dsn)
    if listed is not None:
        raise MigrationError(f"{masked_dsn(dsn)} is shard {listed} already")
    shard_id = await directory.fetchval("SELECT coalesce(max(shard_id), 0) + 1 FROM shards")
    conn = await connect(dsn)
    try:
        applied = await migrate(conn, shard_id=shard_id, holds_directory=False)
        stamped = await conn.fetchval("SELECT stamped_since FROM shard_identity")
    finally:
        await conn.close()
    await directory.execute(
        "INSERT INTO shards (shard_id, dsn, stamped_since) VALUES ($1, $2, $3)",
        shard_id, dsn, stamped)
    return shard_id, applied


async def migrate_shards(directory: Any, connect: Connect,
                         progress: Progress = silent) -> dict[int, MigrateResult]:
    """``onsale migrate`` past the directory: every other listed shard, in turn."""
    done: dict[int, MigrateResult] = {}
    for row in await directory.fetch(
            "SELECT shard_id, dsn FROM shards WHERE dsn <> '' ORDER BY shard_id"):
        conn = await connect(row["dsn"])
        try:
            shard: int = row["shard_id"]

            def told(what: str, n: int, of: int, s: int = shard) -> None:
                progress(f"shard {s}: {what}", n, of)

            done[shard] = await migrate(conn, shard_id=shard, holds_directory=False,
                                        progress=told)
        finally:
            await conn.close()
    return done
