"""kernel.progress and the CLI's view of it: when a server logs a long step, and the
plain lines the CLI writes where there is no terminal."""

from __future__ import annotations

import io

import pytest

from onsale.kernel.progress import crossed_tenth
from onsale.progress_view import shown


@pytest.mark.parametrize(("before", "after", "total", "want"), [
    (0, 5000, 100_000, False),       # 5 %
    (5000, 10_000, 100_000, True),   # reaches 10 %
    (10_000, 15_000, 100_000, False),
    (95_000, 100_000, 100_000, True),  # the end
    (0, 3, 3, True),                 # a small draw: done at once
    (0, 0, 0, False),
    (10, 10, 100, False),            # no step
    (0, 50, 100, True),              # several tenths at once: one line
])
def test_a_tenth_crossed(before: int, after: int, total: int, want: bool) -> None:
    assert crossed_tenth(before, after, total) is want


def test_without_a_terminal_each_step_is_a_line() -> None:
    out = io.StringIO()  # not a tty
    with shown("onsale migrate", out) as progress:
        progress("shard 1: 0001_inventory", 0, 3)
        progress("shard 1: functions", 2, 3)
    assert out.getvalue().splitlines() == [
        "onsale migrate: shard 1: 0001_inventory (0/3)",
        "onsale migrate: shard 1: functions (2/3)"]


def test_on_a_terminal_a_bar_per_part() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    with shown("onsale migrate", out) as progress:
        progress("shard 1: 0001_inventory", 0, 2)
        progress("shard 1: done", 2, 2)
        progress("shard 2: done", 1, 1)
    text = out.getvalue()
    assert "shard 1: done" in text and "2/2" in text and "shard 2: done" in text
