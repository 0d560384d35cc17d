"""The e2e harness kills an embedded server onsale dev left behind (e2e/harness.py
``stop_leftovers``): found by its pid file, a stale pid file ignored."""

from __future__ import annotations

import subprocess
from pathlib import Path

from e2e.harness import stop_leftovers


def test_a_server_left_behind_is_killed_and_a_stale_pid_file_ignored(tmp_path: Path) -> None:
    left = subprocess.Popen(["sleep", "60"], start_new_session=True)
    never = 2**22 + 1  # past Linux's largest pid_max: no process has it
    try:
        (tmp_path / "valkey").mkdir()
        (tmp_path / "valkey" / "valkey.pid").write_text(f"{left.pid}\n")
        (tmp_path / "pg" / "data").mkdir(parents=True)
        (tmp_path / "pg" / "data" / "postmaster.pid").write_text(f"{never}\n/data\n")
        (tmp_path / "junk.pid").write_text("not a pid")
        assert stop_leftovers(tmp_path) == [left.pid]
        assert left.wait(10) == -9
    finally:
        left.kill()
        left.wait()
