"""The seat map in Redis: one bounded stream and one snapshot per event.

Keys (``{e}`` is the event id):

- ``onsale:seatmap:{e}:deltas`` — stream, ``MAXLEN ~``; entry id = the entry's
  version (``<lsn>-0``), fields from ``sequencer.stream_fields``.
- ``onsale:seatmap:{e}:snap`` — hash: ``vh`` (version, 16 hex digits), ``v``
  (version text), ``gz`` (the gzip-compressed snapshot document).
- ``onsale:seatmap:versions`` — hash event id → current version (16 hex digits).
- ``onsale:seatmap:meta`` — hash: ``generation`` (one per rebuild), ``slot``,
  ``published`` (every WAL position up to this is in Redis, 16 hex digits).
- ``onsale:seatmap:alive`` — set with a TTL by the active consumer.

Writes go through Lua so each is checked and atomic: an entry is appended
only if it follows the event's current version (a replay is refused by LSN,
a gap is reported), and only by the current generation (a consumer from
before a rebuild is fenced off).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from onsale.seatmap.pgoutput import format_lsn
from onsale.seatmap.sequencer import Entry, parse_stream_entry, replay, stream_fields, stream_id
from onsale.seatmap.snapshot import SeatMap, decode, encode_gzip

PREFIX = "onsale:seatmap"
VERSIONS = f"{PREFIX}:versions"
META = f"{PREFIX}:meta"
ALIVE = f"{PREFIX}:alive"

PUBLISH = """
local gen = redis.call('HGET', KEYS[1], 'generation')
if gen ~= ARGV[1] then return redis.error_reply('FENCED ' .. tostring(gen)) end
local out, i = {}, 4
for k = 3, #KEYS do
  local event, from, to, id, n = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], tonumber(ARGV[i+4])
  local fields = {}
  for j = 1, n do fields[j] = ARGV[i + 4 + j] end
  i = i + 5 + n
  local cur = redis.call('HGET', KEYS[2], event)
  if cur and cur >= to then out[#out + 1] = 0
  elseif from ~= '' and cur ~= from then out[#out + 1] = -1
  else
    redis.call('XADD', KEYS[k], 'MAXLEN', '~', ARGV[2], id, unpack(fields))
    redis.call('HSET', KEYS[2], event, to)
    out[#out + 1] = 1
  end
end
local pub = redis.call('HGET', KEYS[1], 'published')
if not pub or pub < ARGV[3] then redis.call('HSET', KEYS[1], 'published', ARGV[3]) end
return out
"""

SNAPSHOT = """
local gen = redis.call('HGET', KEYS[1], 'generation')
if gen ~= ARGV[1] then return redis.error_reply('FENCED ' .. tostring(gen)) end
local cur = redis.call('HGET', KEYS[2], 'vh')
if cur and cur >= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], 'vh', ARGV[2], 'v', ARGV[3], 'gz', ARGV[4])
return 1
"""


class Fenced(RuntimeError):
    """Another generation owns the seat maps (a rebuild happened elsewhere)."""


class Gap(RuntimeError):
    """Redis holds a version this consumer did not produce: rebuild."""


def hexv(version: int) -> str:
    return f"{version:016x}"


def stream_key(event_id: int) -> str:
    return f"{PREFIX}:{event_id}:deltas"


def snap_key(event_id: int) -> str:
    return f"{PREFIX}:{event_id}:snap"


class Bus:
    def __init__(self, redis: Redis, stream_maxlen: int = 10_000) -> None:
        self.redis: Any = redis  # replies are bytes (no decode_responses)
        self.maxlen = stream_maxlen
        self._publish = redis.register_script(PUBLISH)
        self._snapshot = redis.register_script(SNAPSHOT)

    async def meta(self) -> dict[str, str]:
        raw = await self.redis.hgetall(META)
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def versions(self) -> dict[int, int]:
        raw = await self.redis.hgetall(VERSIONS)
        return {int(k): int(v, 16) for k, v in raw.items()}

    async def publish(self, generation: str, entries: Sequence[Entry], published: int,
                      snapshots: Sequence[SeatMap] = ()) -> list[int]:
        """Append entries (1 appended, 0 replay, -1 gap each) and raise the published mark.
        ``snapshots`` (maps at their state after these entries) are written in the same
        transaction: a new event's first one, or one the stream must not outrun."""
        keys = [META, VERSIONS]
        args: list[Any] = [generation, self.maxlen, hexv(published)]
        for entry in entries:
            fields = [x for kv in stream_fields(entry).items() for x in kv]
            keys.append(stream_key(entry.event_id))
            args += [entry.event_id, "" if entry.frm is None else hexv(entry.frm),
                     hexv(entry.to), stream_id(entry), len(fields), *fields]
        # The script alone is atomic; MULTI only when snapshots go with it.
        async with self.redis.pipeline(transaction=bool(snapshots)) as pipe:
            for seat_map in snapshots:
                await self._snapshot_into(pipe, generation, seat_map)
            await self._publish(keys=keys, args=args, client=pipe)
            results = await pipe.execute(raise_on_error=False)
        for result in results:
            if isinstance(result, Exception):
                if "FENCED" in str(result):
                    raise Fenced(str(result))
                raise result
        out = [int(x) for x in results[-1]]
        if -1 in out:
            raise Gap(f"{out.count(-1)} entries do not follow the versions in Redis")
        return out

    async def _snapshot_into(self, client: Any, generation: str, seat_map: SeatMap) -> Any:
        return await self._snapshot(
            keys=[META, snap_key(seat_map.event_id)],
            args=[generation, hexv(seat_map.version), format_lsn(seat_map.version),
                  encode_gzip(seat_map)], client=client)

    async def write_snapshot(self, generation: str, seat_map: SeatMap) -> bool:
        try:
            return bool(await self._snapshot_into(self.redis, generation, seat_map))
        except Exception as exc:
            if "FENCED" in str(exc):
                raise Fenced(str(exc)) from None
            raise

    async def reset_all(self, generation: str, slot: str, maps: dict[int, SeatMap],
                        published: int) -> None:
        """A rebuild: a new generation, every event's snapshot and a reset entry."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(VERSIONS)
            pipe.hset(META, mapping={"generation": generation, "slot": slot,
                                     "published": hexv(published)})
            for seat_map in maps.values():
                pipe.delete(snap_key(seat_map.event_id))
                await self._snapshot_into(pipe, generation, seat_map)
                entry = Entry("reset", seat_map.event_id, None, seat_map.version,
                              reason="rebuild")
                pipe.xadd(stream_key(seat_map.event_id), stream_fields(entry),
                          id=stream_id(entry), maxlen=self.maxlen, approximate=True)
                pipe.hset(VERSIONS, str(seat_map.event_id), hexv(seat_map.version))
            await pipe.execute()

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
