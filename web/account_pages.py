"""The shopper's own pages: "My orders" (``/orders``), every order of the signed-in
account, newest first, a page at a time (docs/web.md#my-orders). It reads what
``GET /api/orders`` returns (``core/read_model.py`` ``orders_page``); ``orders.js``
refreshes the orders still converging on their payment."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from onsale.core.read_model import order_cursor, orders_page
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared
from onsale.kernel.timefmt import parse_utc_iso
from onsale.kernel.venue_time import venue_when
from onsale.web.seat_pages import money, seat_label
from onsale.web.templating import problem_page, render, signed_in_account

# An order's state in a few words, by payment status (the order page says it in full).
STATE_WORDS: dict[str, str] = {
    "PENDING": "Waiting for payment",
    "REQUIRES_ACTION": "Your bank needs you to confirm",
    "UNKNOWN": "Payment being confirmed",
    "AUTHORIZED": "Paid, finishing",
    "CAPTURED": "Paid",
    "DECLINED": "Card declined",
    "VOIDED": "Cancelled, not charged",
    "CAPTURE_FAILED": "Cancelled, not charged",
    "FAILED": "Not completed, seats released",
}
PAGE_SIZE = 20


def state_words(order: dict[str, Any]) -> str:
    """The order's state as the list shows it; a paid order cancelled afterwards says so."""
    if order["order_status"] == "CANCELLED" and order["payment_status"] == "CAPTURED":
        return "Cancelled"
    if order["payment_status"] == "CAPTURED" and order["in_progress"]:
        return "Paid, tickets on the way"
    return STATE_WORDS.get(str(order["payment_status"]), str(order["payment_status"]))


def what_was_bought(order: dict[str, Any]) -> str:
    """The seats or the GA places, in words."""
    if "ga" in order:
        ga = order["ga"]
        return f"{ga['quantity']} × {ga['name']} (general admission)"
    return "; ".join(seat_label(seat) for seat in order["seats"])


async def my_orders(request: Request) -> Response:
    account = await signed_in_account(request)
    if account is None:
        return RedirectResponse(f"/signin?next={quote('/orders')}", status_code=303)
    cursor_raw = request.query_params.get("before")
    before = None if cursor_raw is None else order_cursor(cursor_raw)
    if cursor_raw is not None and before is None:
        return await problem_page(request, 400, "invalid_request", title="Not a page of orders")
    try:
        doc = await orders_page(shared(request).shard_set.pools, account, before, PAGE_SIZE)
    except Problem as problem:
        return await problem_page(request, problem.status, problem.code,
                                  title="Your orders cannot be read right now")
    orders = [{**o, "words": state_words(o), "bought": what_was_bought(o),
               "starts_when": venue_when(parse_utc_iso(o["event_starts_at"]),
                                         o["event_time_zone"]),
               "ordered_when": venue_when(parse_utc_iso(o["created_at"]),
                                          o["event_time_zone"]),
               "amount": money(o["amount_minor"], o["currency"])} for o in doc["orders"]]
    older = (f"/orders?{urlencode({'before': doc['next_cursor']})}"
             if doc["next_cursor"] else None)
    page = {"api": "/api/orders" + (f"?{urlencode({'before': cursor_raw})}" if cursor_raw
                                    else ""),
            "words": STATE_WORDS, "following": any(o["in_progress"] for o in orders)
            or not doc["complete"]}
    return await render(request, "account/orders.html", orders=orders, older=older,
                        first=before is None, complete=doc["complete"], page=page)


routes: list[BaseRoute] = [Route("/orders", my_orders, methods=["GET"])]
