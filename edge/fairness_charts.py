"""The fairness lab's charts, drawn with matplotlib (headless, Agg): waits by arrival
cohort per policy, and the bots' share of tickets against the devices each bot uses.

matplotlib is imported when a chart is first drawn, never with this module: the edge
process imports it, and only the lab's worker process (edge/fairness_worker.py) and
``onsale fairness sweep`` draw."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

MAX_LINES = 8


def _pyplot() -> Any:
    import logging

    import matplotlib
    matplotlib.use("Agg")
    logging.getLogger("matplotlib").setLevel(logging.WARNING)  # its font cache notes
    import matplotlib.pyplot as plt
    return plt


def _label(point: Mapping[str, Any], axes: Sequence[str]) -> str:
    shown = [f"{a}={point[a]}" for a in axes if a != "policy" and a in point]
    return ", ".join(shown) or "the scenario"


def waits_chart(results: Sequence[Mapping[str, Any]], axes: Sequence[str],
                path: Path | IO[bytes]) -> None:
    """One panel per policy: the median wait after the opening of each arrival cohort
    (line) and its 10th-90th percentile band, for up to ``MAX_LINES`` points."""
    plt = _pyplot()
    policies = sorted({p for r in results for p in r["policies"]})
    fig, panels = plt.subplots(1, len(policies), figsize=(6 * len(policies), 4.2),
                               squeeze=False, sharey=True)
    for panel, policy in zip(panels[0], policies, strict=True):
        for result in [r for r in results if policy in r["policies"]][:MAX_LINES]:
            rows = [c for c in result["policies"][policy]["cohorts"]
                    if c["wait_p50"] is not None]
            x = [c["from_second"] / 60 for c in rows]
            line, = panel.plot(x, [c["wait_p50"] / 60 for c in rows], marker=".",
                               label=_label(result["point"], axes))
            panel.fill_between(x, [c["wait_p10"] / 60 for c in rows],
                               [c["wait_p90"] / 60 for c in rows], alpha=0.15,
                               color=line.get_color())
        panel.set_title(f"{policy}: wait after the opening, by arrival")
        panel.set_xlabel("arrival, minutes from the opening")
        panel.grid(alpha=0.3)
        if any(a != "policy" for a in axes):
            panel.legend(fontsize="small", loc="upper right")
    panels[0][0].set_ylabel("wait, minutes (median; band p10-p90)")
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)


def bots_chart(summary: Sequence[Mapping[str, Any]], path: Path | IO[bytes]) -> None:
    """The bots' share of the tickets sold against ``bot_devices``, one line per policy
    (the mean over the other settings swept; one point when bot devices were not)."""
    plt = _pyplot()
    by: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in summary:
        by[row["policy"]][int(row.get("bot_devices", 0) or 0)].append(
            float(row["bot_ticket_share"]))
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for policy, shares in sorted(by.items()):
        xs = sorted(shares)
        ax.plot(xs, [100 * sum(shares[x]) / len(shares[x]) for x in xs], marker="o",
                label=policy)
    ax.set_xlabel("devices per bot (0: not swept)")
    ax.set_ylabel("bots' share of tickets sold, %")
    ax.set_title("What bots get, by the devices they use")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)
