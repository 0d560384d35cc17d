"""Pure sequencing: pgoutput messages → per-event deltas versioned by commit LSN.

``Sequencer.feed`` takes decoded messages in stream order and returns what
to publish. Changes are grouped by transaction; at each commit every event
the transaction touched gets one ``Entry`` (kind ``delta``) whose ``to`` is
the commit LSN and whose ``frm`` is the event's previous version, carrying
only seats whose visible state changed, and the general-admission stripes
(``ga_buckets``) whose available places changed. A transaction whose commit LSN is
not above an event's version was applied already (a replay after a
restart): it yields nothing for that event. Inserts for an unknown event are
a new event (kind ``reset``: its first snapshot).

``coalesce`` merges contiguous entries into one (the hub's tick), and the
helpers at the end are the wire forms: Redis stream fields and WebSocket
frames (docs/seatmap-protocol.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onsale.seatmap.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    PgOutput,
    Relation,
    Truncate,
    Update,
    format_lsn,
    parse_lsn,
)
from onsale.seatmap.snapshot import BLOCKED, Change, PlaceChange, SeatMap, visible

TABLE = ("public", "seat_inventory")
GA_TABLE = ("public", "ga_buckets")
HEARTBEAT_PREFIX = "onsale.seatmap"


class SequenceError(ValueError):
    """Entries that do not chain (``frm`` of one is not ``to`` of the previous)."""


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str  # "delta" or "reset"
    event_id: int
    frm: int | None  # the version this applies to; None for a reset
    to: int
    changes: list[Change] = field(default_factory=list)
    reason: str = ""
    places: list[PlaceChange] = field(default_factory=list)  # GA stripes, (tier, stripe)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    lsn: int
    content: bytes


@dataclass(frozen=True, slots=True)
class Rebuild:
    """The in-memory state can no longer be trusted: rebuild from the database."""
    reason: str


Output = Entry | Heartbeat | Rebuild


class Sequencer:
    def __init__(self, maps: dict[int, SeatMap],
                 skip: Callable[[int], bool] | None = None) -> None:
        """``skip``: events whose rows are ignored (placed on another shard, whose
        consumer publishes them; seatmap/shard_plan.py ``foreign``)."""
        self.maps = maps
        self.skip = skip
        self.position = 0  # every transaction ending at or before this is fully fed
        self.in_transaction = False
        self.replayed = 0  # per-event transactions skipped as already applied
        self.commits = 0  # transactions seen (the caller resets it)
        self.last_commit_us = 0  # commit time of the last one, µs since the Unix epoch
        self._columns: dict[int, tuple[int, int, int, int]] = {}
        self._ga_columns: dict[int, tuple[int, int, int, int]] = {}
        self._commit_lsn = 0
        self._rows: list[tuple[int, int, int, int | None, bool]] = []
        self._places: list[tuple[int, int, int, int, bool]] = []

    def feed(self, msg: PgOutput) -> list[Output]:
        if isinstance(msg, (Insert, Update)):
            self._row(msg.oid, msg.new, msg.new, inserted=isinstance(msg, Insert))
        elif isinstance(msg, Begin):
            self.in_transaction, self._commit_lsn, self._rows = True, msg.final_lsn, []
            self._places = []
        elif isinstance(msg, Commit):
            self.in_transaction = False
            self.position = max(self.position, msg.end_lsn)
            self.commits += 1
            self.last_commit_us = msg.commit_time
            return self._commit(msg.commit_lsn)
        elif isinstance(msg, Relation):
            self._relation(msg)
        elif isinstance(msg, Delete):
            self._row(msg.oid, msg.old, None, inserted=False)
        elif isinstance(msg, Truncate):
            if set(msg.oids) & set(self._columns):
                return [Rebuild("seat_inventory was truncated")]
            if set(msg.oids) & set(self._ga_columns):
                return [Rebuild("ga_buckets was truncated")]
        elif isinstance(msg, Message) and not msg.transactional:
            self.position = max(self.position, msg.lsn + 1)
            if msg.prefix == HEARTBEAT_PREFIX:
                return [Heartbeat(msg.lsn, msg.content)]
        return []

    def _relation(self, rel: Relation) -> None:
        table = (rel.namespace, rel.name)
        if table == TABLE:
            self._columns[rel.oid] = _positions(rel, ("event_id", "seat_id", "status",
                                                      "hold_expires_at"))
        elif table == GA_TABLE:
            self._ga_columns[rel.oid] = _positions(rel, ("event_id", "tier_id", "stripe",
                                                         "available"))

    def _row(self, oid: int, key: Any, new: Any, *, inserted: bool) -> None:
        cols = self._columns.get(oid)
        if cols is None:
            ga = self._ga_columns.get(oid)
            if ga is not None:
                e, t, s, a = ga
                if self.skip is not None and self.skip(int(key[e])):
                    return
                available = 0 if new is None else int(new[a])  # a deleted stripe sells nothing
                self._places.append((int(key[e]), int(key[t]), int(key[s]), available, inserted))
            return
        e, s, st, ex = cols
        event_id, seat_id = int(key[e]), int(key[s])
        if self.skip is not None and self.skip(event_id):
            return
        if new is None:  # a deleted seat is no longer for sale
            self._rows.append((event_id, seat_id, BLOCKED, None, False))
            return
        code, expires = visible(new[st], new[ex])
        self._rows.append((event_id, seat_id, code, expires, inserted))

    def _commit(self, lsn: int) -> list[Output]:
        by_event: dict[int, list[tuple[int, int, int | None, bool]]] = {}
        for event_id, seat_id, code, expires, inserted in self._rows:
            by_event.setdefault(event_id, []).append((seat_id, code, expires, inserted))
        places_by_event: dict[int, list[tuple[int, int, int, bool]]] = {}
        for event_id, tier_id, stripe, available, inserted in self._places:
            places_by_event.setdefault(event_id, []).append((tier_id, stripe, available, inserted))
            by_event.setdefault(event_id, [])
        self._rows, self._places = [], []
        out: list[Output] = []
        for event_id, rows in by_event.items():
            places = places_by_event.get(event_id, [])
            seat_map = self.maps.get(event_id)
            if seat_map is None:
                if not (all(inserted for *_, inserted in rows)
                        and all(inserted for *_, inserted in places)):
                    return [Rebuild(f"a change to event {event_id}, which is not loaded")]
                seat_map = self.maps[event_id] = SeatMap(event_id)
                for seat_id, code, expires, _ in rows:
                    seat_map.set(seat_id, code, expires)
                for tier_id, stripe, available, _ in places:
                    seat_map.set_places(tier_id, stripe, available)
                seat_map.version = lsn
                out.append(Entry("reset", event_id, None, lsn, reason="new"))
                continue
            if lsn <= seat_map.version:
                self.replayed += 1
                continue
            before = {seat_id: seat_map.get(seat_id) for seat_id, *_ in rows}
            for seat_id, code, expires, _ in rows:
                seat_map.set(seat_id, code, expires)
            changes: list[Change] = []
            for seat_id, old in before.items():
                now = seat_map.get(seat_id)
                if now != old:
                    changes.append((seat_id, now[0], now[1]))
            moved: dict[tuple[int, int], int] = {}
            for tier_id, stripe, available, _ in places:
                if seat_map.set_places(tier_id, stripe, available) or (tier_id, stripe) in moved:
                    moved[(tier_id, stripe)] = available
            place_changes = [(t, s, a) for (t, s), a in sorted(moved.items())]
            if changes or place_changes:
                changes.sort()
                out.append(Entry("delta", event_id, seat_map.version, lsn, changes,
                                 places=place_changes))
                seat_map.version = lsn
        return out


def _positions(rel: Relation, wanted: tuple[str, str, str, str]) -> tuple[int, int, int, int]:
    """Where each wanted column is in a relation's rows; the publication must list them."""
    names = [c.name for c in rel.columns]
    try:
        a, b, c, d = (names.index(name) for name in wanted)
    except ValueError:
        raise ValueError(f"the publication must include {rel.name}'s {', '.join(wanted)}; "
                         f"the server sent {names}") from None
    return a, b, c, d


def coalesce(entries: Sequence[Entry]) -> Entry:
    """Contiguous deltas of one event as one: ``frm`` of the first, ``to`` of the last,
    each seat once with its last state."""
    if not entries:
        raise SequenceError("nothing to coalesce")
    first = entries[0]
    if len(entries) == 1:
        return first
    merged: dict[int, Change] = {}
    places: dict[tuple[int, int], PlaceChange] = {}
    prev: int | None = first.frm
    for entry in entries:
        if entry.kind != "delta" or entry.frm != prev:
            raise SequenceError(f"entry {format_lsn(entry.to)} does not follow "
                                f"{format_lsn(prev or 0)}")
        prev = entry.to
        for change in entry.changes:
            merged[change[0]] = change
        for place in entry.places:
            places[(place[0], place[1])] = place
    return Entry("delta", first.event_id, first.frm, entries[-1].to, sorted(merged.values()),
                 places=sorted(places.values()))


def replay(seat_map: SeatMap, entries: Iterable[Entry]) -> SeatMap:
    """Apply stored deltas after a snapshot; raises SequenceError on a gap or a reset."""
    for entry in entries:
        if entry.to <= seat_map.version:
            continue
        if entry.kind != "delta" or entry.frm != seat_map.version:
            raise SequenceError(f"{entry.kind} {format_lsn(entry.to)} does not follow "
                                f"{format_lsn(seat_map.version)}")
        seat_map.apply(entry.changes)
        seat_map.apply_places(entry.places)
        seat_map.version = entry.to
    return seat_map


def _changes_json(changes: list[Change]) -> str:
    return json.dumps([[s, c] if e is None else [s, c, e] for s, c, e in changes],
                      separators=(",", ":"))


def _places_json(places: list[PlaceChange]) -> str:
    return json.dumps([list(p) for p in places], separators=(",", ":"))


def stream_id(entry: Entry) -> str:
    """The Redis stream id of an entry: its version, so ids order like versions."""
    return f"{entry.to}-0"


def stream_fields(entry: Entry) -> dict[str, str]:
    if entry.kind == "reset":
        return {"k": "r", "t": format_lsn(entry.to), "why": entry.reason}
    fields = {"k": "d", "f": format_lsn(entry.frm or 0), "t": format_lsn(entry.to),
              "c": _changes_json(entry.changes)}
    if entry.places:
        fields["g"] = _places_json(entry.places)
    return fields


def parse_stream_entry(event_id: int, fields: Mapping[bytes, bytes]) -> Entry:
    to = parse_lsn(fields[b"t"].decode())
    if fields.get(b"k") == b"r":
        return Entry("reset", event_id, None, to, reason=fields.get(b"why", b"").decode())
    changes: list[Change] = [
        (int(c[0]), int(c[1]), int(c[2]) if len(c) > 2 else None)
        for c in json.loads(fields[b"c"])]
    places: list[PlaceChange] = [(int(p[0]), int(p[1]), int(p[2]))
                                 for p in json.loads(fields.get(b"g", b"[]"))]
    return Entry("delta", event_id, parse_lsn(fields[b"f"].decode()), to, changes,
                 places=places)


def delta_frame(entry: Entry) -> bytes:
    """The WebSocket text frame of a (coalesced) delta, serialized once for every client."""
    ga = f',"ga":{_places_json(entry.places)}' if entry.places else ""
    return (f'{{"type":"delta","event_id":{entry.event_id},"from":"{format_lsn(entry.frm or 0)}",'
            f'"to":"{format_lsn(entry.to)}","changes":{_changes_json(entry.changes)}{ga}}}').encode()


def control_frame(kind: str, **fields: Any) -> bytes:
    return json.dumps({"type": kind, **fields}, separators=(",", ":")).encode()
