"""``onsale dev --valkey-cluster``: a Valkey Cluster of three primaries in
``$ONSALE_DATA_DIR/valkey-cluster``, REDIS_URL set to it, every tier on it; stopped with
the rest on Ctrl-C, and found again (same nodes, same data) by the next start."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis.cluster import ClusterNode, RedisCluster

from onsale.embedded import free_port
from onsale.kernel.valkey import cluster_url
from tests.integration.test_cli import ONSALE, _children_for, _wait_for


def _until(check: Callable[[], Any], within: float = 60.0) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("not reached within the deadline")


def test_dev_runs_on_a_cluster_of_three_primaries_and_stops_it() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="onsale-test-dev-cluster-")) / "state"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["ONSALE_DATA_DIR"] = str(data_dir)
    both = subprocess.run([ONSALE, "dev", "--valkey-cluster"], capture_output=True, text=True,
                          env={**env, "REDIS_URL": "redis://127.0.0.1:1/0"}, timeout=120)
    assert both.returncode == 2
    assert "--valkey-cluster starts a cluster of its own: unset REDIS_URL" in both.stderr
    urls = []
    try:
        for attempt in range(2):
            port = free_port()
            proc = subprocess.Popen(
                [ONSALE, "dev", "--port", str(port), "--seats", "60", "--valkey-cluster"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                out = _wait_for(proc, "serving on", 180)
                url = re.search(r"REDIS_URL=(\S+)", out)
                event = re.search(r"demo event (\d+)", out)
                assert url is not None and event is not None, out
                urls.append(url[1])
                cluster = cluster_url(url[1])
                assert cluster is not None and len(cluster.nodes) == 3
                assert all(p < 32768 for _, p in cluster.nodes)  # below the ephemeral range
                r = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster.nodes])
                try:
                    info = r.cluster_info()
                    assert (info["cluster_state"], int(info["cluster_size"]),
                            int(info["cluster_known_nodes"])) == ("ok", 3, 3)
                    # Core's health reports and the demo event's seat map land on it.
                    snap = f"onsale:{{e{event[1]}}}:seatmap:snap"
                    assert _until(lambda r=r: r.hgetall("onsale:health:core"))
                    assert _until(lambda r=r, snap=snap: r.exists(snap))
                    if attempt == 0:
                        r.set("onsale:{probe}:kept", "1")
                    else:
                        assert r.get("onsale:{probe}:kept") == b"1"  # same cluster, its data
                finally:
                    r.close()
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/events/{event[1]}",
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
        assert urls[0] == urls[1]  # started again on its recorded ports
        assert sorted(p.name for p in (data_dir / "valkey-cluster").iterdir()) == [
            "node0", "node1", "node2", "ports.json"]
    finally:
        shutil.rmtree(data_dir.parent, ignore_errors=True)
