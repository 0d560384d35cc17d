"""Drive authorizations against the payment provider simulator and print figures.

    .venv/bin/python bench/psp.py --duration 15 --concurrency 64
    .venv/bin/python bench/psp.py --webhooks          # also deliver every event
    .venv/bin/python bench/psp.py --url http://127.0.0.1:8100 --api-key sk_... --sim-key ...
    .venv/bin/python bench/psp.py --smoke             # a couple of seconds

Starts ``onsale psp`` on a free port with a fresh data directory (unless --url),
then keeps ``--concurrency`` keep-alive connections busy with
``POST /v1/payment_intents`` (create + confirm, form-encoded as Stripe's SDKs send it,
a fresh Idempotency-Key each;
90 % pm_card_visa, 5 % declined, 5 % 3-D Secure). Prints authorizations/s,
outcomes, p50/p95/p99 latency, and the simulator's own stats (the list of
operation ids with more than one intent must be empty). With --webhooks a
sink process receives and counts the webhook deliveries. Figure lines:
bench/figures.py; the duplicate operation ids are this bench's audit (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import Conn
from bench.stack import tidy

API_KEY = "sk_test_bench_0123456789"
SIM_KEY = "sim_test_bench_0123456789"
AUTH = {"Authorization": f"Bearer {API_KEY}",
        "Content-Type": "application/x-www-form-urlencoded"}
SINK = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
async def hook(request):
    try:
        await request.body()
    except Exception:  # the simulator stopped mid-delivery
        pass
    return Response(b"", 204)
uvicorn.run(Starlette(routes=[Route("/hook", hook, methods=["POST"])]), host="127.0.0.1",
            port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def card(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return "pm_card_chargeDeclined"
    if roll < 0.10:
        return "pm_card_threeDSecureRequired"
    return "pm_card_visa"


async def worker(conn: Conn, host: str, port: int, stop_at: float,
                 latencies: list[float], outcomes: Counter[int], rng: random.Random) -> None:
    while time.perf_counter() < stop_at:
        operation = str(uuid.uuid4())
        body = urlencode({"amount": 12500, "currency": "usd", "payment_method": card(rng),
                          "capture_method": "manual", "confirm": "true",
                          "metadata[order_id]": str(uuid.uuid4()),
                          "metadata[operation_id]": operation}).encode()
        started = time.perf_counter()
        status, _, _ = await conn.request("POST", "/v1/payment_intents", body,
                                          {"Idempotency-Key": operation, **AUTH})
        latencies.append(time.perf_counter() - started)
        outcomes[status] += 1


async def get_json(host: str, port: int, path: str) -> Any:
    conn = Conn(host, port)
    _, _, body = await conn.request("GET", path, b"", {"Authorization": f"Bearer {SIM_KEY}"})
    conn.close()
    return json.loads(body)


async def drive(host: str, port: int, duration: float, concurrency: int) -> dict[str, Any]:
    """One second of warm-up, then ``duration`` seconds measured, on the same connections."""
    conns = [Conn(host, port) for _ in range(concurrency)]
    latencies: list[float] = []
    outcomes: Counter[int] = Counter()
    rng = random.Random(7)
    warm_until = time.perf_counter() + 1.0
    await asyncio.gather(*(worker(c, host, port, warm_until, [], Counter(), rng)
                           for c in conns))
    started = time.perf_counter()
    await asyncio.gather(*(worker(c, host, port, started + duration, latencies, outcomes, rng)
                           for c in conns))
    elapsed = time.perf_counter() - started
    for conn in conns:
        conn.close()
    cuts = statistics.quantiles(latencies, n=100)
    return {"requests": len(latencies), "per_second": len(latencies) / elapsed,
            "p50_ms": cuts[49] * 1000, "p95_ms": cuts[94] * 1000, "p99_ms": cuts[98] * 1000,
            "max_ms": max(latencies) * 1000, "outcomes": dict(sorted(outcomes.items()))}


def wait_ready(proc: subprocess.Popen[str], needle: str) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if needle in line:
            # Keep reading what it prints, so that a chatty simulator never blocks on us.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return
    raise SystemExit(f"the simulator did not start (exit {proc.wait()})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=15.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--webhooks", action="store_true", help="deliver events to a sink process")
    p.add_argument("--url", help="an already running simulator (its keys in --api-key "
                   "and --sim-key)")
    p.add_argument("--api-key", default=API_KEY, help="its secret key, sk_…")
    p.add_argument("--sim-key", default=SIM_KEY, help="its ONSALE_PSP_SIM_KEY (/_sim/stats)")
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.duration, args.concurrency = 2.0, 16
    globals()["API_KEY"], globals()["SIM_KEY"] = args.api_key, args.sim_key
    AUTH["Authorization"] = f"Bearer {args.api_key}"
    procs: list[subprocess.Popen[str]] = []
    data_dir: str | None = None
    done = False
    try:
        if args.url:
            host, port = args.url.split("://", 1)[1].rstrip("/").split(":")
            port_n = int(port)
        else:
            host, port_n = "127.0.0.1", free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("ONSALE_PSP_")}
            env.update({"ONSALE_PSP_SECRET_KEY": API_KEY, "ONSALE_PSP_SIM_KEY": SIM_KEY})
            if args.webhooks:
                sink_port = free_port()
                procs.append(subprocess.Popen([sys.executable, "-c", SINK, str(sink_port)],
                                              text=True))
                env["ONSALE_PSP_WEBHOOK_URL"] = f"http://127.0.0.1:{sink_port}/hook"
                env["ONSALE_PSP_WEBHOOK_SECRET"] = "whsec_bench"
            data_dir = tempfile.mkdtemp(prefix="onsale-bench-psp-")
            onsale = str(Path(sys.executable).parent / "onsale")
            server = subprocess.Popen([onsale, "psp", "--port", str(port_n), "--data-dir",
                                       data_dir], env=env, stdout=subprocess.PIPE, text=True)
            procs.append(server)
            wait_ready(server, "serving on")
        figures = asyncio.run(drive(host, port_n, args.duration, args.concurrency))
        if args.webhooks:
            time.sleep(2)  # let the queue drain before reading the stats
        stats = asyncio.run(get_json(host, port_n, "/_sim/stats"))
        done = True
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(30)
        if data_dir is not None:
            tidy(Path(data_dir), done)
    print(f"authorizations/s  {figures['per_second']:,.0f}  "
          f"({figures['requests']:,} in {args.duration:.0f} s, "
          f"{args.concurrency} connections, webhooks {'on' if args.webhooks else 'off'})")
    print(f"latency ms        p50 {figures['p50_ms']:.1f}  p95 {figures['p95_ms']:.1f}  "
          f"p99 {figures['p99_ms']:.1f}  max {figures['max_ms']:.1f}")
    print(f"HTTP statuses     {figures['outcomes']}")
    print(f"simulator stats   intents {stats['intents']:,}, by status "
          f"{stats['intents_by_status']}, webhooks {stats['webhooks_by_state']}")
    duplicates = stats["duplicate_operation_ids"]
    print(f"operation ids with more than one intent: {len(duplicates)}")
    figure("psp.authorizations_per_s", round(figures["per_second"], 1), "/s")
    figure("psp.p50", round(figures["p50_ms"], 2), "ms")
    figure("psp.p99", round(figures["p99_ms"], 2), "ms")
    figure("psp.duplicate_operations", len(duplicates), "count")
    refused = {s: n for s, n in figures["outcomes"].items() if s not in (200, 402)}
    if refused:  # e.g. 400: the simulator did not take the request as sent
        print(f"unexpected HTTP statuses: {refused}", file=sys.stderr)
    return 1 if duplicates or refused else 0


if __name__ == "__main__":
    sys.exit(main())
