"""What a live seat-map server sends validates against docs/seatmap.asyncapi.yaml: the
snapshot, the deltas of 100 committed changes, heartbeats, and `unavailable` for an
event with no seat map (tests/unit/test_seatmap_asyncapi.py checks the document itself
and each message builder)."""

from __future__ import annotations

from typing import Any

import redis.asyncio

from onsale.embedded import EmbeddedValkey
from tests.integration.test_seatmap_ws import latest, seatmap_stack
from tests.seatmap_support import Viewer, Writer, create_event, seatmap_settings
from tests.stack import eventually
from tests.unit.test_seatmap_asyncapi import valid


async def test_every_message_a_live_server_sends_is_declared(
        db_url: str, conn: Any, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
) -> None:
    event_id = await create_event(conn, 120)
    writer = Writer(event_id, 120)
    settings = seatmap_settings(gzip_min_bytes=100)  # some deltas compressed too
    async with seatmap_stack(db_url, valkey, settings) as (address, _):
        await eventually(lambda: latest(redis_client, conn, event_id))
        async with Viewer(address, event_id) as viewer:
            for _ in range(100):
                await writer.step(conn)
            final = await eventually(lambda: latest(redis_client, conn, event_id))
            await eventually(lambda: viewer.at(final))

            async def heartbeats() -> bool:
                return len(viewer.heartbeats) >= 2
            await eventually(heartbeats)
        async with Viewer(address, 10**9) as nowhere:  # no seat map for that event
            async def closed() -> bool:
                return nowhere.close_code is not None
            await eventually(closed)
    kinds = {m["type"] for m in viewer.messages}
    assert {"snapshot", "delta", "heartbeat"} <= kinds, kinds
    for message in viewer.messages:
        valid(message["type"], message)
    assert [m["type"] for m in nowhere.messages] == ["unavailable"]
    valid("unavailable", nowhere.messages[0])
    assert nowhere.close_code == 1013
