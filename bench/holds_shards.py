"""``bench/holds.py --shards N --events E`` (issue 23, docs/scaling.md#routing): hold
attempts on events placed on shards, beside a single database measured in the same run.

    .venv/bin/python bench/holds.py --events 2 --shards 2 --duration 15
    .venv/bin/python bench/holds.py --events 2 --shards 2 --smoke

Windows of ``--duration`` at ``--concurrency`` connections each, on fresh events made
as bench/holds.py makes its one, on two deployments running side by side:

1. (N > 1) **single database**: a plain ``onsale dev``, one event: the figure a
   deployment without shards makes on this machine now, the ceiling of the next;
2. (N > 1) **one event on shard 2** of ``onsale dev --shards N``: its rate and CPU per
   attempt against window 1's (issue 23's target: >= 0.90 of its rate). Windows 1 and
   2 are taken in halves, in the order 1 2 2 1, so that a drift of the shared
   machine's load between them falls on both alike, after a second of load on each
   that is not measured (the shard's pool and backends warm, as in a running sale);
3. (E > 1, or N = 1) **E events at once**, event i on shard 1 + (i % N), the
   connections and the shoppers split evenly between them: the CPU per attempt of each
   shard's PostgreSQL server (its postmaster and every child, walsenders included,
   from /proc, over the window / the attempts of the events on it).

Every window also counts the **directory's reads**: the change over the window of
``pg_stat_user_tables`` scans (sequential + index) and row writes on the tables only the
directory holds (``DIRECTORY_TABLES``), beside what the placement's background reloads
alone make. A hold routes by the placement cached in each process, so near zero per
attempt is the target. PostgreSQL flushes a backend's table counters at most once a
second, and an idle one's within 10 s, so a read near either edge of the window may
land on the other side of it.

Between two windows on one server the bench waits out the holds of the first
(``--hold-ttl`` and the sweeper) and for the stack to be quiet. Each deployment ends
with ``onsale audit`` over all its shards. No pgbench here: the ceiling is window 1.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from bench.figures import figure
from bench.holds import (
    PRE_LOAD_SETTLE_MAX_S,
    Conn,
    Load,
    Stack,
    _cmdline,
    _proc_stat,
    admit,
    cpu_sample,
    cpu_used,
    create_event,
    drive,
    pct,
    profiled,
    run_fast,
    settle,
    sign_up,
    verdict,
)
from bench.stack import BENCH_LIMITS, DevServer, run_audit, start_dev
from onsale.embedded import _pg_bin
from onsale.kernel.shards import _REFRESH_SECONDS
from onsale.seatmap.config import SeatmapSettings

TARGET_ONE_EVENT_RATIO = 0.90  # issue 23: one event on 2 shards within 10 % of one database
ONE_EVENT_SHARD = 2  # window 2's event: on a shard other than the directory's own
# The tables only the directory holds; a hold reads none of them (the cached placement).
DIRECTORY_TABLES = ("event_placement", "shards", "accounts")
# Each placement reload scans ``shards`` and ``event_placement`` once (load_placement):
# core's ShardSet every _REFRESH_SECONDS, the change capture every shard_reload_s.
_CAPTURE_RELOAD_S = next(f.default for f in dataclasses.fields(SeatmapSettings)
                         if f.name == "shard_reload_s")
RELOAD_SCANS_PER_S = 2 * (1 / _REFRESH_SECONDS + 1 / float(_CAPTURE_RELOAD_S))
# A backend that went idle flushes its table counters within PostgreSQL's
# PGSTAT_IDLE_INTERVAL (10 s): the setup's sign-ups are counted before the first window.
STATS_FLUSH_S = 11.0
WARM_UP_S = 1.0  # load on each deployment's event before windows 1 and 2, not measured


@dataclass(frozen=True)
class ShardServer:
    """One shard's PostgreSQL server, found by its data directory."""

    shard: int
    data_dir: Path
    postmaster: int | None


@dataclass(frozen=True)
class Driven:
    """One event of a window: where it is, and its shoppers' Cookie headers."""

    event_id: int
    shard: int
    cookies: list[str]


@dataclass
class Window:
    """One measured window: each event's load, and what the stack spent."""

    what: str
    events: list[tuple[Driven, Load]]
    elapsed: float
    cpu: dict[str, float]  # CPU seconds by party of the stack (bench/holds.py PARTIES)
    servers: dict[int, float]  # shard -> CPU seconds of its server's process tree
    directory: dict[str, tuple[int, int]]  # table -> (scans, rows written) over the window

    @property
    def attempts(self) -> int:
        return sum(load.attempts for _, load in self.events)

    @property
    def rate(self) -> float:
        return self.attempts / self.elapsed

    def attempts_on(self, shard: int) -> int:
        return sum(load.attempts for d, load in self.events if d.shard == shard)

    def core_us(self) -> float | None:
        return self.cpu["core"] * 1e6 / self.attempts if "core" in self.cpu else None

    def server_us(self, shard: int) -> float | None:
        """CPU µs of the shard's server per attempt of its events (of all, with none)."""
        if shard not in self.servers:
            return None
        return self.servers[shard] * 1e6 / (self.attempts_on(shard) or self.attempts)

    def servers_us(self) -> float | None:
        """CPU µs of every PostgreSQL server of the deployment per attempt."""
        return sum(self.servers.values()) * 1e6 / self.attempts if self.servers else None

    def directory_reads(self) -> int:
        return sum(scans for scans, _ in self.directory.values())

    def directory_writes(self) -> int:
        return sum(rows for _, rows in self.directory.values())

    def outcomes(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for _, load in self.events:
            out.update(load.outcomes)
        return out


def psql(url: str, sql: str) -> list[list[str]]:
    out = subprocess.run([str(_pg_bin() / "psql"), url, "-At", "-F", "\t", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def postmaster_of(data_dir: Path) -> int | None:
    try:
        pid = int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    return pid if pid > 0 and "postgres" in _cmdline(pid) else None


def shard_servers(server: DevServer) -> list[ShardServer]:
    """Each listed shard's server: its DSN's socket directory is its data directory
    (onsale/embedded.py ``url_for``); shard 1's DSN is '' (the directory's own, ``pg/``)."""
    rows = psql(server.database_url(), "SELECT shard_id, dsn FROM shards ORDER BY shard_id")
    out = []
    for shard_id, dsn in rows or [["1", ""]]:
        where = (Path(parse_qs(urlsplit(dsn).query)["host"][0]) if dsn
                 else server.data_dir / "pg")
        out.append(ShardServer(int(shard_id), where, postmaster_of(where)))
    return out


ServerSample = dict[tuple[int, int, int], float]  # (shard, pid, start time) -> CPU seconds


def server_sample(servers: list[ShardServer]) -> ServerSample:
    """The CPU time so far of each server's postmaster and its children."""
    shard_of = {s.postmaster: s.shard for s in servers if s.postmaster is not None}
    out: ServerSample = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _proc_stat(entry.name)
        if stat is None:
            continue
        pid, (ppid, used, started) = int(entry.name), stat
        shard = shard_of.get(pid) or shard_of.get(ppid)
        if shard is not None:
            out[(shard, pid, started)] = used
    return out


def server_used(servers: list[ShardServer], before: ServerSample,
                after: ServerSample) -> dict[int, float]:
    used = {s.shard: 0.0 for s in servers if s.postmaster is not None}
    for key, seconds in after.items():
        used[key[0]] += max(0.0, seconds - before.get(key, 0.0))
    return used


def directory_counts(url: str) -> dict[str, tuple[int, int]]:
    """Per directory table: (sequential + index scans, rows inserted + updated + deleted)
    so far, as PostgreSQL's cumulative statistics have them."""
    names = ", ".join(f"'{t}'" for t in DIRECTORY_TABLES)
    rows = psql(url, "SELECT relname, seq_scan + coalesce(idx_scan, 0), "
                     "n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                     f"WHERE schemaname = 'public' AND relname IN ({names})")
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


def split(total: int, parts: int) -> list[int]:
    """``total`` as evenly as can be over ``parts`` (each at least 1)."""
    return [max(1, total // parts + (i < total % parts)) for i in range(parts)]


async def prepare(args: argparse.Namespace, port: int, placed: list[int | None],
                  accounts: list[int]) -> list[tuple[int, list[str]]]:
    """A fresh event per entry of ``placed`` (on that shard; None: where the server
    places it), each with its ``accounts`` shoppers of its own admitted to it: every
    event of a deployment's windows, made before the first window (so one window's
    seats never pass through the change capture during another)."""
    c = Conn("127.0.0.1", port)
    try:
        ids = [await create_event(c, args, shard) for shard in placed]
        out = []
        for event_id, n in zip(ids, accounts, strict=True):
            shoppers = argparse.Namespace(**{**vars(args), "accounts": n})
            out.append((event_id, await admit(c, event_id, await sign_up(c, shoppers))))
        return out
    finally:
        c.close()


@dataclass
class Deployment:
    """One running ``onsale dev`` (``--shards``), its servers and its prepared events."""

    label: str
    server: DevServer
    args: argparse.Namespace  # the bench's, with this server's admin token
    stack: Stack
    servers: list[ShardServer]
    events: list[tuple[int, list[str]]] = dataclasses.field(default_factory=list)
    counted_from: float = 0.0  # time.monotonic(): its directory counters are read from then

    def take(self, count: int) -> list[tuple[int, list[str]]]:
        mine, self.events = self.events[:count], self.events[count:]
        return mine


def open_deployment(args: argparse.Namespace, shards: int, label: str,
                    placed: list[int | None], accounts: list[int]) -> Deployment:
    """``onsale dev`` (``--shards``) with an event per entry of ``placed`` made."""
    server = start_dev(seats=1_000 if args.smoke else 50_000, env=BENCH_LIMITS, shards=shards)
    try:
        servers = shard_servers(server)
        missing = [s.shard for s in servers if s.postmaster is None]
        if missing:
            print(f"note: no running postmaster found for shard(s) {missing}: no CPU for them")
        found = [s.postmaster for s in servers if s.postmaster is not None]
        stack = Stack(server.process.pid, found[0] if found else None,
                      more_postmasters=tuple(found[1:]))
        dep = Deployment(label, server,
                         argparse.Namespace(**{**vars(args), "admin_token": server.admin_token}),
                         stack, servers)
        dep.events = asyncio.run(prepare(dep.args, server.port, placed, accounts))
        dep.counted_from = time.monotonic() + STATS_FLUSH_S
        return dep
    except BaseException:
        server.stop()
        raise


def window(dep: Deployment, what: str, driven: list[Driven], duration: float) -> Window:
    """Drive every event of ``driven`` at once for ``duration``, ``--concurrency``
    connections split evenly between them."""
    args = argparse.Namespace(**{**vars(dep.args), "duration": duration})
    host, port = "127.0.0.1", dep.server.port
    url, stack, servers = dep.server.database_url(), dep.stack, dep.servers
    settle(stack, cpu_sample(stack), PRE_LOAD_SETTLE_MAX_S)
    time.sleep(max(0.0, dep.counted_from - time.monotonic()))
    counts = directory_counts(url)
    shares = split(args.concurrency, len(driven))

    async def at_once() -> list[tuple[list[float], Counter[str], float]]:
        return await asyncio.gather(*(
            drive(argparse.Namespace(**{**vars(args), "concurrency": n}), host, port,
                  d.event_id, d.cookies)
            for d, n in zip(driven, shares, strict=True)))

    before, tree = cpu_sample(stack), server_sample(servers)
    started = time.perf_counter()
    name = f"holds-shards{len(servers)}-{len(driven)}ev-{time.strftime('%H%M%S')}"
    with profiled(stack, name):  # ONSALE_BENCH_PROFILE=<directory>: py-spy over the window
        results = run_fast(at_once())
    elapsed = time.perf_counter() - started
    cpu = cpu_used(stack, before, cpu_sample(stack))
    used = server_used(servers, tree, server_sample(servers))
    after = directory_counts(url)
    directory = {t: (after.get(t, (0, 0))[0] - counts.get(t, (0, 0))[0],
                     after.get(t, (0, 0))[1] - counts.get(t, (0, 0))[1])
                 for t in DIRECTORY_TABLES}
    loads = []
    for d, n, (latencies, outcomes, took) in zip(driven, shares, results, strict=True):
        if not latencies:
            raise SystemExit(f"no hold attempt completed on event {d.event_id}")
        loads.append((d, Load(n, sorted(v * 1000 for v in latencies), outcomes, took, {})))
    return Window(what, loads, elapsed, cpu, used, directory)


def merged(what: str, parts: list[Window]) -> Window:
    """Slices of one deployment's window on the same events, as one window."""
    loads = []
    for i, (d, first) in enumerate(parts[0].events):
        same = [w.events[i][1] for w in parts]
        loads.append((d, Load(first.connections, sorted(v for x in same for v in x.ms),
                              sum((x.outcomes for x in same), Counter()),
                              sum(x.elapsed for x in same), {})))

    cpu: dict[str, float] = {}
    servers: dict[int, float] = {}
    directory: dict[str, tuple[int, int]] = {}
    for w in parts:
        for party, seconds in w.cpu.items():
            cpu[party] = cpu.get(party, 0.0) + seconds
        for shard, seconds in w.servers.items():
            servers[shard] = servers.get(shard, 0.0) + seconds
        for table, (scans, rows) in w.directory.items():
            was = directory.get(table, (0, 0))
            directory[table] = (was[0] + scans, was[1] + rows)
    return Window(what, loads, sum(w.elapsed for w in parts), cpu, servers, directory)


def report(args: argparse.Namespace, w: Window) -> None:
    print(f"\n{w.what}: {w.elapsed:.1f}s, {args.hot_share:.0%} of requests on "
          f"{args.hot_seats} hot seats")
    for d, load in w.events:
        ms = load.ms
        held = load.outcomes["held"] / load.attempts
        print(f"  event {d.event_id} on shard {d.shard}  {load.rate:,.0f} attempts/s "
              f"({load.attempts:,}, {load.connections} connections), held {held:.0%}, "
              f"p50={pct(ms, 0.50):.1f} p99={pct(ms, 0.99):.1f} ms")
    if len(w.events) > 1:
        print(f"  together        {w.rate:,.0f} attempts/s ({w.attempts:,} attempts)")
    print("  outcomes        " + ", ".join(f"{k}={v:,}" for k, v in w.outcomes().most_common()))
    parties = [f"{p} {s * 1e6 / w.attempts:,.0f} µs" for p, s in w.cpu.items()
               if p not in ("postgres", "walsender")]
    print("  CPU per attempt " + (", ".join(parties) or "not measured")
          + " (each process's CPU time over the window / attempts)")
    for shard in sorted(w.servers):
        mine = w.attempts_on(shard)
        role = " (the directory too)" if shard == 1 else ""
        per = (f"per attempt of its events ({mine:,})" if mine else
               f"per attempt of all ({w.attempts:,}): none of the load's events is on it")
        print(f"  shard {shard} server{role:<20} {w.server_us(shard):7,.0f} µs {per}")
    if len(w.servers) > 1:
        print(f"  all servers                        {w.servers_us():7,.0f} µs per attempt")
    reads, expected = w.directory_reads(), RELOAD_SCANS_PER_S * w.elapsed
    print(f"  directory reads {reads} scans of {', '.join(DIRECTORY_TABLES)}, "
          f"{w.directory_writes()} rows written: {reads / w.attempts:.5f} per attempt; "
          f"the placement reloads alone make about {expected:.0f} (core every "
          f"{_REFRESH_SECONDS:.0f} s, the change capture every {_CAPTURE_RELOAD_S} s, 2 scans "
          "each; none notified: the events were placed before the window)")
    detail = ", ".join(f"{t} {s}/{r}" for t, (s, r) in w.directory.items())
    print(f"                  by table (scans/rows written): {detail}")


def close(dep: Deployment, bench: str) -> int:
    """``onsale audit`` over all of the deployment's shards, then stop it (its data
    directory removed when clean): the violations."""
    violations = 1
    try:
        print(f"\n{dep.label}: onsale audit")
        violations = run_audit(dep.server.database_url(), bench)
        print(f"  oversells/invariant violations: {violations}")
        return violations
    finally:
        dep.server.stop(remove=violations == 0)


def sharded(args: argparse.Namespace) -> int:
    if args.url is not None:
        raise SystemExit("--shards/--events start their own servers: drop --url")
    if args.scale:
        raise SystemExit("--scale measures one event on one database: drop --shards/--events")
    if args.events < 1:
        raise SystemExit("--events: at least 1")
    n, e = args.shards, args.events
    every = [1 + i % n for i in range(e)] if e > 1 or n == 1 else []
    print(f"holds on shards: {e} event(s) on {n} shard(s), {args.concurrency} connections "
          f"and {args.accounts} shoppers per window, each window {args.duration:g}s")
    deps: list[Deployment] = []
    single = None
    windows: list[Window] = []
    ran = False
    violations = 0

    def run(dep: Deployment, what: str, driven: list[Driven], duration: float) -> Window:
        nonlocal ran
        if ran:  # the last window's holds expire and are swept first
            time.sleep(args.hold_ttl + 2)
        ran = True
        return window(dep, what, driven, duration)

    try:
        if n > 1:
            deps.append(open_deployment(args, 1, "plain onsale dev", [None], [args.accounts]))
        placed: list[int | None] = [ONE_EVENT_SHARD] if n > 1 else []
        placed += every
        per_event = [args.accounts] * (n > 1) + [max(1, args.accounts // e)] * len(every)
        deps.append(open_deployment(args, n, f"onsale dev --shards {n}", placed, per_event))
        multi = deps[-1]
        if n > 1:
            # Both deployments run side by side; their windows alternate A B B A in halves
            # of --duration, so a drift of the shared machine's load falls on both alike.
            alone = [Driven(i, 1, c) for i, c in deps[0].take(1)]
            one = [Driven(i, ONE_EVENT_SHARD, c) for i, c in multi.take(1)]
            labels = {"A": "single database (plain onsale dev): one event",
                      "B": f"one event on shard {ONE_EVENT_SHARD} of {n} (onsale dev "
                           f"--shards {n})"}
            for dep, driven in ((deps[0], alone), (multi, one)):  # pools and backends warm,
                run(dep, "warm-up", driven, WARM_UP_S)  # not counted: as in a running sale
            slices: dict[str, list[Window]] = {"A": [], "B": []}
            print(f"\nA: {labels['A']}; B: {labels['B']}; in the order A B B A, each "
                  f"{args.duration / 2:g}s")
            for k, tag in enumerate("ABBA", 1):
                dep, driven = (deps[0], alone) if tag == "A" else (multi, one)
                w = run(dep, labels[tag], driven, args.duration / 2)
                slices[tag].append(w)
                print(f"  {k}. {tag}  {w.rate:7,.0f} attempts/s, core "
                      f"{w.core_us() or float('nan'):,.0f} µs, PostgreSQL "
                      f"{w.servers_us() or float('nan'):,.0f} µs per attempt")
            single = merged(labels["A"], slices["A"])
            windows.append(merged(labels["B"], slices["B"]))
            report(args, single)
            report(args, windows[-1])
        if every:
            driven = [Driven(i, shard, c) for shard, (i, c) in zip(every, multi.take(e),
                                                                  strict=True)]
            windows.append(run(multi, f"{e} events at once on {n} shard(s), event i on "
                                      f"shard 1 + (i % {n})", driven, args.duration))
            report(args, windows[-1])
    finally:
        failed: list[BaseException] = []
        for dep in reversed(deps):
            try:
                violations += close(dep, "holds" if dep is deps[-1] else "holds.single_database")
            except BaseException as exc:  # still stop the others
                failed.append(exc)
        if failed:
            raise failed[0]
    last = windows[-1]
    if single is not None:
        compare(single, windows[0])
    print(f"\nper shard server, {last.what}:")
    for shard in sorted(last.servers):
        value = last.server_us(shard)
        assert value is not None
        print(f"  shard {shard}: {value:,.0f} µs of its server's CPU per attempt of its events "
              f"({last.attempts_on(shard):,} attempts)")
        figure(f"holds.shards.shard{shard}_cpu_us_postgres", round(value, 1), "us")
    figure("holds.shards.events_attempts_per_s", round(last.rate, 1), "/s")
    for w in windows:
        if w.attempts_on(1) == 0 and 1 in w.servers and len(w.servers) > 1:
            share = w.servers[1] / sum(w.servers.values())
            print(f"  the directory's server (shard 1, no event of the load on it) in "
                  f"\"{w.what}\": {share:.1%} of the PostgreSQL CPU, "
                  f"{w.server_us(1):,.0f} µs per attempt")
            figure("holds.shards.directory_cpu_share", round(share, 4), "share")
    per = last.directory_reads() / last.attempts
    figure("holds.shards.directory_reads", last.directory_reads(), "count")
    figure("holds.shards.directory_reads_per_attempt", round(per, 6), "count")
    errors = sum(v for w in [*([single] if single else []), *windows]
                 for k, v in w.outcomes().items() if k.startswith("5"))
    figure("holds.shards.server_errors", errors, "count")
    print("\nverdict (issue 23: " + (f"one event on a {n}-shard deployment >= "
                                   f"{TARGET_ONE_EVENT_RATIO:.2f} of the single database's "
                                   "rate, same run; " if single is not None else "")
          + "the directory's share near zero)")
    if single is not None:
        ratio = windows[0].rate / single.rate
        print(verdict(f"one event, {n} shards / 1", f"{ratio:.2f}",
                      f">= {TARGET_ONE_EVENT_RATIO:.2f}", ratio >= TARGET_ONE_EVENT_RATIO)
              + f"  ({windows[0].rate:,.0f} / {single.rate:,.0f} attempts/s)")
    print(verdict("directory reads/attempt", f"{per:.5f}", "near 0", None)
          + f"  ({last.directory_reads()} in {last.attempts:,} attempts)")
    print(f"  oversells/invariant violations, all deployments: {violations}")
    return 1 if violations else 0


def compare(single: Window, one: Window) -> None:
    """Window 2 against window 1: rate and CPU per attempt, as ratios."""
    rate = one.rate / single.rate
    print(f"\none event on shard {ONE_EVENT_SHARD} / single database (same run, same "
          "settings):")
    print(f"  attempts/s      {one.rate:,.0f} / {single.rate:,.0f} = {rate:.2f}")
    figure("holds.shards.single_attempts_per_s", round(single.rate, 1), "/s")
    figure("holds.shards.one_event_attempts_per_s", round(one.rate, 1), "/s",
           ceiling=round(single.rate, 1))
    figure("holds.shards.one_event_rate_ratio", round(rate, 3), "ratio",
           target=TARGET_ONE_EVENT_RATIO)
    for name, mine, theirs in (
            ("server", one.core_us(), single.core_us()),
            ("postgres", one.servers_us(), single.servers_us()),
            ("postgres_shard", one.server_us(ONE_EVENT_SHARD), single.servers_us())):
        if mine is None or theirs is None or theirs == 0:
            continue
        label = {"server": "onsale process", "postgres": "PostgreSQL, all servers",
                 "postgres_shard": f"shard {ONE_EVENT_SHARD}'s server alone"}[name]
        print(f"  CPU per attempt, {label:<24} {mine:7,.0f} / {theirs:7,.0f} µs = "
              f"{mine / theirs:.2f}")
        figure(f"holds.shards.one_event_cpu_us_{name}", round(mine, 1), "us",
               ceiling=round(theirs, 1))
