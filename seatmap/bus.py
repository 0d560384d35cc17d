"""The seat map in Redis: one bounded stream and one snapshot per event.

Every key of event E starts with its hash tag (``onsale:{eE}:``,
``kernel.valkey.event_prefix``), so one event's seat map sits in the Valkey Cluster
slot of its waiting room and each script below touches one slot:

- ``onsale:{eE}:seatmap:deltas`` — stream, ``MAXLEN ~``; entry id = the entry's
  version (``<lsn>-0``), fields from ``sequencer.stream_fields``.
- ``onsale:{eE}:seatmap:snap`` — hash: ``vh`` (version, 16 hex digits), ``v``
  (version text), ``gz`` (the gzip-compressed snapshot document).
- ``onsale:{eE}:seatmap:version`` — hash: ``vh`` (the event's current version, 16 hex
  digits) and ``gen`` (the generation that wrote it).

Each shard's consumer has its own keys (``capture_keys``), all with the hash tag
``{seatmap}`` (one slot between them); shard 1's keep the names they had before shards:

- ``onsale:{seatmap}:meta`` (shard n: ``onsale:{seatmap}:s<n>:meta``) — hash:
  ``generation`` (one per rebuild), ``slot``, ``published`` (every WAL position of the
  shard up to this is in Redis, 16 hex digits), ``timeline`` (the primary's timeline those
  positions are on; moved on after a failover, seatmap/timeline_doubt.py), ``epoch`` (the
  shard's last).
- ``onsale:{seatmap}:events`` (``…:s<n>:events``) — set: the shard's events whose seat
  map is in Redis.
- ``onsale:{seatmap}:epoch`` — rebuilds so far over every shard: a rebuild's epoch is
  above every earlier one of any shard, so the consumer of the shard an event moved to
  takes its seat map over from the old shard's.
- ``onsale:seatmap:alive`` (``…:alive:s<n>``) — set with a TTL by the shard's active
  consumer (a key of its own).

Writes go through Lua so each is checked and atomic in its event's slot: an entry is
appended only if it follows the event's current version (a replay is refused by LSN, a
gap is reported), and only by a writer whose generation is not older than the one that
last wrote the event (a consumer from before a rebuild is fenced off). A generation is
``<epoch>.<random>``, the epoch counted in the meta hash, so a later rebuild's is the
greater. A publish runs one script per event (one round trip: a pipeline, which a
cluster client sends to each node), then raises the published mark in the meta hash,
where the generation is checked again: the mark moves only past what every event's
slot acknowledged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from onsale.kernel.valkey import RedisClient, ScriptCall, event_prefix, run_scripts
from onsale.seatmap.pgoutput import format_lsn
from onsale.seatmap.sequencer import Entry, parse_stream_entry, replay, stream_fields, stream_id
from onsale.seatmap.snapshot import SeatMap, decode, encode_gzip

PREFIX = "onsale:{seatmap}"
META = f"{PREFIX}:meta"  # shard 1's (capture_keys)
EVENTS = f"{PREFIX}:events"
ALIVE = "onsale:seatmap:alive"
EPOCH = f"{PREFIX}:epoch"


@dataclass(frozen=True)
class CaptureKeys:
    """One shard's consumer's own keys."""

    meta: str
    events: str
    alive: str


def capture_keys(shard_id: int) -> CaptureKeys:
    """Shard 1 keeps the names from before shards (its seat maps survive the upgrade);
    shard n's carry ``s<n>``, in the same slot as the epoch counter."""
    if shard_id == 1:
        return CaptureKeys(META, EVENTS, ALIVE)
    return CaptureKeys(f"{PREFIX}:s{shard_id}:meta", f"{PREFIX}:s{shard_id}:events",
                       f"{ALIVE}:s{shard_id}")
RESET_CHUNK = 100  # events reset per round trip in a rebuild (a snapshot is ~16 KiB)

# Before issue 23 (keys without an event's hash tag): removed by the first rebuild.
LEGACY_KEYS = ("onsale:seatmap:versions", "onsale:seatmap:meta")


def legacy_keys(event_id: int) -> list[str]:
    return [f"onsale:seatmap:{event_id}:deltas", f"onsale:seatmap:{event_id}:snap"]


# A writer must stop when the event's seat map was last written by a later generation
# than its own, or by another one of the same epoch (meta was lost and counted again);
# an older one is taken over. A rebuild, which holds the lease, stops only for a later
# epoch.
FENCE = """
local function epoch(g) return tonumber(string.match(g, '^(%d+)')) or 0 end
local function fenced(key, gen)
  local g = redis.call('HGET', key, 'gen')
  if not g or g == gen then return false end
  return epoch(g) >= epoch(gen)
end
local function superseded(key, gen)
  local g = redis.call('HGET', key, 'gen')
  return g and epoch(g) > epoch(gen)
end
local function refuse(key)
  return redis.error_reply('FENCED ' .. tostring(redis.call('HGET', key, 'gen')))
end
"""

# KEYS: version, deltas, snap. ARGV: generation, maxlen, 1 with a snapshot (then its
# vh, v, gz) or 0, then per entry: from, to, id, n, n fields. Returns 1 (appended),
# 0 (replay) or -1 (gap) per entry; the snapshot (the map after these entries) is
# written unless an entry was a gap.
PUBLISH = FENCE + """
if fenced(KEYS[1], ARGV[1]) then return refuse(KEYS[1]) end
local snap = ARGV[3] == '1'
local i = snap and 7 or 4
local cur = redis.call('HGET', KEYS[1], 'vh')
local out, moved, gap = {}, false, false
while i <= #ARGV do
  local from, to, id, n = ARGV[i], ARGV[i+1], ARGV[i+2], tonumber(ARGV[i+3])
  local fields = {}
  for j = 1, n do fields[j] = ARGV[i + 3 + j] end
  i = i + 4 + n
  if cur and cur >= to then out[#out + 1] = 0
  elseif from ~= '' and cur ~= from then out[#out + 1] = -1; gap = true
  else
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], id, unpack(fields))
    cur, moved = to, true
    out[#out + 1] = 1
  end
end
if moved then redis.call('HSET', KEYS[1], 'vh', cur, 'gen', ARGV[1]) end
if snap and not gap then
  local have = redis.call('HGET', KEYS[3], 'vh')
  if not have or have < ARGV[4] then
    redis.call('HSET', KEYS[3], 'vh', ARGV[4], 'v', ARGV[5], 'gz', ARGV[6])
  end
end
return out
"""

# KEYS: version, snap. ARGV: generation, vh, v, gz. 1 written, 0 not newer.
SNAPSHOT = FENCE + """
if fenced(KEYS[1], ARGV[1]) then return refuse(KEYS[1]) end
local cur = redis.call('HGET', KEYS[2], 'vh')
if cur and cur >= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], 'vh', ARGV[2], 'v', ARGV[3], 'gz', ARGV[4])
return 1
"""

# A rebuild, for one event. KEYS: version, deltas, snap. ARGV: generation, maxlen, vh,
# v, gz, the reset entry's id, then its fields. An event moved from another shard may
# come back at a version below its last one (another server's WAL positions): its
# stream then starts over, since stream ids only go up.
RESET = FENCE + """
if superseded(KEYS[1], ARGV[1]) then return refuse(KEYS[1]) end
local cur = redis.call('HGET', KEYS[1], 'vh')
if cur and cur >= ARGV[3] then redis.call('DEL', KEYS[2]) end
redis.call('DEL', KEYS[3])
redis.call('HSET', KEYS[3], 'vh', ARGV[3], 'v', ARGV[4], 'gz', ARGV[5])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], ARGV[6], unpack(ARGV, 7))
redis.call('HSET', KEYS[1], 'vh', ARGV[3], 'gen', ARGV[1])
return 1
"""

# KEYS: meta, events. ARGV: generation, published (16 hex digits), then the events
# this publish wrote. Refused unless the generation is still the current one.
MARK = """
local gen = redis.call('HGET', KEYS[1], 'generation')
if gen ~= ARGV[1] then return redis.error_reply('FENCED ' .. tostring(gen)) end
if #ARGV > 2 then redis.call('SADD', KEYS[2], unpack(ARGV, 3)) end
local pub = redis.call('HGET', KEYS[1], 'published')
if not pub or pub < ARGV[2] then redis.call('HSET', KEYS[1], 'published', ARGV[2]) end
return 1
"""

# KEYS: meta. ARGV: generation, timeline. The maps go on after a failover (seatmap/
# timeline_doubt.py): their positions from now on are the new timeline's. 0 if fenced.
MOVE_TIMELINE = """
if redis.call('HGET', KEYS[1], 'generation') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'timeline', ARGV[2])
return 1
"""

# KEYS: the epoch counter, the shard's meta. The next epoch: above every shard's so far,
# and above the one a meta hash counted before the counter existed.
NEXT_EPOCH = """
local e = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'),
                   tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0')) + 1
redis.call('SET', KEYS[1], e)
redis.call('HSET', KEYS[2], 'epoch', e)
return e
"""


class Fenced(RuntimeError):
    """Another generation owns the seat maps (a rebuild happened elsewhere)."""


class Gap(RuntimeError):
    """Redis holds a version this consumer did not produce: rebuild."""


def hexv(version: int) -> str:
    return f"{version:016x}"


def stream_key(event_id: int) -> str:
    return f"{event_prefix(event_id)}seatmap:deltas"


def snap_key(event_id: int) -> str:
    return f"{event_prefix(event_id)}seatmap:snap"


def version_key(event_id: int) -> str:
    return f"{event_prefix(event_id)}seatmap:version"


def event_keys(event_id: int) -> list[str]:
    """The keys of the event's seat map, in the order the scripts take them."""
    return [version_key(event_id), stream_key(event_id), snap_key(event_id)]


def _checked(results: Sequence[Any]) -> None:
    for result in results:
        if isinstance(result, Exception):
            if "FENCED" in str(result):
                raise Fenced(str(result))
            raise result


class Bus:
    def __init__(self, redis: RedisClient, stream_maxlen: int = 10_000,
                 keys: CaptureKeys | None = None) -> None:
        """``keys``: the consumer's own keys, its shard's (the fan-out reads only the
        events' keys, which are the same whatever the shard)."""
        self.redis: Any = redis  # replies are bytes (no decode_responses)
        self.maxlen = stream_maxlen
        self.keys = keys if keys is not None else capture_keys(1)
        self._next_epoch = redis.register_script(NEXT_EPOCH)
        self._publish = redis.register_script(PUBLISH)
        self._snapshot = redis.register_script(SNAPSHOT)
        self._reset = redis.register_script(RESET)
        self._mark = redis.register_script(MARK)
        self._move_timeline = redis.register_script(MOVE_TIMELINE)

    async def meta(self) -> dict[str, str]:
        raw = await self.redis.hgetall(self.keys.meta)
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def events(self) -> set[int]:
        """The events listed as having a seat map in Redis."""
        return {int(e) for e in await self.redis.smembers(self.keys.events)}

    async def versions(self) -> dict[int, int]:
        """The current version of each listed event that has one."""
        ids = sorted(await self.events())
        if not ids:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for event_id in ids:
                pipe.hget(version_key(event_id), "vh")
            found = await pipe.execute()
        return {e: int(v, 16) for e, v in zip(ids, found, strict=True) if v is not None}

    async def publish(self, generation: str, entries: Sequence[Entry], published: int,
                      snapshots: Sequence[SeatMap] = ()) -> list[int]:
        """Append entries (1 appended, 0 replay, -1 gap each, in order) and raise the
        published mark. ``snapshots`` (maps at their state after these entries) are
        written with their event's entries, in the same script: a new event's first
        one, or one the stream must not outrun."""
        by_event: dict[int, list[int]] = {}
        for n, entry in enumerate(entries):
            by_event.setdefault(entry.event_id, []).append(n)
        maps = {seat_map.event_id: seat_map for seat_map in snapshots}
        events = list(dict.fromkeys([*by_event, *maps]))
        calls: list[ScriptCall] = []
        for event_id in events:
            seat_map = maps.get(event_id)
            args: list[Any] = [generation, self.maxlen]
            args += [0] if seat_map is None else [1, *self._snapshot_fields(seat_map)]
            for n in by_event.get(event_id, []):
                entry = entries[n]
                fields = [x for kv in stream_fields(entry).items() for x in kv]
                args += ["" if entry.frm is None else hexv(entry.frm), hexv(entry.to),
                         stream_id(entry), len(fields), *fields]
            calls.append((self._publish, event_keys(event_id), args))
        out = [0] * len(entries)
        if calls:
            results = await run_scripts(self.redis, calls, raise_on_error=False)
            _checked(results)
            for event_id, result in zip(events, results, strict=True):
                for n, verdict in zip(by_event.get(event_id, []), result, strict=True):
                    out[n] = int(verdict)
            if -1 in out:
                raise Gap(f"{out.count(-1)} entries do not follow the versions in Redis")
        await self._raise_mark(generation, published, events)
        return out

    async def move_timeline(self, generation: str, timeline: int) -> bool:
        """Record that the maps of ``generation`` go on on ``timeline``; False if fenced."""
        return bool(await self._move_timeline(keys=[self.keys.meta],
                                              args=[generation, timeline]))

    async def _raise_mark(self, generation: str, published: int, events: Sequence[int]) -> None:
        try:
            await self._mark(keys=[self.keys.meta, self.keys.events],
                             args=[generation, hexv(published), *events])
        except ResponseError as exc:
            if "FENCED" in str(exc):
                raise Fenced(str(exc)) from None
            raise

    @staticmethod
    def _snapshot_fields(seat_map: SeatMap) -> list[Any]:
        return [hexv(seat_map.version), format_lsn(seat_map.version), encode_gzip(seat_map)]

    async def write_snapshot(self, generation: str, seat_map: SeatMap) -> bool:
        try:
            return bool(await self._snapshot(
                keys=[version_key(seat_map.event_id), snap_key(seat_map.event_id)],
                args=[generation, *self._snapshot_fields(seat_map)]))
        except ResponseError as exc:
            if "FENCED" in str(exc):
                raise Fenced(str(exc)) from None
            raise

    async def reset_all(self, slot: str, maps: dict[int, SeatMap], published: int,
                        timeline: int, foreign: Callable[[int], bool] | None = None) -> str:
        """A rebuild: a new generation, every event's snapshot and a reset entry; the
        generation. The meta hash names the new generation first (fencing off the old
        one) with no published mark, so a rebuild cut short is rebuilt again
        (``replication.restore``); the mark is set once every event is reset. An event
        listed here that is not in ``maps`` has gone, and its keys with it, unless it is
        ``foreign`` (placed on another shard, whose consumer owns its keys now)."""
        meta = self.keys.meta
        epoch = int(await self._next_epoch(keys=[EPOCH, meta]))
        generation = f"{epoch}.{uuid.uuid4().hex[:12]}"
        await self.redis.hset(meta, mapping={"generation": generation, "slot": slot,
                                             "published": hexv(0), "timeline": timeline})
        ids = sorted(maps)
        for start in range(0, len(ids), RESET_CHUNK):
            calls: list[ScriptCall] = []
            for event_id in ids[start:start + RESET_CHUNK]:
                seat_map = maps[event_id]
                entry = Entry("reset", event_id, None, seat_map.version, reason="rebuild")
                fields = [x for kv in stream_fields(entry).items() for x in kv]
                calls.append((self._reset, event_keys(event_id),
                              [generation, self.maxlen, *self._snapshot_fields(seat_map),
                               stream_id(entry), *fields]))
            _checked(await run_scripts(self.redis, calls, raise_on_error=False))
        gone = sorted(e for e in (await self.events()) - set(ids)
                      if foreign is None or not foreign(e))
        stale = [*LEGACY_KEYS, *(k for e in ids for k in legacy_keys(e)),
                 *(k for e in gone for k in (version_key(e), snap_key(e)))]
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in stale:  # one key a command: each in its own slot
                pipe.delete(key)
            await pipe.execute()
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys.events)
            for start in range(0, len(ids), 10_000):
                pipe.sadd(self.keys.events, *ids[start:start + 10_000])
            pipe.hset(meta, "published", hexv(published))
            await pipe.execute()
        return generation

    async def mark_published(self, generation: str, position: int) -> None:
        """Raise the published mark with no entry (keepalives of a quiet slot)."""
        await self.publish(generation, [], position)

    async def snapshot_blob(self, event_id: int) -> tuple[str, bytes] | None:
        """The stored (version text, gzip body), for HTTP."""
        v, gz = await self.redis.hmget(snap_key(event_id), ["v", "gz"])
        if v is None or gz is None:
            return None
        return v.decode(), bytes(gz)

    async def load(self, event_id: int, *, whole_stream: bool = False
                   ) -> tuple[SeatMap, list[Entry], str] | None:
        """The snapshot, the entries after it (all of the stream with ``whole_stream``) and
        the last stream id: the event's state is ``replay(snapshot, entries after it)``.
        None when Redis has no snapshot for the event."""
        blob = await self.snapshot_blob(event_id)
        if blob is None:
            return None
        seat_map = decode(blob[1])
        last = f"{seat_map.version}-0"
        raw = await self.redis.xrange(stream_key(event_id),
                                      min="-" if whole_stream else f"({last}")
        entries = [parse_stream_entry(event_id, fields) for _, fields in raw]
        if raw and raw[-1][0].decode() != last:
            last = max(raw[-1][0].decode(), last, key=lambda i: int(i.split("-")[0]))
        return seat_map, entries, last

    async def load_state(self, event_id: int) -> SeatMap | None:
        loaded = await self.load(event_id)
        if loaded is None:
            return None
        seat_map, entries, _ = loaded
        return replay(seat_map, [e for e in entries if e.kind == "delta"])
