"""A real crowd for the fairness lab (pure, no I/O): the arrivals of an on-sale as a CSV of
join times, read into the visitors the simulator queues (docs/fairness.md).

The CSV has a header row. Columns, by name, in any order:

- ``at`` (required): when the visitor joined, ISO 8601 with a time zone
  (``2026-12-01T10:00:03.250Z``) or Unix seconds (``1764583203.25``);
- ``account`` (optional): who joined. Rows of one account are one visitor, whose devices
  are the distinct ``device`` values (or its rows). Without the column each row is a
  visitor of its own;
- ``device`` (optional): the device or session the row came from;
- ``bot`` (optional): ``true``/``false`` (``1``/``0``, ``yes``/``no``) when a team knows;
  an empty cell is unknown, and unknown visitors are drawn as bots at the scenario's
  ``bot_share``.

Second 0 is the earliest join, unless the opening is earlier; ``opening_second`` places
the sale's opening on the same clock.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

MAX_ROWS = 2_000_000
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


class CrowdError(ValueError):
    """A CSV the lab refuses: ``line`` is its line number (the header is line 1)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(frozen=True)
class Visitor:
    """One account: the seconds its devices joined (sorted), and whether it is known to
    be a bot (None: unknown)."""

    joins: tuple[int, ...]
    bot: bool | None = None


@dataclass(frozen=True)
class Crowd:
    """The visitors of an on-sale, by first join; ``start`` is second 0 in Unix seconds."""

    visitors: tuple[Visitor, ...]
    start: float

    def arrivals(self) -> tuple[int, ...]:
        """Visitors first arriving in each second, from second 0 to the last join."""
        last = max((v.joins[-1] for v in self.visitors), default=0)
        counts = [0] * (last + 1)
        for v in self.visitors:
            counts[v.joins[0]] += 1
        return tuple(counts)

    def opening_second(self, opens_at: float) -> int:
        """The opening (Unix seconds) on the crowd's clock: never before second 0."""
        return max(0, math.floor(opens_at - self.start))

    def shifted(self, seconds: int) -> Crowd:
        """The same crowd with every join ``seconds`` later (an opening before the first
        join becomes second 0)."""
        return Crowd(tuple(Visitor(tuple(j + seconds for j in v.joins), v.bot)
                           for v in self.visitors), self.start - seconds)

    def placed(self, opens_at: float | None) -> tuple[Crowd, int]:
        """The crowd on its sale's clock, and the opening's second on it: ``opens_at``
        in Unix seconds (None: the opening is the first join). An opening before the
        first join is second 0, the joins later by as much."""
        if opens_at is None:
            return self, 0
        crowd = self
        if opens_at < self.start:
            crowd = self.shifted(int(self.start - opens_at + 0.999))
        return crowd, crowd.opening_second(opens_at)


def parse_time(text: str) -> float:
    """ISO 8601 with a time zone, or Unix seconds, as Unix seconds."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{value!r} is neither ISO 8601 nor Unix seconds") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone (add Z or +00:00)")
    return parsed.timestamp()


def _bot(cell: str | None, line: int) -> bool | None:
    text = (cell or "").strip().lower()
    if not text:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise CrowdError(line, f"bot is {cell!r}: write true or false (or leave it empty)")


def _rows(reader: csv.DictReader[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows with their line numbers; a line the csv module cannot read (a NUL byte,
    a field past its size limit) is a ``CrowdError`` naming it."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CrowdError(reader.line_num, f"not CSV ({exc})") from None
        yield reader.line_num, row


def read_crowd(text: str | Iterable[str]) -> Crowd:
    """The crowd of a CSV (its text, or its lines)."""
    lines = io.StringIO(text) if isinstance(text, str) else text
    reader = csv.DictReader(lines)
    names = [n.strip().lower() for n in (reader.fieldnames or [])]
    if "at" not in names:
        raise CrowdError(1, "the header names no 'at' column (the join times)")
    reader.fieldnames = names
    joins: dict[str, dict[str, float]] = {}   # account -> device -> first join
    bots: dict[str, bool | None] = {}
    for line, row in _rows(reader):
        if reader.line_num > MAX_ROWS + 1:
            raise CrowdError(line, f"at most {MAX_ROWS:,} rows")
        try:
            at = parse_time(row.get("at") or "")
        except ValueError as exc:
            raise CrowdError(line, f"at: {exc}") from None
        account = (row.get("account") or "").strip() or f"row:{line}"
        device = (row.get("device") or "").strip() or f"row:{line}"
        devices = joins.setdefault(account, {})
        devices[device] = min(at, devices.get(device, at))
        bot = _bot(row.get("bot"), line)
        if bot is not None:
            if bots.get(account) not in (None, bot):
                raise CrowdError(line, f"account {account!r} is marked both bot and not")
            bots[account] = bot
    if not joins:
        raise CrowdError(0, "no rows")
    start = math.floor(min(min(d.values()) for d in joins.values()))
    visitors = [Visitor(tuple(sorted(math.floor(t - start) for t in d.values())),
                        bots.get(account))
                for account, d in joins.items()]
    visitors.sort(key=lambda v: v.joins)
    return Crowd(tuple(visitors), float(start))


def crowd_csv(rows: Iterable[tuple[float, str, str]]) -> str:
    """The CSV of ``(unix seconds, account, device)`` rows, as ``read_crowd`` reads it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["at", "account", "device"])
    for at, account, device in rows:
        writer.writerow([f"{at:.3f}", account, device])
    return out.getvalue()
