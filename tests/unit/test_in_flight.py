"""core.in_flight: a webhook waits for this process's sends of its authorization,
and for nothing else."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from onsale.core.in_flight import InFlight

A = str(uuid.UUID(int=1))
B = str(uuid.UUID(int=2))


async def test_nothing_in_flight_waits_for_nothing() -> None:
    sends = InFlight()
    assert await sends.settled(A) is False


async def test_a_webhook_waits_until_every_send_of_its_authorization_is_applied() -> None:
    sends = InFlight()
    order: list[str] = []
    release_first, release_second = asyncio.Event(), asyncio.Event()

    async def send(release: asyncio.Event, name: str) -> None:
        with sends.sending(A):
            await release.wait()
            order.append(name)

    first = asyncio.create_task(send(release_first, "authorize"))
    second = asyncio.create_task(send(release_second, "capture"))
    await asyncio.sleep(0)
    assert len(sends) == 2
    waiter = asyncio.create_task(sends.settled(A))
    other = await sends.settled(B)  # another authorization's: no wait
    assert other is False and not waiter.done()
    release_first.set()
    await first
    await asyncio.sleep(0)
    assert not waiter.done()  # the capture is still out
    release_second.set()
    await second
    assert await waiter is True
    assert order == ["authorize", "capture"] and len(sends) == 0


async def test_a_send_that_fails_still_lets_the_webhook_go() -> None:
    sends = InFlight()

    answer = asyncio.Event()

    async def failing() -> None:
        with sends.sending(A):
            await answer.wait()
            raise ConnectionError("provider down")

    task = asyncio.create_task(failing())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(sends.settled(A))
    await asyncio.sleep(0)
    answer.set()
    with pytest.raises(ConnectionError):
        await task
    assert await waiter is True and len(sends) == 0


async def test_the_wait_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    sends = InFlight()
    stuck = asyncio.Event()

    async def hanging() -> None:
        with sends.sending(A):
            await stuck.wait()

    task = asyncio.create_task(hanging())
    await asyncio.sleep(0)
    with caplog.at_level(logging.INFO, logger="onsale.payments"):
        assert await sends.settled(A, most=0.01) is True  # gave up waiting, not stuck
    assert "still out" in caplog.text  # and said so
    assert not task.done()
    stuck.set()
    await task
