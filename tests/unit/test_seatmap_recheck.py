"""The seat map's re-check of its open sockets (edge/seatmap_gate.py ``Recheck``,
seatmap/hub.py): every socket's verdict from one pipelined read per store, the same
verdicts the one-socket ``lapsed`` gives, and a store that is down closes nothing."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest

from onsale.edge.gate import Gate
from onsale.edge.seatmap_gate import Recheck, SeatmapAdmission, lapse
from onsale.edge.tokens import Admission, AdmissionCodec
from onsale.kernel.cookies import cookie_policy
from onsale.kernel.sessions import SessionCodec, SessionRef, Sessions
from onsale.seatmap.sockets import by_recheck
from tests.sessions_support import MemorySessionStore

KEY = "k" * 32


def test_the_verdict_of_one_socket() -> None:
    assert lapse(True, "s1", "s1") is None
    assert lapse(True, None, "s1") == "admission_expired"
    assert lapse(True, "s2", "s1") == "admission_revoked"
    assert lapse(False, "s1", "s1") == "authentication_required"  # signed out comes first
    assert lapse(False, None, "s1") == "authentication_required"


class _QueueSessions:
    """The queue store's current shopping sessions, read a pipeline at a time."""

    def __init__(self, current: dict[tuple[int, uuid.UUID], str]) -> None:
        self.current = current
        self.pipelines = 0
        self.single = 0
        self.down = False

    async def sessions(self, pairs: list[tuple[int, uuid.UUID]]) -> list[str | None]:
        if self.down:
            raise ConnectionError("down (test)")
        self.pipelines += 1
        return [self.current.get(p) for p in pairs]

    async def session(self, event_id: int, account: uuid.UUID) -> str | None:
        self.single += 1
        return self.current.get((event_id, account))


async def test_every_socket_from_one_read_each_with_lapseds_verdicts() -> None:
    queue = _QueueSessions({})
    gate = Gate(AdmissionCodec([KEY], 600), cast(Any, queue))
    store = MemorySessionStore()
    codec = SessionCodec(KEY, 3600)
    sessions = Sessions(codec, cookie_policy("http://127.0.0.1:8000"), store)
    recheck = Recheck(gate, sessions)
    sockets = []
    for n, case in enumerate(["live", "elsewhere", "ended", "signed_out", "forged"]):
        account = uuid.UUID(int=n + 1)
        ref = SessionRef(account, f"sess{n:020d}")
        await store.create(account, ref.session_id, 3600)
        token = codec.encode(ref)
        if case == "signed_out":
            await store.revoke(account, ref.session_id)
        if case == "forged":
            token = token[:-2] + "xx"
        if case != "ended":
            queue.current[(7, account)] = "shop-b" if case == "elsewhere" else "shop-a"
        sockets.append(SeatmapAdmission(gate, Admission(7, account, "shop-a", 2**40),
                                        sessions, token, recheck))
    reads = store.reads
    verdicts = await recheck(sockets)
    assert verdicts == [None, "admission_revoked", "admission_expired",
                        "authentication_required", "authentication_required"]
    assert (queue.pipelines, queue.single, store.reads - reads) == (1, 0, 1)
    # the same verdicts, socket by socket (lapsed answers from what the re-check learnt)
    assert [await s.lapsed() for s in sockets] == verdicts


@pytest.mark.parametrize("down", ["queue", "sessions"])
async def test_a_store_that_is_down_closes_nothing(down: str) -> None:
    queue = _QueueSessions({(7, uuid.UUID(int=1)): "other"})
    store = MemorySessionStore()
    gate = Gate(AdmissionCodec([KEY], 600), cast(Any, queue))
    codec = SessionCodec(KEY, 3600)
    sessions = Sessions(codec, cookie_policy("http://127.0.0.1:8000"), store)
    recheck = Recheck(gate, sessions)
    socket = SeatmapAdmission(gate, Admission(7, uuid.UUID(int=1), "shop-a", 2**40), sessions,
                              codec.encode(SessionRef(uuid.UUID(int=1), "s" * 20)), recheck)
    queue.down, store.down = down == "queue", down == "sessions"
    assert await recheck([socket]) == [None]


def test_sockets_are_grouped_by_their_recheck_in_order() -> None:
    class _Socket:
        def __init__(self, recheck: object) -> None:
            self.recheck = recheck

    one, two = object(), object()
    groups = by_recheck(cast(Any, [_Socket(one), _Socket(two), _Socket(one)]))
    assert [(check is one, positions) for check, positions in groups] == [
        (True, [0, 2]), (False, [1])]
