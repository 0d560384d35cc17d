"""How the CLI shows a long operation's progress (kernel/progress.py), on stderr so
stdout stays the command's answer: a rich bar per task on a terminal; elsewhere (CI,
a pipe, a log file) one plain line per step."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import IO, Any

from onsale.kernel.progress import Progress


@contextlib.contextmanager
def shown(command: str, stream: IO[str] | None = None) -> Iterator[Progress]:
    out = stream or sys.stderr
    if not out.isatty():
        def line(what: str, done: int, total: int) -> None:
            print(f"{command}: {what} ({done}/{total})", file=out, flush=True)
        yield line
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bars

    tasks: dict[str, Any] = {}
    with Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
              TimeElapsedColumn(), console=Console(file=out), transient=False) as bars:
        def bar(what: str, done: int, total: int) -> None:
            task = what.split(":", 1)[0]  # one bar per part ("shard 2: 0005_x" -> "shard 2")
            if task not in tasks:
                tasks[task] = bars.add_task(f"{command}: {what}", total=total)
            bars.update(tasks[task], completed=done, total=total,
                        description=f"{command}: {what}")
        yield bar
