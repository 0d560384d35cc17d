"""Drive full checkouts (hold -> checkout -> confirmed) over HTTP, with the provider
simulator, and print figures.

    .venv/bin/python bench/checkout.py --duration 20 --accounts 40   # its own onsale dev
    .venv/bin/python bench/checkout.py --url http://127.0.0.1:8000 --data-dir .onsale
    .venv/bin/python bench/checkout.py --smoke
    .venv/bin/python bench/checkout.py --duration 10 --accounts 40 --scale  # 8, then 64 conns

Without ``--url`` it starts ``onsale dev`` (and so the simulator) in a throwaway data
directory with the per-address throttles raised, as bench/holds.py does; a server
given with ``--url`` must have them raised (docs/benchmarks.md).

Each worker loops: hold 1-2 free seats, check out with the approving test card
(authorize -> sale -> the answer; the capture follows from the server), reads the order back
(GET /api/orders/{id}, as the order page polls it), and records the latency
of each step. Shoppers are spread so that none passes the event's ticket limit
(100 each: the run stops early, and says so, when every account's allowance or the
seats are used up). Prints authorizations/s, p50/p95/p99 per step, the states
reached, the CPU per completed (confirmed) checkout of each process of the stack
(the onsale server with its background loops, PostgreSQL, the provider simulator,
Valkey: CPU time over the run and until the work it left behind is done, from
/proc), a verdict against issue 14's targets (<= 4 ms of CPU per checkout summed
over every process, order read p99 < 200 ms, hold p99 < 300 ms, 1,000
authorizations/s), the server's memory and ``onsale audit``.

``--scale`` runs first with 8 connections, then as usual with 64 (each on a fresh
event, same shoppers, each for ``--duration``), and prints the CPU per checkout of
both. Figure lines: bench/figures.py.
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import (
    PRE_LOAD_SETTLE_MAX_S,
    TICKETS_PER_ACCOUNT,
    Conn,
    Stack,
    admit,
    against_server,
    cpu_sample,
    cpu_used,
    create_event,
    find_stack,
    pct,
    profiled,
    run_fast,
    server_arguments,
    server_rss_mb,
    settle,
    sign_up,
    verdict,
)
from bench.stack import DevServer, database_url, run_audit

TARGET_AUTHORIZATIONS = 1000.0  # per second (docs/benchmarks.md#checkouts-end-to-end)
TARGET_CPU_MS = 4.0  # CPU per completed checkout, summed over every process of the stack
TARGET_ORDER_P99_MS = 200.0  # GET /api/orders/{id} during the run
TARGET_HOLD_P99_MS = 300.0
SCALE_CONNECTIONS = (8, 64)  # --scale
# After the load, the stack still works for the last checkouts (webhooks, the outbox
# relay, the ticket consumer): the CPU window ends once it is quiet, or after this long.
SETTLE_MAX_S = 5.0


@dataclass
class Run:
    """One measured window of checkouts."""

    connections: int
    event_id: int
    steps: dict[str, list[float]]  # seconds per step
    outcomes: Counter[str]
    elapsed: float  # the load
    cpu: dict[str, float]  # CPU seconds by party, over the load and its settling
    settled: float  # seconds after the load until the stack was quiet
    ran_out: str | None  # what stopped the run before --duration, if anything
    writes: int | None = None  # PostgreSQL transactions that wrote (xids assigned), load + settle

    @property
    def checkouts(self) -> int:
        return len(self.steps["checkout"])

    @property
    def confirmed(self) -> int:
        return (self.outcomes.get("CONFIRMED/CAPTURED", 0)
                + self.outcomes.get("CONFIRMED/AUTHORIZED", 0))

    def cpu_ms(self) -> dict[str, float]:
        """CPU ms per completed (confirmed) checkout by party (empty: nothing measured)."""
        if not self.confirmed:
            return {}
        return {k: v * 1000 / self.confirmed for k, v in self.cpu.items()}


async def drive(args: argparse.Namespace, host: str, port: int, event_id: int,
                cookies: list[str]
                ) -> tuple[dict[str, list[float]], Counter[str], float, str | None]:
    steps: dict[str, list[float]] = {"hold": [], "checkout": [], "order": [], "total": []}
    outcomes: Counter[str] = Counter()
    deadline = time.perf_counter() + args.duration
    seat_ids = list(range(1, args.seats + 1))
    random.Random(7).shuffle(seat_ids)
    cursor = iter(range(0, len(seat_ids), 2))
    # The event's ticket limit per account: an account is used until its seats run out.
    allowance = dict.fromkeys(cookies, TICKETS_PER_ACCOUNT)
    usable = list(cookies)
    ran_out: list[str] = []

    def spent(cookie: str) -> None:
        if cookie in usable:
            usable.remove(cookie)

    async def worker(i: int) -> None:
        rng = random.Random(i)
        c = Conn(host, port)
        try:
            while time.perf_counter() < deadline:
                if not usable:
                    ran_out.append(f"every account's {TICKETS_PER_ACCOUNT}-ticket allowance "
                                   "(raise --accounts)")
                    return
                cookie = usable[rng.randrange(len(usable))]  # spread the ticket limit
                start = next(cursor, None)
                if start is None:
                    ran_out.append("the event's seats (raise --seats)")
                    return
                seats = seat_ids[start:start + min(rng.choice((1, 2)), allowance[cookie])]
                t0 = time.perf_counter()
                status, _, data = await c.request(
                    "POST", f"/api/events/{event_id}/holds",
                    json.dumps({"seat_ids": seats}).encode(),
                    {"Cookie": cookie, "Idempotency-Key": os.urandom(8).hex()})
                t1 = time.perf_counter()
                steps["hold"].append(t1 - t0)
                if status != 201:
                    code = json.loads(data).get("code", str(status)) if data[:1] == b"{" \
                        else str(status)
                    outcomes["hold:" + code] += 1
                    if code == "ticket_limit_exceeded":
                        spent(cookie)
                    continue
                allowance[cookie] -= len(seats)
                if allowance[cookie] <= 0:
                    spent(cookie)
                hold_id = json.loads(data)["hold_id"]
                status, _, data = await c.request(
                    "POST", f"/api/holds/{hold_id}/checkout",
                    json.dumps({"payment_method": "pm_card_visa"}).encode(),
                    {"Cookie": cookie, "Idempotency-Key": os.urandom(8).hex()})
                t2 = time.perf_counter()
                steps["checkout"].append(t2 - t1)
                steps["total"].append(t2 - t0)
                body = json.loads(data) if data[:1] == b"{" else {}
                outcomes[f"{body.get('order_status')}/{body.get('payment_status')}"
                         if status in (200, 201)
                         else "checkout:" + body.get("code", str(status))] += 1
                if status in (200, 201):  # the order page polls this
                    t3 = time.perf_counter()
                    await c.request("GET", f"/api/orders/{body['order_id']}", b"",
                                    {"Cookie": cookie})
                    steps["order"].append(time.perf_counter() - t3)
        finally:
            c.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
    return steps, outcomes, time.perf_counter() - started, (ran_out[0] if ran_out else None)


def next_xid(url: str) -> int:
    """The next transaction id PostgreSQL will assign (read without taking one): the
    difference over a window is the transactions that wrote in it."""
    import asyncpg

    async def read() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval(
                "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint"))
        finally:
            await conn.close()
    return asyncio.run(read())


def one_run(args: argparse.Namespace, host: str, port: int, sessions: list[str],
            stack: Stack, connections: int, url: str | None = None) -> Run:
    """A fresh event, the shoppers admitted to it, then the load with ``connections``."""
    async def prepare() -> tuple[int, list[str]]:
        c = Conn(host, port)
        try:
            event_id = await create_event(c, args)
            return event_id, await admit(c, event_id, sessions)
        finally:
            c.close()

    event_id, cookies = asyncio.run(prepare())
    run_args = argparse.Namespace(**{**vars(args), "concurrency": connections})
    # The new event's 50,000 seats pass through the seat map's change capture first.
    before, _ = settle(stack, cpu_sample(stack), PRE_LOAD_SETTLE_MAX_S)
    xid_before = next_xid(url) if url is not None else None
    with profiled(stack, f"checkout-{connections}"):
        steps, outcomes, elapsed, ran_out = run_fast(drive(run_args, host, port, event_id,
                                                           cookies))
    after, settled = settle(stack, cpu_sample(stack), SETTLE_MAX_S)
    writes = next_xid(url) - xid_before if url is not None and xid_before is not None else None
    if not steps["checkout"]:
        raise SystemExit("no checkout completed: " + ", ".join(
            f"{k}={v}" for k, v in outcomes.most_common()))
    return Run(connections, event_id, steps, outcomes, elapsed,
               cpu_used(stack, before, after), settled, ran_out, writes)


def cpu_text(run: Run) -> str:
    per = run.cpu_ms()
    return (", ".join(f"{k} {v:.2f} ms" for k, v in per.items())
            + f" (total {sum(per.values()):.2f} ms)")


def report(args: argparse.Namespace, run: Run) -> dict[str, list[float]]:
    """The human-readable report of one run; its latencies in ms, sorted, by step."""
    print(f"checkouts over HTTP: event {run.event_id}, {run.connections} connections, "
          f"{run.elapsed:.1f}s, approving test card")
    if run.ran_out:
        print(f"  note: stopped before {args.duration:g}s: used up {run.ran_out}")
    rate = run.checkouts / run.elapsed
    print(f"  authorizations/s  {rate:,.0f}  ({run.checkouts:,} checkouts; "
          f"confirmed {run.confirmed / run.elapsed:,.0f}/s)")
    print("  outcomes          " + ", ".join(f"{k}={v:,}"
                                             for k, v in run.outcomes.most_common()))
    pcts: dict[str, list[float]] = {}
    for name, values in run.steps.items():
        ms = sorted(v * 1000 for v in values)
        if ms:
            pcts[name] = ms
            print(f"  {name:<9} ms      p50={pct(ms, 0.50):.1f} p95={pct(ms, 0.95):.1f} "
                  f"p99={pct(ms, 0.99):.1f} max={ms[-1]:.1f}")
    if run.cpu_ms():
        print(f"  CPU per checkout  {cpu_text(run)}")
        print(f"                    (each process's CPU time over the {run.elapsed:.1f}s load "
              f"and {run.settled:.1f}s until the stack was quiet, / {run.confirmed:,} "
              "confirmed checkouts)")
    elif run.cpu:
        print("  CPU per checkout  not measured: no checkout was confirmed")
    return pcts


def measure(args: argparse.Namespace, server: DevServer | None, data_dir: Path) -> int:
    host, _, port_s = args.url.removeprefix("http://").rstrip("/").partition(":")
    port = int(port_s or 80)
    stack = find_stack(server, host, port, data_dir)
    for note in stack.notes():
        print(f"note: {note}")

    async def shoppers() -> list[str]:
        c = Conn(host, port)
        try:
            return await sign_up(c, args)
        finally:
            c.close()

    sessions = asyncio.run(shoppers())
    url = server.database_url() if server is not None else database_url(data_dir)
    few = None
    if args.scale:
        few = one_run(args, host, port, sessions, stack, SCALE_CONNECTIONS[0], url)
        report(args, few)
        print()
        args.concurrency = SCALE_CONNECTIONS[1]
    run = one_run(args, host, port, sessions, stack, args.concurrency, url)
    pcts = report(args, run)
    rss = server.rss_mib() if server is not None else server_rss_mb(port)
    if rss is not None:
        print(f"  server RSS        {rss:.0f} MiB")

    rate = run.checkouts / run.elapsed
    per = run.cpu_ms()
    total = sum(per.values()) if per else None
    order_p99 = pct(pcts["order"], 0.99) if "order" in pcts else None
    hold_p99 = pct(pcts["hold"], 0.99)
    print(f"\nverdict (issue 14: <= {TARGET_CPU_MS:g} ms of CPU per completed checkout over "
          f"every process, order read p99 < {TARGET_ORDER_P99_MS:.0f} ms, hold p99 < "
          f"{TARGET_HOLD_P99_MS:.0f} ms; {TARGET_AUTHORIZATIONS:,.0f} authorizations/s)")
    if total is not None:
        parties = " + ".join(per)
        print(verdict("CPU per checkout", f"{total:.2f} ms", f"<= {TARGET_CPU_MS:g} ms",
                      total <= TARGET_CPU_MS) + f"  ({parties}; {total / TARGET_CPU_MS:.2f}"
              " of it)")
    else:
        print(verdict("CPU per checkout", "-", f"<= {TARGET_CPU_MS:g} ms", None))
    if order_p99 is not None:
        print(verdict("order read p99", f"{order_p99:.1f} ms",
                      f"< {TARGET_ORDER_P99_MS:.0f} ms", order_p99 < TARGET_ORDER_P99_MS))
    print(verdict("hold p99", f"{hold_p99:.1f} ms", f"< {TARGET_HOLD_P99_MS:.0f} ms",
                  hold_p99 < TARGET_HOLD_P99_MS))
    print(verdict("authorizations/s", f"{rate:,.0f}", f">= {TARGET_AUTHORIZATIONS:,.0f}",
                  rate >= TARGET_AUTHORIZATIONS) + f"  ({rate / TARGET_AUTHORIZATIONS:.2f} of it)")

    for name, value in per.items():
        figure(f"checkout.cpu_ms_{name}", round(value, 3), "ms")
    if total is not None:
        figure("checkout.cpu_ms_total", round(total, 3), "ms", target=TARGET_CPU_MS)
    figure("checkout.authorizations_per_s", round(rate, 1), "/s",
           target=TARGET_AUTHORIZATIONS)
    figure("checkout.confirmed_share", round(run.confirmed / run.checkouts, 4), "share")
    targets = {"order": TARGET_ORDER_P99_MS, "hold": TARGET_HOLD_P99_MS}
    for name in ("checkout", "order", "hold"):
        if name in pcts:
            figure(f"checkout.{name}_p99", round(pct(pcts[name], 0.99), 2), "ms",
                   target=targets.get(name))
    if rss is not None:
        figure("checkout.server_rss", round(rss, 1), "MiB")
    if run.writes is not None and run.confirmed:
        writes = run.writes / run.confirmed
        print(f"  PostgreSQL transactions that wrote, per confirmed checkout: {writes:.2f} "
              "(the hold's share of its batch included; the load and its settling)")
        figure("checkout.write_transactions", round(writes, 2), "count")
    if few is not None:
        scale_report(few, run)
    violations = run_audit(url, "checkout")
    print(f"  invariant violations: {violations}")
    return 1 if violations else 0


def scale_report(few: Run, many: Run) -> None:
    """--scale: the CPU per checkout at 8 and at 64 connections, by process and in all."""
    a, b = few.connections, many.connections
    print(f"\nscale: CPU ms per confirmed checkout with {a} connections and with {b} (a fresh "
          f"event each, {few.checkouts / few.elapsed:,.0f} and "
          f"{many.checkouts / many.elapsed:,.0f} authorizations/s)")
    print(f"  confirmed share {few.confirmed / few.checkouts:.0%} and "
          f"{many.confirmed / many.checkouts:.0%} of the checkouts answered: the CPU of the "
          "refused ones is in the figures (spent, not completed)")
    one, other = few.cpu_ms(), many.cpu_ms()
    if not one or not other:
        print("  not measured: no process of the stack was found, or no checkout confirmed")
        return
    for party in one:
        if party in other and one[party] > 0:
            print(f"  {party:<9} {one[party]:7.2f} ms -> {other[party]:7.2f} ms  "
                  f"(x{other[party] / one[party]:.2f})")
    t1, t2 = sum(one.values()), sum(other.values())
    print(f"  {'total':<9} {t1:7.2f} ms -> {t2:7.2f} ms  (x{t2 / t1:.2f}; target "
          f"<= {TARGET_CPU_MS:g} ms)")
    print(f"  A checkout does the same work at both: x above 1 is what {b} concurrent "
          "connections add per checkout (pool and lock waits, more context switches); x "
          "below 1 is costs paid per wake-up or per second (event-loop turns, system calls, "
          "commits, background loops) shared by more checkouts.")
    figure(f"checkout.cpu_ms_total_{a}conn", round(t1, 3), "ms", target=TARGET_CPU_MS)
    figure(f"checkout.cpu_ms_total_{b}conn", round(t2, 3), "ms", ceiling=round(t1, 3),
           target=TARGET_CPU_MS)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    server_arguments(p, concurrency=32, accounts=200)
    p.add_argument("--scale", action="store_true",
                   help=f"run with {SCALE_CONNECTIONS[0]} connections first, then as usual "
                        f"with {SCALE_CONNECTIONS[1]} (a fresh event each, each for "
                        "--duration): the CPU per checkout of both (default off)")
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds on a small event: does it run (bench/smoke.py)")
    args = p.parse_args()
    args.hold_ttl = 300
    if args.smoke:
        args.duration, args.concurrency, args.accounts, args.seats = 2.0, 4, 10, 2_000
    return against_server(args, measure)


if __name__ == "__main__":
    sys.exit(main())
