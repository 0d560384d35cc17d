"""An event's rows on one shard, table by table: read them, write them on another
shard, checksum them, delete them (docs/scaling.md#moving-an-event).

The same four statements for each table, so they are made here from ``EVENT_TABLES``
rather than written out eight times in a named-SQL file. Rows travel as one JSON array
per table (``to_jsonb`` on one server, ``jsonb_populate_recordset`` on the other): the
column list and the types come from the catalogue, the same on every shard because
every shard runs the same migrations. The checksum is an md5 over the rows' JSON in
key order, read with the time zone set to UTC so both servers print the same text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EventTable:
    name: str
    key: str                    # the ORDER BY within one event
    catalogue: bool = False     # the directory keeps its own: moved only between other shards
    identity: str | None = None  # a per-database id: not copied, the target makes its own
    lock: bool = True           # locked on the source while the event moves


# In the order they are written (each row's foreign keys point up the list); deleted
# in the reverse order. Holds, orders and what hangs off them are not here: an event
# that has any does not move.
EVENT_TABLES = (
    EventTable("events", "event_id", catalogue=True, lock=False),
    EventTable("venue_layouts", "event_id", catalogue=True, lock=False),
    EventTable("price_tiers", "tier_id, price_version"),
    EventTable("seats", "seat_id", lock=False),  # never updated
    EventTable("seat_inventory", "seat_id"),
    EventTable("ga_tiers", "tier_id"),
    EventTable("ga_buckets", "tier_id, stripe"),
    EventTable("ga_rebalances", "rebalance_id", identity="rebalance_id", lock=False),
)


def tables_on(shard_is_directory: bool) -> tuple[EventTable, ...]:
    """The tables that hold the event on a shard: on the directory's own database the
    catalogue's rows (the events row, the layout) stay whatever happens to the
    inventory."""
    return tuple(t for t in EVENT_TABLES if not (shard_is_directory and t.catalogue))


def _json(t: EventTable) -> str:
    return f"to_jsonb(t) - '{t.identity}'" if t.identity else "to_jsonb(t)"


def read_sql(t: EventTable) -> str:
    return (f"SELECT coalesce(jsonb_agg({_json(t)} ORDER BY {t.key}), '[]')::text "
            f"FROM {t.name} t WHERE event_id = $1")


def write_sql(t: EventTable, columns: list[str]) -> str:
    cols = ", ".join(f'"{c}"' for c in columns)
    return (f"INSERT INTO {t.name} ({cols}) OVERRIDING SYSTEM VALUE "
            f"SELECT {cols} FROM jsonb_populate_recordset(NULL::{t.name}, $1::text::jsonb) "
            "WITH ORDINALITY AS r ORDER BY r.ordinality")


def checksum_sql(t: EventTable) -> str:
    return (f"SELECT count(*) AS n, coalesce(md5(string_agg(({_json(t)})::text, E'\\n' "
            f"ORDER BY {t.key})), '') AS md5 FROM {t.name} t WHERE event_id = $1")


def lock_sql(t: EventTable) -> str:
    return f"SELECT count(*) FROM (SELECT 1 FROM {t.name} WHERE event_id = $1 FOR UPDATE) l"


def delete_sql(t: EventTable) -> str:
    return f"DELETE FROM {t.name} WHERE event_id = $1"


_COLUMNS = """SELECT attname FROM pg_attribute
              WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
                AND attname <> coalesce($2, '')
              ORDER BY attnum"""


async def read_rows(conn: Any, event_id: int,
                    tables: tuple[EventTable, ...]) -> dict[str, str]:
    """Each table's rows of the event, as JSON text."""
    return {t.name: await conn.fetchval(read_sql(t), event_id) for t in tables}


async def write_rows(conn: Any, rows: dict[str, str], tables: tuple[EventTable, ...]) -> None:
    """Write what ``read_rows`` read, in table order; the caller holds a transaction."""
    for t in tables:
        columns = [r["attname"] for r in await conn.fetch(_COLUMNS, t.name, t.identity)]
        await conn.execute(write_sql(t, columns), rows[t.name])


async def checksums(conn: Any, event_id: int,
                    tables: tuple[EventTable, ...]) -> dict[str, tuple[int, str]]:
    """Each table's (row count, md5 of its rows); in a transaction of its own unless
    the caller holds one (SET LOCAL needs one)."""
    async with conn.transaction():
        await conn.execute("SET LOCAL TimeZone = 'UTC'")
        found = {}
        for t in tables:
            row = await conn.fetchrow(checksum_sql(t), event_id)
            found[t.name] = (int(row["n"]), str(row["md5"]))
    return found


async def lock_rows(conn: Any, event_id: int, tables: tuple[EventTable, ...]) -> None:
    """Lock the rows a sale or an operator could change (the caller holds the
    transaction): nothing changes on the source between the copy and the delete."""
    for t in tables:
        if t.lock:
            await conn.fetchval(lock_sql(t), event_id)


async def delete_rows(conn: Any, event_id: int, tables: tuple[EventTable, ...]) -> None:
    """Delete the event's rows of ``tables``, in reverse order; the caller holds a
    transaction."""
    for t in reversed(tables):
        await conn.execute(delete_sql(t), event_id)
