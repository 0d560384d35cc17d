"""How the batcher cuts its waiting requests into batches (pure, no database)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, cast

from onsale.core.ga_batch import MAX_BATCH, GABatcher, _Lane, _Request
from onsale.kernel.problems import Problem

A, B, C = (uuid.UUID(int=n) for n in (1, 2, 3))


def _lane(loop: asyncio.AbstractEventLoop, *accounts: uuid.UUID) -> _Lane:
    lane = _Lane(cast(Any, None))
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
        assert _keys(batcher._take(lane, 0.0)) == ["k0", "k1"]
        assert _keys(lane.waiting) == ["k2"]
    finally:
        loop.close()


def test_a_second_request_of_an_account_waits_for_the_next_batch_in_its_place() -> None:
    loop = asyncio.new_event_loop()
    try:
        batcher = GABatcher(cast(Any, None), max_batch=10)
        lane = _lane(loop, A, A, B, A, C)
        assert _keys(batcher._take(lane, 0.0)) == ["k0", "k2", "k4"]
        assert _keys(lane.waiting) == ["k1", "k3"]  # still oldest first
        assert _keys(batcher._take(lane, 0.0)) == ["k1"]
        assert _keys(batcher._take(lane, 0.0)) == ["k3"]
        assert not lane.waiting
    finally:
        loop.close()


def test_an_account_in_a_running_batch_waits_and_nothing_is_sent_when_all_do() -> None:
    loop = asyncio.new_event_loop()
    try:
        batcher = GABatcher(cast(Any, None), max_batch=10)
        lane = _lane(loop, A, B, A)
        lane.busy = {A}
        assert _keys(batcher._take(lane, 0.0)) == ["k1"]
        assert _keys(lane.waiting) == ["k0", "k2"]
        lane.busy = {A, B}
        assert batcher._take(lane, 0.0) == []  # the running batch's drain takes them next
        assert _keys(lane.waiting) == ["k0", "k2"]
    finally:
        loop.close()


def test_requests_gone_are_dropped_and_those_queued_too_long_get_a_503() -> None:
    loop = asyncio.new_event_loop()
    try:
        batcher = GABatcher(cast(Any, None), max_batch=10, max_wait=0.5)
        lane = _lane(loop, A, B, C)
        lane.waiting[0].answer.cancel()  # its client went away
        lane.waiting[1].since = -1.0  # queued 1.5 s before "now"
        assert _keys(batcher._take(lane, 0.5)) == ["k2"]
        late = lane.waiting  # emptied
        assert not late
    finally:
        loop.close()


def test_a_late_request_is_answered_with_the_busy_database_problem() -> None:
    loop = asyncio.new_event_loop()
    try:
        batcher = GABatcher(cast(Any, None), max_batch=10, max_wait=0.5)
        lane = _lane(loop, A)
        request = lane.waiting[0]
        assert batcher._take(lane, 2.0) == []
        problem = request.answer.exception()
        assert isinstance(problem, Problem)
        assert (problem.status, problem.code) == (503, "inventory_unavailable")
    finally:
        loop.close()


def test_the_batch_size_is_capped_by_the_lock_table_bound() -> None:
    assert GABatcher(cast(Any, None), max_batch=1000).max_batch == MAX_BATCH == 64
    assert GABatcher(cast(Any, None), max_batch=0).max_batch == 1
