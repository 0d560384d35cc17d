"""Reading Patroni's /cluster and writing HAProxy's routing (onsale/kernel/patroni_api.py,
onsale/patroni.py): pure parts, literal inputs."""

from __future__ import annotations

from pathlib import Path

from onsale.kernel.patroni_api import leader_of, local_postmasters, members
from onsale.patroni import Etcd, Node, PatroniCluster, haproxy_config

CLUSTER = {"members": [
    {"name": "s1-0", "role": "leader", "state": "running", "host": "127.0.0.1",
     "port": 5432, "timeline": 3, "api_url": "http://127.0.0.1:8008/patroni"},
    {"name": "s1-1", "role": "sync_standby", "state": "streaming", "host": "127.0.0.1",
     "port": 5433, "timeline": 3, "lag": 120},
    {"name": "s1-2", "role": "replica", "state": "stopped", "host": "10.0.0.3",
     "port": 5432, "timeline": 2, "lag": "unknown"},
]}


def test_members_carry_role_timeline_lag_and_the_local_pid() -> None:
    found = members(CLUSTER, {5432: 111, 5433: 222})
    assert [(m["name"], m["role"], m["timeline"], m["lag"], m["pid"]) for m in found] == [
        ("s1-0", "leader", 3, 0, 111),  # the leader is 0 bytes behind itself
        ("s1-1", "sync_standby", 3, 120, 222),
        ("s1-2", "replica", 2, None, 111),  # a lag Patroni cannot tell is None, not a string
    ]
    assert members(None) == [] and members({}) == []
    assert leader_of(CLUSTER) == CLUSTER["members"][0]
    assert leader_of({"members": CLUSTER["members"][1:]}) is None


def test_local_postmasters_are_found_by_the_port_patroni_passes(tmp_path: Path) -> None:
    for pid, argv in ((10, [b"/opt/pg/bin/postgres", b"-D", b"/d", b"--port=5433"]),
                      (11, [b"postgres: checkpointer"]),  # a child: no --port
                      (12, [b"/usr/bin/python3", b"--port=5434"])):  # not a postmaster
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(argv) + b"\0")
    (tmp_path / "self").mkdir()
    assert local_postmasters(tmp_path) == {5433: 10}


def test_haproxy_routes_each_shard_to_the_node_whose_primary_check_passes() -> None:
    etcd = Etcd(Path("/e"), 2379, None)
    nodes = [Node(f"shard1-{i}", Path(f"/n{i}"), 5432 + i, 8008 + i) for i in range(3)]
    config = haproxy_config([PatroniCluster("shard1", etcd, nodes)], {"shard1": 6432})
    assert "listen shard1\n    bind 127.0.0.1:6432\n    option httpchk GET /primary" in config
    assert "on-marked-down shutdown-sessions" in config  # a demoted node loses its sessions
    for i in range(3):
        assert f"server shard1-{i} 127.0.0.1:{5432 + i} check port {8008 + i}" in config


def test_the_capture_slot_is_declared_once_as_a_pgoutput_slot_on_its_database() -> None:
    from onsale.kernel.patroni_api import slot_patch

    wanted = {"type": "logical", "database": "onsale", "plugin": "pgoutput"}
    assert slot_patch({"ttl": 20}, "onsale_seatmap", "onsale") == {
        "slots": {"onsale_seatmap": wanted}}
    assert slot_patch({"slots": {"onsale_seatmap": wanted}}, "onsale_seatmap", "onsale") is None
    # another database, or another slot beside it: this one is (re)declared alone
    assert slot_patch({"slots": {"onsale_seatmap": {**wanted, "database": "postgres"}}},
                      "onsale_seatmap", "onsale") == {"slots": {"onsale_seatmap": wanted}}
    assert slot_patch({"slots": {"other": wanted, "onsale_seatmap_s2": None}},
                      "onsale_seatmap_s2", "onsale") == {"slots": {"onsale_seatmap_s2": wanted}}
