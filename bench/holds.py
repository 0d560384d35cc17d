"""Drive hold attempts over HTTP and print figures beside the raw ceiling.

    .venv/bin/python bench/holds.py --duration 20             # starts its own onsale dev
    .venv/bin/python bench/holds.py --url http://127.0.0.1:8000 --data-dir .onsale
    .venv/bin/python bench/holds.py --smoke                   # a few seconds, small

Without ``--url`` it starts ``onsale dev`` in a throwaway data directory (default
durability, a seeded 50,000-seat demo event, as ``make demo``) with the per-address
throttles raised (``bench/stack.py`` BENCH_LIMITS: the bench signs up and joins all
its shoppers from one address). Against a running server (``--url``), start that one
with them raised (docs/benchmarks.md):

    ONSALE_SIGNIN_LIMIT_IP=100000 ONSALE_JOIN_LIMIT_IP=100000 .venv/bin/onsale dev

Creates a fresh 50,000-seat event (short holds so seats recycle), signs up
shoppers, then fires hold attempts with skewed demand: most requests go to a
hot block of seats, each for 1-6 adjacent seats. Prints attempts/s,
outcomes, p50/p95/p99 latency, the CPU per attempt of the server process and of
PostgreSQL (each one's CPU time over the measured window / attempts, from /proc), the
server's memory, then (unless ``--no-pgbench``) the same hold function driven
directly by pgbench on the same database, the raw ceiling, a verdict against issue
14's targets (2,000 attempts/s, 0.70 of the same run's pgbench, p99 < 300 ms), and
last ``onsale audit`` (oversells must be 0).

``--scale`` measures first with 1 connection, then as usual with 64 (same event,
each for ``--duration``), and prints how the CPU per attempt grows with the
connections. Figure lines: bench/figures.py.

``--shards N --events E`` (issue 23; bench/holds_shards.py): a plain ``onsale dev``
first, one event (the single-database figure), then ``onsale dev --shards N`` with one
event on shard 2 at the same settings (its rate and CPU per attempt against the first),
then E events at once, event i on shard 1 + (i % N): the CPU per attempt of each shard's
PostgreSQL server, and the directory's reads per attempt.

    .venv/bin/python bench/holds.py --events 2 --shards 2 --duration 15

``--ha`` (issue 24; bench/holds_ha.py): the same load against a plain ``onsale dev`` and
then ``onsale dev --ha`` (a Patroni cluster of three nodes in strict synchronous mode,
behind HAProxy): the cost of synchronous replication, as the ratio of the two rates.

    .venv/bin/python bench/holds.py --ha --duration 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.stack import (
    BENCH_LIMITS,
    DevServer,
    database_url,
    refused,
    rss_mib,
    run_audit,
    run_pgbench,
    start_dev,
)


class _Client(asyncio.Protocol):
    """Buffers one HTTP/1.1 response at a time (no chunked bodies: onsale sends lengths)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes, bytes]] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0 or self.waiter is None:
            return
        head = bytes(self.buf[:end])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if len(self.buf) < end + 4 + length:
            return
        body = bytes(self.buf[end + 4:end + 4 + length])
        del self.buf[:end + 4 + length]
        waiter, self.waiter = self.waiter, None
        waiter.set_result((int(head[9:12]), head, body))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionError("server closed the connection"))


class Conn:
    """A minimal HTTP/1.1 keep-alive client: the generator must cost less than the server."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.proto: _Client | None = None

    def close(self) -> None:
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.close()

    async def request(self, method: str, path: str, body: bytes = b"",
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        loop = asyncio.get_running_loop()
        if self.proto is None:
            _, self.proto = await loop.create_connection(_Client, self.host, self.port)
        extra = dict(headers or {})
        extra.setdefault("Content-Type", "application/json")  # form bodies name theirs
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}",
                f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in extra.items()]
        self.proto.waiter = loop.create_future()
        assert self.proto.transport is not None
        self.proto.transport.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status, raw_head, data = await self.proto.waiter
        resp_headers: dict[str, str] = {}
        for line in raw_head.decode("latin-1").split("\r\n")[1:]:
            k, _, v = line.partition(":")
            resp_headers.setdefault(k.strip().lower(), v.strip())
        return status, resp_headers, data


def pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def listening_pid(port: int) -> int | None:
    """The process of this machine listening on ``port`` (None: not found, or another
    user's, whose sockets this one cannot see)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        for conn in psutil.net_connections("tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == "LISTEN" and conn.pid:
                return int(conn.pid)
    except psutil.Error:
        return None
    return None


def server_rss_mb(port: int) -> float | None:
    pid = listening_pid(port)
    if pid is None:
        return None
    try:
        return rss_mib(pid)
    except OSError:
        return None


# CPU per party of the stack under load, shared by bench/holds.py and bench/checkout.py:
# the user + system CPU time (Linux /proc) each party used over a measured window.
# "walsender": PostgreSQL's logical decoding for the seat map's change capture (the
# pgoutput stream), apart from the backends that run the transactions ("postgres").
PARTIES = ("core", "postgres", "walsender", "provider", "valkey")
_CLK_TCK = os.sysconf("SC_CLK_TCK")
CpuSample = dict[tuple[str, int, int], float]  # (party, pid, start time) -> CPU seconds


@dataclass(frozen=True)
class Stack:
    """The processes whose CPU a bench reports: the onsale server process (``core``;
    ``onsale dev`` runs core, edge, seat map and the background loops in it), the
    PostgreSQL cluster (its postmaster and every child: backends, walwriter,
    checkpointer ...), and the server's own children when it started them (``onsale
    dev``: the provider simulator and Valkey). ``more_cores``: further ``onsale serve
    --role core`` processes a bench started beside it, counted as core."""

    core: int | None
    postmaster: int | None
    more_cores: tuple[int, ...] = ()
    more_postmasters: tuple[int, ...] = ()  # further PostgreSQL servers (the shards')

    def notes(self) -> list[str]:
        out = []
        if self.core is None:
            out.append("the server's process was not found on this machine (no process "
                       "of this user listens on its port): no server CPU")
        if self.postmaster is None:
            out.append("PostgreSQL's postmaster was not found (no <data-dir>/pg/"
                       "postmaster.pid of a running cluster): no PostgreSQL CPU")
        return out


def _proc_stat(pid: str) -> tuple[int, float, int] | None:
    """(parent pid, user + system CPU seconds, start time in ticks) of a live process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw.rsplit(b")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _CLK_TCK, int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def find_stack(server: DevServer | None, host: str, port: int, data_dir: Path) -> Stack:
    """The processes of the server a bench drives: its own ``onsale dev`` (``server``),
    else whatever listens on ``port`` here and the cluster of ``data_dir``/pg."""
    if server is not None:
        core: int | None = server.process.pid
    elif host in ("127.0.0.1", "localhost", "::1", "[::1]"):
        core = listening_pid(port)
    else:
        core = None
    postmaster = None
    try:
        pid = int((data_dir / "pg" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        pid = 0
    if pid > 0 and "postgres" in _cmdline(pid):
        postmaster = pid
    return Stack(core, postmaster)


def cpu_sample(stack: Stack) -> CpuSample:
    """The CPU time so far of every process of ``stack``, by party."""
    out: CpuSample = {}
    postmasters = {stack.postmaster, *stack.more_postmasters} - {None}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _proc_stat(entry.name)
        if stat is None:
            continue
        pid, (ppid, used, started) = int(entry.name), stat
        if pid == stack.core or pid in stack.more_cores:
            party = "core"
        elif pid in postmasters or ppid in postmasters:
            party = "walsender" if "walsender" in _cmdline(pid) else "postgres"
        elif stack.core is not None and ppid == stack.core:
            cmd = _cmdline(pid)
            if "valkey-server" in cmd:
                party = "valkey"
            elif "onsale.cli psp" in cmd:
                party = "provider"
            else:
                continue
        else:
            continue
        out[(party, pid, started)] = used
    return out


def cpu_used(stack: Stack, before: CpuSample, after: CpuSample) -> dict[str, float]:
    """CPU seconds each party used between two samples: the parties of ``stack`` that
    were found (core and postgres when known, provider and Valkey when running), in
    PARTIES order. A process started in between counts whole; one that exited in
    between is lost (its last CPU is not in /proc any more)."""
    used: dict[str, float] = {}
    if stack.core is not None:
        used["core"] = 0.0
    if stack.postmaster is not None:
        used["postgres"] = 0.0
    for key, seconds in after.items():
        used[key[0]] = used.get(key[0], 0.0) + max(0.0, seconds - before.get(key, 0.0))
    return {k: used[k] for k in PARTIES if k in used}


@contextlib.contextmanager
def profiled(stack: Stack, name: str) -> Iterator[None]:
    """With ONSALE_BENCH_PROFILE=<directory>: py-spy samples the server process over the
    load (``<directory>/<name>.<pid>.txt``, collapsed stacks: one line per stack and its
    sample count; what docs/benchmarks.md's profiles come from). Else nothing."""
    with profiled_pid(stack.core, name):
        yield


@contextlib.contextmanager
def profiled_pid(pid: int | None, name: str) -> Iterator[None]:
    """``profiled`` for any process (bench/edge.py: the edge's)."""
    where = os.environ.get("ONSALE_BENCH_PROFILE")
    spy = Path(sys.executable).with_name("py-spy")
    if not where or pid is None or not spy.exists():
        yield
        return
    out = Path(where) / f"{name}.{pid}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([str(spy), "record", "-p", str(pid), "-r", "200", "-f", "raw",
                             "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        print(f"  profile           {out}")


SETTLE_STEP_S = 0.2
SETTLE_QUIET = 0.05  # cores, summed over the stack's processes
PRE_LOAD_SETTLE_MAX_S = 90.0


def settle(stack: Stack, last: CpuSample, most: float) -> tuple[CpuSample, float]:
    """Wait until the stack is quiet, at most ``most`` seconds: (the last CPU sample, the
    seconds waited). Before a load: the new event's seats have passed through the seat
    map's change capture (else their decoding is counted, and competes, with the load);
    after one: its webhooks, relay and tickets are done."""
    started = time.monotonic()
    while time.monotonic() - started < most:
        time.sleep(SETTLE_STEP_S)
        now = cpu_sample(stack)
        busy = sum(cpu_used(stack, last, now).values()) / SETTLE_STEP_S
        last = now
        if busy < SETTLE_QUIET:
            break
    return last, time.monotonic() - started


def verdict(what: str, shown: str, goal: str, met: bool | None) -> str:
    """One human-readable line of a bench's verdict against the issue's targets."""
    state = "n/a" if met is None else ("met" if met else "MISSED")
    return f"  {what:<24} {shown:>12}   target {goal:<12} {state}"


async def patiently(c: Conn, method: str, path: str, body: bytes = b"",
                    headers: dict[str, str] | None = None,
                    tries: int = 5) -> tuple[int, dict[str, str], bytes]:
    """A setup request, retried after its Retry-After on a 503, as a browser would: the
    server refuses for a moment after a stall (creating a large event, docs/security.md
    on fail-fast dependencies)."""
    for attempt in range(tries):
        status, resp_headers, data = await c.request(method, path, body, headers)
        if status != 503 or attempt == tries - 1:
            break
        await asyncio.sleep(float(resp_headers.get("retry-after", "1")))
    return status, resp_headers, data


TICKETS_PER_ACCOUNT = 100  # the bench events' max_tickets_per_account (the highest allowed)


async def create_event(c: Conn, args: argparse.Namespace, shard: int | None = None) -> int:
    """A fresh event of ``args.seats`` seats; passthrough: every shopper is admitted as
    soon as it joins (the gate stays on). ``shard``: placed on that shard (else where
    the server places it)."""
    spec: dict[str, Any] = {"name": f"bench {time.strftime('%H:%M:%S')}", "seats": args.seats,
                            "hold_ttl_seconds": args.hold_ttl,
                            "max_tickets_per_account": TICKETS_PER_ACCOUNT,
                            "queue_policy": "passthrough"}
    if shard is not None:
        spec["shard"] = shard
    body = json.dumps(spec).encode()
    status, _, data = await c.request("POST", "/api/ops/events", body,
                                      {"Authorization": f"Bearer {args.admin_token}"})
    if status != 201:
        raise refused(status, "/api/ops/events", data)
    return int(json.loads(data)["event_id"])


async def sign_up(c: Conn, args: argparse.Namespace) -> list[str]:
    """``args.accounts`` new shoppers: the session cookie of each."""
    sessions = []
    tag = os.urandom(4).hex()
    for i in range(args.accounts):
        cred = json.dumps({"email": f"bench{tag}-{i}@example.com",
                           "password": "bench-password"}).encode()
        status, headers, data = await patiently(c, "POST", "/api/accounts", cred)
        if status == 409:  # created by an attempt that was then refused: sign in
            status, headers, data = await patiently(c, "POST", "/api/session", cred)
            status = 201 if status == 200 else status
        if status != 201:
            raise refused(status, "/api/accounts", data)
        sessions.append(headers["set-cookie"].split(";", 1)[0])
    return sessions


async def admit(c: Conn, event_id: int, sessions: list[str]) -> list[str]:
    """Each shopper joins the event's queue: the Cookie header carrying its session and
    its admission token."""
    cookies = []
    for session in sessions:
        status, _, data = await patiently(c, "POST", f"/api/events/{event_id}/queue", b"",
                                          {"Cookie": session})
        if status != 200:
            raise refused(status, f"/api/events/{event_id}/queue", data)
        token = json.loads(data)["admission_token"]
        cookies.append(f"{session}; onsale_admission_{event_id}={token}")
    return cookies


async def setup(args: argparse.Namespace, host: str, port: int) -> tuple[int, list[str]]:
    """A fresh event and ``args.accounts`` shoppers admitted to it (their Cookie headers)."""
    c = Conn(host, port)
    try:
        event_id = await create_event(c, args)
        return event_id, await admit(c, event_id, await sign_up(c, args))
    finally:
        c.close()


def seat_request(rng: random.Random, seats: int, hot: int, hot_share: float) -> list[int]:
    n = rng.choice((1, 2, 2, 2, 3, 4, 4, 6))
    if rng.random() < hot_share:
        start = 1 + int(rng.paretovariate(1.2) * 7) % (hot - n)
    else:
        start = rng.randint(hot, seats - n)
    return list(range(start, start + n))


async def drive(args: argparse.Namespace, host: str, port: int, event_id: int,
                cookies: list[str]) -> tuple[list[float], Counter[str], float]:
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    deadline = time.perf_counter() + args.duration
    path = f"/api/events/{event_id}/holds"

    async def worker(i: int) -> None:
        rng = random.Random(i)
        c = Conn(host, port)
        while time.perf_counter() < deadline:
            seats = seat_request(rng, args.seats, args.hot_seats, args.hot_share)
            headers = {"Cookie": cookies[rng.randrange(len(cookies))],
                       "Idempotency-Key": os.urandom(8).hex()}
            t0 = time.perf_counter()
            status, _, data = await c.request("POST", path,
                                              json.dumps({"seat_ids": seats}).encode(), headers)
            latencies.append(time.perf_counter() - t0)
            if status == 201:
                outcomes["held"] += 1
            else:  # a 5xx is counted with its status: the server failed, not the seat
                code = json.loads(data).get("code", "") if data[:1] == b"{" else ""
                outcomes[f"{status} {code}".strip() if status >= 500 else code or str(status)] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
    return latencies, outcomes, time.perf_counter() - started


PGBENCH_SETUP = """
CREATE OR REPLACE FUNCTION bench.try_hold(p_event bigint, p_account uuid, p_seats int[])
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM onsale_hold(p_event, p_account, md5(random()::text), 'd', p_seats);
    RETURN 'held';
EXCEPTION WHEN SQLSTATE 'OS409' THEN RETURN SQLERRM;
END $$;
"""

PGBENCH_SCRIPT = """\\set a random(1, {accounts})
\\set hot random(1, 100)
\\set s random(1, {hot})
\\set c random({hot}, {seats} - 6)
\\if :hot <= {hot_pct}
\\set start :s
\\else
\\set start :c
\\endif
SELECT bench.try_hold({event}, (SELECT account_id FROM bench.accounts WHERE n = :a),
                      ARRAY[:start, :start + 1]);
"""


def pgbench_ceiling(url: str, args: argparse.Namespace, event_id: int) -> float:
    """The pgbench run's holds/s (attempts: every transaction is one decision)."""
    script = PGBENCH_SCRIPT.replace("{accounts}", "{{accounts}}").format(
        hot=args.hot_seats, seats=args.seats, hot_pct=int(args.hot_share * 100),
        event=event_id)
    print(f"\npgbench: the same hold function, no HTTP ({args.pgbench_clients} clients, "
          f"{args.duration}s)")
    tps, lines = run_pgbench(url, PGBENCH_SETUP, script, clients=args.pgbench_clients,
                             duration=args.duration)
    for line in lines:
        print("  " + line)
    return tps


def run_fast(coro: Any) -> Any:
    """Run the load itself on uvloop (installed with uvicorn[standard]): the
    generator shares the two cores with the server, so its cost matters."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


TARGET_ATTEMPTS = 2000.0  # hold attempts/s on the 2-core machine (docs/benchmarks.md)
TARGET_P99_MS = 300.0
TARGET_PGBENCH_RATIO = 0.70  # HTTP attempts/s over the same run's pgbench holds/s
SCALE_CONNECTIONS = (1, 64)  # --scale


def server_arguments(p: argparse.ArgumentParser, *, concurrency: int, accounts: int) -> None:
    """The options holds and checkout share: which server, how long, how many."""
    p.add_argument("--url", default=None,
                   help="a running server (default: start a throwaway onsale dev)")
    p.add_argument("--admin-token", default=None, help="with --url; default: "
                   "ONSALE_ADMIN_TOKEN from <data-dir>/secrets.json")
    p.add_argument("--data-dir", default=os.environ.get("ONSALE_DATA_DIR", ".onsale"),
                   help="with --url: the server's data directory (its secrets and database; "
                        "or set DATABASE_URL)")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--concurrency", type=int, default=concurrency)
    p.add_argument("--accounts", type=int, default=accounts)
    p.add_argument("--seats", type=int, default=50_000)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    server_arguments(p, concurrency=64, accounts=300)
    p.add_argument("--hold-ttl", type=int, default=5)
    p.add_argument("--hot-seats", type=int, default=2_000)
    p.add_argument("--hot-share", type=float, default=0.8)
    p.add_argument("--pgbench", action=argparse.BooleanOptionalAction, default=True,
                   help="after the HTTP run, the same hold function under pgbench (the "
                        "ceiling, same run, same database; default on)")
    p.add_argument("--pgbench-clients", type=int, default=16)
    p.add_argument("--scale", action="store_true",
                   help=f"measure with {SCALE_CONNECTIONS[0]} connection first, then as usual "
                        f"with {SCALE_CONNECTIONS[1]} (same event, each for --duration): how "
                        "the CPU per attempt grows with the connections (default off)")
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds on a small event: does it run (bench/smoke.py)")
    p.add_argument("--shards", type=int, default=1, choices=range(1, 9), metavar="N",
                   help="N > 1: a plain onsale dev first (the single-database figure), then "
                        "onsale dev --shards N: one event on shard 2, then --events at once "
                        "(bench/holds_shards.py; no pgbench; default 1)")
    p.add_argument("--events", type=int, default=1,
                   help="E events driven at once, event i on shard 1 + (i %% N), the "
                        "connections and shoppers split evenly (default 1)")
    p.add_argument("--ha", action="store_true",
                   help="one server, then a Patroni cluster of three (bench/holds_ha.py): "
                        "the cost of synchronous replication, as a ratio")
    args = p.parse_args()
    if args.smoke:
        args.duration, args.concurrency, args.accounts = 2.0, 8, 20
        args.seats, args.hot_seats = 5_000, 500
    if args.ha:
        from bench.holds_ha import ha_cost

        return ha_cost(args)
    if args.shards > 1 or args.events > 1:
        from bench.holds_shards import sharded

        return sharded(args)
    return against_server(args, measure)


def against_server(args: argparse.Namespace,
                   measure: Callable[[argparse.Namespace, DevServer | None, Path], int]) -> int:
    """``measure`` against ``--url`` (its data directory for the admin token), or against a
    throwaway ``onsale dev`` with the throttles raised, stopped (and removed when clean)."""
    server: DevServer | None = None
    code = 2
    try:
        if args.url is None:
            server = start_dev(seats=1_000 if args.smoke else 50_000, env=BENCH_LIMITS)
            args.url, args.admin_token = server.url, server.admin_token
            data_dir = server.data_dir
        else:
            data_dir = Path(args.data_dir)
            if args.admin_token is None:
                secrets = json.loads((data_dir / "secrets.json").read_text())
                args.admin_token = secrets["ONSALE_ADMIN_TOKEN"]
        code = measure(args, server, data_dir)
        return code
    finally:
        if server is not None:
            server.stop(remove=code == 0)


@dataclass
class Load:
    """One measured window of hold attempts."""

    connections: int
    ms: list[float]  # latencies, sorted
    outcomes: Counter[str]
    elapsed: float
    cpu: dict[str, float]  # CPU seconds by party (those found)

    @property
    def attempts(self) -> int:
        return len(self.ms)

    @property
    def rate(self) -> float:
        return self.attempts / self.elapsed

    def cpu_us(self, party: str) -> float | None:
        """CPU µs per attempt of one party (None: not measured)."""
        if party not in self.cpu or not self.attempts:
            return None
        return self.cpu[party] * 1e6 / self.attempts


def load(args: argparse.Namespace, host: str, port: int, event_id: int, cookies: list[str],
         stack: Stack, connections: int) -> Load:
    run = argparse.Namespace(**{**vars(args), "concurrency": connections})
    before, _ = settle(stack, cpu_sample(stack), PRE_LOAD_SETTLE_MAX_S)
    with profiled(stack, f"holds-{connections}"):
        latencies, outcomes, elapsed = run_fast(drive(run, host, port, event_id, cookies))
    cpu = cpu_used(stack, before, cpu_sample(stack))
    if not latencies:
        raise SystemExit("no hold attempt completed")
    return Load(connections, sorted(v * 1000 for v in latencies), outcomes, elapsed, cpu)


def cpu_text(result: Load) -> str:
    return ", ".join(f"{party} {result.cpu_us(party):,.0f} µs" for party in result.cpu)


def measure(args: argparse.Namespace, server: DevServer | None, data_dir: Path) -> int:
    host, _, port_s = args.url.removeprefix("http://").rstrip("/").partition(":")
    port = int(port_s or 80)
    stack = find_stack(server, host, port, data_dir)
    for note in stack.notes():
        print(f"note: {note}")
    event_id, cookies = asyncio.run(setup(args, host, port))
    single = None
    if args.scale:
        single = load(args, host, port, event_id, cookies, stack, SCALE_CONNECTIONS[0])
        ms = single.ms
        print(f"holds over HTTP: event {event_id}, {single.connections} connection, "
              f"{single.elapsed:.1f}s (--scale, first run)")
        print(f"  attempts/s      {single.rate:,.0f}  ({single.attempts:,} attempts)  "
              f"p99={pct(ms, 0.99):.1f} ms")
        print(f"  CPU per attempt {cpu_text(single) or 'not measured'}\n")
        args.concurrency = SCALE_CONNECTIONS[1]
    result = load(args, host, port, event_id, cookies, stack, args.concurrency)
    ms, outcomes, attempts, rate = result.ms, result.outcomes, result.attempts, result.rate
    print(f"holds over HTTP: event {event_id}, {args.concurrency} connections, "
          f"{result.elapsed:.1f}s, {args.hot_share:.0%} of requests on {args.hot_seats} hot seats")
    print(f"  attempts/s      {rate:,.0f}  ({attempts:,} attempts)")
    print("  outcomes        " + ", ".join(f"{k}={v:,}" for k, v in outcomes.most_common()))
    print(f"  latency ms      p50={pct(ms, 0.50):.1f} p95={pct(ms, 0.95):.1f} "
          f"p99={pct(ms, 0.99):.1f} max={ms[-1]:.1f} mean={statistics.fmean(ms):.1f}")
    if result.cpu:
        print(f"  CPU per attempt {cpu_text(result)} (each process's CPU time over the "
              "window / attempts)")
    rss = server.rss_mib() if server is not None else server_rss_mb(port)
    if rss is not None:
        print(f"  server RSS      {rss:.0f} MiB")
    url = server.database_url() if server is not None else database_url(data_dir)
    ceiling = None
    if args.pgbench:
        ceiling = pgbench_ceiling(url, args, event_id)
        print(f"  HTTP / raw      {rate / ceiling:.2f}")
    p99 = pct(ms, 0.99)
    print(f"\nverdict (issue 14: >= {TARGET_ATTEMPTS:,.0f} attempts/s, >= "
          f"{TARGET_PGBENCH_RATIO:.2f} of the same run's pgbench, p99 < {TARGET_P99_MS:.0f} ms)")
    print(verdict("attempts/s", f"{rate:,.0f}", f">= {TARGET_ATTEMPTS:,.0f}",
                  rate >= TARGET_ATTEMPTS) + f"  ({rate / TARGET_ATTEMPTS:.2f} of it)")
    if ceiling is not None:
        ratio = rate / ceiling
        print(verdict("HTTP / pgbench", f"{ratio:.2f}", f">= {TARGET_PGBENCH_RATIO:.2f}",
                      ratio >= TARGET_PGBENCH_RATIO)
              + f"  ({rate:,.0f} / {ceiling:,.0f} holds/s)")
    else:
        print(verdict("HTTP / pgbench", "-", f">= {TARGET_PGBENCH_RATIO:.2f}", None)
              + "  (--no-pgbench)")
    print(verdict("p99", f"{p99:.1f} ms", f"< {TARGET_P99_MS:.0f} ms", p99 < TARGET_P99_MS))
    figure("holds.attempts_per_s", round(rate, 1), "/s", ceiling=ceiling,
           target=TARGET_ATTEMPTS)
    figure("holds.p50", round(pct(ms, 0.50), 2), "ms")
    figure("holds.p99", round(p99, 2), "ms", target=TARGET_P99_MS)
    figure("holds.held_share", round(outcomes["held"] / attempts, 4), "share")
    for party, name in (("core", "server"), ("postgres", "postgres")):
        value = result.cpu_us(party)
        if value is not None:
            figure(f"holds.cpu_us_{name}", round(value, 1), "us")
    if rss is not None:
        figure("holds.server_rss", round(rss, 1), "MiB")
    if ceiling is not None:
        figure("holds.pgbench_holds_per_s", round(ceiling, 1), "/s")
        figure("holds.pgbench_ratio", round(rate / ceiling, 3), "ratio",
               target=TARGET_PGBENCH_RATIO)
    errors = sum(v for k, v in outcomes.items() if k.startswith("5"))
    figure("holds.server_errors", errors, "count")
    if single is not None:
        scale_report(single, result)
    oversold = run_audit(url, "holds")
    print(f"  oversells/invariant violations: {oversold}")
    return 1 if oversold else 0


def scale_report(single: Load, many: Load) -> None:
    """--scale: the CPU per attempt at 1 and at 64 connections, and its growth."""
    few, lots = single.connections, many.connections
    print(f"\nscale: CPU per hold attempt with {few} connection and with {lots} (same event, "
          f"{single.rate:,.0f} and {many.rate:,.0f} attempts/s)")
    measured = []
    for party, name in (("core", "server"), ("postgres", "postgres")):
        one, all_ = single.cpu_us(party), many.cpu_us(party)
        if one is not None and all_ is not None and one > 0:
            measured.append((name, one, all_))
            print(f"  {name:<9} {one:8,.0f} µs -> {all_:8,.0f} µs  (x{all_ / one:.2f})")
    if not measured:
        print("  not measured: neither the server's nor PostgreSQL's processes were found")
        return
    print(f"  An attempt does the same work at both: x above 1 is what {lots} concurrent "
          "connections add per attempt (lock waits on the hot seats, pool queueing, more "
          "context switches); x below 1 is costs paid per wake-up or per second (event-loop "
          "turns, system calls, commits, background loops) shared by more attempts.")
    for name, one, all_ in measured:
        figure(f"holds.cpu_us_{name}_{few}conn", round(one, 1), "us")
        figure(f"holds.cpu_us_{name}_{lots}conn", round(all_, 1), "us", ceiling=round(one, 1))


if __name__ == "__main__":
    sys.exit(main())
