"""Measure the waiting room: joins/s, queue polls/s per edge process, and Redis
commands per poll (INFO commandstats deltas; the target is 0).

    .venv/bin/python bench/edge.py --queued 200000 --http-joins 20000 --duration 15
    .venv/bin/python bench/edge.py --smoke                # a few seconds, small

Self-contained: starts its own PostgreSQL and Valkey in a temporary
directory and one ``onsale serve --role edge`` process (its admitter
included), creates a fifo event on sale now admitting 60 shoppers a minute,
then
  1. joins ``--http-joins`` visitors over HTTP (POST /api/events/{id}/queue),
  2. joins the rest up to ``--queued`` straight through the join script (the
     same Lua the route runs; counted separately: Redis's ceiling, not HTTP's),
  3. polls (GET .../queue with the Queue-Ticket header) from ``--concurrency``
     keep-alive connections for ``--duration`` seconds, visitors spread over
     the whole queue, and counts every Redis command the server sent meanwhile.
The load generator shares the machine with the server: on 2 cores it takes
about half of one. Figure lines: bench/figures.py (joins over HTTP beside the join
script's rate, their ceiling in the same run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import Conn, pct, run_fast
from bench.stack import ADMIN, SECRET, refused, rss_mib, start_role, stop_all, tidy


async def prepare(db_url: str) -> int:
    import asyncpg

    from onsale.core.event_spec import parse_event_spec
    from onsale.core.event_store import create_event
    from onsale.core.migrate import migrate
    from onsale.kernel.db import init_connection

    conn = await asyncpg.connect(db_url)
    await init_connection(conn)
    try:
        await migrate(conn)
        spec = parse_event_spec(
            {"name": "edge bench", "seats": 1000, "queue_policy": "fifo",
             "admission_rate_min": 60, "admission_rate_max": 60},
            default_ttl=300, default_limit=6, default_max_hold=6,
            now=await conn.fetchval("SELECT now()"))
        return await create_event(conn, spec)
    finally:
        await conn.close()


async def command_counts(redis_url: str) -> dict[str, int]:
    from redis.asyncio import Redis

    r = Redis.from_url(redis_url)
    try:
        stats = await r.info("commandstats")
    finally:
        await r.aclose()
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def used_memory(redis_url: str) -> int:
    from redis.asyncio import Redis

    r = Redis.from_url(redis_url)
    try:
        return int((await r.info("memory"))["used_memory"])
    finally:
        await r.aclose()


async def background(redis_url: str, seconds: float) -> dict[str, int]:
    before = await command_counts(redis_url)
    await asyncio.sleep(seconds)
    after = await command_counts(redis_url)
    return {k: after[k] - before.get(k, 0) for k in after
            if after[k] - before.get(k, 0) > 0 and k != "info"}


def session_cookies(redis_url: str, accounts: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    """A live session for each account (its record written to Valkey, as
    signing in does, pipelined) and the Cookie header that carries it."""
    import redis

    from onsale.kernel.session_store import CREATE_LUA, create_args
    from onsale.kernel.sessions import COOKIE, SessionCodec, SessionRef, new_session_id

    codec = SessionCodec(SECRET, 3600)
    client = redis.Redis.from_url(redis_url)
    sha = client.script_load(CREATE_LUA)
    out: dict[uuid.UUID, str] = {}
    with client.pipeline(transaction=False) as pipe:
        for account in accounts:
            ref = SessionRef(account, new_session_id())
            keys, args = create_args(account, ref.session_id, 3600)
            pipe.evalsha(sha, len(keys), *keys, *args)
            out[account] = f"{COOKIE}={codec.encode(ref)}"
        pipe.execute()
    client.close()
    return out


async def http_joins(host: str, port: int, event_id: int, accounts: list[uuid.UUID],
                     concurrency: int, cookies: dict[uuid.UUID, str]
                     ) -> tuple[float, list[float], list[str]]:
    todo = iter(accounts)
    latencies: list[float] = []
    tickets: list[str] = []

    async def worker() -> None:
        c = Conn(host, port)
        for account in todo:
            t0 = time.perf_counter()
            status, _, body = await c.request("POST", f"/api/events/{event_id}/queue", b"",
                                              {"Cookie": cookies[account]})
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                raise refused(status, f"/api/events/{event_id}/queue", body)
            tickets.append(json.loads(body)["ticket"])

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies, tickets


async def script_joins(redis_url: str, event_id: int,
                       n: int) -> tuple[float, list[tuple[uuid.UUID, int]]]:
    """The join script without HTTP, pipelined 1,000 at a time (Redis's side of
    a join, without any Python client cost per call)."""
    from redis.asyncio import Redis

    from onsale.edge.queue_store import EventKeys, lua_sources

    r = Redis.from_url(redis_url)
    sha = await r.script_load(lua_sources()["join"])
    k = EventKeys(event_id)
    keys = [k.queue, k.pre, k.seq, k.seen, k.status, k.stats]
    accounts = [uuid.uuid4() for _ in range(n)]
    placed: list[tuple[uuid.UUID, int]] = []
    started = time.perf_counter()
    now = int(time.time() * 1000)
    for i in range(0, n, 1000):
        batch = accounts[i:i + 1000]
        async with r.pipeline(transaction=False) as pipe:
            for account in batch:
                pipe.evalsha(sha, len(keys), *keys, str(account), now, "fifo")
            answers = await pipe.execute()
        placed += [(a, int(place)) for a, (_, place) in zip(batch, answers, strict=True)]
    elapsed = time.perf_counter() - started
    await r.aclose()
    return elapsed, placed


async def polls(host: str, port: int, event_id: int, visitors: list[tuple[str, str]],
                concurrency: int, duration: float) -> tuple[float, list[float], dict[str, int]]:
    deadline = time.perf_counter() + duration
    latencies: list[float] = []
    states: dict[str, int] = {}
    path = f"/api/events/{event_id}/queue"

    async def worker(i: int) -> None:
        rng = random.Random(i)
        c = Conn(host, port)
        while time.perf_counter() < deadline:
            session, ticket = visitors[rng.randrange(len(visitors))]
            t0 = time.perf_counter()
            status, _, body = await c.request("GET", path, b"",
                                              {"Cookie": session, "Queue-Ticket": ticket})
            latencies.append(time.perf_counter() - t0)
            key = json.loads(body).get("state", str(status)) if status == 200 else str(status)
            states[key] = states.get(key, 0) + 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return time.perf_counter() - started, latencies, states


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--queued", type=int, default=200_000)
    p.add_argument("--http-joins", type=int, default=20_000)
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds, a small queue: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.queued, args.http_joins, args.duration, args.concurrency = 20_000, 2_000, 2.0, 16

    from onsale.edge.tokens import Ticket, TicketCodec, admission_keys
    from onsale.embedded import free_port, start_postgres, start_valkey

    base = Path(tempfile.mkdtemp(prefix="onsale-bench-edge-"))
    pg = start_postgres(base / "pg", fast=True)
    valkey = start_valkey(base / "valkey", persist=False)
    started: list[subprocess.Popen[bytes]] = []
    done = False
    try:
        event_id = asyncio.run(prepare(pg.url))
        port = free_port()
        env = {**os.environ, "DATABASE_URL": pg.url, "REDIS_URL": valkey.url,
               "ONSALE_SECRET_KEY": SECRET, "ONSALE_ADMIN_TOKEN": ADMIN,
               "ONSALE_JOIN_LIMIT_IP": "1000000000", "ONSALE_POLL_LIMIT_IP": "1000000000",
               "ONSALE_POLL_LIMIT_ACCOUNT": "1000000000"}
        # A core process too: it reports its health, so the admitter runs
        # (without core, admission pauses and visitors see "paused").
        started.append(start_role("core", env, free_port(), base / "core.log"))
        started.append(start_role("edge", env, port, base / "edge.log"))
        host = "127.0.0.1"
        accounts = [uuid.uuid4() for _ in range(args.http_joins)]
        memory_before = asyncio.run(used_memory(valkey.url))
        cpu_before = cpu_seconds(started[-1].pid)
        cookies = session_cookies(valkey.url, accounts)
        elapsed_joins, join_ms, _ = run_fast(http_joins(host, port, event_id, accounts,
                                                        args.concurrency, cookies))
        join_cpu = cpu_seconds(started[-1].pid) - cpu_before
        join_ms = sorted(v * 1000 for v in join_ms)
        print(f"edge bench: event {event_id}, one edge process, {args.concurrency} connections")
        print(f"  joins over HTTP     {len(accounts) / elapsed_joins:,.0f}/s  "
              f"({len(accounts):,}; p50={pct(join_ms, .5):.1f} p99={pct(join_ms, .99):.1f} "
              f"ms; {len(accounts) / max(join_cpu, 1e-9):,.0f} joins per edge CPU-second)")
        rest = max(0, args.queued - args.http_joins)
        script_s, placed = asyncio.run(script_joins(valkey.url, event_id, rest))
        if rest:
            print(f"  join script, piped  {rest / script_s:,.0f}/s  ({rest:,} more; queue "
                  f"now {args.http_joins + rest:,})")
        grown = asyncio.run(used_memory(valkey.url)) - memory_before
        print(f"  Redis memory        {grown / 2**20:,.0f} MiB for {args.queued:,} queued = "
              f"{grown / max(args.queued, 1):,.0f} bytes per visitor")
        tickets = TicketCodec(admission_keys("", SECRET))
        sample = random.Random(1).sample(placed, min(len(placed), 20_000)) if placed else []
        sampled = session_cookies(valkey.url, [a for a, _ in sample])
        visitors = [(sampled[a], tickets.issue(Ticket(event_id, a, place, "bench")))
                    for a, place in sample]
        # The background (admitter, status refresh, health) first, with no polls.
        idle = asyncio.run(background(valkey.url, args.duration))
        before = asyncio.run(command_counts(valkey.url))
        cpu_before = cpu_seconds(started[-1].pid)
        elapsed, poll_ms, states = run_fast(polls(host, port, event_id, visitors,
                                                  args.concurrency, args.duration))
        cpu = cpu_seconds(started[-1].pid) - cpu_before
        after = asyncio.run(command_counts(valkey.url))
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        delta = {k: v for k, v in delta.items() if v > 0 and k not in ("info",)}
        n = len(poll_ms)
        poll_ms = sorted(v * 1000 for v in poll_ms)
        print(f"  polls               {n / elapsed:,.0f}/s  ({n:,} in {elapsed:.1f}s; "
              f"p50={pct(poll_ms, .5):.1f} p99={pct(poll_ms, .99):.1f} ms; "
              f"states {states})")
        print(f"  edge CPU            {cpu / elapsed:.0%} of one core while polling: "
              f"{n / max(cpu, 1e-9):,.0f} polls per CPU-second")
        total = sum(delta.values())
        idle_total = sum(idle.values()) * elapsed / args.duration
        print(f"  Redis commands      {total:,} while polling, {idle_total:,.0f} in as long "
              f"idle: {(total - idle_total) / max(n, 1):+.5f} per poll "
              f"(all: {total / max(n, 1):.5f}/poll)")
        print(f"    while polling     {delta}")
        print(f"    idle              {idle}")
        rss = rss_mib(started[-1].pid)
        print(f"  edge RSS            {rss:.0f} MiB")
        joins = len(accounts) / elapsed_joins
        figure("edge.http_joins_per_s", round(joins, 1), "/s",
               ceiling=round(rest / script_s, 1) if rest else None)
        figure("edge.joins_per_cpu_s", round(len(accounts) / max(join_cpu, 1e-9), 1), "/s")
        figure("edge.join_p99", round(pct(join_ms, .99), 2), "ms")
        figure("edge.redis_bytes_per_visitor", round(grown / max(args.queued, 1), 1), "bytes")
        figure("edge.polls_per_s", round(n / elapsed, 1), "/s")
        figure("edge.polls_per_cpu_s", round(n / max(cpu, 1e-9), 1), "/s")
        figure("edge.poll_p99", round(pct(poll_ms, .99), 2), "ms")
        figure("edge.redis_commands_per_poll", round((total - idle_total) / max(n, 1), 5),
               "count")
        figure("edge.rss", round(rss, 1), "MiB")
        done = True
        return 0
    finally:
        stop_all(started)
        valkey.stop()
        pg.stop()
        tidy(base, done)


if __name__ == "__main__":
    sys.exit(main())
