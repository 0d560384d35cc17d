"""``onsale dev --shards 2``: the directory (shard 1) and a second embedded PostgreSQL
server in ``$ONSALE_DATA_DIR/pg-shard2``, listed as shard 2, each with its own change
capture on its own slot; stopped with the rest on Ctrl-C, and found again by the next
start (still two shards, whatever port the server gets)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import psycopg2

from onsale.embedded import free_port
from tests.integration.test_cli import ONSALE, _children_for, _wait_for
from tests.integration.test_valkey_cluster_dev import _until

SHARD = re.compile(r"onsale dev: shard (\d+) (.+), change capture on slot (\w+)")


def _slot_streams(dsn: str, slot: str) -> bool:
    conn = psycopg2.connect(dsn)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
            row = cur.fetchone()
        return bool(row and row[0])
    finally:
        conn.close()


def test_dev_runs_two_shards_each_with_its_change_capture() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="onsale-test-dev-shards-")) / "state"
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "ONSALE_SEATMAP_SLOT")}
    env["ONSALE_DATA_DIR"] = str(data_dir)
    try:
        for _ in range(2):
            port = free_port()
            proc = subprocess.Popen(
                [ONSALE, "dev", "--port", str(port), "--seats", "60", "--shards", "2"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                out = _wait_for(proc, "serving on", 180)
                shards = SHARD.findall(out)
                assert [(n, slot) for n, _, slot in shards] == [
                    ("1", "onsale_seatmap"), ("2", "onsale_seatmap_s2")], out
                shard2 = shards[1][1]
                assert str(data_dir / "pg-shard2") in shard2  # its own server
                # Shard 2's consumer streams its own slot on its own server.
                assert _until(lambda dsn=shard2: _slot_streams(dsn, "onsale_seatmap_s2"))
                event = re.search(r"demo event (\d+)", out)
                assert event is not None, out
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/api/events/{event[1]}",
                        timeout=10) as served:
                    assert served.status == 200
            finally:
                proc.send_signal(signal.SIGINT)
                rest, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0, rest
            assert "embedded servers stopped" in rest
            deadline = time.monotonic() + 15
            while _children_for(data_dir) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert _children_for(data_dir) == [], "orphaned servers after Ctrl-C"
    finally:
        shutil.rmtree(data_dir.parent, ignore_errors=True)
