"""Measure the waiting room: joins/s, queue polls/s per edge process beside a
minimal Starlette endpoint on the same stack, and Redis commands per poll (INFO
commandstats deltas; the target is 0).

    .venv/bin/python bench/edge.py --queued 200000 --http-joins 20000 --duration 15
    .venv/bin/python bench/edge.py --scale                # polls at 10,000 and 1,000,000 queued
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
     the whole queue, and counts every Redis command the server sent meanwhile;
  4. the baseline, in the same run: a minimal Starlette app, one JSON GET route on
     the same path answering the body the edge answered to a poll, served by the
     edge's own server (``onsale.cli._serve``: uvicorn + uvloop + httptools,
     onsale's bounded, corked protocol, the same GC and malloc tuning) in one
     process of its own, driven by the same generator (same connections, duration,
     cookies and tickets). Its requests/s and its CPU per request are the ceiling
     of ``edge.polls_per_s`` and ``edge.poll_cpu_us``.
Targets (issue 14): at least 10,000 polls/s per edge process (the figure's
``target``) and at least 0.65 of the baseline (its ``ceiling`` ratio); 0 Redis
commands per poll.

``--scale`` (cost as work grows): the queue grows to 10,000 (HTTP joins, at most
``--http-joins``, then the join script) and is polled, then to 1,000,000 (the join
script, about a minute) and is polled again the same way, tickets sampled from the
whole queue each time; prints the edge CPU per poll for each and their ratio
(``edge.poll_cpu_us_large``, its ceiling the small run's), and Redis memory per
visitor for the large queue. ``--queued`` is ignored then; the other figures are
the small run's.

The load generator shares the machine with the server: on 2 cores it takes
about half of one. Figure lines: bench/figures.py (joins over HTTP beside the join
script's rate, polls beside the baseline, each ceiling in the same run).
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import Conn, pct, profiled_pid, run_fast
from bench.http_protocol import wait_listening
from bench.stack import ADMIN, SECRET, free_port, refused, rss_mib, start_role, stop_all, tidy

TARGET_POLLS = 10_000.0  # polls/s per edge process (issue 14)
TARGET_RATIO = 0.65  # of the baseline's requests/s, same run (issue 14)
SCALE = (10_000, 1_000_000)  # --scale: queued visitors of the small and the large run
SAMPLE = 20_000  # visitors polled, sampled from the whole queue
BYTES_PER_VISITOR = 250  # about what a queued visitor takes in Valkey (for maxmemory)

# The baseline: one JSON GET route on the poll's path answering the edge's own poll
# answer (BENCH_POLL_ANSWER), served exactly as `onsale serve` serves a role.
BASELINE = """
import json, os, sys
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from onsale.cli import _serve

ANSWER = json.loads(os.environ["BENCH_POLL_ANSWER"])

async def poll(request):
    return JSONResponse(ANSWER, headers={"Cache-Control": "no-store"})

app = Starlette(routes=[Route("/api/events/{event_id}/queue", poll, methods=["GET"])])
_serve(app, "127.0.0.1", int(sys.argv[1]))
"""


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


async def ensure_maxmemory(redis_url: str, visitors: int) -> str:
    """Room in Valkey for ``visitors`` queued (maxmemory 0, the embedded default, is no
    limit); raised if a limit is set and too low. Says what it is."""
    from redis.asyncio import Redis

    needed = 2 * visitors * BYTES_PER_VISITOR + 256 * 2**20
    r = Redis.from_url(redis_url)
    try:
        current = int((await r.config_get("maxmemory")).get("maxmemory") or 0)
        if 0 < current < needed:
            await r.config_set("maxmemory", str(needed))
            return f"maxmemory raised from {current / 2**20:,.0f} to {needed / 2**20:,.0f} MiB"
    finally:
        await r.aclose()
    return "maxmemory 0 (no limit)" if current == 0 else f"maxmemory {current / 2**20:,.0f} MiB"


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
                     ) -> tuple[float, list[float], list[tuple[str, str]]]:
    """(seconds, latencies, (Cookie, ticket) of each visitor joined)."""
    todo = iter(accounts)
    latencies: list[float] = []
    joined: list[tuple[str, str]] = []

    async def worker() -> None:
        c = Conn(host, port)
        for account in todo:
            t0 = time.perf_counter()
            status, _, body = await c.request("POST", f"/api/events/{event_id}/queue", b"",
                                              {"Cookie": cookies[account]})
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                raise refused(status, f"/api/events/{event_id}/queue", body)
            joined.append((cookies[account], json.loads(body)["ticket"]))
        c.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, latencies, joined


async def script_joins(redis_url: str, event_id: int,
                       n: int) -> tuple[float, list[tuple[uuid.UUID, int]]]:
    """The join script without HTTP, pipelined 1,000 at a time (Redis's side of
    a join, without any Python client cost per call)."""
    from redis.asyncio import Redis

    from onsale.edge.queue_store import EventKeys, lua_sources

    r = Redis.from_url(redis_url)
    sha = await r.script_load(lua_sources()["join"])
    k = EventKeys(event_id)
    keys = [k.queue, k.pre, k.seq, k.seen, k.status, k.stats, k.joins]
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


@dataclass
class Polled:
    """One timed poll run against one server process."""

    count: int
    elapsed: float
    cpu: float  # the server process's CPU seconds meanwhile
    ms: list[float]  # latencies, sorted
    states: dict[str, int]

    @property
    def per_s(self) -> float:
        return self.count / self.elapsed

    @property
    def cpu_us(self) -> float:
        """Server CPU microseconds per poll."""
        return self.cpu / max(self.count, 1) * 1e6

    def line(self) -> str:
        return (f"{self.per_s:,.0f}/s  ({self.count:,} in {self.elapsed:.1f}s; "
                f"p50={pct(self.ms, .5):.1f} p99={pct(self.ms, .99):.1f} ms; "
                f"{self.cpu_us:.1f} us CPU each, {self.cpu / self.elapsed:.0%} of a core)")


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
        c.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return time.perf_counter() - started, latencies, states


def warm_up(host: str, port: int, event_id: int, visitors: list[tuple[str, str]],
            args: argparse.Namespace) -> None:
    """A second of polls (less in a short run), not counted."""
    run_fast(polls(host, port, event_id, visitors, args.concurrency,
                   min(1.0, args.duration / 4)))


def timed_polls(host: str, port: int, pid: int, event_id: int,
                visitors: list[tuple[str, str]], args: argparse.Namespace,
                name: str = "edge-polls") -> Polled:
    """``--duration`` seconds of polls, with the CPU ``pid`` used meanwhile."""
    cpu_before = cpu_seconds(pid)
    with profiled_pid(pid, name):  # ONSALE_BENCH_PROFILE=<directory>: py-spy
        elapsed, latencies, states = run_fast(polls(host, port, event_id, visitors,
                                                    args.concurrency, args.duration))
    cpu = cpu_seconds(pid) - cpu_before
    return Polled(len(latencies), elapsed, cpu, sorted(v * 1000 for v in latencies), states)


async def one_poll(host: str, port: int, event_id: int, visitor: tuple[str, str]) -> bytes:
    c = Conn(host, port)
    status, _, body = await c.request("GET", f"/api/events/{event_id}/queue", b"",
                                      {"Cookie": visitor[0], "Queue-Ticket": visitor[1]})
    c.close()
    if status != 200:
        raise refused(status, f"/api/events/{event_id}/queue", body)
    return body


def baseline(env: dict[str, str], answer: bytes, host: str, event_id: int,
             visitors: list[tuple[str, str]], args: argparse.Namespace) -> Polled:
    """The minimal Starlette endpoint on the edge's server stack, one process of its
    own, polled exactly as the edge was."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", BASELINE, str(port)],
                            env={**env, "BENCH_POLL_ANSWER": answer.decode()})
    try:
        wait_listening(port)
        if proc.poll() is not None:
            raise SystemExit(f"the baseline server exited ({proc.returncode})")
        warm_up(host, port, event_id, visitors, args)
        return timed_polls(host, port, proc.pid, event_id, visitors, args, "baseline")
    finally:
        stop_all([proc])


@dataclass
class Stage:
    """The queue at one size, polled."""

    queued: int
    redis_bytes: int  # Valkey memory grown for the queue so far (sessions included)
    commands: int  # Redis commands while polling
    idle_commands: float  # in as long idle
    edge: Polled
    delta: dict[str, int]
    idle: dict[str, int]

    @property
    def commands_per_poll(self) -> float:
        return (self.commands - self.idle_commands) / max(self.edge.count, 1)


def poll_stage(host: str, port: int, pid: int, event_id: int, redis_url: str,
               visitors: list[tuple[str, str]], args: argparse.Namespace,
               queued: int, redis_bytes: int) -> Stage:
    # The background (admitter, status refresh, health) first, with no polls.
    idle = asyncio.run(background(redis_url, args.duration))
    warm_up(host, port, event_id, visitors, args)
    before = asyncio.run(command_counts(redis_url))
    edge = timed_polls(host, port, pid, event_id, visitors, args)
    after = asyncio.run(command_counts(redis_url))
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    delta = {k: v for k, v in delta.items() if v > 0 and k not in ("info",)}
    idle_total = sum(idle.values()) * edge.elapsed / args.duration
    return Stage(queued, redis_bytes, sum(delta.values()), idle_total, edge, delta, idle)


def report(stage: Stage) -> None:
    edge = stage.edge
    print(f"  polls, {stage.queued:,} queued  {edge.line()}; states {edge.states}")
    print(f"  edge CPU            {edge.count / max(edge.cpu, 1e-9):,.0f} polls per CPU-second")
    print(f"  Redis commands      {stage.commands:,} while polling, {stage.idle_commands:,.0f} "
          f"in as long idle: {stage.commands_per_poll:+.5f} per poll "
          f"(all: {stage.commands / max(edge.count, 1):.5f}/poll)")
    print(f"    while polling     {stage.delta}")
    print(f"    idle              {stage.idle}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--queued", type=int, default=200_000)
    p.add_argument("--http-joins", type=int, default=20_000)
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--scale", action="store_true",
                   help=f"poll at {SCALE[0]:,} then at {SCALE[1]:,} queued (about a minute "
                        "of joins): how the edge CPU per poll changes")
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds, a small queue: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.queued, args.http_joins, args.duration, args.concurrency = 20_000, 2_000, 2.0, 16
        args.scale = False
    sizes = list(SCALE) if args.scale else [args.queued]
    http_n = min(args.http_joins, sizes[0]) if args.scale else args.http_joins

    from onsale.edge.tokens import Ticket, TicketCodec, admission_keys
    from onsale.embedded import start_postgres, start_valkey

    base = Path(tempfile.mkdtemp(prefix="onsale-bench-edge-"))
    pg = start_postgres(base / "pg", fast=True)
    valkey = start_valkey(base / "valkey", persist=False)
    started: list[subprocess.Popen[bytes]] = []
    done = False
    try:
        room = asyncio.run(ensure_maxmemory(valkey.url, max(sizes[-1], http_n)))
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
        edge_pid = started[-1].pid
        host = "127.0.0.1"
        accounts = [uuid.uuid4() for _ in range(http_n)]
        memory_before = asyncio.run(used_memory(valkey.url))
        cpu_before = cpu_seconds(edge_pid)
        cookies = session_cookies(valkey.url, accounts)
        elapsed_joins, join_ms, joined = run_fast(http_joins(host, port, event_id, accounts,
                                                             args.concurrency, cookies))
        join_cpu = cpu_seconds(edge_pid) - cpu_before
        join_ms = sorted(v * 1000 for v in join_ms)
        print(f"edge bench: event {event_id}, one edge process, {args.concurrency} connections; "
              f"Valkey {room}")
        print(f"  joins over HTTP     {len(accounts) / elapsed_joins:,.0f}/s  "
              f"({len(accounts):,}; p50={pct(join_ms, .5):.1f} p99={pct(join_ms, .99):.1f} "
              f"ms; {len(accounts) / max(join_cpu, 1e-9):,.0f} joins per edge CPU-second)")
        tickets = TicketCodec(admission_keys("", SECRET))
        # The whole queue: (Cookie, ticket) of the HTTP joins, (account, place) of the rest.
        placed: list[tuple[uuid.UUID, int]] = []
        script_n, script_s = 0, 0.0
        sessions_bytes = 0  # Valkey memory of the polled visitors' sessions (not the queue's)
        stages: list[Stage] = []
        answer = b""
        base_run: Polled | None = None
        for size in sizes:
            rest = max(0, size - len(joined) - len(placed))
            seconds, more = asyncio.run(script_joins(valkey.url, event_id, rest))
            placed += more
            script_n, script_s = script_n + rest, script_s + seconds
            queued = len(joined) + len(placed)
            if rest:
                print(f"  join script, piped  {rest / seconds:,.0f}/s  ({rest:,} more; queue "
                      f"now {queued:,})")
            grown = asyncio.run(used_memory(valkey.url)) - memory_before - sessions_bytes
            print(f"  Redis memory        {grown / 2**20:,.0f} MiB for {queued:,} queued = "
                  f"{grown / max(queued, 1):,.0f} bytes per visitor")
            rng = random.Random(size)
            picks = rng.sample(range(queued), min(queued, SAMPLE))
            scripted = [placed[i - len(joined)] for i in picks if i >= len(joined)]
            memory = asyncio.run(used_memory(valkey.url))
            sampled = session_cookies(valkey.url, [a for a, _ in scripted])
            sessions_bytes += asyncio.run(used_memory(valkey.url)) - memory
            visitors = [joined[i] for i in picks if i < len(joined)]
            visitors += [(sampled[a], tickets.issue(Ticket(event_id, a, place, "bench")))
                         for a, place in scripted]
            for visitor in visitors[:50]:  # a waiting visitor's answer (most are)
                if answer and json.loads(answer).get("state") == "waiting":
                    break
                answer = asyncio.run(one_poll(host, port, event_id, visitor))
            stages.append(poll_stage(host, port, edge_pid, event_id, valkey.url, visitors,
                                     args, queued, grown))
            report(stages[-1])
            if base_run is None:
                base_run = baseline(env, answer, host, event_id, visitors, args)
                ratio = stages[0].edge.per_s / base_run.per_s
                print(f"  baseline            {base_run.line()}: a minimal Starlette "
                      f"endpoint on the edge's server stack, one process")
                print(f"  polls / baseline    {ratio:.2f} of its requests/s (target "
                      f"{TARGET_RATIO}), {stages[0].edge.cpu_us / base_run.cpu_us:.2f}x its "
                      f"CPU per request; {stages[0].edge.per_s / TARGET_POLLS:.2f} of "
                      f"{TARGET_POLLS:,.0f}/s")
        rss = rss_mib(edge_pid)
        print(f"  edge RSS            {rss:.0f} MiB")
        first, last = stages[0], stages[-1]
        assert base_run is not None
        if args.scale:
            print(f"  cost as it grows    {first.queued:,} -> {last.queued:,} queued: "
                  f"{first.edge.cpu_us:.1f} -> {last.edge.cpu_us:.1f} us edge CPU per poll "
                  f"(x{last.edge.cpu_us / first.edge.cpu_us:.2f}), "
                  f"{first.edge.per_s:,.0f} -> {last.edge.per_s:,.0f} polls/s")
        joins = len(accounts) / elapsed_joins
        figure("edge.http_joins_per_s", round(joins, 1), "/s",
               ceiling=round(script_n / script_s, 1) if script_n else None)
        figure("edge.joins_per_cpu_s", round(len(accounts) / max(join_cpu, 1e-9), 1), "/s")
        figure("edge.join_p99", round(pct(join_ms, .99), 2), "ms")
        figure("edge.redis_bytes_per_visitor",
               round(last.redis_bytes / max(last.queued, 1), 1), "bytes")
        figure("edge.polls_per_s", round(first.edge.per_s, 1), "/s",
               ceiling=round(base_run.per_s, 1), target=TARGET_POLLS)
        figure("edge.poll_cpu_us", round(first.edge.cpu_us, 2), "us",
               ceiling=round(base_run.cpu_us, 2))
        figure("edge.baseline_rps", round(base_run.per_s, 1), "/s")
        figure("edge.polls_per_cpu_s", round(first.edge.count / max(first.edge.cpu, 1e-9), 1),
               "/s")
        figure("edge.poll_p99", round(pct(first.edge.ms, .99), 2), "ms")
        figure("edge.redis_commands_per_poll", round(first.commands_per_poll, 5), "count")
        if args.scale:
            figure("edge.poll_cpu_us_small", round(first.edge.cpu_us, 2), "us")
            figure("edge.poll_cpu_us_large", round(last.edge.cpu_us, 2), "us",
                   ceiling=round(first.edge.cpu_us, 2))
            figure("edge.polls_per_s_large", round(last.edge.per_s, 1), "/s",
                   ceiling=round(first.edge.per_s, 1))
            figure("edge.redis_commands_per_poll_large", round(last.commands_per_poll, 5),
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
