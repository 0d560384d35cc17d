"""Progress of a long operation (migrations, event creation, the draw): the operation
reports ``(what, done, total)`` steps to a ``Progress``, and whoever runs it decides how
they show. The CLI draws a bar on a terminal and a line per step elsewhere
(onsale/progress_view.py); servers log (edge/admitter.py); tests collect them."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]  # (what is being done, steps done, of total)


def silent(what: str, done: int, total: int) -> None:
    """The default: nobody is watching."""


def crossed_tenth(before: int, after: int, total: int) -> bool:
    """Whether going from ``before`` to ``after`` of ``total`` passed a tenth of it (or
    finished): how often a server logs a long step, whatever its size."""
    if total <= 0 or after <= before:
        return False
    return after >= total or (after * 10) // total > (before * 10) // total
