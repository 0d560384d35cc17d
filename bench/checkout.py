"""Drive full checkouts (hold -> checkout -> confirmed) against a running
``onsale dev`` and its provider simulator, and print figures.

    make demo                                   # in one terminal (or: .venv/bin/onsale dev)
    .venv/bin/python bench/checkout.py --duration 20 --concurrency 32

Each worker loops: hold 1-2 free seats, check out with the approving test card
(authorize -> sale -> capture, all inside the request), reads the order back
(GET /api/orders/{id}, as the order page polls it), and records the latency
of each step. Prints authorizations/s, p50/p95/p99 per step, the
states reached, the server's memory and the invariant audit.
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

from bench.holds import (
    Conn,
    audit,
    database_url,
    pct,
    run_fast,
    server_rss_mb,
    setup,
)


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
                json.dumps({"payment_method": "4242424242424242"}).encode(),
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
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--admin-token", default=None, help="default: .onsale/secrets.json")
    p.add_argument("--data-dir", default=os.environ.get("ONSALE_DATA_DIR", ".onsale"))
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--accounts", type=int, default=200)
    p.add_argument("--seats", type=int, default=50_000)
    args = p.parse_args()
    args.hold_ttl = 300
    data_dir = Path(args.data_dir)
    if args.admin_token is None:
        args.admin_token = json.loads((data_dir / "secrets.json").read_text())["ONSALE_ADMIN_TOKEN"]
    host, _, port_s = args.url.removeprefix("http://").partition(":")
    port = int(port_s or 80)

    event_id, cookies = asyncio.run(setup(args, host, port))
    steps, outcomes, elapsed = run_fast(drive(args, host, port, event_id, cookies))
    confirmed = outcomes.get("CONFIRMED/CAPTURED", 0) + outcomes.get("CONFIRMED/AUTHORIZED", 0)
    print(f"checkouts over HTTP: event {event_id}, {args.concurrency} connections, "
          f"{elapsed:.1f}s, approving test card")
    print(f"  authorizations/s  {len(steps['checkout']) / elapsed:,.0f}  "
          f"({len(steps['checkout']):,} checkouts; confirmed {confirmed / elapsed:,.0f}/s)")
    print("  outcomes          " + ", ".join(f"{k}={v:,}" for k, v in outcomes.most_common()))
    for name, values in steps.items():
        ms = sorted(v * 1000 for v in values)
        if ms:
            print(f"  {name:<9} ms      p50={pct(ms, 0.50):.1f} p95={pct(ms, 0.95):.1f} "
                  f"p99={pct(ms, 0.99):.1f} max={ms[-1]:.1f}")
    rss = server_rss_mb(port)
    if rss is not None:
        print(f"  server RSS        {rss:.0f} MiB")
    violations = asyncio.run(audit(database_url(data_dir)))
    print(f"  invariant violations: {violations}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
