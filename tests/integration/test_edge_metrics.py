"""The edge's /metrics: joins and polls by outcome (429s included), proof-of-work
verdicts, and each event's queue figures from Valkey."""

from __future__ import annotations

import re
from typing import Any

import redis.asyncio

from onsale.edge.metrics import EdgeMetrics
from onsale.embedded import EmbeddedValkey
from tests.integration.edge_support import edge_api, edge_of, new_accounts, queue_event, refresh


def sample(text: str, name: str, **labels: str) -> float | None:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if m and ",".join(sorted((m[1] or "").split(","))) == want:
            return float(m[2])
    return None


async def test_the_edge_counts_what_it_answered_and_shows_the_queue(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url, join_limit_account=3) as api:
        event_id = await queue_event(api)
        alice, bob = await new_accounts(conn, 2)
        async with api.client(alice, admit=False) as c:
            for _ in range(5):  # a burst of 5 (edge/runtime.py), then the rate: 3 a minute
                assert (await c.post(f"/api/events/{event_id}/queue")).status_code == 200
            limited = await c.post(f"/api/events/{event_id}/queue")
            assert limited.status_code == 429
            assert (await c.get(f"/api/events/{event_id}/queue")).status_code == 200
        async with api.client(bob, admit=False) as c:
            assert (await c.get(f"/api/events/{event_id}/queue")).json()["code"] == \
                "not_in_queue"
        edge = edge_of(api)
        assert isinstance(edge.metrics, EdgeMetrics)
        await refresh(api)
        await edge.metrics.refresh(edge.store)
        async with api.client() as anon:
            text = (await anon.get("/metrics")).text
    e = str(event_id)
    assert sample(text, "onsale_queue_requests_total", kind="join", outcome="waiting") == 5
    assert sample(text, "onsale_queue_requests_total", kind="join",
                  outcome="rate_limited") == 1
    assert sample(text, "onsale_queue_requests_total", kind="poll", outcome="waiting") == 1
    assert sample(text, "onsale_queue_requests_total", kind="poll",
                  outcome="not_in_queue") == 1
    assert sample(text, "onsale_queue_queued", event=e) == 1  # alice, once
    assert sample(text, "onsale_queue_active", event=e) == 0
    assert sample(text, "onsale_queue_visitors_total", event=e, outcome="joined") == 1
    assert sample(text, "onsale_queue_state", event=e, state="waiting") == 1
    assert sample(text, "onsale_queue_rate_per_minute", event=e) is not None
    assert sample(text, "onsale_queue_paused", event=e) == 0


async def test_proof_of_work_verdicts_are_counted(
        db_url: str, valkey: EmbeddedValkey, redis_client: redis.asyncio.Redis,
        conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, pow_difficulty=10)
        [carol] = await new_accounts(conn, 1)
        async with api.client(carol, admit=False) as c:
            missing = await c.post(f"/api/events/{event_id}/queue")
            wrong = await c.post(f"/api/events/{event_id}/queue",
                                 json={"pow": {"challenge": "x", "solution": "1"}})
        assert (missing.status_code, missing.json()["code"]) == (403, "pow_required")
        assert wrong.status_code == 403
        async with api.client() as anon:
            text = (await anon.get("/metrics")).text
    assert sample(text, "onsale_pow_verdicts_total", verdict="pow_required") == 1
    assert sample(text, "onsale_pow_verdicts_total", verdict=wrong.json()["code"]) == 1
    assert sample(text, "onsale_queue_requests_total", kind="join",
                  outcome="pow_required") == 1
