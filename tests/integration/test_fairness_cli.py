"""``onsale fairness sweep`` on the shipped fixture CSV (docs/fairness/sample-arrivals.csv):
the files it writes hold the simulator's own figures, on several processes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from onsale.edge.fairness_crowd import parse_time, read_crowd
from onsale.edge.fairness_sweep import run_point

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "docs" / "fairness" / "sample-arrivals.csv"
PNG = b"\x89PNG\r\n\x1a\n"


def onsale(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "onsale.cli", "fairness", *args],
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_sweep_over_the_sample_writes_the_simulators_figures(tmp_path: Path) -> None:
    out = tmp_path / "lab"
    done = onsale("sweep", "--arrivals", str(SAMPLE), "--opens-at", "2026-01-01T10:00:00Z",
                  "--seats", "1500", "--policy", "fifo,random", "--bot-devices", "1,4",
                  "--bot-share", "0.1", "--jobs", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["policy"], r["bot_devices"]) for r in rows] == [
        ("fifo", "1"), ("fifo", "4"), ("random", "1"), ("random", "4")]
    crowd = read_crowd(SAMPLE.read_text())
    opens = parse_time("2026-01-01T10:00:00Z")
    base = {"seats": 1500, "arrivals": list(crowd.arrivals()),
            "onsale_second": crowd.opening_second(opens)}
    for row in rows:
        point = {"policy": row["policy"], "bot_share": 0.1, "bot_devices": int(row["bot_devices"])}
        own = run_point(base, crowd, point)["policies"][row["policy"]]
        assert float(row["bot_ticket_share"]) == own["bots"]["seat_share"]
        assert float(row["humans_served_share"]) == own["humans"]["with_seats_share"]
        assert int(row["human_wait_p90"]) == own["humans"]["wait_p90"]
        assert int(row["people"]) == len(crowd.visitors)
    results = json.loads((out / "results.json").read_text())
    assert len(results) == 4
    cohorts = list(csv.DictReader((out / "cohorts.csv").open()))
    assert len(cohorts) == sum(len(p["cohorts"]) for r in results
                               for p in r["policies"].values())
    for chart in ("waits.png", "bots.png"):
        data = (out / chart).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, chart
    assert "humans served" in done.stdout


def test_bad_arguments_exit_2_with_a_reason(tmp_path: Path) -> None:
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("at\nyesterday\n")
    for args, says in [
        (["--arrivals", str(bad_csv)], "line 2: at:"),
        (["--bot-devices", "0..3"], "bot_devices"),
        (["--policy", "lottery"], "policy is one or more of fifo, random"),
        (["--arrivals", str(SAMPLE), "--visitors", "10"], "--visitors is for a synthetic"),
        (["--opens-at", "2026-01-01T10:00:00Z"], "--opens-at goes with --arrivals"),
    ]:
        done = onsale("sweep", *args, "--out", str(tmp_path / "x"))
        assert done.returncode == 2, (args, done.stdout)
        assert says in done.stderr, (args, done.stderr)
        assert not (tmp_path / "x").exists()
