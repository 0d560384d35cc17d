"""Per-process fan-out: one Redis stream reader per event, one bounded queue per client.

A ``Channel`` follows one event: it loads the snapshot and the entries after
it from Redis, keeps the seat map at the last version it sent, and blocks on
``XREAD`` for new entries. Entries are coalesced per tick (leading edge: the
first entry after a quiet period goes out at once, then at most one frame per
tick) into one frame, serialized once and offered to every client
(seatmap/clients.py). A client too far behind is cut off: one ``reload``
message and a close; it never holds the others back.
A reset (a rebuild, or a gap) reloads the channel and tells every client to
reload. Protocol: docs/seatmap-protocol.md.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import gzip
import logging
import time
from typing import Any

from onsale.kernel.shards import ShardSet
from onsale.kernel.valkey import RedisClient
from onsale.seatmap.bus import Bus, capture_keys, stream_key
from onsale.seatmap.clients import Client, Outgoing
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.pgoutput import format_lsn
from onsale.seatmap.sequencer import (
    Entry,
    coalesce,
    control_frame,
    delta_frame,
    parse_stream_entry,
    replay,
)
from onsale.seatmap.shard_plan import capturing
from onsale.seatmap.snapshot import SeatMap, encode_gzip
from onsale.seatmap.sockets import AccountSockets, Admitted, by_recheck, close_for, expired

log = logging.getLogger("onsale.seatmap.hub")
IDLE_CHANNEL_SECONDS = 60.0
ADMISSION_CHECK_BATCH = 1000  # sockets re-checked by one pipeline (then the loop breathes)


class Channel:
    def __init__(self, hub: Hub, event_id: int) -> None:
        self.hub = hub
        self.event_id = event_id
        self.state = SeatMap(event_id)
        self.ring: list[Entry] = []  # flushed entries, for resumes
        self.ring_from: list[int] = []  # their ``frm``, for bisect
        self.pending: list[Entry] = []
        self.clients: set[Client] = set()
        self.last_id = "0-0"
        self.last_flush = 0.0
        self.flush_at: asyncio.TimerHandle | None = None
        self.reader: asyncio.Task[None] | None = None
        self.snapshot: tuple[int, Outgoing] | None = None
        self.ready = asyncio.Event()
        self.idle_since = asyncio.get_running_loop().time()

    async def load(self) -> bool:
        """The snapshot, the entries after it, and as many before it as chain up to it
        (so a client that reconnects here with a recent ``since`` gets deltas)."""
        loaded = await self.hub.bus.load(self.event_id, whole_stream=True)
        if loaded is None:
            return False
        state, entries, self.last_id = loaded
        replay(state, [e for e in entries if e.to > state.version])
        ring: list[Entry] = []
        expected = state.version
        for entry in reversed(entries):
            if entry.to > expected:
                continue
            if entry.kind != "delta" or entry.to != expected:
                break
            ring.append(entry)
            expected = entry.frm or 0
        ring.reverse()
        self.state, self.ring, self.pending = state, ring, []
        self.ring_from = [e.frm or 0 for e in ring]
        self.snapshot = None
        return True

    async def read(self) -> None:
        redis, key = self.hub.reader, stream_key(self.event_id)
        failures = 0
        while True:
            try:
                # Shorter than the client's socket timeout (5 s by default in redis-py 8).
                reply = await redis.xread({key: self.last_id}, count=5000, block=2000)
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failures += 1
                self.hub.metrics.stream_errors.inc()
                if failures == 1 or failures % 20 == 0:  # not a line per retry of an outage
                    log.warning("reading %s failed (%d in a row): %r", key, failures, exc)
                await asyncio.sleep(min(5.0, 0.1 * 2 ** failures))
                continue
            reload: str | None = None
            for _, items in reply or ():
                for entry_id, fields in items:
                    self.last_id = entry_id.decode()
                    reload = self.receive(parse_stream_entry(self.event_id, fields)) or reload
            if reload is not None:
                await self.reload(reload)

    def receive(self, entry: Entry) -> str | None:
        """Queue an entry for the next flush; the reason when the channel must reload."""
        version = self.pending[-1].to if self.pending else self.state.version
        if entry.to <= version:
            return None  # already have it (a reload overlapping the stream)
        if entry.kind != "delta":
            return "rebuild"
        if entry.frm != version:
            return "gap"  # this reader fell further behind than the stream keeps
        self.pending.append(entry)
        if self.flush_at is None:
            loop = asyncio.get_running_loop()
            delay = self.last_flush + self.hub.tick - loop.time()
            self.flush_at = loop.call_later(max(0.0, delay), self.flush)
        return None

    def flush(self) -> None:
        self.flush_at = None
        if not self.pending:
            return
        entries, self.pending = self.pending, []
        for entry in entries:
            self.state.apply(entry.changes)
            self.state.version = entry.to
        self.ring += entries
        self.ring_from += [e.frm or 0 for e in entries]
        if len(self.ring) > 2 * self.hub.ring_size:
            del self.ring[:-self.hub.ring_size], self.ring_from[:-self.hub.ring_size]
        self.last_flush = asyncio.get_running_loop().time()
        if self.clients:
            self.broadcast(self.hub.outgoing(delta_frame(coalesce(entries))))
            self.hub.metrics.frames.inc()

    def broadcast(self, out: Outgoing) -> None:
        sent = 0
        for client in list(self.clients):
            if client.offer(out):
                sent += 1
            else:
                self.drop(client, "overflow")
                self.hub.metrics.overflows.inc()
        self.hub.metrics.frames_sent.inc(sent)

    def drop(self, client: Client, reason: str) -> None:
        self.clients.discard(client)
        client.cut_off(reason)

    async def reload(self, reason: str) -> None:
        """The stream was reset or has a gap: send every client to reload, and reload
        (until it works: Redis may be down, or mid-rebuild)."""
        for client in list(self.clients):
            self.drop(client, reason)
        if self.flush_at is not None:
            self.flush_at.cancel()
            self.flush_at = None
        self.pending = []
        self.ready.clear()  # a client joining meanwhile waits for the new state (admit)
        try:
            await self._load_until_loaded()
        finally:
            self.ready.set()

    async def _load_until_loaded(self) -> None:
        for attempt in range(1_000_000):
            try:
                if await self.load():
                    return
                log.warning("event %d has no seat map in Redis", self.event_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.hub.metrics.stream_errors.inc()
                log.warning("reloading event %d failed: %r", self.event_id, exc)
            await asyncio.sleep(min(5.0, 0.1 * 2 ** min(attempt, 6)))

    async def admit(self, client: Client, since: int | None, within: float) -> str | None:
        """``join`` once the channel is not reloading (a client that joined mid-reload
        would keep the old state while the deltas that follow start from the new one);
        None when the reload takes longer than ``within`` seconds (Redis is down)."""
        try:
            async with asyncio.timeout(within):
                while not self.ready.is_set():
                    await self.ready.wait()
        except TimeoutError:
            return None
        return self.join(client, since)

    def join(self, client: Client, since: int | None) -> str:
        """Bring a client up to the channel's version and subscribe it. No await inside:
        no flush can slip between the catch-up and the subscription."""
        version = self.state.version
        how = "live"
        if since != version:
            i = bisect.bisect_left(self.ring_from, since) if since is not None else -1
            if 0 <= i < len(self.ring) and self.ring_from[i] == since:
                client.offer(self.hub.outgoing(delta_frame(coalesce(self.ring[i:]))))
                how = "deltas"
            else:
                client.offer(self.snapshot_message())
                how = "snapshot"
        self.clients.add(client)
        return how

    def snapshot_message(self) -> Outgoing:
        """The seat map at the channel's version, gzip-compressed, cached per version."""
        if self.snapshot is None or self.snapshot[0] != self.state.version:
            body = encode_gzip(self.state)
            self.snapshot = (self.state.version, Outgoing(body, binary=True))
        return self.snapshot[1]


class Hub:
    def __init__(self, redis: RedisClient, settings: SeatmapSettings, metrics: SeatmapMetrics, *,
                 reader: RedisClient | None = None, shards: ShardSet | None = None) -> None:
        """``redis``: the request path's client (bounded; snapshots, loads,
        heartbeats). ``reader``: the client the channels block on (XREAD). ``shards``:
        the process's shard set, whose placement says which shard's consumer an event's
        changes come from (None: shard 1's alone)."""
        self.redis: Any = redis
        self.reader: Any = reader if reader is not None else redis
        self.bus = Bus(redis, settings.stream_maxlen)
        self.settings = settings
        self.metrics = metrics
        self.tick = settings.tick_ms / 1000
        self.ring_size = settings.stream_maxlen
        self.channels: dict[int, Channel] = {}
        self.shards = shards
        self.live = False  # every shard's consumer is alive
        self.alive: dict[int, bool] = {}  # shard -> its consumer is alive
        self._heartbeat: asyncio.Task[None] | None = None
        # Admitted sockets (docs/security.md#websockets): one timer re-checks them all.
        self.admitted: dict[Client, Admitted] = {}
        self.per_account = AccountSockets(settings.max_sockets_per_account)
        self._admissions: asyncio.Task[None] | None = None

    async def channel(self, event_id: int) -> Channel | None:
        """The event's channel, loaded and reading; None when Redis has no seat map for it."""
        channel = self.channels.get(event_id)
        if channel is None:
            channel = self.channels[event_id] = Channel(self, event_id)
            try:
                if not await channel.load():
                    del self.channels[event_id]
                    channel.ready.set()
                    return None
            except BaseException:
                del self.channels[event_id]
                channel.ready.set()
                raise
            channel.reader = asyncio.create_task(channel.read(), name=f"seatmap-{event_id}")
            channel.ready.set()
        await channel.ready.wait()
        return channel if self.channels.get(event_id) is channel else None

    def live_for(self, event_id: int) -> bool:
        """Whether the consumer of the event's shard is alive (its changes flow)."""
        shard_id = (self.shards.placement.shard_of_event(event_id)
                    if self.shards is not None else 1)
        return self.alive.get(shard_id or 1, False)

    async def read_alive(self) -> None:
        """Each captured shard's liveness key, one command a key (each its own slot)."""
        ids = capturing(self.shards.placement.shards) if self.shards is not None else [1]
        try:
            async with self.redis.pipeline(transaction=False) as pipe:
                for shard_id in ids:
                    pipe.exists(capture_keys(shard_id).alive)
                found = await pipe.execute()
            self.alive = {s: bool(n) for s, n in zip(ids, found, strict=True)}
        except Exception:
            self.alive = {}
        self.live = bool(self.alive) and all(self.alive.values())

    def outgoing(self, frame: bytes) -> Outgoing:
        """A frame for every client: as text, or gzip-compressed in a binary message once
        it is large enough to be worth it (sockets cost by the byte)."""
        if 0 < self.settings.gzip_min_bytes <= len(frame):
            return Outgoing(gzip.compress(frame, compresslevel=6, mtime=0), binary=True)
        return Outgoing(frame)

    def start(self) -> None:
        self._heartbeat = asyncio.create_task(self.heartbeats(), name="seatmap-heartbeats")
        self._admissions = asyncio.create_task(self.watch_admissions(),
                                               name="seatmap-admissions")

    async def stop(self) -> None:
        tasks = [c.reader for c in self.channels.values() if c.reader is not None]
        for task in (self._heartbeat, self._admissions):
            if task is not None:
                tasks.append(task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task  # a reader that failed was logged already
        for channel in self.channels.values():
            for client in list(channel.clients):
                channel.drop(client, "shutdown")

    async def watch_admissions(self) -> None:
        """Every ONSALE_SEATMAP_ADMISSION_CHECK_S: close the sockets whose admission
        expired (no I/O) or lapsed (the gate's cached session check)."""
        while True:
            await asyncio.sleep(self.settings.admission_check_s)
            try:
                await self.check_admissions(time.time())
            except asyncio.CancelledError:
                raise
            except Exception:  # never let one bad check stop the timer
                log.exception("checking seat-map admissions failed")

    async def check_admissions(self, now: float) -> None:
        watched = list(self.admitted.items())
        live: list[tuple[Client, Admitted]] = []
        for client, admitted in watched:
            if expired(admitted, now):
                self.end(client, *close_for("admission_expired"))
            else:
                live.append((client, admitted))
        for start in range(0, len(live), ADMISSION_CHECK_BATCH):
            batch = live[start:start + ADMISSION_CHECK_BATCH]
            sockets = [a for _, a in batch]
            for recheck, positions in by_recheck(sockets):  # one pipeline per gate
                try:
                    verdicts = await recheck([sockets[n] for n in positions])
                except Exception:  # never let one bad check close or keep them all
                    log.exception("re-checking %d seat-map admissions failed", len(positions))
                    continue
                for n, verdict in zip(positions, verdicts, strict=True):
                    if verdict is not None:
                        self.end(batch[n][0], *close_for(verdict))

    def end(self, client: Client, code: int, reason: str) -> None:
        """Close one admitted socket (its own task forgets it everywhere); one that
        went away meanwhile is left alone."""
        if self.admitted.pop(client, None) is None:
            return
        self.metrics.socket_closes.labels(reason).inc()
        client.end(code, reason)

    async def heartbeats(self) -> None:
        """Every few seconds, to every client: the version and whether changes flow
        (the consumer of the event's shard is alive). Channels without clients for a
        minute are closed."""
        while True:
            await self.read_alive()
            now = asyncio.get_running_loop().time()
            for event_id, channel in list(self.channels.items()):
                if channel.clients:
                    channel.idle_since = now
                elif now - channel.idle_since > IDLE_CHANNEL_SECONDS and channel.reader:
                    channel.reader.cancel()
                    del self.channels[event_id]
                    continue
                channel.broadcast(Outgoing(control_frame(
                    "heartbeat", version=format_lsn(channel.state.version),
                    live=self.live_for(event_id))))
            await asyncio.sleep(self.settings.client_heartbeat_s)
