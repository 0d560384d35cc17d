"""A client that connects while its channel reloads (the stream had a gap, or was reset)
is caught up from the state the reload brings, never from the one it replaces: the
deltas that follow the reload start from the new state (seatmap/hub.py, Channel.admit)."""

from __future__ import annotations

import asyncio
import gzip
import json

import redis.asyncio

from onsale.seatmap.clients import Outgoing
from onsale.seatmap.hub import Channel, Hub
from onsale.seatmap.metrics import SeatmapMetrics
from onsale.seatmap.snapshot import SeatMap
from tests.seatmap_support import seatmap_settings


class Recording:
    """What the channel offers a client, decoded."""

    def __init__(self) -> None:
        self.got: list[dict[str, object]] = []

    def offer(self, out: Outgoing) -> bool:
        body = gzip.decompress(out.payload) if out.binary else out.payload
        self.got.append(json.loads(body))
        return True


def _channel(r: redis.asyncio.Redis, version: int) -> Channel:
    hub = Hub(r, seatmap_settings(), SeatmapMetrics())
    channel = Channel(hub, 7)
    channel.state = SeatMap(7)
    channel.state.version = version
    channel.ready.set()
    return channel


async def test_a_client_joining_mid_reload_gets_the_reloaded_state(
        redis_client: redis.asyncio.Redis) -> None:
    channel = _channel(redis_client, 0x100)
    channel.ready.clear()  # as Channel.reload does while it loads
    client = Recording()
    joining = asyncio.create_task(channel.admit(client, None, within=10))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    assert not joining.done() and client.got == [] and client not in channel.clients

    reloaded = SeatMap(7)
    reloaded.version = 0x200
    channel.state = reloaded
    channel.ready.set()
    assert await joining == "snapshot"
    assert [m["type"] for m in client.got] == ["snapshot"]
    assert client.got[0]["version"] == "0/200"
    assert client in channel.clients


async def test_a_reload_that_outlasts_the_wait_leaves_the_client_unjoined(
        redis_client: redis.asyncio.Redis) -> None:
    channel = _channel(redis_client, 0x100)
    channel.ready.clear()
    client = Recording()
    assert await channel.admit(client, None, within=0.05) is None  # type: ignore[arg-type]
    assert client.got == [] and client not in channel.clients


async def test_a_settled_channel_joins_at_once(redis_client: redis.asyncio.Redis) -> None:
    channel = _channel(redis_client, 0x100)
    client = Recording()
    assert await channel.admit(client, 0x100, within=0) == "live"  # type: ignore[arg-type]
    assert client.got == [] and client in channel.clients


async def test_reload_holds_joins_until_the_new_state_is_in(
        redis_client: redis.asyncio.Redis) -> None:
    channel = _channel(redis_client, 0x100)
    loaded = asyncio.Event()

    async def load() -> bool:  # Redis answering slowly
        await loaded.wait()
        channel.state = SeatMap(7)
        channel.state.version = 0x300
        return True

    channel.load = load  # type: ignore[method-assign]
    reloading = asyncio.create_task(channel.reload("gap"))
    await asyncio.sleep(0.01)
    client = Recording()
    joining = asyncio.create_task(channel.admit(client, None, within=10))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    assert not joining.done() and client.got == []
    loaded.set()
    await reloading
    assert await joining == "snapshot"
    assert client.got[0]["version"] == "0/300"
