"""The files of a fairness-lab run (docs/fairness.md), as bytes by name: what
``onsale fairness sweep`` writes into ``--out`` and what the console's lab offers as
downloads, from the same rows (edge/fairness_sweep.py) and charts
(edge/fairness_charts.py).

- ``summary.csv``: one row per point and policy (``SUMMARY_COLUMNS``);
- ``cohorts.csv``: one row per point, policy and arrival cohort (``COHORT_COLUMNS``);
- ``results.json``: every point's whole result;
- ``waits.png`` and ``bots.png``: the charts (matplotlib, imported on the first draw).

A sweep's columns start with the axes it was given; a single run (the console's) has
none: its one point is ``{}``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from onsale.edge.fairness_sweep import (
    COHORT_COLUMNS,
    SUMMARY_COLUMNS,
    cohort_rows,
    summary_rows,
)

NAMES = ("summary.csv", "cohorts.csv", "results.json", "waits.png", "bots.png")
MEDIA_TYPES = {"csv": "text/csv", "json": "application/json", "png": "image/png"}


def csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str],
             axes: Sequence[str]) -> str:
    """The rows as CSV: the axes given (but ``policy``, a column already), then
    ``columns``."""
    out = io.StringIO()
    names = [*(a for a in axes if a != "policy"), *columns]
    writer = csv.DictWriter(out, fieldnames=names, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _png(draw: Any, *args: Any) -> bytes:
    out = io.BytesIO()
    draw(*args, out)
    return out.getvalue()


def sweep_files(results: Sequence[Mapping[str, Any]], axes: Sequence[str],
                varying: Sequence[str]) -> dict[str, bytes]:
    """Every file of ``results`` (``run_point``'s, in the points' order); ``axes`` were
    given, ``varying`` had several values."""
    from onsale.edge.fairness_charts import bots_chart, waits_chart

    summary = summary_rows(results)
    return {
        "summary.csv": csv_text(summary, SUMMARY_COLUMNS, axes).encode(),
        "cohorts.csv": csv_text(cohort_rows(results), COHORT_COLUMNS, axes).encode(),
        "results.json": (json.dumps(list(results), indent=1) + "\n").encode(),
        "waits.png": _png(waits_chart, results, varying),
        "bots.png": _png(bots_chart, summary),
    }


def run_files(doc: Mapping[str, Any]) -> dict[str, bytes]:
    """The files of one run of the lab (``fairness.compare``'s answer): a sweep of one
    point with no axes."""
    return sweep_files([{"point": {}, "policies": doc["policies"]}], [], [])
