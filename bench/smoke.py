"""``make bench-smoke``: run every benchmark in bench/ for a few seconds, each against its
own throwaway stack, and check that it still runs.

    .venv/bin/python bench/smoke.py                 # all of them, one after the other
    .venv/bin/python bench/smoke.py holds seatmap   # some

Each bench runs as ``python bench/<name>.py --smoke`` in its own process (its own
PostgreSQL, Valkey and onsale processes in temporary directories). A bench fails the
smoke only when

- it exits non-zero (it could not run, or its audit found a violation), or does not
  finish within ``--timeout`` seconds;
- it prints no figure line (bench/figures.py), a malformed one, one of its required
  figures is missing, or a figure is not a number (nothing was measured);
- it writes holds or orders and its ``onsale audit`` did not report ``audit: no
  violations`` (figure ``<bench>.violations`` 0).

Never on a time or a rate: the figures of a run this short, on a shared machine, mean
nothing, and the summary does not print them (the full output is in the log directory).
A file in bench/ that is neither a helper nor listed here fails the smoke too, so that
a new benchmark cannot be left out.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import parse_figures

BENCH_DIR = Path(__file__).resolve().parent
HELPERS = {"__init__", "figures", "stack", "smoke", "holds_shards", "holds_ha"}  # modes of holds.py


@dataclass(frozen=True)
class Bench:
    name: str
    required: tuple[str, ...]  # figures it must print
    audit: bool = False  # writes holds or orders: must end with a clean onsale audit
    needs: str | None = None  # an executable, installed by the Debian package of that name


BENCHES = (
    Bench("snapshot_size", ("snapshot.largest_realistic_gzip",)),
    Bench("request_bodies", ("request_bodies.schema_us", "request_bodies.by_hand_us")),
    Bench("psp", ("psp.authorizations_per_s", "psp.duplicate_operations")),
    Bench("http_protocol", ("http.uvicorn_rps", "http.onsale_rps",
                            "http.onsale_pipelined_rps"), needs="wrk"),
    Bench("holds", ("holds.attempts_per_s", "holds.p99", "holds.pgbench_holds_per_s"),
          audit=True),
    Bench("checkout", ("checkout.authorizations_per_s", "checkout.checkout_p99"), audit=True),
    Bench("edge", ("edge.http_joins_per_s", "edge.polls_per_s",
                   "edge.redis_commands_per_poll")),
    Bench("seatmap", ("seatmap.p99", "seatmap.frames_per_s_per_client",
                      "seatmap.cpu_per_client_frame")),
    Bench("cluster", ("cluster.joins_per_primary_s", "cluster.admissions_per_primary_s",
                      "cluster.other_primaries_cpu_share")),
    Bench("ga", ("ga.attempts_per_s_1_stripes", "ga.attempts_per_s_8_stripes",
                 "ga.sellout_places_held"), audit=True),
    Bench("hostile", ("hostile.rss_growth", "hostile.legit_success", "hostile.legit_p99"),
          audit=True),
)


@dataclass
class Outcome:
    bench: Bench
    ok: bool
    seconds: float
    detail: str
    log: Path


def unlisted() -> list[str]:
    known = {b.name for b in BENCHES}
    return sorted(p.stem for p in BENCH_DIR.glob("*.py")
                  if p.stem not in HELPERS and p.stem not in known)


def check(bench: Bench, code: int | None, output: str) -> tuple[bool, str]:
    """(passed, what to say) for one finished (or timed-out: ``code`` None) run."""
    figures, bad = parse_figures(output)
    problems = []
    if code is None:
        problems.append("timed out")
    elif code != 0:
        last = [ln for ln in output.splitlines() if ln.strip()][-1:] or ["(no output)"]
        problems.append(f"exit {code}: {last[0][:200]}")
    if bad:
        problems.append(f"malformed figure line {bad[0]!r}")
    names = {f.name: f for f in figures}
    if not figures:
        problems.append("printed no figure line")
    missing = [n for n in bench.required if n not in names]
    if missing and figures:
        problems.append("missing figure(s) " + ", ".join(missing))
    empty = [f.name for f in figures if not math.isfinite(f.value)]
    if empty:
        problems.append("nothing measured for " + ", ".join(empty))
    audit = ""
    if bench.audit:
        violations = names.get(f"{bench.name}.violations")
        if violations is None or "audit: no violations" not in output:
            problems.append("no clean onsale audit" if violations is None or
                            violations.value == 0 else
                            f"onsale audit: {violations.value:.0f} violation(s)")
        else:
            audit = ", audit clean"
    if problems:
        return False, "; ".join(problems)
    return True, f"{len(figures)} figures{audit}"


def run_one(bench: Bench, logs: Path, timeout: float) -> Outcome:
    log = logs / f"{bench.name}.log"
    if bench.needs and shutil.which(bench.needs) is None:
        detail = (f"needs {bench.needs}, which is not installed: apt-get install "
                  f"{bench.needs} (.ci/run installs it)")
        log.write_text(detail + "\n")
        return Outcome(bench, False, 0.0, detail, log)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "ONSALE_DATA_DIR")
           and not k.startswith(("ONSALE_PSP_", "ONSALE_STRIPE_"))}
    env["PYTHONUNBUFFERED"] = "1"
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, str(BENCH_DIR / f"{bench.name}.py"), "--smoke"],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
            # Ctrl-C: the bench's finally blocks stop the servers it started.
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    seconds = time.monotonic() - started
    ok, detail = check(bench, code, log.read_text(errors="replace"))
    return Outcome(bench, ok, seconds, detail, log)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("only", nargs="*", help="bench names (default: all)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per bench")
    args = p.parse_args()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    unknown = set(args.only) - {b.name for b in BENCHES}
    if unknown:
        raise SystemExit(f"unknown bench(es): {', '.join(sorted(unknown))}")
    logs = Path(tempfile.mkdtemp(prefix="onsale-bench-smoke-"))
    print(f"bench-smoke: {len(chosen)} benchmark(s), each with --smoke against its own "
          f"throwaway stack; output in {logs}/", flush=True)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    for bench in chosen:
        print(f"  ...   {bench.name}", flush=True)
        outcome = run_one(bench, logs, args.timeout)
        outcomes.append(outcome)
        print(f"  {'ok  ' if outcome.ok else 'FAIL'}  {bench.name:<14} {outcome.seconds:6.1f} s  "
              f"{outcome.detail}", flush=True)
        if not outcome.ok:
            tail = outcome.log.read_text(errors="replace").splitlines()[-25:]
            print("\n".join(f"        | {line}" for line in tail), flush=True)
    failed = [o for o in outcomes if not o.ok]
    missing = unlisted() if not args.only else []
    for name in missing:
        print(f"  FAIL  {name:<14} bench/{name}.py is not in bench/smoke.py's BENCHES: add it "
              "there (and give it --smoke and figure lines)")
    total = time.monotonic() - started
    print(f"bench-smoke: {len(outcomes) - len(failed)} of {len(outcomes)} ran"
          + (f", {len(missing)} not listed" if missing else "")
          + f" in {total:.0f} s" + ("" if failed or missing else "; no figure judged"))
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
