"""A tier's folder imported by its short name (``import core``, from the repository
root) fails at once and names the right import, instead of loading a second copy of
its modules beside ``onsale.core``'s."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tier", ["core", "edge", "seatmap", "web", "psp"])
def test_a_short_name_import_fails_and_names_the_right_one(tier: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {tier}.queries"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"import onsale.{tier}, not {tier}" in done.stderr, done.stderr[-500:]


def test_the_package_imports_as_usual() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import onsale.core.hold_rules, onsale.edge.draw, "
         "onsale.seatmap.pgoutput, onsale.web.messages, onsale.psp.cards"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
