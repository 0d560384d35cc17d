"""Moving an event to another shard before its queue opens: copy, verify, switch,
delete (docs/scaling.md#moving-an-event). Whether it may move is
``core.event_move_rules.decide_move``; this module reads the facts and does the steps.

No transaction spans two databases. The source's rows are locked in a transaction on
the source that stays open from the copy to the delete, so nothing changes there while
the copy is checked; the target's rows are written and committed in a transaction of
their own; the placement switches in a directory transaction. A crash before the
switch leaves the event on its source (the target's rows are unrouted, and cleared by
the next attempt); a crash after it leaves the event on its target (the source's
transaction rolls back: its copy stays, unrouted, until the move is run again). Either
way the event is whole on the one shard the placement names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from onsale.core.event_move_rules import (
    REFUSAL_STATUS,
    MoveDecision,
    MoveFacts,
    MoveVerdict,
    decide_move,
)
from onsale.core.event_rows import (
    EventTable,
    checksums,
    delete_rows,
    lock_rows,
    read_rows,
    tables_on,
    write_rows,
)
from onsale.core.event_store import DIRECTORY_SHARD
from onsale.core.queries import queries
from onsale.kernel.problems import Problem

log = logging.getLogger("onsale.events")

# A shard id -> a connection of its own to that shard, with the background statement
# bound (a large venue's rows take longer than a request's 500 ms).
OpenShard = Callable[[int], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True)
class MoveResult:
    event_id: int
    source: int
    target: int
    rows: dict[str, int]  # rows copied, per table
    moved: bool           # False: it was on the target already (leftovers cleared)


async def move_event(directory: Any, open_shard: OpenShard, event_id: int,
                     target: int) -> MoveResult:
    """Move the event to shard ``target``; ``directory`` is a connection to the
    directory, ``open_shard`` opens another to any shard (the directory's own too)."""
    q = queries("events")
    facts = await directory.fetchrow(q["move_facts"], event_id, target)
    if facts is None:
        raise Problem(404, "event_not_found")
    source: int = facts["shard_id"]
    async with open_shard(source) as src:
        usage = await src.fetchrow(q["event_usage"], event_id)
        decision = decide_move(_facts(facts, target, usage))
        _refuse(decision)
        if decision.verdict is MoveVerdict.ALREADY_THERE:
            await _clear_leftovers(directory, open_shard, event_id, source)
            return MoveResult(event_id, source, target, {}, moved=False)
        async with open_shard(target) as dst:
            rows = await _move(directory, src, dst, event_id, source, target)
    log.info("event %s moved from shard %s to shard %s", event_id, source, target)
    return MoveResult(event_id, source, target, rows, moved=True)


async def _move(directory: Any, src: Any, dst: Any, event_id: int, source: int,
                target: int) -> dict[str, int]:
    q = queries("events")
    on_source = tables_on(source == DIRECTORY_SHARD)
    on_target = tables_on(target == DIRECTORY_SHARD)
    from_directory = tuple(t for t in on_target if t.catalogue)
    from_source = tuple(t for t in on_target if not t.catalogue)
    async with dst.transaction():  # what an earlier, interrupted attempt left there
        await delete_rows(dst, event_id, on_target)
    async with src.transaction():
        await lock_rows(src, event_id, on_source)
        usage = await src.fetchrow(q["event_usage"], event_id)
        if usage["holds"] or usage["orders"]:  # taken before the rows were locked
            raise Problem(409, "event_already_open",
                          detail="A hold was made on the event while it was being moved.")
        copied = {**await read_rows(directory, event_id, from_directory),
                  **await read_rows(src, event_id, from_source)}
        switched = False
        try:
            async with dst.transaction():
                await write_rows(dst, copied, on_target)
            want = {**await checksums(directory, event_id, from_directory),
                    **await checksums(src, event_id, from_source)}
            got = await checksums(dst, event_id, on_target)
            differ = sorted(name for name in want if want[name] != got.get(name))
            if differ:
                raise Problem(409, "move_not_verified",
                              detail="The copy on the target differs from the event's rows "
                                     f"({', '.join(differ)}); nothing was switched.")
            await _switch(directory, dst, event_id, source, target)
            switched = True
        finally:
            if not switched:  # the placement still names the source: the copy goes
                await _forget(dst, event_id, on_target)
        await delete_rows(src, event_id, on_source)
    await _analyze(dst)
    return {name: got[name][0] for name in sorted(got)}


async def _switch(directory: Any, dst: Any, event_id: int, source: int, target: int) -> None:
    """Switch the placement, the facts checked again under the catalogue row's lock:
    the queue may have come close to opening while the rows were copied."""
    q = queries("events")
    async with directory.transaction():
        facts = await directory.fetchrow(q["lock_move_facts"], event_id, target)
        if facts is None or facts["shard_id"] != source:
            raise Problem(409, "move_not_verified",
                          detail="The event's placement changed while it was being copied.")
        _refuse(decide_move(_facts(facts, target, None)))
        if target != DIRECTORY_SHARD:  # the queue's settings as they are now
            await dst.execute(q["sync_queue_columns"], event_id,
                              await directory.fetchval(q["event_row"], event_id))
        await directory.execute(q["switch_placement"], event_id, source, target)


def _facts(row: Any, target: int, usage: Any) -> MoveFacts:
    return MoveFacts(now=row["db_now"], onsale_at=row["onsale_at"],
                     prequeue_at=row["prequeue_at"], source=row["shard_id"], target=target,
                     target_state=row["target_state"],
                     holds=0 if usage is None else int(usage["holds"]),
                     orders=0 if usage is None else int(usage["orders"]))


def _refuse(decision: MoveDecision) -> None:
    if decision.verdict is MoveVerdict.REFUSED and decision.code is not None:
        raise Problem(REFUSAL_STATUS[decision.code], decision.code,
                      detail="The event cannot move: " + "; ".join(decision.reasons) + ".")


async def _forget(conn: Any, event_id: int, tables: tuple[EventTable, ...]) -> None:
    try:
        async with conn.transaction():
            await delete_rows(conn, event_id, tables)
    except Exception as exc:  # unrouted either way; the next attempt clears it
        log.warning("could not remove the copy of event %s: %s", event_id, exc)


async def _clear_leftovers(directory: Any, open_shard: OpenShard, event_id: int,
                           placed: int) -> None:
    """Remove the event's rows from every other listed shard: what a move that crashed
    after its switch left on its source. A shard with holds or orders of the event is
    left alone (a move never leaves those)."""
    q = queries("events")
    for row in await directory.fetch(q["listed_shards"]):
        shard_id = row["shard_id"]
        if shard_id == placed:
            continue
        try:
            async with open_shard(shard_id) as conn, conn.transaction():
                usage = await conn.fetchrow(q["event_usage"], event_id)
                if not (usage["holds"] or usage["orders"]):
                    await delete_rows(conn, event_id, tables_on(shard_id == DIRECTORY_SHARD))
        except Exception as exc:  # a shard that is down keeps its remnant for now
            log.warning("could not clear event %s on shard %s: %s", event_id, shard_id, exc)


async def _analyze(conn: Any) -> None:
    try:
        await conn.execute(queries("events")["analyze_inventory"])
    except Exception as exc:  # logged, not fatal: autovacuum will
        log.warning("ANALYZE after a move failed: %s", exc)
