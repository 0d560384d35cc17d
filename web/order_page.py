"""GET /orders/{order_id}: where the provider sends the shopper back after
3-D Secure. It only reads the order (a redirect never confirms anything) and
follows it until its payment is final. The full shopper app replaces it."""

from __future__ import annotations

import html
import uuid

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from core.checkout import read_order
from core.problems import Problem
from core.sessions import current_account

FINAL = ("CAPTURED", "DECLINED", "VOIDED", "CAPTURE_FAILED", "FAILED")
SENTENCES = {
    "PENDING": "We are waiting for your payment.",
    "REQUIRES_ACTION": "Your bank needs you to confirm this payment.",
    "UNKNOWN": "Your payment is being confirmed with the bank; your seats are kept meanwhile.",
    "AUTHORIZED": "Your payment is authorized; finishing up.",
    "CAPTURED": "Paid. Your tickets are below.",
    "DECLINED": "Your card was declined. You can try another card while your hold lasts.",
    "VOIDED": "This payment was cancelled and you were not charged.",
    "CAPTURE_FAILED": "The payment could not be completed; the order was cancelled.",
    "FAILED": "The payment did not complete in time; the seats were released.",
}


async def order_page(request: Request) -> Response:
    try:
        order_id = uuid.UUID(request.path_params["order_id"])
        order = await read_order(request.app.state.db, order_id, current_account(request))
    except (ValueError, Problem):
        return HTMLResponse("<!doctype html><title>Order not found</title>"
                            "<p>No such order for this account. Are you signed in?</p>",
                            status_code=404)
    status = str(order["payment_status"])
    tickets = "".join(f"<li>Seat {t['seat_id']}: <code>{html.escape(t['code'])}</code></li>"
                      for t in order["tickets"])
    refresh = "" if status in FINAL and (order["tickets"] or status != "CAPTURED") else \
        "<meta http-equiv=refresh content=2>"
    return HTMLResponse(
        f"<!doctype html><html lang=en><meta charset=utf-8>{refresh}<title>Your order</title>"
        "<body style='font-family:system-ui;max-width:40rem;margin:2rem auto'>"
        f"<h1>Order {html.escape(str(order['order_id']))[:8]}</h1>"
        f"<p>{html.escape(SENTENCES.get(status, status))}</p>"
        f"<p>Status: {html.escape(str(order['order_status']))} · payment "
        f"{html.escape(status)} · {order['amount_minor'] / 100:,.2f} "
        f"{html.escape(str(order['currency']))}</p>"
        f"<ul>{tickets}</ul></body></html>")
