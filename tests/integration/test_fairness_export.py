"""The queue's record of arrivals, exported for the fairness lab
(``GET /api/ops/events/{id}/arrivals``, edge/ops_arrivals.py), read back by the lab."""

from __future__ import annotations

import asyncio
from typing import Any

from onsale.edge.fairness import compare, parse_scenario
from onsale.edge.fairness_crowd import read_crowd
from onsale.embedded import EmbeddedValkey
from tests.conftest import ADMIN_TOKEN
from tests.integration.edge_support import edge_api, join_all, new_accounts, queue_event

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


async def test_a_finished_queue_exports_its_arrivals(db_url: str, valkey: EmbeddedValkey,
                                                     conn: Any) -> None:
    async with edge_api(db_url, valkey.url) as api:
        event_id = await queue_event(api, seats=50)
        first, second = await new_accounts(conn, 30), await new_accounts(conn, 20)
        visitors = await join_all(api, first, event_id)
        await asyncio.sleep(1.1)  # a later wave, a second or more after the first
        await join_all(api, second, event_id)
        again = await visitors[0].join()  # a second join changes no record
        assert again.status_code == 200
        async with api.client() as c:
            refused = await c.get(f"/api/ops/events/{event_id}/arrivals")
            r = await c.get(f"/api/ops/events/{event_id}/arrivals", headers=ADMIN)
            missing = await c.get("/api/ops/events/999999/arrivals", headers=ADMIN)
    assert refused.status_code == 401
    assert missing.status_code == 404
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    opens = float(r.headers["sale-opens-at"])
    text = r.text
    assert text.splitlines()[0] == "at,account,device"
    assert len(text.splitlines()) == 51  # one row per account
    for account in (*first, *second):
        assert str(account) not in text  # keyed hashes only
    crowd = read_crowd(text)
    assert len(crowd.visitors) == 50
    joins = sorted(v.joins[0] for v in crowd.visitors)
    assert joins[29] < joins[30]  # the second wave is later on the crowd's clock
    assert abs(opens - crowd.start) < 3600  # the opening: on sale now
    # the lab replays it
    sc = parse_scenario({"arrivals": list(crowd.arrivals()), "seats": 50,
                         "onsale_second": crowd.opening_second(opens)})
    from dataclasses import replace
    doc = compare(replace(sc, crowd=crowd))
    assert doc["policies"]["fifo"]["totals"]["people"] == 50
