"""The benchmarks' figure line (bench/figures.py) and what ``make bench-smoke``
(bench/smoke.py) counts as a failure: a bench that cannot run, prints no figure or
whose audit finds a violation; never a time or a rate. No bench is run here."""

from __future__ import annotations

import math

import pytest

from bench.figures import Figure, parse_figure, parse_figures
from bench.smoke import BENCHES, Bench, check, unlisted

HOLDS = Bench("holds", ("holds.attempts_per_s",), audit=True)
CLEAN = "ok   one_valid_sale_per_seat\naudit: no violations\nfigure: holds.violations 0 count\n"


def test_a_figure_line_reads_back_as_it_was_printed() -> None:
    f = Figure("holds.attempts_per_s", 2218.4, "/s", ceiling=4450.0, target=2000.0)
    line = f.line()
    assert line == ("figure: holds.attempts_per_s 2218.4 /s ceiling 4450 ratio 0.499 "
                    "target 2000 ratio 1.11")
    assert parse_figure(line) == f
    assert parse_figure("figure: edge.polls_per_s 7246 /s") == Figure(
        "edge.polls_per_s", 7246.0, "/s")


@pytest.mark.parametrize("line", [
    "figure: holds.attempts_per_s 2218 attempts per second",  # unit of one token
    "figure: Holds 1 /s",                                     # lower-case names
    "figure: holds.p99 ms 96",                                # value before unit
    "figure: holds.p99 96 ms ratio 0.3",                      # a ratio needs its reference
])
def test_malformed_figure_lines_are_reported_not_skipped(line: str) -> None:
    figures, bad = parse_figures(f"some report\n{line}\n")
    assert figures == [] and bad == [line]


def test_nothing_measured_reads_as_nan() -> None:
    f = parse_figure("figure: seatmap.p99 nan ms target 200 ratio nan")
    assert f is not None and math.isnan(f.value) and f.target == 200


def test_a_slow_run_passes_the_smoke() -> None:
    out = "figure: holds.attempts_per_s 3.5 /s target 2000 ratio 0.00175\n" + CLEAN
    assert check(HOLDS, 0, out) == (True, "2 figures, audit clean")


@pytest.mark.parametrize(("code", "output", "reason"), [
    (1, "Traceback ...\nImportError: no module\n", "exit 1: ImportError: no module"),
    (None, "figure: holds.attempts_per_s 1 /s\n" + CLEAN, "timed out"),
    (0, "holds over HTTP: 2,000/s\n" + "audit: no violations\n", "printed no figure line"),
    (0, "figure: holds.p99 3 ms\n" + CLEAN, "missing figure(s) holds.attempts_per_s"),
    (0, "figure: holds.attempts_per_s nan /s\n" + CLEAN,
     "nothing measured for holds.attempts_per_s"),
    (0, "figure: holds.attempts_per_s 900 /s\n", "no clean onsale audit"),
    (1, "figure: holds.attempts_per_s 900 /s\nFAIL held_seats_belong_to_their_hold (2)\n"
        "audit: 2 violation(s)\nfigure: holds.violations 2 count\n",
     "onsale audit: 2 violation(s)"),
])
def test_what_fails_the_smoke(code: int | None, output: str, reason: str) -> None:
    ok, detail = check(HOLDS, code, output)
    assert not ok and reason in detail, detail


def test_every_bench_in_bench_is_smoked() -> None:
    assert unlisted() == []
    assert len({b.name for b in BENCHES}) == len(BENCHES)
