"""Measure the hot event on a Valkey Cluster: one event's waiting room is one slot, so it
lives on one primary. How many joins and admissions a second can that primary take?

    .venv/bin/python bench/cluster.py --duration 10 --concurrency 64
    .venv/bin/python bench/cluster.py --smoke           # a couple of seconds (bench/smoke.py)

Self-contained: starts a Valkey Cluster of three primaries (``onsale.embedded``, as
``onsale dev --valkey-cluster``) and, for the reference, one plain Valkey, in a temporary
directory; no PostgreSQL and no onsale process. Against each, through onsale's own
request-path client (``kernel.dependency.request_redis``: the cluster client for the
cluster) and the waiting room's own scripts (``edge.queue_store.QueueStore``: what the
routes and the admitter send), for one event:

  1. **joins**: ``--concurrency`` callers each send one join at a time (one script per
     join, as many edge processes do) for ``--duration`` seconds, a new account each;
  2. **admissions**: one admitter (one lease, as in production) admits the queue ``n``
     at a time (``--admit-batch``) until it is empty, then every admitted visitor
     claims its session (the claim script a poll at the front runs) from
     ``--concurrency`` callers: an admission costs its share of an admit and a claim.

The server's own CPU time is read from /proc for every primary meanwhile. A primary
runs the scripts on one thread, so its ceiling is what it did per CPU-second:
``joins / CPU seconds`` of the event's primary (what it would take at 100 % of its
thread, network reads and writes included). The load generator, on the same 2 cores,
keeps the primary well below that: the rate reached is printed, the ceiling is the
figure. The other two primaries' share of the CPU shows the event on one primary only.

Figure lines (bench/figures.py): ``cluster.joins_per_primary_s`` and
``cluster.admissions_per_primary_s`` beside the same measured on the plain Valkey in the
same run (``ceiling``: one server not in cluster mode, which checks no slot);
``cluster.other_primaries_cpu_share``; the rates reached.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import figure
from bench.holds import run_fast
from bench.stack import tidy

GRACE_MS = 3_600_000  # nobody counts as gone during the run
CAP = 10**9  # no cap: the admit script's own cost, not the controller's


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Servers:
    """The servers behind one URL: the event's own (``hot``) and the rest."""

    url: str
    hot: int  # pid of the server that holds the event's slot
    others: list[int]

    def cpu(self) -> tuple[float, float]:
        return cpu_seconds(self.hot), sum(cpu_seconds(p) for p in self.others)


@dataclass
class Run:
    """One measured phase: what was done, in how long, for how much server CPU."""

    done: int
    elapsed: float
    hot_cpu: float
    other_cpu: float

    @property
    def per_s(self) -> float:
        return self.done / self.elapsed

    @property
    def per_cpu_s(self) -> float:
        """Per CPU-second of the event's server: its ceiling on one thread."""
        return self.done / max(self.hot_cpu, 1e-9)

    def line(self, what: str) -> str:
        return (f"{self.per_s:,.0f} {what}/s reached ({self.done:,} in {self.elapsed:.1f} s), "
                f"the event's primary at {self.hot_cpu / self.elapsed:.0%} of a core: "
                f"{self.per_cpu_s:,.0f} per CPU-second; other primaries "
                f"{self.other_cpu / self.elapsed:.1%} of a core")


async def measured(servers: Servers, work: Callable[[], Awaitable[int]]) -> Run:
    hot0, other0 = servers.cpu()
    started = time.perf_counter()
    done = await work()
    elapsed = time.perf_counter() - started
    hot1, other1 = servers.cpu()
    return Run(done, elapsed, hot1 - hot0, other1 - other0)


async def bench_one(servers: Servers, event_id: int, args: argparse.Namespace
                    ) -> tuple[Run, Run, Run]:
    """(joins, admits, claims) on one deployment."""
    from onsale.edge.queue_store import QueueStore
    from onsale.kernel.dependency import request_redis

    client = request_redis(servers.url, timeout=5.0, pool_wait=5.0,
                           max_connections=args.concurrency + 4, name="bench")
    store = QueueStore(client)
    joined: list[uuid.UUID] = []
    try:
        await store.join(event_id, uuid.uuid4(), "fifo", now_ms())  # loads the script
        deadline = time.perf_counter() + args.duration

        async def joins() -> int:
            async def caller() -> None:
                while time.perf_counter() < deadline:
                    account = uuid.uuid4()
                    await store.join(event_id, account, "fifo", now_ms())
                    joined.append(account)
            await asyncio.gather(*(caller() for _ in range(args.concurrency)))
            return len(joined)

        join_run = await measured(servers, joins)
        fence = await store.acquire_lease(event_id, "bench", 600_000)
        admitted: list[str] = []

        async def admits() -> int:
            while len(admitted) < len(joined):
                out = await store.admit(event_id, fence, args.admit_batch, now_ms(),
                                        GRACE_MS, CAP)
                if not out.accounts and out.abandoned == 0:
                    break
                admitted.extend(out.accounts)
            return len(admitted)

        admit_run = await measured(servers, admits)
        if len(admitted) < len(joined) - 1:  # the first join of the warm-up is admitted too
            raise SystemExit(f"admitted {len(admitted):,} of {len(joined):,} joined")
        todo: Iterator[str] = iter(admitted)

        async def claims() -> int:
            count = 0

            async def caller() -> None:
                nonlocal count
                for account in todo:
                    claimed = await store.claim(event_id, uuid.UUID(account), "d", now_ms(),
                                                GRACE_MS)
                    if claimed.kind != "new":
                        raise SystemExit(f"claim answered {claimed.kind!r}")
                    count += 1
            await asyncio.gather(*(caller() for _ in range(args.concurrency)))
            return count

        claim_run = await measured(servers, claims)
        return join_run, admit_run, claim_run
    finally:
        await client.aclose()


def now_ms() -> int:
    return int(time.time() * 1000)


def admissions_per_cpu_s(admit: Run, claim: Run) -> float:
    """An admission costs the event's primary its share of an admit and one claim."""
    per_admission = admit.hot_cpu / max(admit.done, 1) + claim.hot_cpu / max(claim.done, 1)
    return 1 / max(per_admission, 1e-12)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=10.0, help="seconds of joins")
    p.add_argument("--concurrency", type=int, default=64, help="callers at once")
    p.add_argument("--admit-batch", type=int, default=100,
                   help="visitors per admit script (the admitter's n per tick)")
    p.add_argument("--event", type=int, default=42, help="the hot event's id")
    p.add_argument("--smoke", action="store_true",
                   help="a couple of seconds: does it run (bench/smoke.py)")
    args = p.parse_args()
    if args.smoke:
        args.duration, args.concurrency = 1.0, 16

    from redis.crc import key_slot

    from onsale.embedded import start_valkey, start_valkey_cluster
    from onsale.kernel.valkey import event_prefix

    base = Path(tempfile.mkdtemp(prefix="onsale-bench-cluster-"))
    cluster = start_valkey_cluster(base / "cluster", persist=False)
    single = start_valkey(base / "single", persist=False)
    done = False
    try:
        slot = key_slot(event_prefix(args.event).encode())
        share = 16384 // len(cluster.nodes)
        hot = cluster.nodes[min(slot // share, len(cluster.nodes) - 1)]
        on_cluster = Servers(cluster.url, hot.process.pid,  # type: ignore[union-attr]
                             [n.process.pid for n in cluster.nodes  # type: ignore[union-attr]
                              if n is not hot])
        alone = Servers(single.url, single.process.pid, [])  # type: ignore[union-attr]
        print(f"cluster bench: event {args.event} (slot {slot}, primary 127.0.0.1:{hot.port} "
              f"of {len(cluster.nodes)}); {args.concurrency} callers, {args.duration:.0f} s "
              f"of joins, admit batches of {args.admit_batch}")
        results = {}
        for name, servers in (("cluster", on_cluster), ("single", alone)):
            joins, admits, claims = run_fast(bench_one(servers, args.event, args))
            results[name] = (joins, admits, claims)
            print(f"  {name:<8} joins   {joins.line('joins')}")
            print(f"  {name:<8} admits  {admits.line('admissions')}")
            print(f"  {name:<8} claims  {claims.line('claims')}")
            print(f"  {name:<8} an admission (admit share + claim): "
                  f"{admissions_per_cpu_s(admits, claims):,.0f} per CPU-second of the primary")
        import redis

        keys = {}
        for node in cluster.nodes:
            with redis.Redis(host="127.0.0.1", port=node.port) as r:
                keys[node.port] = int(r.dbsize())
        if keys[hot.port] == 0 or sum(keys.values()) != keys[hot.port]:
            raise SystemExit(f"the event's keys are not on one primary: {keys}")
        print(f"  keys per primary  {keys}: all on the event's")
        joins, admits, claims = results["cluster"]
        s_joins, s_admits, s_claims = results["single"]
        others = sum(r.other_cpu for r in (joins, admits, claims))
        total = others + sum(r.hot_cpu for r in (joins, admits, claims))
        figure("cluster.joins_per_primary_s", round(joins.per_cpu_s, 1), "/s",
               ceiling=round(s_joins.per_cpu_s, 1))
        figure("cluster.admissions_per_primary_s",
               round(admissions_per_cpu_s(admits, claims), 1), "/s",
               ceiling=round(admissions_per_cpu_s(s_admits, s_claims), 1))
        figure("cluster.admits_per_primary_s", round(admits.per_cpu_s, 1), "/s",
               ceiling=round(s_admits.per_cpu_s, 1))
        figure("cluster.claims_per_primary_s", round(claims.per_cpu_s, 1), "/s",
               ceiling=round(s_claims.per_cpu_s, 1))
        figure("cluster.joins_per_s", round(joins.per_s, 1), "/s",
               ceiling=round(s_joins.per_s, 1))
        figure("cluster.other_primaries_cpu_share", round(others / max(total, 1e-9), 4),
               "share")
        done = True
        return 0
    finally:
        cluster.stop()
        single.stop()
        tidy(base, done)


if __name__ == "__main__":
    sys.exit(main())
