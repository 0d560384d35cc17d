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
outcomes, p50/p95/p99 latency, the server's memory, then (unless
``--no-pgbench``) the same hold function driven directly by pgbench on the same
database, the raw ceiling, and last ``onsale audit`` (oversells must be 0).
Figure lines: bench/figures.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.stack import BENCH_LIMITS, DevServer, database_url, refused, run_audit, start_dev


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


def server_rss_mb(port: int) -> float | None:
    try:
        import psutil
    except ImportError:
        return None
    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == "LISTEN" and conn.pid:
            return float(psutil.Process(conn.pid).memory_info().rss) / 2**20
    return None


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


async def setup(args: argparse.Namespace, host: str, port: int) -> tuple[int, list[str]]:
    c = Conn(host, port)
    # Passthrough: every shopper is admitted as soon as it joins (the gate stays on).
    body = json.dumps({"name": f"bench {time.strftime('%H:%M:%S')}", "seats": args.seats,
                       "hold_ttl_seconds": args.hold_ttl, "max_tickets_per_account": 100,
                       "queue_policy": "passthrough"}).encode()
    status, _, data = await c.request("POST", "/api/ops/events", body,
                                      {"Authorization": f"Bearer {args.admin_token}"})
    if status != 201:
        raise refused(status, "/api/ops/events", data)
    event_id = int(json.loads(data)["event_id"])
    cookies = []
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
        session = headers["set-cookie"].split(";", 1)[0]
        status, _, data = await patiently(c, "POST", f"/api/events/{event_id}/queue", b"",
                                          {"Cookie": session})
        if status != 200:
            raise refused(status, f"/api/events/{event_id}/queue", data)
        token = json.loads(data)["admission_token"]
        cookies.append(f"{session}; onsale_admission_{event_id}={token}")
    c.close()
    return event_id, cookies


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
CREATE SCHEMA IF NOT EXISTS bench;
CREATE OR REPLACE FUNCTION bench.try_hold(p_event bigint, p_account uuid, p_seats int[])
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM onsale_hold(p_event, p_account, md5(random()::text), 'd', p_seats);
    RETURN 'held';
EXCEPTION WHEN SQLSTATE 'OS409' THEN RETURN SQLERRM;
END $$;
DROP TABLE IF EXISTS bench.accounts;
CREATE TABLE bench.accounts AS
SELECT row_number() OVER () AS n, account_id FROM accounts LIMIT 300;
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


def run_pgbench(url: str, args: argparse.Namespace, event_id: int) -> float:
    """The pgbench run's holds/s (attempts: every transaction is one decision)."""
    from onsale.embedded import _pg_bin

    subprocess.run([str(_pg_bin() / "psql"), url, "-q", "-c", PGBENCH_SETUP], check=True)
    accounts = int(subprocess.run(
        [str(_pg_bin() / "psql"), url, "-At", "-c", "SELECT count(*) FROM bench.accounts"],
        check=True, capture_output=True, text=True).stdout)
    script = PGBENCH_SCRIPT.format(accounts=accounts, hot=args.hot_seats, seats=args.seats,
                                   hot_pct=int(args.hot_share * 100), event=event_id)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    print(f"\npgbench: the same hold function, no HTTP ({args.pgbench_clients} clients, "
          f"{args.duration}s)")
    out = subprocess.run(
        [str(_pg_bin() / "pgbench"), "-n", "-c", str(args.pgbench_clients), "-j", "2",
         "-T", str(int(args.duration)), "-f", f.name, url],
        check=True, capture_output=True, text=True).stdout
    tps = float("nan")
    for line in out.splitlines():
        if line.startswith(("number of transactions", "latency", "tps")):
            print("  " + line)
        if line.startswith("tps = "):
            tps = float(line.split()[2])
    subprocess.run([str(_pg_bin() / "psql"), url, "-q", "-c", "DROP SCHEMA bench CASCADE"],
                   check=True)
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--url", default=None,
                   help="a running server (default: start a throwaway onsale dev)")
    p.add_argument("--admin-token", default=None, help="with --url; default: "
                   "ONSALE_ADMIN_TOKEN from <data-dir>/secrets.json")
    p.add_argument("--data-dir", default=os.environ.get("ONSALE_DATA_DIR", ".onsale"),
                   help="with --url: the server's data directory (its secrets and database; "
                        "or set DATABASE_URL)")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--accounts", type=int, default=300)
    p.add_argument("--seats", type=int, default=50_000)
    p.add_argument("--hold-ttl", type=int, default=5)
    p.add_argument("--hot-seats", type=int, default=2_000)
    p.add_argument("--hot-share", type=float, default=0.8)
    p.add_argument("--pgbench", action=argparse.BooleanOptionalAction, default=True,
                   help="after the HTTP run, the same hold function under pgbench (the "
                        "ceiling, same run, same database; default on)")
    p.add_argument("--pgbench-clients", type=int, default=16)
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds on a small event: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.duration, args.concurrency, args.accounts = 2.0, 8, 20
        args.seats, args.hot_seats = 5_000, 500
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


def measure(args: argparse.Namespace, server: DevServer | None, data_dir: Path) -> int:
    host, _, port_s = args.url.removeprefix("http://").rstrip("/").partition(":")
    port = int(port_s or 80)
    event_id, cookies = asyncio.run(setup(args, host, port))
    latencies, outcomes, elapsed = run_fast(drive(args, host, port, event_id, cookies))
    latencies.sort()
    attempts = len(latencies)
    if not attempts:
        raise SystemExit("no hold attempt completed")
    ms = [v * 1000 for v in latencies]
    rate = attempts / elapsed
    print(f"holds over HTTP: event {event_id}, {args.concurrency} connections, "
          f"{elapsed:.1f}s, {args.hot_share:.0%} of requests on {args.hot_seats} hot seats")
    print(f"  attempts/s      {rate:,.0f}  ({attempts:,} attempts)")
    print("  outcomes        " + ", ".join(f"{k}={v:,}" for k, v in outcomes.most_common()))
    print(f"  latency ms      p50={pct(ms, 0.50):.1f} p95={pct(ms, 0.95):.1f} "
          f"p99={pct(ms, 0.99):.1f} max={ms[-1]:.1f} mean={statistics.fmean(ms):.1f}")
    rss = server.rss_mib() if server is not None else server_rss_mb(port)
    if rss is not None:
        print(f"  server RSS      {rss:.0f} MiB")
    url = server.database_url() if server is not None else database_url(data_dir)
    ceiling = None
    if args.pgbench:
        ceiling = run_pgbench(url, args, event_id)
        print(f"  HTTP / raw      {rate / ceiling:.2f}")
    figure("holds.attempts_per_s", round(rate, 1), "/s", ceiling=ceiling,
           target=TARGET_ATTEMPTS)
    figure("holds.p50", round(pct(ms, 0.50), 2), "ms")
    figure("holds.p99", round(pct(ms, 0.99), 2), "ms", target=TARGET_P99_MS)
    figure("holds.held_share", round(outcomes["held"] / attempts, 4), "share")
    if rss is not None:
        figure("holds.server_rss", round(rss, 1), "MiB")
    if ceiling is not None:
        figure("holds.pgbench_holds_per_s", round(ceiling, 1), "/s")
    errors = sum(v for k, v in outcomes.items() if k.startswith("5"))
    figure("holds.server_errors", errors, "count")
    oversold = run_audit(url, "holds")
    print(f"  oversells/invariant violations: {oversold}")
    return 1 if oversold else 0


if __name__ == "__main__":
    sys.exit(main())
