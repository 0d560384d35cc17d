"""Drive full checkouts (hold -> checkout -> confirmed) over HTTP, with the provider
simulator, and print figures.

    .venv/bin/python bench/checkout.py --duration 20 --accounts 40   # its own onsale dev
    .venv/bin/python bench/checkout.py --url http://127.0.0.1:8000 --data-dir .onsale
    .venv/bin/python bench/checkout.py --smoke

Without ``--url`` it starts ``onsale dev`` (and so the simulator) in a throwaway data
directory with the per-address throttles raised, as bench/holds.py does; a server
given with ``--url`` must have them raised (docs/benchmarks.md).

Each worker loops: hold 1-2 free seats, check out with the approving test card
(authorize -> sale -> capture, all inside the request), reads the order back
(GET /api/orders/{id}, as the order page polls it), and records the latency
of each step. Prints authorizations/s, p50/p95/p99 per step, the
states reached, the server's memory and ``onsale audit``. Figure lines:
bench/figures.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import Conn, against_server, pct, run_fast, server_rss_mb, setup
from bench.stack import DevServer, database_url, run_audit

TARGET_AUTHORIZATIONS = 1000.0  # per second (docs/benchmarks.md#checkouts-end-to-end)


async def drive(args: argparse.Namespace, host: str, port: int, event_id: int,
                cookies: list[str]) -> tuple[dict[str, list[float]], Counter[str], float]:
    steps: dict[str, list[float]] = {"hold": [], "checkout": [], "order": [], "total": []}
    outcomes: Counter[str] = Counter()
    deadline = time.perf_counter() + args.duration
    seat_ids = list(range(1, args.seats + 1))
    random.Random(7).shuffle(seat_ids)
    cursor = iter(range(0, len(seat_ids), 2))

    async def worker(i: int) -> None:
        rng = random.Random(i)
        c = Conn(host, port)
        while time.perf_counter() < deadline:
            cookie = cookies[rng.randrange(len(cookies))]  # spread the ticket limit
            start = next(cursor, None)
            if start is None:
                return
            seats = seat_ids[start:start + rng.choice((1, 2))]
            t0 = time.perf_counter()
            status, _, data = await c.request(
                "POST", f"/api/events/{event_id}/holds", json.dumps({"seat_ids": seats}).encode(),
                {"Cookie": cookie, "Idempotency-Key": os.urandom(8).hex()})
            t1 = time.perf_counter()
            steps["hold"].append(t1 - t0)
            if status != 201:
                outcomes["hold:" + json.loads(data).get("code", str(status))] += 1
                continue
            hold_id = json.loads(data)["hold_id"]
            status, _, data = await c.request(
                "POST", f"/api/holds/{hold_id}/checkout",
                json.dumps({"payment_method": "pm_card_visa"}).encode(),
                {"Cookie": cookie, "Idempotency-Key": os.urandom(8).hex()})
            t2 = time.perf_counter()
            steps["checkout"].append(t2 - t1)
            steps["total"].append(t2 - t0)
            body = json.loads(data)
            outcomes[f"{body.get('order_status')}/{body.get('payment_status')}"
                     if status in (200, 201) else "checkout:" + body.get("code", str(status))] += 1
            if status in (200, 201):  # the order page polls this
                t3 = time.perf_counter()
                await c.request("GET", f"/api/orders/{body['order_id']}", b"", {"Cookie": cookie})
                steps["order"].append(time.perf_counter() - t3)

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
    return steps, outcomes, time.perf_counter() - started


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--url", default=None,
                   help="a running server (default: start a throwaway onsale dev)")
    p.add_argument("--admin-token", default=None, help="with --url; default: "
                   "ONSALE_ADMIN_TOKEN from <data-dir>/secrets.json")
    p.add_argument("--data-dir", default=os.environ.get("ONSALE_DATA_DIR", ".onsale"),
                   help="with --url: the server's data directory (or set DATABASE_URL)")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--accounts", type=int, default=200)
    p.add_argument("--seats", type=int, default=50_000)
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds on a small event: does it run (bench/smoke.py)")
    args = p.parse_args()
    args.hold_ttl = 300
    if args.smoke:
        args.duration, args.concurrency, args.accounts, args.seats = 2.0, 4, 10, 2_000
    return against_server(args, measure)


def cpu_seconds(server: DevServer) -> dict[str, float]:
    """CPU time (user + system) so far of each party of the run: core (the ``onsale dev``
    process: core, edge and seat map in one), PostgreSQL (the postmaster and every
    backend), the provider (the simulator) and Valkey."""
    import psutil

    found = {"core": 0.0, "postgres": 0.0, "provider": 0.0, "valkey": 0.0}
    pg_dir = str(server.data_dir / "pg")
    for proc in psutil.process_iter(["pid", "cmdline", "cpu_times"]):
        cmd = " ".join(proc.info["cmdline"] or ())
        times = proc.info["cpu_times"]
        if times is None:
            continue
        used = times.user + times.system
        if proc.info["pid"] == server.process.pid:
            found["core"] += used
        elif "onsale.cli psp" in cmd and str(server.data_dir) in cmd:
            found["provider"] += used
        elif "valkey-server" in cmd and proc.ppid() == server.process.pid:
            found["valkey"] += used
        elif cmd.startswith("postgres") or "bin/postgres" in cmd:
            try:
                cwd_ok = pg_dir in cmd or pg_dir in " ".join(
                    psutil.Process(proc.ppid()).cmdline())
            except psutil.Error:
                cwd_ok = False
            if cwd_ok:
                found["postgres"] += used
    return found


def measure(args: argparse.Namespace, server: DevServer | None, data_dir: Path) -> int:
    host, _, port_s = args.url.removeprefix("http://").rstrip("/").partition(":")
    port = int(port_s or 80)
    event_id, cookies = asyncio.run(setup(args, host, port))
    cpu_before = cpu_seconds(server) if server is not None else None
    steps, outcomes, elapsed = run_fast(drive(args, host, port, event_id, cookies))
    cpu_after = cpu_seconds(server) if server is not None else None
    if not steps["checkout"]:
        raise SystemExit("no checkout completed: " + ", ".join(
            f"{k}={v}" for k, v in outcomes.most_common()))
    confirmed = outcomes.get("CONFIRMED/CAPTURED", 0) + outcomes.get("CONFIRMED/AUTHORIZED", 0)
    rate = len(steps["checkout"]) / elapsed
    print(f"checkouts over HTTP: event {event_id}, {args.concurrency} connections, "
          f"{elapsed:.1f}s, approving test card")
    print(f"  authorizations/s  {rate:,.0f}  "
          f"({len(steps['checkout']):,} checkouts; confirmed {confirmed / elapsed:,.0f}/s)")
    print("  outcomes          " + ", ".join(f"{k}={v:,}" for k, v in outcomes.most_common()))
    pcts: dict[str, list[float]] = {}
    for name, values in steps.items():
        ms = sorted(v * 1000 for v in values)
        if ms:
            pcts[name] = ms
            print(f"  {name:<9} ms      p50={pct(ms, 0.50):.1f} p95={pct(ms, 0.95):.1f} "
                  f"p99={pct(ms, 0.99):.1f} max={ms[-1]:.1f}")
    if cpu_before is not None and cpu_after is not None:
        n = len(steps["checkout"])
        per = {k: (cpu_after[k] - cpu_before[k]) * 1000 / n for k in cpu_after}
        print("  CPU per checkout  " + ", ".join(f"{k} {v:.2f} ms" for k, v in per.items())
              + f" (total {sum(per.values()):.2f} ms)")
        for name, value in per.items():
            figure(f"checkout.cpu_ms_{name}", round(value, 3), "ms")
        figure("checkout.cpu_ms_total", round(sum(per.values()), 3), "ms")
    rss = server.rss_mib() if server is not None else server_rss_mb(port)
    if rss is not None:
        print(f"  server RSS        {rss:.0f} MiB")
    figure("checkout.authorizations_per_s", round(rate, 1), "/s",
           target=TARGET_AUTHORIZATIONS)
    figure("checkout.confirmed_share", round(confirmed / len(steps["checkout"]), 4), "share")
    for name in ("checkout", "order", "hold"):
        if name in pcts:
            figure(f"checkout.{name}_p99", round(pct(pcts[name], 0.99), 2), "ms")
    if rss is not None:
        figure("checkout.server_rss", round(rss, 1), "MiB")
    url = server.database_url() if server is not None else database_url(data_dir)
    violations = run_audit(url, "checkout")
    print(f"  invariant violations: {violations}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
