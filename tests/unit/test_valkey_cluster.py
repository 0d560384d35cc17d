"""Valkey Cluster without servers: the REDIS_URL that names a cluster, the client factory's
choice and bounds, and the key layout (every key of one event in one slot, computed
with redis-py's own CRC16; tests/integration/test_valkey_cluster.py checks the same on
a real cluster with CLUSTER KEYSLOT)."""

from __future__ import annotations

import uuid

import pytest
from redis.crc import key_slot

from onsale.edge.queue_store import EventKeys
from onsale.embedded import free_port
from onsale.kernel.breaker import State
from onsale.kernel.config import Settings
from onsale.kernel.dependency import (
    GuardedRedis,
    GuardedRedisCluster,
    RedisUnavailable,
    background_redis,
    request_redis,
    request_redis_for,
)
from onsale.kernel.session_store import index_key, record_key
from onsale.kernel.settings import ConfigError
from onsale.kernel.valkey import ClusterUrl, cluster_url, event_prefix
from onsale.seatmap import bus


@pytest.mark.parametrize(("url", "parsed"), [
    ("redis+cluster://10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002",
     ClusterUrl("redis://10.0.0.1:7000", (("10.0.0.1", 7000), ("10.0.0.2", 7001),
                                            ("10.0.0.3", 7002)))),
    ("rediss+cluster://user:p%40ss@a.example:6379,b.example:6380/0?ssl_cert_reqs=none",
     ClusterUrl("rediss://user:p%40ss@a.example:6379/0?ssl_cert_reqs=none",
                (("a.example", 6379), ("b.example", 6380)))),
    ("redis+cluster://[::1]:7000?socket_keepalive=true",
     ClusterUrl("redis://[::1]:7000?socket_keepalive=true", (("::1", 7000),))),
    ("REDIS+CLUSTER://h:1", ClusterUrl("redis://h:1", (("h", 1),))),
])
def test_a_cluster_url_names_its_startup_nodes(url: str, parsed: ClusterUrl) -> None:
    assert cluster_url(url) == parsed


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "rediss://h:1", "unix:///tmp/v.s",
                                 "redis+sentinel://h:1", "h:6379"])
def test_any_other_url_is_one_server(url: str) -> None:
    assert cluster_url(url) is None


@pytest.mark.parametrize(("url", "why"), [
    ("redis+cluster://a:1,b", "each cluster node is host:port, got 'b'"),
    ("redis+cluster://a:1,:2", "each cluster node is host:port, got ':2'"),
    ("redis+cluster://a:99999", "each cluster node is host:port, got 'a:99999'"),
    ("redis+cluster://a:1/3", "a cluster has only database 0, got '/3'"),
    ("redis+cluster://", "each cluster node is host:port, got ''"),
])
def test_a_malformed_cluster_url_stops_start_up_with_its_reason(url: str, why: str) -> None:
    with pytest.raises(ValueError, match="^" + why.replace("(", r"\(") + "$"):
        cluster_url(url)
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"REDIS_URL": url})
    assert str(refused.value) == f"REDIS_URL: {why}"


def test_a_plain_url_keeps_the_plain_guarded_client() -> None:
    client = request_redis("redis://127.0.0.1:1/0", timeout=0.3, pool_wait=0.7,
                           max_connections=9)
    assert type(client) is GuardedRedis
    pool = client.connection_pool
    assert pool.max_connections == 9 and pool.timeout == 0.7  # type: ignore[attr-defined]
    assert pool.connection_kwargs["socket_timeout"] == 0.3
    assert pool.connection_kwargs["retry"].get_retries() == 0


def test_a_cluster_url_gives_the_guarded_cluster_client_with_the_same_bounds() -> None:
    settings = Settings(redis_url="redis+cluster://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
                        redis_timeout=0.3, redis_pool_wait=0.7, dependency_backoff=0.4,
                        dependency_backoff_max=1.6)
    client = request_redis_for(settings)
    assert isinstance(client, GuardedRedisCluster)
    assert set(client.nodes_manager.startup_nodes) == {
        "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
    kwargs = client.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (0.3, 0.3)
    assert kwargs["max_connections"] == 64
    assert client.retry.get_retries() == 0  # the breaker decides when to try again
    guard = client.guard
    assert guard.timeout == 0.6 and guard.queue_wait == 0.7
    assert guard.slots is not None and guard.slots._value == 64  # calls in flight
    assert (guard.breaker.initial_backoff, guard.breaker.max_backoff) == (0.4, 1.6)
    assert isinstance(client.pipeline(transaction=False).guard, type(guard))
    background = background_redis(settings.redis_url or "")
    assert type(background).__name__ == "RedisCluster"
    assert background.connection_kwargs["socket_timeout"] == 30.0


def test_every_key_of_one_event_is_in_the_slot_of_its_hash_tag() -> None:
    for event_id in (1, 42, 7_000_001):
        slot = key_slot(f"{{e{event_id}}}".encode())
        queue_keys = [v for v in vars(EventKeys(event_id)).values() if isinstance(v, str)]
        everything = [*queue_keys, EventKeys(event_id).spent("c" * 22),
                      *bus.event_keys(event_id)]
        assert len(queue_keys) >= 12
        assert all(key.startswith(event_prefix(event_id)) for key in everything)
        assert {key_slot(key.encode()) for key in everything} == {slot}, event_id


def test_keys_that_are_no_event_s_are_spread_or_share_their_own_tag() -> None:
    # The consumer's meta and event list: one slot between them (one script, one MULTI).
    assert key_slot(bus.META.encode()) == key_slot(bus.EVENTS.encode())
    # One account's session records and index share its tag; accounts spread.
    a, b = uuid.UUID(int=1), uuid.UUID(int=2)
    assert key_slot(record_key(a, "s1").encode()) == key_slot(index_key(a).encode())
    assert key_slot(index_key(a).encode()) != key_slot(index_key(b).encode())


async def test_a_cluster_no_node_of_which_answers_is_an_outage_not_a_bug() -> None:
    """redis-py says "no startup node answers" with its RedisClusterException, as it says
    a programming error; the guarded client makes it the ConnectionError it is: a 503
    (RedisUnavailable), counted by the breaker, commands and pipelines alike."""
    client = request_redis(f"redis+cluster://127.0.0.1:{free_port()}", timeout=0.2)
    with pytest.raises(RedisUnavailable, match="cannot be connected"):
        await client.get("onsale:{e1}:status")
    with pytest.raises(RedisUnavailable, match="cannot be connected"):
        async with client.pipeline(transaction=False) as pipe:
            pipe.hgetall("onsale:{e1}:status")
            await pipe.execute()
    assert client.guard.breaker.state is State.OPEN  # two failures in a row
    with pytest.raises(RedisUnavailable, match="is not answering"):  # at once, no call
        await client.get("onsale:{e1}:status")
    await client.aclose()
