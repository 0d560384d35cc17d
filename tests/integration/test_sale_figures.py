"""core/sale_figures.py: sales and holds per event, and paid orders still missing
tickets, read from the shard as the worker does."""

from __future__ import annotations

from typing import Any

from onsale.core.metrics import Metrics
from onsale.core.sale_figures import read_figures
from tests.conftest import Api, hold
from tests.integration.test_tickets import make_order


def _value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"shard": "1", **labels})


async def test_sold_held_and_unticketed_orders_per_event(api: Api, conn: Any) -> None:
    event_id = await api.create_event(seats=40)
    other = await api.create_event(seats=40)  # a decoy: its figures are its own
    account = await api.account(conn)
    async with api.client(account) as c:
        assert (await hold(c, event_id, [1, 2, 3])).status_code == 201
    await conn.execute("UPDATE seat_inventory SET status = 'SOLD', order_id = gen_random_uuid(),"
                       " hold_id = NULL, hold_expires_at = NULL"
                       " WHERE event_id = $1 AND seat_id IN (7, 8)", event_id)
    # A paid order with no tickets yet, paid two minutes ago: a reconciliation difference.
    late = await make_order(conn, [21, 22])
    await conn.execute("UPDATE orders SET updated_at = now() - interval '2 minutes'"
                       " WHERE order_id = $1", late)
    fresh = await make_order(conn, [31])  # paid just now: its tickets are still due
    metrics = Metrics()
    await read_figures(conn, metrics)
    e = str(event_id)
    assert _value(metrics, "onsale_event_sold", event=e, kind="seats") == 2
    assert _value(metrics, "onsale_event_sold", event=e, kind="places") == 0
    assert _value(metrics, "onsale_event_held_seats", event=e) == 3
    assert _value(metrics, "onsale_event_held_seats", event=str(other)) == 0
    assert _value(metrics, "onsale_tickets_unreconciled_orders") == 1
    await conn.execute("INSERT INTO tickets (order_id, event_id, seat_id, code)"
                       " SELECT order_id, event_id, seat_id, gen_random_uuid()::text"
                       " FROM order_items WHERE order_id = $1", late)
    await read_figures(conn, metrics)
    assert _value(metrics, "onsale_tickets_unreconciled_orders") == 0
    assert await conn.fetchval("SELECT count(*) FROM tickets WHERE order_id = $1", fresh) == 0
