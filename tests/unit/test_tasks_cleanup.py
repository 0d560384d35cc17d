"""A task's cleanup runs to its end when the task is cancelled again while it runs
(onsale/kernel/tasks.py ``to_the_end``), as ``stop_background`` does once a second.
Without it, the seat-map capture's consumers outlived it and fought the next one."""

from __future__ import annotations

import asyncio

import pytest

from onsale.kernel.tasks import stop_background, to_the_end


async def test_cleanup_finishes_though_the_task_is_cancelled_again_meanwhile() -> None:
    steps: list[str] = []
    started = asyncio.Event()

    async def cleanup() -> None:
        steps.append("closing")
        await asyncio.sleep(0.05)   # cancelled again here, over and over
        await asyncio.sleep(0.05)
        steps.append("closed")

    async def worker() -> None:
        try:
            started.set()
            await asyncio.Event().wait()
        finally:
            await to_the_end(cleanup())

    task = asyncio.create_task(worker())
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.01)
    for _ in range(5):
        task.cancel()
        await asyncio.sleep(0.01)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["closing", "closed"]


async def test_without_it_a_second_cancel_cuts_the_cleanup_short() -> None:
    steps: list[str] = []

    async def worker() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.05)
            steps.append("closed")  # never reached when cancelled again meanwhile

    task = asyncio.create_task(worker())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == []


async def test_a_cleanup_that_fails_says_so() -> None:
    async def cleanup() -> None:
        raise RuntimeError("listener gone")

    async def worker() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await to_the_end(cleanup())

    task = asyncio.create_task(worker())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="listener gone"):
        await stop_background([task])
    assert task.done()
