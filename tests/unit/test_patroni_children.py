"""A node killed as a dead machine takes the postmaster's children with it
(onsale/patroni.py ``children_of``): they are found by their parent in /proc."""

from __future__ import annotations

import subprocess
import time

from onsale.patroni import children_of


def test_the_children_of_a_process_are_found_and_only_they() -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(children_of(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        children = children_of(parent.pid)
        assert len(children) == 2 and parent.pid not in children
        assert children_of(children[0]) == []
    finally:
        for child in children_of(parent.pid):
            subprocess.run(["kill", "-9", str(child)], check=False)
        parent.kill()
        parent.wait()
