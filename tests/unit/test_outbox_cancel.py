"""Background loops stop when cancelled even if a library swallowed the cancellation."""

from __future__ import annotations

import asyncio

from onsale.core.outbox_relay import raise_if_cancelling
from onsale.kernel.tasks import stop_background


async def test_a_swallowed_cancellation_still_stops_the_loop() -> None:
    rounds = 0
    started = asyncio.Event()

    async def loop() -> None:
        nonlocal rounds
        while True:
            raise_if_cancelling()
            rounds += 1
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass  # what asyncio.wait_for can do on Python 3.11

    task = asyncio.create_task(loop())
    await started.wait()
    await stop_background([task])
    assert task.cancelled()
    assert rounds == 1


async def test_stop_background_waits_for_a_task_that_ignores_one_cancel() -> None:
    stopped = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass
        try:
            await asyncio.sleep(3600)  # only a second cancel() ends this
        finally:
            stopped.set()

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await stop_background([task])
    assert stopped.is_set() and task.done()
