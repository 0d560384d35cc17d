"""``bench/holds.py --ha`` (issue 24): what synchronous replication costs a hold.

The same hold load twice, each against its own throwaway server for ``--duration``: first
a plain ``onsale dev`` (one PostgreSQL), then ``onsale dev --ha`` (a Patroni cluster of
three nodes in strict synchronous mode, reached through HAProxy, every commit waiting for
the synchronous standby). It prints both rates and latencies and the ratio of the second
to the first (the first is the ceiling), then ``onsale audit`` on each.

On the 2-core machine all three nodes, Patroni, etcd, HAProxy, the server and the load
generator share the two cores, so the ratio is the cost of replication *and* of running
the standbys beside the primary; on separate machines only the round trip to the
standby remains (docs/benchmarks.md#failover).

    .venv/bin/python bench/holds.py --ha --duration 20
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from bench.figures import figure
from bench.stack import BENCH_LIMITS, run_audit, start_dev

WHAT = {"single": "one PostgreSQL",
        "ha": "Patroni, strict synchronous, three nodes behind HAProxy"}


def ha_cost(args: argparse.Namespace) -> int:
    from bench.holds import Load, find_stack, load, pct, setup

    results: dict[str, Load] = {}
    violations = 0
    for mode in ("single", "ha"):
        server = start_dev(seats=1_000 if args.smoke else 50_000, env=BENCH_LIMITS,
                           ha=mode == "ha")
        clean = False
        try:
            args.url, args.admin_token = server.url, server.admin_token
            stack = find_stack(server, "127.0.0.1", server.port, server.data_dir)
            event_id, cookies = asyncio.run(setup(args, "127.0.0.1", server.port))
            result = results[mode] = load(args, "127.0.0.1", server.port, event_id, cookies,
                                          stack, args.concurrency)
            ms = result.ms
            print(f"holds over HTTP, {WHAT[mode]}: "
                  f"{result.rate:,.0f} attempts/s ({result.attempts:,}), p50={pct(ms, 0.5):.1f} "
                  f"p99={pct(ms, 0.99):.1f} mean={statistics.fmean(ms):.1f} ms; "
                  + ", ".join(f"{k}={v:,}" for k, v in result.outcomes.most_common()))
            found = run_audit(server.database_url(), f"holds-{mode}")
            violations += found
            clean = found == 0
        finally:
            server.stop(remove=clean)
    single, ha = results["single"], results["ha"]
    print(f"\nsynchronous replication: {ha.rate:,.0f} / {single.rate:,.0f} holds/s = "
          f"{ha.rate / single.rate:.2f} of one server; p99 {pct(ha.ms, 0.99):.1f} ms against "
          f"{pct(single.ms, 0.99):.1f} ms")
    figure("holds.ha_attempts_per_s", round(ha.rate, 1), "/s", ceiling=round(single.rate, 1))
    figure("holds.ha_p99", round(pct(ha.ms, 0.99), 2), "ms",
           ceiling=round(pct(single.ms, 0.99), 2))
    figure("holds.ha_ratio", round(ha.rate / single.rate, 3), "ratio")
    errors = sum(v for k, v in ha.outcomes.items() if k.startswith("5"))
    figure("holds.ha_server_errors", errors, "count")
    return 1 if violations else 0
