"""The provider calls this process has sent and not yet applied, by authorization.

The simulator, like Stripe, may deliver a webhook before the API response it
reports: the authorization's or the capture's answer then reaches core twice at
once, and both run the whole apply (locks, checks, a commit), one of them for
nothing. A webhook about an authorization this process is sending right now
waits for that send's apply first (at most ``WAIT_SECONDS``), so it finds the
operation decided and is only recorded, with the shard's other record-only
deliveries (``core/webhook_batch.py``). Nothing depends on the wait: a webhook
that lands on another process, or outwaits it, applies as before, and the apply
function takes only forward steps. docs/payments.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

WAIT_SECONDS = 2.0  # well inside a provider's webhook timeout (Stripe: 10 s or more)
log = logging.getLogger("onsale.payments")


class InFlight:
    def __init__(self) -> None:
        # by the authorization's operation id, as its PaymentIntent's metadata says it
        self._sends: dict[str, list[asyncio.Future[None]]] = {}

    def __len__(self) -> int:
        return sum(len(sends) for sends in self._sends.values())

    @contextlib.contextmanager
    def sending(self, authorization: str) -> Iterator[None]:
        """Around one send and its apply: an authorization, or its capture or void."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sends.setdefault(authorization, []).append(done)
        try:
            yield
        finally:
            done.set_result(None)
            sends = self._sends[authorization]
            sends.remove(done)
            if not sends:
                del self._sends[authorization]

    async def settled(self, authorization: str, most: float = WAIT_SECONDS) -> bool:
        """Wait until this process's sends for ``authorization`` are applied, at most
        ``most`` seconds; whether there were any (False: nothing to wait for)."""
        sends = self._sends.get(authorization)
        if not sends:
            return False
        _, pending = await asyncio.wait(list(sends), timeout=most)
        if pending:  # a slow provider: the delivery goes on, and applies as before
            log.info("a webhook waited %.1f s for %d send(s) of authorization %s still "
                     "out; it applies alone", most, len(pending), authorization)
        return True
