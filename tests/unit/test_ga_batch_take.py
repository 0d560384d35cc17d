"""How the batcher cuts its waiting requests into batches (pure, no database)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

from onsale.core.ga_batch import GABatcher, _Lane, _Request

A, B, C = (uuid.UUID(int=n) for n in (1, 2, 3))


def _lane(loop: asyncio.AbstractEventLoop, *accounts: uuid.UUID) -> _Lane:
    lane = _Lane()
    for n, account in enumerate(accounts):
        lane.waiting.append(_Request(account, f"k{n}", "d", 1, loop.create_future()))
    return lane


def _keys(requests: Any) -> list[str]:
    return [r.key for r in requests]


def test_a_batch_takes_the_oldest_requests_up_to_its_size() -> None:
    loop = asyncio.new_event_loop()
    try:
        batcher = GABatcher(cast(Any, None), max_batch=2)
        lane = _lane(loop, A, B, C)
        assert _keys(batcher._take(lane)) == ["k0", "k1"]
        assert _keys(lane.waiting) == ["k2"]
    finally:
        loop.close()


def test_a_second_request_of_an_account_waits_for_the_next_batch_in_its_place() -> None:
    loop = asyncio.new_event_loop()
    try:
        batcher = GABatcher(cast(Any, None), max_batch=10)
        lane = _lane(loop, A, A, B, A, C)
        assert _keys(batcher._take(lane)) == ["k0", "k2", "k4"]
        assert _keys(lane.waiting) == ["k1", "k3"]  # still oldest first
        assert _keys(batcher._take(lane)) == ["k1"]
        assert _keys(batcher._take(lane)) == ["k3"]
        assert not lane.waiting
    finally:
        loop.close()
