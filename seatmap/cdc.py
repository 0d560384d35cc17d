"""The change-capture consumer: one pgoutput slot → the per-event Redis streams.

One consumer per shard, each on its own slot (seatmap/capture.py runs them; the slot
names, seatmap/shard_plan.py). One consumer per slot: a session advisory lock in
PostgreSQL is the lease
(a second consumer waits on it and takes over when the first one's session
ends, kill -9 included). With the lease it restores the seat maps from Redis
(or rebuilds them, seatmap/replication.py), then streams:

1. read every message available (``read_message`` never blocks; the socket's
   readability wakes the loop), feed the sequencer;
2. publish the resulting entries to Redis (Lua: checked, atomic, fenced);
3. only then confirm the position to the server (``send_feedback``).

A crash between 2 and 3 replays those transactions; their commit LSNs are
not above the versions in Redis, so nothing is published twice. Heartbeats
(``pg_logical_emit_message``) keep a quiet slot moving and measure the lag;
a keepalive with nothing pending is confirmed too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

import asyncpg

from onsale.core.outbox_relay import backoff
from onsale.kernel.failures import Failures
from onsale.kernel.valkey import RedisClient
from onsale.seatmap import replication
from onsale.seatmap.bus import Bus, Fenced, Gap, capture_keys
from onsale.seatmap.config import SeatmapSettings
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.pgoutput import decode
from onsale.seatmap.queries import queries
from onsale.seatmap.sequencer import Entry, Heartbeat, Rebuild, Sequencer
from onsale.seatmap.shard_plan import slot_name
from onsale.seatmap.snapshot import SeatMap

log = logging.getLogger("onsale.seatmap.cdc")
BATCH = 5000  # messages per publish at most
REPORT_EVERY = 0.05  # seconds between two confirmations sent to the server


class RebuildNeeded(Exception):
    pass


class Consumer:
    def __init__(self, database_url: str, redis: RedisClient, settings: SeatmapSettings,
                 metrics: SeatmapMetrics, *, shard_id: int = 1,
                 replication_url: str | None = None,
                 skip: Callable[[int], bool] | None = None) -> None:
        """The consumer of shard ``shard_id``, whose database is ``database_url``: its
        slot (``shard_plan.slot_name``), its keys in Redis (``bus.capture_keys``) and
        its metrics are its shard's. ``skip``: events placed on another shard."""
        self.shard_id = shard_id
        self.url = database_url
        self.repl_url = replication_url or settings.replication_url or database_url
        self.settings = dataclasses.replace(settings, slot=slot_name(settings.slot, shard_id))
        self.metrics = metrics.capture(shard_id)
        self.bus = Bus(redis, settings.stream_maxlen, capture_keys(shard_id))
        self.redis = redis
        self.skip = skip
        self.instance = uuid.uuid4().hex[:8]
        self.active = False
        self.publishes = 0
        self._rebuild: str | None = None
        self.trouble = Failures(log, f"the seat-map consumer of shard {shard_id}")

    async def run(self) -> None:
        """Forever: wait for the lease, stream; on any failure start over with backoff."""
        trouble = self.trouble
        retry = self.settings.lease_retry_ms / 1000
        while True:
            try:
                await self.session()
                trouble.succeeded()
            except asyncio.CancelledError:
                raise
            except RebuildNeeded as exc:
                self._rebuild = str(exc)
                continue
            except Exception as exc:
                self.metrics.cdc_errors.inc()
                trouble.failed(exc)
            finally:
                self.active = False
                self.metrics.cdc_active.set(0)
            await asyncio.sleep(backoff(trouble.count, retry))

    async def session(self) -> None:
        lease = await asyncpg.connect(
            self.url, server_settings={"application_name": "onsale-seatmap-lease"})
        try:
            q = queries("cdc")
            while not await lease.fetchval(q["try_lease"], self.settings.slot):
                await self._slot_metrics(lease)
                await asyncio.sleep(self.settings.lease_retry_ms / 1000)
            self.active = True
            self.metrics.cdc_active.set(1)
            log.info("seat-map consumer %s holds the lease of slot %s (shard %d)",
                     self.instance, self.settings.slot, self.shard_id)
            widened = await replication.ensure_publication(lease, self.settings)
            self._rebuild = self._rebuild or widened
            repl = await asyncio.to_thread(replication.connect, self.repl_url)
            try:
                restored = await replication.restore(lease, repl, self.bus, self.settings)
                if self._rebuild is not None or isinstance(restored, str):
                    reason = self._rebuild or str(restored)
                    maps, generation = await replication.rebuild(
                        lease, repl, self.bus, self.settings, self.metrics, reason,
                        self._skips)
                    self._rebuild = None
                else:
                    maps, generation = restored
                await asyncio.to_thread(replication.start, repl, self.settings)
                self.trouble.succeeded()  # streaming again
                await Stream(self, lease, repl, maps, generation).run()
            finally:
                repl.close()
        finally:
            await lease.close()

    def _skips(self, event_id: int) -> bool:
        return self.skip is not None and self.skip(event_id)

    def request_rebuild(self, reason: str) -> None:
        """Rebuild at the next turn of the stream (an event moved onto this shard): only
        the consumer streaming acts on it; a standby restores what that one rebuilt."""
        if self.active:
            self._rebuild = reason

    async def _slot_metrics(self, conn: Any) -> None:
        slot = await replication.slot_row(conn, self.settings)
        if slot is None:
            self.metrics.set_wal_status("missing")
            return
        self.metrics.slot_lag_bytes.set(slot["lag_bytes"] or 0)
        self.metrics.set_wal_status(slot["wal_status"] or "missing")


class Stream:
    """One streaming session: the loop of read, publish, confirm."""

    def __init__(self, consumer: Consumer, lease: Any, repl: replication.Replication,
                 maps: dict[int, SeatMap], generation: str) -> None:
        self.c = consumer
        self.lease = lease
        self.cur = repl.cur
        self.fd = repl.conn.fileno()
        self.seq = Sequencer(maps, consumer.skip)
        self.generation = generation
        self.confirmed = 0  # in Redis: the server may forget everything before it
        self.reported = 0  # what the server was last told (send_feedback)
        self.last_report = 0.0
        self.last_publish = 0.0
        self.beats = 0
        self.outstanding: dict[int, float] = {}  # heartbeat number → time written
        self.dirty: dict[int, int] = {}  # event → entries since its last snapshot

    async def run(self) -> None:
        s = self.c.settings
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(self.fd, readable.set)
        now = loop.time()
        timers = {"beat": now, "snap": now + s.snapshot_interval_ms / 1000, "slot": now,
                  "report": float("inf")}
        try:
            while True:
                readable.clear()
                messages = self._read(BATCH)
                if messages and len(messages) < BATCH and loop.time() - self.last_publish < 0.005:
                    # Busy: a millisecond lets more transactions join this publish
                    # (fewer round trips per transaction under load).
                    await asyncio.sleep(0.001)
                    messages += self._read(BATCH - len(messages))
                if messages:
                    await self._process(messages)
                elif not self.seq.in_transaction and self.cur.wal_end > self.confirmed:
                    # A keepalive: everything before wal_end was sent and handled.
                    await self._confirm(self.cur.wal_end, [], [])
                await self._periodic(loop.time(), timers)
                if not messages:
                    wait = max(0.0, min(timers.values()) - loop.time())
                    try:
                        await asyncio.wait_for(readable.wait(), timeout=wait)
                    except TimeoutError:
                        pass
        finally:
            loop.remove_reader(self.fd)

    def _read(self, limit: int) -> list[Any]:
        messages: list[Any] = []
        while len(messages) < limit:
            msg = self.cur.read_message()  # never blocks
            if msg is None:
                break
            messages.append(msg)
        return messages

    async def _process(self, messages: list[Any]) -> None:
        entries: list[Entry] = []
        snapshots: set[int] = set()
        half = max(1, self.c.settings.stream_maxlen // 2)
        for msg in messages:
            for out in self.seq.feed(decode(msg.payload)):
                if isinstance(out, Entry):
                    entries.append(out)
                    n = self.dirty[out.event_id] = self.dirty.get(out.event_id, 0) + 1
                    # A new event, or the stream about to outrun the last snapshot:
                    # a snapshot goes with this publish, in the same transaction.
                    if out.kind == "reset" or n >= half:
                        snapshots.add(out.event_id)
                elif isinstance(out, Heartbeat):
                    self._heartbeat_seen(out.content)
                elif isinstance(out, Rebuild):
                    raise RebuildNeeded(out.reason)
        if not self.seq.in_transaction:
            self.c.metrics.replayed.inc(self.seq.replayed)
            self.seq.replayed = 0
        if self.seq.position > self.confirmed or entries:
            await self._confirm(self.seq.position, entries,
                                [self.seq.maps[e] for e in sorted(snapshots)])
            for event_id in snapshots:
                self.dirty.pop(event_id, None)
                self.c.metrics.snapshots_written.inc()

    async def _confirm(self, position: int, entries: list[Entry],
                       snapshots: list[SeatMap]) -> None:
        """Publish, then confirm: the slot moves only past what Redis acknowledged."""
        m = self.c.metrics
        try:
            results = await self.c.bus.publish(self.generation, entries, position, snapshots)
        except Gap as exc:
            raise RebuildNeeded(str(exc)) from None
        except Fenced:
            log.error("seat-map consumer %s was fenced off by a newer generation",
                      self.c.instance)
            raise
        published = results.count(1)
        if published:
            m.deltas_published.inc(published)
            if self.seq.last_commit_us:
                m.commit_to_publish.observe(max(0.0, time.time() - self.seq.last_commit_us / 1e6))
        m.transactions.inc(self.seq.commits)
        self.seq.commits = 0
        if entries:
            self.c.publishes += 1
            if self.c.settings.crash_after_publishes == self.c.publishes:
                os.kill(os.getpid(), signal.SIGKILL)  # test hook: published, not confirmed
        self.last_publish = asyncio.get_running_loop().time()
        self.confirmed = max(self.confirmed, position)
        self._report()

    def _report(self, now: float | None = None) -> None:
        """Tell the server what Redis holds: at most every REPORT_EVERY seconds (a later
        report covers an earlier one; a crash in between only means a longer replay)."""
        now = asyncio.get_running_loop().time() if now is None else now
        if self.confirmed > self.reported and now - self.last_report >= REPORT_EVERY:
            # force: psycopg2 would otherwise wait for its status interval (10 s).
            self.cur.send_feedback(write_lsn=self.confirmed, flush_lsn=self.confirmed,
                                   force=True)
            self.reported, self.last_report = self.confirmed, now

    def _heartbeat_seen(self, content: bytes) -> None:
        try:
            beat = json.loads(content)
        except ValueError:
            return
        if beat.get("c") == self.c.instance:
            for n in [n for n in self.outstanding if n <= beat.get("n", -1)]:
                del self.outstanding[n]

    async def _periodic(self, now: float, timers: dict[str, float]) -> None:
        s, m = self.c.settings, self.c.metrics
        if self.c._rebuild is not None:
            raise RebuildNeeded(self.c._rebuild)
        if now >= timers["beat"]:
            timers["beat"] = now + s.heartbeat_interval_ms / 1000
            self.beats += 1
            self.outstanding[self.beats] = time.time()
            await self.lease.fetchval(queries("cdc")["heartbeat"], json.dumps(
                {"c": self.c.instance, "n": self.beats, "at": time.time()}))
            await self.c.redis.set(self.c.bus.keys.alive, self.c.instance,
                                   px=3 * s.heartbeat_interval_ms)
            oldest = min(self.outstanding.values(), default=time.time())
            m.slot_lag_seconds.set(max(0.0, time.time() - oldest))
        if now >= timers["snap"]:
            timers["snap"] = now + s.snapshot_interval_ms / 1000
            for event_id in list(self.dirty):
                await self.c.bus.write_snapshot(self.generation, self.seq.maps[event_id])
                del self.dirty[event_id]
                m.snapshots_written.inc()
        if now >= timers["slot"]:
            timers["slot"] = now + 1.0
            await self.c._slot_metrics(self.lease)
        self._report(now)
        timers["report"] = (self.last_report + REPORT_EVERY if self.confirmed > self.reported
                            else float("inf"))
