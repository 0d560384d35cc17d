"""General-admission holds on one hot tier, with 1 stripe versus 8 and 20, beside the
same-run pgbench ceiling of the GA hold functions, then the sell-out of a 5,000-place tier.

    .venv/bin/python bench/ga.py --duration 15          # starts its own onsale dev
    .venv/bin/python bench/ga.py --url http://127.0.0.1:8000 --data-dir .onsale
    .venv/bin/python bench/ga.py --smoke                # a few seconds, small

Without ``--url`` it starts ``onsale dev`` in a throwaway data directory with the
per-address throttles raised (as bench/holds.py). For each stripe count it creates an
event whose one GA tier is large enough never to sell out during the run, and fires
hold attempts of 1-6 places at it from ``--concurrency`` connections (every attempt on
the one hot tier: the worst case for a counter). It prints attempts/s, outcomes,
p50/p95/p99, CPU per attempt by process, how core batched the requests
(core/ga_batch.py) and, unless ``--no-pgbench``, the same batch function
(``onsale_ga_hold_batch``, batches of the HTTP run's mean size) under pgbench on the
same database: the ceiling; and beside it the one-request-a-transaction function
(``onsale_ga_hold``, the spread retry included) under pgbench. Target (issue 15): at
least 2,000 attempts/s over HTTP on one hot tier.

Then the sell-out: an event with a 5,000-place tier (8 stripes) and a second, large
tier; 80 % of the attempts go to the 5,000-place tier. It reports how long the tier
took from the first attempt to the first ``sold_out`` with nothing left, and checks that
exactly 5,000 places were held. Last, ``onsale audit``. Figure lines: bench/figures.py.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import (
    TICKETS_PER_ACCOUNT,
    Conn,
    Stack,
    admit,
    against_server,
    cpu_sample,
    cpu_used,
    find_stack,
    pct,
    profiled,
    run_fast,
    server_arguments,
    settle,
    sign_up,
    verdict,
)
from bench.stack import (
    DevServer,
    database_url,
    ops_port,
    refused,
    run_audit,
    run_pgbench,
    stop_all,
)

TARGET_ATTEMPTS = 2000.0  # GA hold attempts/s over HTTP on one hot tier (issue 15)
STRIPES = (1, 8, 20)
SELLOUT_PLACES = 5_000
SELLOUT_SHARE = 0.8
SELLOUT_TTL = 600  # no hold expires during the sell-out: every place is held once
PRE_LOAD_SETTLE_MAX_S = 30.0


async def create_event(c: Conn, args: argparse.Namespace, tiers: list[dict[str, object]],
                       ttl: int) -> int:
    body = json.dumps({"name": f"ga bench {time.strftime('%H:%M:%S')}", "seats": 1,
                       "hold_ttl_seconds": ttl,
                       "max_tickets_per_account": TICKETS_PER_ACCOUNT,
                       "queue_policy": "passthrough", "ga_tiers": tiers}).encode()
    status, _, data = await c.request("POST", "/api/ops/events", body,
                                      {"Authorization": f"Bearer {args.admin_token}"})
    if status != 201:
        raise refused(status, "/api/ops/events", data)
    return int(json.loads(data)["event_id"])


async def setup(args: argparse.Namespace, host: str, port: int,
                tiers: list[dict[str, object]], sessions: list[str] | None, ttl: int
                ) -> tuple[int, list[str], list[str]]:
    """A fresh event with these tiers and the shoppers admitted to it."""
    c = Conn(host, port)
    try:
        event_id = await create_event(c, args, tiers, ttl)
        sessions = sessions or await sign_up(c, args)
        return event_id, sessions, await admit(c, event_id, sessions)
    finally:
        c.close()


async def drive(args: argparse.Namespace, host: str, ports: list[int], event_id: int,
                cookies: list[str], *, hot_share: float = 1.0, stop_when_sold_out: bool = False
                ) -> tuple[list[float], Counter[str], float, float | None]:
    """Attempts until ``--duration`` (or, with ``stop_when_sold_out``, until tier 1
    answers sold_out), the connections spread over the core processes' ``ports``:
    latencies, outcomes (with ``places_1``: the places of tier 1 held by 201 answers),
    elapsed, and when tier 1 sold out."""
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    deadline = time.perf_counter() + args.duration
    path = f"/api/events/{event_id}/holds"
    started = time.perf_counter()
    sold_out: list[float] = []

    async def worker(i: int) -> None:
        rng = random.Random(i)
        c = Conn(host, ports[i % len(ports)])
        try:
            while time.perf_counter() < deadline and not (stop_when_sold_out and sold_out):
                tier = 1 if rng.random() < hot_share else 2
                body = json.dumps({"ga": {"tier_id": tier,
                                          "quantity": rng.choice((1, 2, 2, 3, 4, 6))}})
                headers = {"Cookie": cookies[rng.randrange(len(cookies))],
                           "Idempotency-Key": os.urandom(8).hex()}
                t0 = time.perf_counter()
                status, _, data = await c.request("POST", path, body.encode(), headers)
                latencies.append(time.perf_counter() - t0)
                if status == 201:
                    outcomes["held"] += 1
                    if tier == 1:
                        outcomes["places_1"] += json.loads(data)["ga"]["quantity"]
                    continue
                code = json.loads(data).get("code", "") if data[:1] == b"{" else ""
                outcomes[f"{status} {code}".strip() if status >= 500 else code or str(status)] += 1
                if tier == 1 and code == "sold_out" and not sold_out:
                    sold_out.append(time.perf_counter() - started)
        finally:
            c.close()

    await asyncio.gather(*(worker(i) for i in range(args.concurrency)))
    return latencies, outcomes, time.perf_counter() - started, (sold_out or [None])[0]


PGBENCH_SETUP = """
-- A refusal that raises (the account's ticket limit) counts as an answer, as in
-- bench/holds.py's try_hold.
CREATE OR REPLACE FUNCTION bench.try_ga_hold(p_event bigint, p_account uuid, p_q int,
                                             p_spread boolean)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_status integer;
BEGIN
    SELECT status_code INTO v_status
    FROM onsale_ga_hold(p_event, p_account, md5(random()::text), 'd', 1::smallint, p_q,
                        p_spread);
    RETURN v_status;
EXCEPTION WHEN SQLSTATE 'OS409' THEN RETURN 409;
END $$;
"""

# A status 0 (the hashed stripe had too few) is followed by the spread stage in its own
# transaction, as core/hold_store.py does.
PGBENCH_SCRIPT = """\\set a random(1, {accounts})
\\set q random(1, 6)
SELECT bench.try_ga_hold({event}, (SELECT account_id FROM bench.accounts WHERE n = :a), :q,
                         false) AS status \\gset
\\if :status = 0
SELECT bench.try_ga_hold({event}, (SELECT account_id FROM bench.accounts WHERE n = :a), :q,
                         true);
\\endif
"""


def holds_of(url: str, event_id: int) -> int:
    """GA holds made so far on the event (whatever became of them since)."""
    from onsale.embedded import _pg_bin

    return int(subprocess.run(
        [str(_pg_bin() / "psql"), url, "-At", "-c",
         f"SELECT count(*) FROM holds WHERE event_id = {int(event_id)}"],
        check=True, capture_output=True, text=True).stdout)


def pgbench_ceiling(url: str, args: argparse.Namespace, event_id: int) -> float:
    """GA holds made per second on the event's one tier by pgbench, one request a
    transaction (``onsale_ga_hold``). Holds made, not attempts: once the bench's shoppers
    reach their ticket limit, pgbench's attempts are cheap refusals."""
    before, started = holds_of(url, event_id), time.perf_counter()
    run_pgbench(url, PGBENCH_SETUP, PGBENCH_SCRIPT.replace("{event}", str(event_id)),
                clients=args.pgbench_clients, duration=args.duration)
    return (holds_of(url, event_id) - before) / (time.perf_counter() - started)


# The batch function core sends (core/ga_batch.py), ``{size}`` requests of distinct
# accounts a transaction; the elements it leaves to the single path (rare on a tier this
# large) are not followed up here.
PGBENCH_BATCH_SCRIPT = """\\set a random(1, greatest(1, {accounts} - {size} + 1))
SELECT count(*) FROM onsale_ga_hold_batch(
    {event}, 1::smallint,
    ARRAY(SELECT account_id FROM bench.accounts WHERE n >= :a AND n < :a + {size} ORDER BY n),
    ARRAY(SELECT md5(random()::text) FROM generate_series(1, {size})),
    array_fill('d'::text, ARRAY[{size}]),
    ARRAY(SELECT 1 + floor(random() * 6)::int FROM generate_series(1, {size})));
"""


def pgbench_batch_ceiling(url: str, args: argparse.Namespace, event_id: int,
                          size: int) -> float:
    """GA holds made per second by the batch function under pgbench, batches of ``size``
    (the HTTP run's mean) from ``--pgbench-batch-clients``."""
    before, started = holds_of(url, event_id), time.perf_counter()
    script = PGBENCH_BATCH_SCRIPT.replace("{event}", str(event_id)).replace(
        "{size}", str(size))
    run_pgbench(url, "", script, clients=args.pgbench_batch_clients, duration=args.duration)
    return (holds_of(url, event_id) - before) / (time.perf_counter() - started)


@dataclasses.dataclass
class Measured:
    """One measured window of GA hold attempts, from either generator."""

    attempts: int
    elapsed: float
    outcomes: Counter[str]
    p50: float  # ms
    p95: float
    p99: float
    mean: float
    cpu: dict[str, float]  # CPU seconds by party (those found)

    @property
    def rate(self) -> float:
        return self.attempts / self.elapsed

    def cpu_text(self) -> str:
        return ", ".join(f"{party} {self.cpu[party] / self.attempts * 1e6:,.0f} µs"
                         for party in self.cpu)


def measured(latencies: list[float], outcomes: Counter[str], elapsed: float) -> Measured:
    ms = sorted(v * 1000 for v in latencies)
    return Measured(len(ms), elapsed, outcomes, pct(ms, 0.50), pct(ms, 0.95), pct(ms, 0.99),
                    statistics.fmean(ms), {})


# wrk's Lua: each request a new Idempotency-Key, a random shopper (cookie) and 1-6
# places on tier 1; answers counted by status and problem code; the summary printed as
# "ga-wrk <name> <value>" lines.
WRK_SCRIPT = r"""
local cookies, threads = {}, {}
counts = {}  -- a global: done() reads each thread's with thread:get
local quantities = {1, 2, 2, 3, 4, 6}
local path
setup = function(thread)
  thread:set("seed", #threads + 1)
  table.insert(threads, thread)
end
init = function(args)
  path = args[1]
  for line in io.lines(args[2]) do cookies[#cookies + 1] = line end
  math.randomseed(tonumber(args[3]) + seed * 7919)  -- a seed per run: keys never repeat
end
request = function()
  local key = string.format("%08x%08x%04x", math.random(0, 0x7fffffff),
                            math.random(0, 0x7fffffff), math.random(0, 0xffff))
  return wrk.format("POST", path, {["Cookie"] = cookies[math.random(#cookies)],
                                   ["Idempotency-Key"] = key,
                                   ["Content-Type"] = "application/json"},
                    '{"ga":{"tier_id":1,"quantity":' .. quantities[math.random(#quantities)]
                    .. '}}')
end
response = function(status, headers, body)
  local code = "held"
  if status ~= 201 then
    code = body and body:match('"code":%s*"([%w_]+)"') or tostring(status)
    if status >= 500 then code = status .. " " .. code end
  end
  counts[code] = (counts[code] or 0) + 1
end
done = function(summary, latency, requests)
  io.write(string.format("ga-wrk requests %d\nga-wrk duration_us %d\n", summary.requests,
                         summary.duration))
  io.write(string.format("ga-wrk errors %d\n", summary.errors.connect + summary.errors.read
                         + summary.errors.write + summary.errors.timeout))
  for _, p in ipairs({50, 95, 99}) do
    io.write(string.format("ga-wrk p%d %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("ga-wrk mean %f\n", latency.mean))
  for _, thread in ipairs(threads) do
    for code, n in pairs(thread:get("counts")) do
      io.write(string.format("ga-wrk outcome:%s %d\n", code, n))
    end
  end
end
"""


def drive_wrk(args: argparse.Namespace, host: str, port: int, event_id: int,
              cookies: list[str]) -> Measured:
    """``--duration`` of attempts from wrk (one thread, ``--concurrency`` connections):
    a generator that costs the shared cores a fraction of the Python one's."""
    with tempfile.TemporaryDirectory(prefix="onsale-ga-wrk-") as where:
        script, jar = Path(where) / "ga.lua", Path(where) / "cookies"
        script.write_text(WRK_SCRIPT)
        jar.write_text("\n".join(cookies) + "\n")
        out = subprocess.run(
            ["wrk", "-t", "1", "-c", str(args.concurrency), "-d", f"{int(args.duration)}s",
             "--timeout", "10s", "-s", str(script), f"http://{host}:{port}", "--",
             f"/api/events/{event_id}/holds", str(jar), str(random.randrange(1, 2**31))],
            check=False, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"wrk failed ({out.returncode}): {out.stderr.strip()[-1000:]}")
    values: dict[str, float] = {}
    outcomes: Counter[str] = Counter()
    for line in out.stdout.splitlines():
        if line.startswith("ga-wrk "):
            _, name, value = line.split(" ", 2)
            if name.startswith("outcome:"):
                outcomes[name.removeprefix("outcome:")] += int(value)
            else:
                values[name] = float(value)
    if not values.get("requests"):
        raise SystemExit(f"wrk completed no GA hold attempt:\n{out.stdout[-2000:]}")
    if values.get("errors"):
        outcomes["socket errors"] += int(values["errors"])
    return Measured(int(values["requests"]), values["duration_us"] / 1e6, outcomes,
                    values["p50"] / 1000, values["p95"] / 1000, values["p99"] / 1000,
                    values["mean"] / 1000, {})


def batch_counters(host: str, ports: list[int]) -> tuple[float, float, float]:
    """(GA hold requests sent in batches, batches, requests left to the single path) so
    far, over the core processes' /metrics (core/ga_batch.py)."""
    total = [0.0, 0.0, 0.0]
    names = ("onsale_ga_batch_size_sum", "onsale_ga_batch_size_count",
             "onsale_ga_batch_alone_total")
    for p in ports:
        with urllib.request.urlopen(f"http://{host}:{ops_port(p)}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                name = line.split("{", 1)[0].split(" ", 1)[0]
                if name in names:
                    total[names.index(name)] += float(line.rsplit(" ", 1)[1])
    return total[0], total[1], total[2]


def big_tier(stripes: int) -> dict[str, object]:
    return {"name": f"Floor x{stripes}", "price_minor": 5000, "capacity": 1_000_000,
            "stripes": stripes, "max_per_hold": 6}


def measure(args: argparse.Namespace, server: DevServer | None, data_dir: Path) -> int:
    host, _, port_s = args.url.removeprefix("http://").rstrip("/").partition(":")
    port = int(port_s or 80)
    stack = find_stack(server, host, port, data_dir)
    for note in stack.notes():
        print(f"note: {note}")
    more: list[subprocess.Popen[bytes]] = []
    try:
        if server is not None and args.core_procs > 1:
            more = server.start_cores(args.core_procs - 1)
            stack = dataclasses.replace(stack, more_cores=tuple(p.pid for p in more))
        elif args.core_procs > 1:
            print("note: --core-procs applies to the bench's own onsale dev; with --url, "
                  "the connections go to --url alone")
        ports = [port, *(server.port_of[p.pid] for p in more if server is not None)]
        print(f"core processes: {len(ports)} (onsale dev, which also runs the background "
              f"loops{f', and {len(more)} onsale serve --role core' if more else ''}); "
              f"the connections are spread over them")
        return measure_on(args, stack, host, port, ports, server, data_dir)
    finally:
        stop_all(more)


def measure_on(args: argparse.Namespace, stack: Stack, host: str, port: int,
               ports: list[int], server: DevServer | None, data_dir: Path) -> int:
    url = server.database_url() if server is not None else database_url(data_dir)
    sessions: list[str] | None = None
    results: dict[int, tuple[Measured, float | None]] = {}
    for stripes in args.stripes:
        event_id, sessions, cookies = asyncio.run(
            setup(args, host, port, [big_tier(stripes)], sessions, args.hold_ttl))
        before, _ = settle(stack, cpu_sample(stack), PRE_LOAD_SETTLE_MAX_S)
        batched = batch_counters(host, ports)
        with profiled(stack, f"ga-{stripes}"):  # ONSALE_BENCH_PROFILE=<dir>: py-spy
            if args.generator == "wrk":
                result = drive_wrk(args, host, port, event_id, cookies)
            else:
                latencies, outcomes, elapsed, _ = run_fast(drive(args, host, ports, event_id,
                                                                 cookies))
                if not latencies:
                    raise SystemExit("no GA hold attempt completed")
                outcomes.pop("places_1", None)
                result = measured(latencies, outcomes, elapsed)
        result.cpu = cpu_used(stack, before, cpu_sample(stack))
        sent, batches, alone = (b - a for a, b in zip(batched, batch_counters(host, ports),
                                                      strict=True))
        size = max(1, round(sent / batches)) if batches else 1
        ceiling = pgbench_batch_ceiling(url, args, event_id, size) if args.pgbench else None
        single = pgbench_ceiling(url, args, event_id) if args.pgbench else None
        results[stripes] = (result, ceiling)
        print(f"GA holds over HTTP: event {event_id}, one tier in {stripes} stripe(s), "
              f"{args.concurrency} connections from {args.generator}, {result.elapsed:.1f}s")
        print(f"  attempts/s      {result.rate:,.0f}  ({result.attempts:,} attempts)")
        print("  outcomes        " + ", ".join(f"{k}={v:,}"
                                              for k, v in result.outcomes.most_common()))
        print(f"  latency ms      p50={result.p50:.1f} p95={result.p95:.1f} "
              f"p99={result.p99:.1f} mean={result.mean:.1f}")
        if result.cpu:
            print(f"  CPU per attempt {result.cpu_text()}")
        print(f"  batches         {batches:,.0f} of {sent / batches if batches else 0:.1f} "
              f"requests on average (ONSALE_GA_BATCH_MAX, core/ga_batch.py); {alone:,.0f} "
              "left to the single path")
        if ceiling is not None and single is not None:
            print(f"  pgbench         {ceiling:,.0f} holds made/s in batches of {size} "
                  f"({args.pgbench_batch_clients} clients, the batch function alone: the "
                  f"ceiling)  HTTP / pgbench {result.rate / ceiling:.2f}")
            print(f"                  {single:,.0f} holds made/s one a transaction "
                  f"({args.pgbench_clients} clients, onsale_ga_hold alone)\n")
        figure(f"ga.attempts_per_s_{stripes}_stripes", round(result.rate, 1), "/s",
               ceiling=round(ceiling, 1) if ceiling else None, target=TARGET_ATTEMPTS)
        figure(f"ga.p99_{stripes}_stripes", round(result.p99, 2), "ms")
        if ceiling is not None and single is not None:
            figure(f"ga.pgbench_holds_per_s_{stripes}_stripes", round(ceiling, 1), "/s")
            figure(f"ga.pgbench_single_holds_per_s_{stripes}_stripes", round(single, 1),
                   "/s")
        figure(f"ga.server_errors_{stripes}_stripes",
               sum(v for k, v in result.outcomes.items() if k[:1] in "5s"), "count")

    # The sell-out: 80 % of the demand on a 5,000-place tier.
    places = args.sellout_places
    event_id, sessions, cookies = asyncio.run(setup(args, host, port, [
        {"name": "Floor", "price_minor": 5000, "capacity": places, "stripes": 8,
         "max_per_hold": 6},
        {"name": "Lawn", "price_minor": 3000, "capacity": 1_000_000, "stripes": 8,
         "max_per_hold": 6}], sessions, SELLOUT_TTL))
    sellout = argparse.Namespace(**{**vars(args), "duration": args.sellout_max_s})
    latencies, outcomes, elapsed, sold_out_at = run_fast(drive(
        sellout, host, ports, event_id, cookies, hot_share=SELLOUT_SHARE,
        stop_when_sold_out=True))
    held = outcomes.pop("places_1", 0)  # no hold expires meanwhile (SELLOUT_TTL)
    print(f"sell-out: {places:,} places, {SELLOUT_SHARE:.0%} of {args.concurrency} "
          f"connections' attempts on them")
    if sold_out_at is None:
        print(f"  not sold out within {args.sellout_max_s:.0f} s ({held:,} held)")
    else:
        print(f"  sold out after {sold_out_at:.2f} s ({places / sold_out_at:,.0f} places/s); "
              f"held {held:,} of {places:,}")
    print("  outcomes        " + ", ".join(f"{k}={v:,}" for k, v in outcomes.most_common()))
    figure("ga.sellout_seconds", round(sold_out_at, 3) if sold_out_at else float("nan"), "s")
    figure("ga.sellout_places_held", held, "count", target=places)

    best = max(results.values(), key=lambda r: r[0].rate)[0]
    print(f"\nverdict (issue 15: >= {TARGET_ATTEMPTS:,.0f} GA hold attempts/s over HTTP on one "
          "hot tier)")
    for stripes, (result, ceiling) in results.items():
        ratio = f", {result.rate / ceiling:.2f} of pgbench" if ceiling else ""
        print(verdict(f"{stripes} stripe(s)", f"{result.rate:,.0f}/s",
                      f">= {TARGET_ATTEMPTS:,.0f}", result.rate >= TARGET_ATTEMPTS) + ratio)
    print(verdict("sell-out exact", f"{held:,}", f"= {places:,}",
                  held == places if sold_out_at else None))
    figure("ga.best_attempts_per_s", round(best.rate, 1), "/s", target=TARGET_ATTEMPTS)
    violations = run_audit(url, "ga")
    print(f"  oversells/invariant violations: {violations}")
    return 1 if violations or (sold_out_at is not None and held != places) else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    server_arguments(p, concurrency=64, accounts=300)
    p.add_argument("--hold-ttl", type=int, default=2,
                   help="of the throughput events: places come back while shoppers stay "
                        "under the ticket limit")
    p.add_argument("--stripes", type=int, nargs="+", default=list(STRIPES))
    p.add_argument("--pgbench", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--pgbench-clients", type=int, default=16,
                   help="of the one-request-a-transaction pgbench run")
    p.add_argument("--pgbench-batch-clients", type=int, default=4,
                   help="of the batch function's pgbench run (the ceiling)")
    p.add_argument("--generator", choices=("wrk", "python"), default="wrk",
                   help="of the throughput runs: wrk (C, with a Lua script; needs apt-get "
                        "install wrk) or this file's Python client; the sell-out always uses "
                        "the Python one, which stops at the first sold_out")
    p.add_argument("--core-procs", type=int, default=1,
                   help="core processes serving the holds: the bench's onsale dev and "
                        "N-1 onsale serve --role core beside it (docs/deployment.md sizes "
                        "them one per core; on 2 cores a second one adds nothing, "
                        "docs/benchmarks.md)")
    p.add_argument("--sellout-places", type=int, default=SELLOUT_PLACES)
    p.add_argument("--sellout-max-s", type=float, default=60.0)
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds per run, a small sell-out (bench/smoke.py)")
    args = p.parse_args()
    if args.generator == "wrk" and shutil.which("wrk") is None:
        raise SystemExit("bench/ga.py's default generator is wrk, which is not installed: "
                         "apt-get install wrk (or --generator python)")
    if args.generator == "wrk" and args.core_procs > 1:
        raise SystemExit("--core-procs > 1 spreads the connections over several ports: "
                         "use --generator python")
    if args.smoke:
        args.duration, args.concurrency, args.accounts = 2.0, 8, 20
        args.stripes, args.sellout_places, args.sellout_max_s = [1, 8], 300, 20.0
    return against_server(args, measure)


if __name__ == "__main__":
    sys.exit(main())
