"""``onsale event list`` and ``onsale event show`` (docs/operations.md#creating-events):
what the directory says of each event, and for one event what its shard holds (seats by
status, each GA tier's places). The reads are here; the text is pure (``list_text``,
``show_text``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from onsale.core.queries import queries
from onsale.kernel.venue_time import venue_when

Connect = Callable[[str], Awaitable[Any]]


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


async def event_list(directory: Any, limit: int = 100) -> list[dict[str, Any]]:
    rows = await directory.fetch(queries("event_report")["event_list"], limit)
    return [{k: _plain(v) for k, v in r.items()} for r in rows]


async def event_show(directory: Any, event_id: int, connect: Connect) -> dict[str, Any] | None:
    """The event as the directory lists it, and its seats and places as its shard holds
    them; None when the directory does not list it."""
    q = queries("event_report")
    row = await directory.fetchrow(q["event_row"], event_id)
    if row is None:
        return None
    doc = {k: _plain(v) for k, v in row.items()}
    dsn = await directory.fetchval("SELECT dsn FROM shards WHERE shard_id = $1",
                                   doc["shard_id"])
    shard = directory if not dsn else await connect(dsn)
    try:
        doc["seats"] = {r["status"]: r["seats"] for r in await shard.fetch(q["event_seats"],
                                                                         event_id)}
        doc["ga_tiers"] = [dict(r) for r in await shard.fetch(q["event_ga"], event_id)]
    finally:
        if shard is not directory:
            await shard.close()
    return doc


def at_venue(iso: str, zone: str) -> str:
    """An instant of the report (ISO 8601) as the venue's clocks show it."""
    return venue_when(datetime.fromisoformat(iso), zone)


def list_text(rows: list[dict[str, Any]]) -> str:
    """The events, their on-sale time in each venue's zone (``--json``: UTC ISO)."""
    if not rows:
        return "no events"
    lines = [f"{'event':>6}  {'shard':>5}  {'on sale (venue time)':<31}  {'seats':>6}  "
             f"{'queue':<11}  name"]
    for r in rows:
        queue = r["queue_policy"] + (" paused" if r["admission_paused"] else "")
        onsale = at_venue(r["onsale_at"], r["time_zone"])
        lines.append(f"{r['event_id']:>6}  {r['shard_id']:>5}  {onsale:<31}  "
                     f"{r['seat_count']:>6}  {queue:<11}  {r['name']}")
    return "\n".join(lines)


def show_text(doc: dict[str, Any]) -> str:
    """One event, its times in the venue's zone (``--json``: UTC ISO)."""
    zone = doc["time_zone"]
    lines = [f"event {doc['event_id']}: {doc['name']} at {doc['venue_name']} (shard "
             f"{doc['shard_id']}), time zone {zone}",
             f"  on sale {at_venue(doc['onsale_at'], zone)}, "
             f"starts {at_venue(doc['starts_at'], zone)}"
             + (f", queue opens {at_venue(doc['prequeue_at'], zone)}"
                if doc["prequeue_at"] else ""),
             f"  queue {doc['queue_policy']}" + (" (paused)" if doc["admission_paused"] else "")
             + f", admission {doc['admission_rate_min']}-{doc['admission_rate_max']}/min, "
               f"active cap {doc['active_cap']}, proof of work {doc['pow_difficulty']}",
             f"  holds {doc['hold_ttl_seconds']} s, at most {doc['max_seats_per_hold']} seats "
             f"a hold and {doc['max_tickets_per_account']} tickets an account"]
    if doc["seats"]:
        lines.append(f"  seats ({doc['seat_count']}): " + ", ".join(
            f"{status.lower()} {n}" for status, n in sorted(doc["seats"].items())))
    for t in doc["ga_tiers"]:
        lines.append(f"  GA tier {t['tier_id']} {t['name']}: {t['available']} available, "
                     f"{t['held']} held, {t['sold']} sold of {t['capacity']} "
                     f"({t['stripes']} stripes)")
    return "\n".join(lines)
