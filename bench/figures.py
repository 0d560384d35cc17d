"""The figure line every benchmark prints, one per figure, beside its human-readable report.

    figure: <name> <value> <unit>[ ceiling <value> ratio <x>][ target <value> ratio <x>]

- ``name``: ``<bench>.<figure>``, lower case, digits, ``_`` and ``.`` (``holds.attempts_per_s``);
- ``value``: a plain decimal number (``nan`` when nothing was measured);
- ``unit``: one token (``/s``, ``ms``, ``us``, ``MiB``, ``KiB``, ``bytes``, ``count``, ``share``);
- ``ceiling``: the same quantity measured **in the same run** by a path that does less (the
  hold function under pgbench, uvicorn's own protocol, the join script without HTTP), and
  ``ratio`` = value / ceiling;
- ``target``: the fixed goal from the issue (2,000 holds/s, p99 < 100 ms, < 64 KiB ...), and
  ``ratio`` = value / target.

Figures are reported, never judged here: ``bench/smoke.py`` checks only that the line
is there, parses and holds a number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

FIGURE_RE = re.compile(
    r"^figure: (?P<name>[a-z0-9_.]+) (?P<value>\S+) (?P<unit>\S+)"
    r"(?: ceiling (?P<ceiling>\S+) ratio (?P<ceiling_ratio>\S+))?"
    r"(?: target (?P<target>\S+) ratio (?P<target_ratio>\S+))?$")


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    unit: str
    ceiling: float | None = None
    target: float | None = None

    def ratio(self, other: float | None) -> float | None:
        if other is None or other == 0 or not math.isfinite(other):
            return None
        return self.value / other

    def line(self) -> str:
        out = f"figure: {self.name} {_num(self.value)} {self.unit}"
        for word, other in (("ceiling", self.ceiling), ("target", self.target)):
            if other is not None:
                ratio = self.ratio(other)
                shown = "nan" if ratio is None else _num(ratio, 3)
                out += f" {word} {_num(other)} ratio {shown}"
        return out


def _num(value: float, digits: int = 6) -> str:
    if not math.isfinite(value):
        return "nan"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.{digits}g}"


def figure(name: str, value: float, unit: str, *, ceiling: float | None = None,
           target: float | None = None) -> Figure:
    """Print one figure line (flushed: the smoke runner reads the output as it comes)."""
    f = Figure(name, float(value), unit, ceiling, target)
    print(f.line(), flush=True)
    return f


def parse_figure(line: str) -> Figure | None:
    """The figure on a line, or None when the line is not a figure line."""
    m = FIGURE_RE.match(line.rstrip("\n"))
    if m is None:
        return None

    def num(key: str) -> float | None:
        raw = m.group(key)
        return None if raw is None else float(raw)

    value = num("value")
    assert value is not None
    return Figure(m.group("name"), value, m.group("unit"), num("ceiling"), num("target"))


def parse_figures(text: str) -> tuple[list[Figure], list[str]]:
    """(the figures, the lines that start like a figure line but do not parse)."""
    figures, bad = [], []
    for line in text.splitlines():
        if not line.startswith("figure:"):
            continue
        try:
            parsed = parse_figure(line)
        except ValueError:
            parsed = None
        if parsed is None:
            bad.append(line)
        else:
            figures.append(parsed)
    return figures, bad
