"""Measure the seat map end to end: commit → WAL → consumer → Valkey → seatmap process →
WebSocket client.

    .venv/bin/python bench/seatmap.py --clients 1000 --rate 2000 --duration 20
    .venv/bin/python bench/seatmap.py --smoke           # a few seconds, 50 clients

Self-contained: starts its own PostgreSQL (default durability) and Valkey in a
temporary directory, creates a ``--seats`` event (passthrough: joining admits at
once), runs one ``onsale serve --role cdc`` and ``--seatmap-procs`` ``onsale serve
--role seatmap`` processes, then
  0. admits one account per client as a browser gets in: a session written to
     Valkey as signing in does, then a join over HTTP through one ``onsale serve
     --role edge`` process, which answers the admission token the seat map
     requires (docs/edge.md#the-gate); the edge process is stopped before the
     measurement, so only cdc and seatmap serve during it;
  1. connects ``--clients`` WebSocket clients (protocol-level: a frame parser
     on asyncio.Protocol, in ``--generators`` processes), each with its session
     cookie and admission token and ``since`` = the version of one HTTP snapshot,
     as browsers coming from the CDN would;
  2. commits holds (1-6 seats, a unique expiry per transaction) and some
     releases at ``--rate`` transactions/s for ``--duration`` seconds;
  3. prints commit-to-client latency p50/p95/p99 (every client, every frame, a
     sample of the holds each frame carries: the receive time minus the time
     the writer saw its commit return), frames and changes delivered per second,
     CPU and memory of each process, and snapshot sizes for the event.
The generator shares the machine with everything else: its CPU is printed too.
The writer writes seat_inventory directly (no hold rows, unlike the hold path):
``onsale audit`` does not apply to this throwaway database. Figure lines:
bench/figures.py.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import gzip
import json
import multiprocessing
import os
import pickle
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from array import array
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.edge import cpu_seconds, session_cookies
from bench.figures import figure
from bench.holds import Conn, pct, run_fast
from bench.stack import ADMIN, SECRET, refused, rss_mib, start_role, stop_all, tidy

TARGET_P99_MS = 200.0  # commit to client (issue 5)
ADMISSION_HEADER = "Admission-Token"


class WsClient(asyncio.Protocol):
    """A WebSocket client that costs the generator as little as possible: it parses
    frame headers, answers pings, and notes when each delta frame (by ``to``) arrived."""

    def __init__(self, host: str, path: str, sink: dict[bytes, array[float]],
                 stats: dict[str, int], on_text: Any = None,
                 credentials: tuple[str, str] | None = None) -> None:
        admitted = ("" if credentials is None else
                    f"Cookie: {credentials[0]}\r\n{ADMISSION_HEADER}: {credentials[1]}\r\n")
        self.request = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                        f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}"
                        f"\r\n{admitted}\r\n").encode()
        self.buf = bytearray()
        self.upgraded = False
        self.sink, self.stats, self.on_text = sink, stats, on_text
        self.transport: Any = None
        self.open = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.time()
        buf = self.buf
        buf += data
        if not self.upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            if buf[9:12] != b"101":
                self.open.set_exception(ConnectionError(bytes(buf[:end]).decode()))
                return
            del buf[:end + 4]
            self.upgraded = True
            self.open.set_result(None)
        while len(buf) >= 2:
            opcode, n, off = buf[0] & 0x0F, buf[1] & 0x7F, 2
            if n == 126:
                n, off = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                n, off = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < off + n:
                return
            payload = bytes(buf[off:off + n])
            del buf[:off + n]
            self.stats["bytes"] += n
            if opcode == 1:
                at = payload.find(b'"to":"')
                if at > 0:
                    to = payload[at + 6:payload.index(b'"', at + 6)]
                    frames = self.sink.get(to)
                    if frames is None:
                        frames = self.sink[to] = array("d")
                    frames.append(now)
                    self.stats["frames"] += 1
                elif payload.startswith(b'{"type":"reload"'):
                    self.stats["reloads"] += 1
                if self.on_text is not None:
                    self.on_text(payload, now)
            elif opcode == 2:  # gzip: the trailer (CRC-32, size) names the frame
                key = payload[-8:]
                frames = self.sink.get(key)
                if frames is None:
                    frames = self.sink[key] = array("d")
                frames.append(now)
                self.stats["binary"] += 1
                if self.on_text is not None:
                    self.on_text(payload, now)
            elif opcode == 9:  # ping: a masked pong with the same payload
                mask = os.urandom(4)
                masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + mask + masked)
            elif opcode == 8:
                self.stats["closed"] += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.stats["lost"] += 1
        if not self.open.done():
            self.open.set_exception(exc or ConnectionError("closed"))


async def connect_clients(ports: list[int], event_id: int, since: str,
                          credentials: list[tuple[str, str]],
                          sink: dict[bytes, array[float]], stats: dict[str, int],
                          on_text: Any = None) -> list[WsClient]:
    """One client per (session cookie, admission token) of ``credentials``."""
    loop = asyncio.get_running_loop()
    clients: list[WsClient] = []
    for i, admitted in enumerate(credentials):
        port = ports[i % len(ports)]
        host = f"127.0.0.1:{port}"
        _, client = await loop.create_connection(
            functools.partial(WsClient, host, f"/ws/events/{event_id}/seatmap?since={since}",
                              sink, stats, on_text if i == 0 else None, admitted),
            "127.0.0.1", port)
        clients.append(client)
        if i % 200 == 199:
            await asyncio.gather(*(c.open for c in clients[-200:]))
    await asyncio.gather(*(c.open for c in clients))
    return clients


def new_stats() -> dict[str, int]:
    return {"bytes": 0, "frames": 0, "binary": 0, "reloads": 0, "closed": 0, "lost": 0}


def generator(ports: list[int], event_id: int, since: str,
              credentials: list[tuple[str, str]], seconds: float, out: str,
              ready: Any) -> None:
    """A separate process holding a client per credential for ``seconds`` after they are
    all open."""

    sink: dict[bytes, array[float]] = {}
    stats = new_stats()

    async def run() -> None:
        await connect_clients(ports, event_id, since, credentials, sink, stats)
        ready.set()
        t0 = cpu_seconds(os.getpid())
        await asyncio.sleep(seconds)
        stats["cpu_ms"] = int(1000 * (cpu_seconds(os.getpid()) - t0))

    run_fast(run())
    Path(out).write_bytes(pickle.dumps((stats, {k: v.tolist() for k, v in sink.items()})))


async def prepare(db_url: str, seats: int) -> int:
    import asyncpg

    from onsale.core.event_spec import parse_event_spec
    from onsale.core.event_store import create_event
    from onsale.core.migrate import migrate
    from onsale.kernel.db import init_connection

    conn = await asyncpg.connect(db_url)
    await init_connection(conn)
    try:
        await migrate(conn)
        spec = parse_event_spec({"name": "seat map bench", "seats": seats,
                                 "queue_policy": "passthrough"},
                                default_ttl=300, default_limit=6, default_max_hold=6,
                                now=await conn.fetchval("SELECT now()"))
        return await create_event(conn, spec)
    finally:
        await conn.close()


HOLD = """UPDATE seat_inventory SET status = 'HELD', hold_id = gen_random_uuid(), order_id = NULL,
    hold_expires_at = to_timestamp($3), version = version + 1
    WHERE event_id = $1 AND seat_id = ANY($2::int[])"""
RELEASE = """UPDATE seat_inventory SET status = 'AVAILABLE', hold_id = NULL, order_id = NULL,
    hold_expires_at = NULL, version = version + 1
    WHERE event_id = $1 AND seat_id = ANY($2::int[])"""


async def write(db_url: str, event_id: int, seats: int, rate: float, seconds: float,
                base: int, commits: dict[int, float]) -> int:
    """Holds (a unique expiry each: base + n seconds) and releases (one in four) at ``rate``
    transactions/s; ``commits[n]`` = when the writer saw hold n commit."""
    import asyncpg

    pool = await asyncpg.create_pool(db_url, min_size=16, max_size=16)
    rng = random.Random(1)
    start = time.perf_counter()
    count = 0
    next_n = 0

    async def worker() -> None:
        nonlocal count, next_n
        while True:
            n = next_n
            next_n += 1
            due = start + n / rate
            if due - start > seconds:
                return
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            first = rng.randrange(1, seats - 6)
            group = list(range(first, first + rng.randint(1, 6)))
            async with pool.acquire() as conn:
                if n % 4 == 3:
                    await conn.execute(RELEASE, event_id, group)
                else:
                    await conn.execute(HOLD, event_id, group, float(base + n))
                    commits[n] = time.time()
            count += 1

    await asyncio.gather(*(worker() for _ in range(16)))
    await pool.close()
    return count


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return float(sum(fields) - idle), float(sum(fields))


async def admit(edge_port: int, event_id: int, redis_url: str, n: int,
                concurrency: int = 32) -> list[tuple[str, str]]:
    """``n`` accounts admitted to the event as browsers are: a live session each
    (written to Valkey as signing in does), then a join through the edge, which
    answers a passthrough event's admission token at once."""
    accounts = [uuid.uuid4() for _ in range(n)]
    cookies = session_cookies(redis_url, accounts)
    todo = iter(accounts)
    admitted: dict[uuid.UUID, tuple[str, str]] = {}
    path = f"/api/events/{event_id}/queue"

    async def worker() -> None:
        c = Conn("127.0.0.1", edge_port)
        for account in todo:
            status, _, body = await c.request("POST", path, b"", {"Cookie": cookies[account]})
            token = json.loads(body).get("admission_token") if status == 200 else None
            if not token:
                raise refused(status, path, body)
            admitted[account] = (cookies[account], token)
        c.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return [admitted[a] for a in accounts]


def http_snapshot(port: int, event_id: int,
                  credentials: tuple[str, str]) -> tuple[str, int, int]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/events/{event_id}/seatmap",
                                 headers={"Accept-Encoding": "gzip", "Cookie": credentials[0],
                                          ADMISSION_HEADER: credentials[1]})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
        return r.headers["Seatmap-Version"], len(body), len(gzip.decompress(body))


def realistic_snapshot_sizes(seats: int) -> tuple[int, int]:
    """A mid-sale map: 30 % sold, 5 % in payment, 15 % held in groups of 1-6 with expiries
    over five minutes, the rest available."""
    from onsale.seatmap.snapshot import AVAILABLE, HELD, PAYMENT_PENDING, SOLD, SeatMap, encode
    from onsale.seatmap.snapshot import encode_gzip as gz

    rng = random.Random(3)
    m = SeatMap(1, 1)
    seat = 1
    now = int(time.time())
    while seat <= seats:
        size, r = rng.randint(1, 6), rng.random()
        code = SOLD if r < 0.3 else PAYMENT_PENDING if r < 0.35 else HELD if r < 0.5 else AVAILABLE
        exp = now + rng.randrange(300)
        for s in range(seat, min(seats, seat + size - 1) + 1):
            m.set(s, code, exp if code == HELD else None)
        seat += size
    return len(encode(m)), len(gz(m))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--rate", type=float, default=2000, help="transactions/s (3 in 4 are holds)")
    p.add_argument("--duration", type=float, default=20)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--seats", type=int, default=50_000)
    p.add_argument("--seatmap-procs", type=int, default=1)
    p.add_argument("--generators", type=int, default=1)
    p.add_argument("--tick-ms", type=int, default=50)
    p.add_argument("--client-queue", type=int, default=64)
    p.add_argument("--samples-per-frame", type=int, default=8)
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds, 50 clients: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.clients, args.rate, args.duration, args.warmup = 50, 100.0, 2.0, 1.0
        args.seats, args.generators = 5_000, 2  # the forked generator path too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # clean up the servers on kill

    from onsale.embedded import free_port, start_postgres, start_valkey

    base_dir = Path(tempfile.mkdtemp(prefix="onsale-bench-seatmap-"))
    pg = start_postgres(base_dir / "pg")
    valkey = start_valkey(base_dir / "valkey")
    procs: list[subprocess.Popen[bytes]] = []
    done = False
    try:
        event_id = run_fast(prepare(pg.url, args.seats))
        # The seat map verifies the sessions and admission tokens the edge signs: both
        # need the deployment's secret (ONSALE_SECRET_KEY; the edge also wants the
        # admin token). The bench joins every client from one address.
        env = {**os.environ, "DATABASE_URL": pg.url, "REDIS_URL": valkey.url,
               "ONSALE_SECRET_KEY": SECRET, "ONSALE_ADMIN_TOKEN": ADMIN,
               "ONSALE_JOIN_LIMIT_IP": "1000000000",
               "ONSALE_SEATMAP_TICK_MS": str(args.tick_ms),
               "ONSALE_SEATMAP_CLIENT_QUEUE": str(args.client_queue)}
        edge_port = free_port()
        edge = start_role("edge", env, edge_port, base_dir / "edge.log")
        procs.append(edge)
        started = time.perf_counter()
        credentials = run_fast(admit(edge_port, event_id, valkey.url, args.clients))
        print(f"{len(credentials):,} accounts admitted through the edge in "
              f"{time.perf_counter() - started:.1f} s (one per client)")
        stop_all([edge])  # not part of what is measured
        procs.remove(edge)
        cdc_port = free_port()
        cdc = start_role("cdc", env, cdc_port, base_dir / "cdc.log")
        procs.append(cdc)
        ports = [free_port() for _ in range(args.seatmap_procs)]
        servers = [start_role("seatmap", env, port, base_dir / f"seatmap{i}.log")
                   for i, port in enumerate(ports)]
        procs += servers
        version, gz_size, raw_size = first_snapshot(ports[0], event_id, credentials[0])
        print(f"event {event_id}: {args.seats:,} seats; snapshot {version}: {raw_size:,} B, "
              f"{gz_size:,} B gzip (all available)")
        real_raw, real_gz = realistic_snapshot_sizes(args.seats)
        print(f"a mid-sale map of {args.seats:,} seats (30 % sold, 5 % paying, 15 % held in "
              f"groups): {real_raw:,} B, {real_gz:,} B gzip")

        # Clients: the parent's share (with the parsing sample client) and generators.
        per = [args.clients // args.generators] * args.generators
        per[0] += args.clients - sum(per)
        shares = [credentials[sum(per[:i]):sum(per[:i + 1])] for i in range(len(per))]
        ctx = multiprocessing.get_context("fork")
        outputs = [str(base_dir / f"gen{i}.pickle") for i in range(1, args.generators)]
        readies = [ctx.Event() for _ in outputs]
        window = args.warmup + args.duration + 3
        gens = [ctx.Process(target=generator, args=(ports, event_id, version, shares[i + 1],
                                                     window, out, ready))
                for i, (out, ready) in enumerate(zip(outputs, readies, strict=True))]
        for g in gens:
            g.start()
        result = run_fast(drive(args, pg.url, ports, event_id, version, shares[0], readies,
                                [cdc.pid] + [s.pid for s in servers]))
        for g in gens:
            g.join(120)
        code = report(args, result, outputs, servers, cdc)
        done = True
        return code
    finally:
        stop_all(procs)
        valkey.stop()
        pg.stop()
        tidy(base_dir, done)


def first_snapshot(port: int, event_id: int,
                   credentials: tuple[str, str]) -> tuple[str, int, int]:
    """The snapshot the clients start from (retried while the seat map warms up)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return http_snapshot(port, event_id, credentials)
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or time.monotonic() > deadline:
                raise SystemExit(f"the snapshot answered {exc.code}: {exc.read()[:300]!r}"
                                 ) from None
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


async def drive(args: argparse.Namespace, db_url: str, ports: list[int], event_id: int,
                since: str, credentials: list[tuple[str, str]], readies: list[Any],
                pids: list[int]) -> dict[str, Any]:
    sink: dict[bytes, array[float]] = {}
    stats = new_stats()
    frame_holds: dict[bytes, list[int]] = {}
    base = int(time.time()) + 10_000_000

    def parse(payload: bytes, now: float) -> None:
        key = None
        if payload[:2] == b"\x1f\x8b":
            key, payload = payload[-8:], gzip.decompress(payload)
        msg = json.loads(payload)
        if msg.get("type") == "delta":
            frame_holds[key or msg["to"].encode()] = [c[2] - base for c in msg["changes"]
                                                      if len(c) > 2]

    started = time.perf_counter()
    await connect_clients(ports, event_id, since, credentials, sink, stats, on_text=parse)
    for ready in readies:  # a multiprocessing event: waited for in a thread
        await asyncio.to_thread(ready.wait, 600)
    print(f"{args.clients:,} clients connected in {time.perf_counter() - started:.1f} s "
          f"over {len(ports)} seatmap process(es)")
    commits: dict[int, float] = {}
    writing = asyncio.create_task(write(
        db_url, event_id, args.seats, args.rate, args.warmup + args.duration, base, commits))
    await asyncio.sleep(args.warmup)
    cpu0 = {pid: cpu_seconds(pid) for pid in [*pids, os.getpid()]}
    busy0 = machine_busy()
    t0 = time.time()
    await asyncio.sleep(args.duration)
    t1 = time.time()
    cpu1 = {pid: cpu_seconds(pid) for pid in cpu0}
    busy1 = machine_busy()
    written = await writing
    await asyncio.sleep(2)  # the last frames
    return {"sink": {k: v.tolist() for k, v in sink.items()}, "stats": stats,
            "frame_holds": frame_holds, "commits": commits, "window": (t0, t1),
            "cpu": {pid: cpu1[pid] - cpu0[pid] for pid in cpu0}, "written": written,
            "busy": (busy1[0] - busy0[0]) / max(1e-9, busy1[1] - busy0[1]),
            "rss": {pid: rss_mib(pid) for pid in pids}}


def report(args: argparse.Namespace, r: dict[str, Any], outputs: list[str],
           servers: list[subprocess.Popen[bytes]], cdc: subprocess.Popen[bytes]) -> int:
    t0, t1 = r["window"]
    sinks = [r["sink"]]
    stats = [r["stats"]]
    gen_cpu = 0.0
    for out in outputs:
        with open(out, "rb") as f:
            s, sink = pickle.load(f)
        stats.append(s)
        sinks.append(sink)
        gen_cpu += s.get("cpu_ms", 0) / 1000
    commits, holds = r["commits"], r["frame_holds"]
    latencies: list[float] = []
    frames = changes = 0
    for sink in sinks:
        for to, times in sink.items():
            ns = [n for n in holds.get(to, []) if n in commits]
            if not ns:
                continue
            step = max(1, len(ns) // args.samples_per_frame)
            sample = [commits[n] for n in ns[::step]]
            for at in times:
                if t0 <= at <= t1:
                    frames += 1
                    changes += len(holds[to])
                    latencies += [at - c for c in sample]
    latencies.sort()
    span = t1 - t0
    in_window = sum(1 for c in commits.values() if t0 <= c <= t1)
    print(f"writer: {r['written']:,} transactions ({in_window / span:,.0f} holds/s committed "
          f"in the window, plus one release per three holds)")
    top = latencies[-1] if latencies else 0.0
    print(f"commit-to-client latency (ms, {len(latencies):,} samples): "
          f"p50 {1000 * pct(latencies, 0.5):.0f}  p95 {1000 * pct(latencies, 0.95):.0f}  "
          f"p99 {1000 * pct(latencies, 0.99):.0f}  max {1000 * top:.0f}")
    print(f"delivered: {frames / span:,.0f} frames/s, {changes / span:,.0f} seat changes/s "
          f"({frames / span / max(1, args.clients):.1f} frames/s per client)")
    totals = {k: sum(s.get(k, 0) for s in stats) for k in ("reloads", "closed", "lost")}
    received = sum(s["bytes"] for s in stats) / (args.warmup + args.duration + 3)
    print(f"clients cut off or closed: {totals}; about {received / 2**20:,.1f} MiB/s received "
          f"({received / max(1, args.clients) / 1024:,.1f} KiB/s per client)")
    for i, proc in enumerate(servers):
        cpu = r["cpu"][proc.pid]
        per_frame = cpu / max(1, frames / len(servers))
        print(f"seatmap process {i}: CPU {100 * cpu / span:.0f} % of a core, "
              f"RSS {r['rss'][proc.pid]:.0f} MiB; {1e6 * per_frame:.1f} µs CPU per frame "
              f"delivered, {1e3 * cpu / span / max(1, args.clients / len(servers)):.3f} ms "
              "CPU per client per second")
    print(f"cdc process: CPU {100 * r['cpu'][cdc.pid] / span:.0f} % of a core, "
          f"RSS {r['rss'][cdc.pid]:.0f} MiB")
    own = r["cpu"][os.getpid()] + gen_cpu
    print(f"generator (writer + clients): CPU {100 * own / span:.0f} % of a core; "
          f"the machine ({os.cpu_count()} cores) was {100 * r['busy']:.0f} % busy")
    first = servers[0].pid
    figure("seatmap.p50", round(1000 * pct(latencies, 0.5), 2), "ms")
    figure("seatmap.p99", round(1000 * pct(latencies, 0.99), 2), "ms", target=TARGET_P99_MS)
    figure("seatmap.frames_per_s_per_client", round(frames / span / max(1, args.clients), 2),
           "/s", target=1000 / args.tick_ms)  # one frame per tick at most
    figure("seatmap.holds_committed_per_s", round(in_window / span, 1), "/s",
           target=args.rate * 3 / 4)
    figure("seatmap.cpu_per_client_frame",
           round(1e6 * r["cpu"][first] / max(1, frames / len(servers)), 2), "us")
    figure("seatmap.seatmap_cpu", round(r["cpu"][first] / span, 3), "share")
    figure("seatmap.seatmap_rss", round(r["rss"][first], 1), "MiB")
    figure("seatmap.cdc_cpu", round(r["cpu"][cdc.pid] / span, 3), "share")
    figure("seatmap.clients_cut_off", sum(totals.values()), "count")
    figure("seatmap.machine_busy", round(r["busy"], 3), "share")
    return 0


if __name__ == "__main__":
    sys.exit(main())
