"""``onsale fairness sweep|export`` (docs/fairness.md): the fairness lab offline, on the
same pure simulator as the console (edge/fairness.py), over a team's own arrivals.

``sweep`` runs the product of the settings given as lists or ranges
(edge/fairness_sweep.py) on several cores, with a progress bar on stderr, and writes
``summary.csv``, ``cohorts.csv``, ``results.json`` and two charts (``waits.png``: waits
by arrival cohort per policy; ``bots.png``: the bots' share of tickets against their
devices) into ``--out``. ``export`` fetches an event's arrivals from the edge's operator
API as the CSV ``sweep --arrivals`` reads."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import httpx

from onsale.edge.fairness import FairnessInputError
from onsale.edge.fairness_crowd import Crowd, CrowdError, parse_time, read_crowd
from onsale.edge.fairness_files import sweep_files
from onsale.edge.fairness_sweep import AXES, parse_axis, points, run_point, summary_rows
from onsale.progress_view import shown

FIXED = {"tickets_per_human": int, "seed": int, "cohort_seconds": int,
         "horizon_seconds": int, "visitors": int, "seconds": int, "onsale_second": int}


class FairnessCommandError(RuntimeError):
    """A bad argument or file, or an edge that refused; the message is one line."""


def add_parser(sub: Any, data_dir: Callable[[], Path]) -> None:
    """``onsale fairness``; ``data_dir`` is where ``onsale dev`` keeps its operator token."""
    fairness = sub.add_parser("fairness", help="the fairness lab offline: sweeps over "
                              "arrivals, and an event's arrivals (docs/fairness.md)")
    fsub = fairness.add_subparsers(dest="fairness_command", required=True)
    sweep = fsub.add_parser("sweep", help="simulate the product of settings; write CSV, "
                            "JSON and charts")
    source = sweep.add_mutually_exclusive_group()
    source.add_argument("--arrivals", type=Path, metavar="CSV",
                        help="join times (at[,account,device,bot]); see docs/fairness.md")
    source.add_argument("--preset", choices=("flat", "spike", "early", "decay"),
                        help="a synthetic crowd (default spike)")
    sweep.add_argument("--opens-at", metavar="TIME",
                       help="with --arrivals: when the sale opened (ISO 8601 or Unix "
                            "seconds; default: at the first join)")
    for name, kind in FIXED.items():
        sweep.add_argument("--" + name.replace("_", "-"), type=kind)
    sweep.add_argument("--no-dedupe", action="store_true",
                       help="a bot's devices each hold a place (not onsale's rule)")
    for name in AXES:
        sweep.add_argument("--" + name.replace("_", "-"), metavar="LIST|RANGE",
                           help="a,b,c or start..stop[/step]")
    sweep.add_argument("--out", type=Path, default=Path("fairness"),
                       help="the folder for the files (default ./fairness)")
    sweep.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                       help="worker processes (default: every core)")
    sweep.set_defaults(func=cmd_sweep)
    export = fsub.add_parser("export", help="an event's arrivals from the edge, as the CSV "
                             "sweep --arrivals reads")
    export.add_argument("event_id", type=int)
    export.add_argument("--url", default=os.environ.get("ONSALE_PUBLIC_URL")
                        or "http://127.0.0.1:8000",
                        help="an edge (or onsale dev); default ONSALE_PUBLIC_URL")
    export.add_argument("--out", type=Path, help="default arrivals-EVENT.csv")
    export.set_defaults(func=cmd_export, data_dir=data_dir)


def base_body(args: argparse.Namespace, crowd: Crowd | None) -> tuple[dict[str, Any],
                                                                       Crowd | None]:
    """The scenario every point shares (as the lab's request body), and the crowd placed
    on the same clock as the opening."""
    body: dict[str, Any] = {name: getattr(args, name) for name in FIXED
                            if getattr(args, name) is not None}
    if args.no_dedupe:
        body["dedupe_accounts"] = False
    if crowd is None:
        if args.opens_at:
            raise FairnessCommandError("--opens-at goes with --arrivals (a synthetic crowd "
                                       "opens at --onsale-second)")
        body["preset"] = args.preset or "spike"
        return body, None
    for name in ("visitors", "seconds", "onsale_second"):
        if name in body:
            raise FairnessCommandError(f"--{name.replace('_', '-')} is for a synthetic "
                                       "crowd; --arrivals gives its own")
    opens = None
    if args.opens_at:
        try:
            opens = parse_time(args.opens_at)
        except ValueError as exc:
            raise FairnessCommandError(f"--opens-at: {exc}") from None
    crowd, body["onsale_second"] = crowd.placed(opens)
    body["arrivals"] = list(crowd.arrivals())
    return body, crowd


_BASE: dict[str, Any] = {}
_CROWD: list[Crowd | None] = [None]


def _init(base: dict[str, Any], crowd: Crowd | None) -> None:
    _BASE.update(base)  # once per worker: the crowd is not sent with every point
    _CROWD[0] = crowd


def _run(point: dict[str, Any]) -> dict[str, Any]:
    return run_point(_BASE, _CROWD[0], point)


def sweep(base: dict[str, Any], crowd: Crowd | None, axes: Mapping[str, Sequence[Any]],
          jobs: int) -> list[dict[str, Any]]:
    """Every point's results, in the points' order, on ``jobs`` processes."""
    todo = points(axes) if axes else [{}]
    run_point(base, crowd, todo[0])  # a bad setting fails here, before any worker starts
    if jobs <= 1 or len(todo) == 1:
        results = []
        with shown("onsale fairness") as progress:
            for i, point in enumerate(todo):
                results.append(run_point(base, crowd, point))
                progress("points", i + 1, len(todo))
        return results
    found: dict[int, dict[str, Any]] = {}
    with (ProcessPoolExecutor(min(jobs, len(todo)), initializer=_init,
                              initargs=(base, crowd)) as pool,
          shown("onsale fairness") as progress):
        futures = {pool.submit(_run, point): i for i, point in enumerate(todo)}
        for future in as_completed(futures):
            found[futures[future]] = future.result()
            progress("points", len(found), len(todo))
    return [found[i] for i in range(len(todo))]


def write_outputs(out: Path, results: list[dict[str, Any]], axes: Sequence[str],
                  varying: Sequence[str]) -> list[Path]:
    """The files of a sweep (edge/fairness_files.py); ``axes`` were given, ``varying``
    had several values."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, data in sweep_files(results, axes, varying).items():
        (out / name).write_bytes(data)
        files.append(out / name)
    return files


def summary_text(rows: Sequence[Mapping[str, Any]], axes: Sequence[str]) -> str:
    varying = [a for a in axes if a != "policy"]
    lines = ["  ".join([*varying, "policy", "humans served", "bots' tickets",
                        "human wait p50/p90 s"])]
    for r in rows:
        served = r["humans_served_share"]
        lines.append("  ".join([
            *(str(r[a]) for a in varying), r["policy"],
            "-" if served is None else f"{served:.1%}", f"{r['bot_ticket_share']:.1%}",
            f"{r['human_wait_p50']}/{r['human_wait_p90']}"]))
    return "\n".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    try:
        crowd = read_crowd(args.arrivals.read_text()) if args.arrivals else None
        base, crowd = base_body(args, crowd)
        axes = {name: parse_axis(name, getattr(args, name)) for name in AXES
                if getattr(args, name) is not None}
        results = sweep(base, crowd, axes, args.jobs)
    except (OSError, CrowdError, FairnessCommandError) as exc:
        print(f"onsale fairness sweep: {exc}", file=sys.stderr)
        return 2
    except FairnessInputError as exc:
        print(f"onsale fairness sweep: {exc.message}", file=sys.stderr)
        return 2
    varying = [name for name, values in axes.items() if len(values) > 1]
    files = write_outputs(args.out, results, list(axes), varying)
    print(summary_text(summary_rows(results), varying))
    print("wrote " + ", ".join(str(f) for f in files), file=sys.stderr)
    return 0


def export_arrivals(event_id: int, url: str, token: str, out: Path,
                    timeout: float = 60.0) -> float:
    """Write the event's arrivals to ``out``; the opening (Unix seconds)."""
    target = f"{url.rstrip('/')}/api/ops/events/{event_id}/arrivals"
    try:
        with httpx.stream("GET", target, timeout=timeout,
                          headers={"Authorization": f"Bearer {token}"}) as r:
            if r.status_code != 200:
                r.read()
                try:
                    body = r.json()
                except ValueError:
                    body = {}
                raise FairnessCommandError(f"{target}: {r.status_code} {body.get('code')}: "
                                           f"{body.get('detail') or body.get('title')}")
            opens = float(r.headers["sale-opens-at"])
            partial = out.with_name(out.name + ".part")
            with partial.open("wb") as f:
                for chunk in r.iter_bytes():
                    f.write(chunk)
            partial.replace(out)  # a cut download leaves no file that looks whole
    except httpx.HTTPError as exc:
        raise FairnessCommandError(f"{target}: {exc}") from None
    return opens


def cmd_export(args: argparse.Namespace) -> int:
    from onsale.queue_cli import QueueCommandError, admin_token

    out = args.out or Path(f"arrivals-{args.event_id}.csv")
    try:
        token = admin_token(dict(os.environ), args.data_dir())
        opens = export_arrivals(args.event_id, args.url, token, out)
    except (QueueCommandError, FairnessCommandError, OSError) as exc:
        print(f"onsale fairness export: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}; the sale opened at {opens:.3f}. Replay it with:\n"
          f"  onsale fairness sweep --arrivals {out} --opens-at {opens:.3f}")
    return 0
