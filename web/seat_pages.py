"""The seat map, checkout and order pages (docs/web.md).

The server renders what it knows (the event, the hold, the order) so each
page reads well before any script runs; the scripts under ``web/static/js``
(``seatmap*.js``, ``checkout.js``, ``order.js``) keep them live through the
same JSON API as any other client. These handlers only read: a page view
never changes a hold, an order or a payment.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from onsale.core.hold_state import HoldState
from onsale.core.payment_state import PaymentStatus
from onsale.core.read_model import event_document, hold_document, order_document, ticket_keys
from onsale.kernel.config import Settings
from onsale.kernel.db import Database
from onsale.kernel.inputs import parse_id, parse_uuid
from onsale.kernel.problems import Problem
from onsale.kernel.shared import shared
from onsale.kernel.timefmt import utc_iso
from onsale.web.templating import problem_page, render, signed_in_account

# What the shopper reads for each payment status of an order (docs/api.md).
PAYMENT_WORDS: dict[str, str] = {
    PaymentStatus.PENDING: "We are waiting for your payment.",
    PaymentStatus.REQUIRES_ACTION: "Your bank needs you to confirm this payment.",
    PaymentStatus.UNKNOWN:
        "Your payment is being confirmed with the bank. Your seats are kept meanwhile.",
    PaymentStatus.AUTHORIZED: "Your payment is authorized. We are finishing your order.",
    PaymentStatus.CAPTURED: "Paid. Your tickets are below.",
    PaymentStatus.DECLINED:
        "Your card was declined. You can try another card while your hold lasts.",
    PaymentStatus.VOIDED: "This payment was cancelled and you were not charged.",
    PaymentStatus.CAPTURE_FAILED: "The payment could not be completed, so the order was "
                                  "cancelled. You were not charged.",
    PaymentStatus.FAILED: "The payment did not complete in time, so the seats were released.",
}
# Payment statuses after which nothing changes by itself (DECLINED waits for
# the shopper to try another card).
FINAL = frozenset({PaymentStatus.CAPTURED, PaymentStatus.DECLINED, PaymentStatus.VOIDED,
                   PaymentStatus.CAPTURE_FAILED, PaymentStatus.FAILED})

HOLD_WORDS: dict[str, str] = {
    HoldState.HELD: "These seats are held for you until the time runs out.",
    HoldState.PAYMENT_PENDING: "A payment for these seats is already in progress.",
    HoldState.CONFIRMED: "These seats have already been paid for.",
    HoldState.RELEASED: "This hold was released. Please choose seats again.",
    HoldState.EXPIRED: "Your hold on these seats has expired. Please choose seats again.",
}

# Stripe's test cards (the simulator knows them too; docs/psp.md), shown as hints.
TEST_CARDS: tuple[tuple[str, str], ...] = (
    ("4242 4242 4242 4242", "approved"),
    ("4000 0000 0000 0002", "declined"),
    ("4000 0000 0000 9995", "declined: insufficient funds"),
    ("4000 0027 6000 3184", "asks for 3-D Secure"),
)

# ISO 4217 currencies without minor units; every other one has two.
ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
                          "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"})


def money(amount_minor: int, currency: str) -> str:
    """``15000, "USD"`` -> ``"150.00 USD"`` (what the scripts show too)."""
    if currency.upper() in ZERO_DECIMAL:
        return f"{amount_minor:,} {currency}"
    sign = "-" if amount_minor < 0 else ""
    major, minor = divmod(abs(amount_minor), 100)
    return f"{sign}{major:,}.{minor:02d} {currency}"


def seat_label(seat: dict[str, Any]) -> str:
    return f"Section {seat['section']}, row {seat['row']}, seat {seat['number']}"


def ticket_label(ticket: dict[str, Any], order: dict[str, Any]) -> str:
    """What a ticket admits to, in words: its seat, or its place of a GA tier."""
    if ticket.get("place"):
        tier = order["ga"]["name"] if order.get("ga") else "General admission"
        return f"{tier}, place {ticket['place']}"
    for seat in order["seats"]:
        if seat["seat_id"] == ticket.get("seat_id"):
            return seat_label(seat)
    return f"Seat {ticket.get('seat_id')}"


def is_final(order: dict[str, Any]) -> bool:
    """Whether the order page can stop following the order: its payment is
    final and, once paid, its tickets are there."""
    status = str(order["payment_status"])
    return status in FINAL and (status != PaymentStatus.CAPTURED or bool(order["tickets"]))


def _uuid(value: str) -> uuid.UUID | None:
    return parse_uuid(value)


def _sign_in(request: Request) -> Response:
    return RedirectResponse(f"/signin?next={quote(request.url.path)}", status_code=303)


async def seat_map_page(request: Request) -> Response:
    if await signed_in_account(request) is None:
        return _sign_in(request)
    event_id = parse_id(request.path_params["event_id"])
    event = None if event_id is None else await event_document(shared(request).shard_set, event_id)
    if event is None:
        return await problem_page(request, 404, "event_not_found", title="Event not found")
    page = {"event": event, "queue_url": f"/events/{event_id}/queue"}
    return await render(request, "seats/map.html", event=event, page=page, money=money)


def test_mode(settings: Settings) -> bool:
    """No real money moves: the simulator, or a Stripe test-mode key. Only then does the
    page offer test cards (a live shop says nothing of the kind)."""
    return settings.allow_simulator or settings.stripe_publishable_key.startswith("pk_test_")


def made_by(request: Request, made: uuid.UUID) -> Database | None:
    """The shard whose id this is (docs/scaling.md#routing); None: no listed shard's."""
    shards = shared(request).shard_set
    shard_id = shards.placement.shard_of_id(made)
    return None if shard_id is None else shards.pools.get(shard_id)


async def checkout_page(request: Request) -> Response:
    account = await signed_in_account(request)
    if account is None:
        return _sign_in(request)
    hold_id = _uuid(request.path_params["hold_id"])
    db = None if hold_id is None else made_by(request, hold_id)
    hold = None if db is None or hold_id is None else await hold_document(db, hold_id, account)
    if hold is None:
        return await problem_page(request, 404, "hold_not_found", title="Seats not found")
    settings = shared(request).settings
    page = {"hold": hold, "words": PAYMENT_WORDS, "final": sorted(FINAL),
            "now": utc_iso(datetime.now(UTC)),  # the countdown corrects the browser's clock
            "seats_url": f"/events/{hold['event_id']}/seats",
            "queue_url": f"/events/{hold['event_id']}/queue",
            # The card is tokenized in the browser at the provider (Stripe's
            # PaymentMethods API with the publishable key): only a pm_… id comes here.
            "provider": {"api_base": settings.stripe_api_base,
                         "publishable_key": settings.stripe_publishable_key}}
    return await render(request, "seats/checkout.html", hold=hold, page=page, money=money,
                  seat_label=seat_label, hold_words=HOLD_WORDS.get(hold["status"], ""),
                  cards=TEST_CARDS if test_mode(settings) else ())


async def order_page(request: Request) -> Response:
    """Where checkout's 3-D Secure return URL points (ONSALE_PUBLIC_URL/orders/{id}).
    It only reads the order: arriving here confirms nothing."""
    account = await signed_in_account(request)
    if account is None:
        return _sign_in(request)
    order_id = _uuid(request.path_params["order_id"])
    order = None
    db = None if order_id is None else made_by(request, order_id)
    if db is not None and order_id is not None:
        try:
            order = await order_document(db, order_id, account,
                                         ticket_keys(shared(request).settings))
        except Problem:  # as before: a page that cannot read the order says it is not found
            order = None
    if order is None:
        return await problem_page(request, 404, "order_not_found", title="Order not found")
    labels = {int(seat["seat_id"]): seat_label(seat) for seat in order["seats"]}
    page = {"order": order, "words": PAYMENT_WORDS, "final": sorted(FINAL),
            "done": is_final(order), "labels": {str(k): v for k, v in labels.items()}}
    words = PAYMENT_WORDS.get(str(order["payment_status"]), "")
    return await render(request, "seats/order.html", order=order, page=page, money=money,
                  seat_label=seat_label, labels=labels, words=words)


routes: list[BaseRoute] = [
    Route("/events/{event_id}/seats", seat_map_page, methods=["GET"]),
    Route("/checkout/{hold_id}", checkout_page, methods=["GET"]),
    Route("/orders/{order_id}", order_page, methods=["GET"]),
]
