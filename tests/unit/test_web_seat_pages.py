"""The seat map, checkout and order pages without a server: money, the words
for each payment status, when the order page stops following, and what the
templates render from literal data (escaping included)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from onsale.web import seat_pages
from onsale.web.seat_pages import FINAL, PAYMENT_WORDS, TEST_CARDS, is_final, money, seat_label
from onsale.web.templating import templates

# Every payment status an order can have (docs/api.md, "The order").
PAYMENT_STATUSES = ("PENDING", "REQUIRES_ACTION", "UNKNOWN", "AUTHORIZED", "CAPTURED",
                    "DECLINED", "VOIDED", "CAPTURE_FAILED", "FAILED")
SEAT = {"seat_id": 12, "section": "S1", "row": "B", "number": 4, "tier": "Premium",
        "price_minor": 15000}


@pytest.mark.parametrize(("minor", "currency", "text"), [
    (15000, "USD", "150.00 USD"),
    (5, "EUR", "0.05 EUR"),
    (123456789, "USD", "1,234,567.89 USD"),
    (-250, "USD", "-2.50 USD"),
    (1500, "JPY", "1,500 JPY"),
])
def test_money_is_written_in_major_units(minor: int, currency: str, text: str) -> None:
    assert money(minor, currency) == text


def test_every_payment_status_has_words_and_the_final_ones_are_known() -> None:
    assert set(PAYMENT_WORDS) == set(PAYMENT_STATUSES)
    assert all(w.endswith(".") and "_" not in w for w in PAYMENT_WORDS.values())
    assert FINAL <= set(PAYMENT_STATUSES)
    assert not FINAL & {"PENDING", "REQUIRES_ACTION", "UNKNOWN", "AUTHORIZED"}


@pytest.mark.parametrize(("status", "tickets", "final"), [
    ("PENDING", [], False),
    ("UNKNOWN", [], False),
    ("REQUIRES_ACTION", [], False),
    ("AUTHORIZED", [], False),
    ("CAPTURED", [], False),                       # paid, tickets not issued yet
    ("CAPTURED", [{"seat_id": 1, "code": "X"}], True),
    ("DECLINED", [], True),
    ("FAILED", [], True),
])
def test_the_order_page_follows_until_final_with_tickets(status: str, tickets: list[Any],
                                                         final: bool) -> None:
    assert is_final({"payment_status": status, "tickets": tickets}) is final


def test_seats_are_labelled_like_the_scripts_do() -> None:
    assert seat_label(SEAT) == "Section S1, row B, seat 4"
    script = (seat_pages.__file__.replace("seat_pages.py", "static/js/seatmap_layout.js"))
    with open(script) as f:
        assert "`Section ${info.section}, row ${info.row}, seat ${info.number}`" in f.read()


def base_context(**context: Any) -> dict[str, Any]:
    return {"account": None, "messages_json": "{}", "money": money,
            "seat_label": seat_label, **context}


def order(**fields: Any) -> dict[str, Any]:
    base = {"order_id": "01a2273e-1b8d-751b-8228-40374280211d",
            "hold_id": "01a2273e-1ae6-7d7e-94be-37a63299ac5f", "event_id": 1,
            "order_status": "CONFIRMED", "payment_status": "CAPTURED", "next_action": None,
            "amount_minor": 15000, "currency": "USD", "seats": [SEAT], "tickets": []}
    base.update(fields)
    return base


def render_order(o: dict[str, Any]) -> str:
    labels = {s["seat_id"]: seat_label(s) for s in o["seats"]}
    page = {"order": o, "words": PAYMENT_WORDS, "final": sorted(FINAL), "done": is_final(o),
            "labels": {str(k): v for k, v in labels.items()}}
    return templates.get_template("seats/order.html").render(base_context(
        order=o, page=page, labels=labels, words=PAYMENT_WORDS[o["payment_status"]]))


def test_the_order_page_lists_tickets_and_carries_its_status() -> None:
    html = render_order(order(tickets=[{"ticket_id": "t", "seat_id": 12, "code": "ABC123",
                                        "value": "OT1.payload.signature"}]))
    assert 'id="order-status"' in html and 'data-status="CAPTURED"' in html
    assert re.search(r'<ul id="tickets"[^>]*>\s*<li data-seat-id="12">'
                     r"Section S1, row B, seat 4: <code>ABC123</code>", html)
    # its QR code (docs/tickets.md), named for its seat, with the signed value below it
    image = f"/orders/{order()['order_id']}/tickets/t.svg"
    assert f'<img src="{image}" alt="QR code of your ticket for Section S1, row B, seat 4">' \
        in html
    assert '<samp class="ticket-value">OT1.payload.signature</samp>' in html
    assert f'<a href="{image}?download" download>' in html
    assert "Paid. Your tickets are below." in html
    assert "150.00 USD" in html
    assert re.search(r'id="order-following"[^>]*hidden', html)  # final: no longer following


def test_a_pending_order_is_followed_and_offers_the_bank_page() -> None:
    action = {"type": "redirect_to_url",
              "redirect_to_url": {"url": "http://psp.test/3ds/pi_1", "return_url": "x"}}
    html = render_order(order(order_status="PENDING", payment_status="REQUIRES_ACTION",
                              next_action=action))
    assert 'data-status="REQUIRES_ACTION"' in html
    assert 'href="http://psp.test/3ds/pi_1"' in html
    assert not re.search(r'id="order-following"[^>]*hidden', html)
    declined = render_order(order(order_status="PENDING", payment_status="DECLINED"))
    assert 'href="/checkout/01a2273e-1ae6-7d7e-94be-37a63299ac5f"' in declined
    assert "Try another card" in declined


def test_data_from_the_database_is_escaped_in_html_and_in_the_page_data() -> None:
    evil = dict(SEAT, tier="<script>alert(1)</script>", section="</script><b>")
    html = render_order(order(seats=[evil]))
    assert "<script>alert(1)" not in html and "</script><b>" not in html
    data = re.search(r'<script type="application/json" id="order-data">(.*?)</script>', html, re.S)
    assert data is not None
    assert json.loads(data.group(1))["order"]["seats"][0]["tier"] == "<script>alert(1)</script>"


def render_checkout(status: str = "HELD") -> str:
    hold = {"hold_id": "01a2273e-1ae6-7d7e-94be-37a63299ac5f", "event_id": 3, "status": status,
            "expires_at": "2026-11-29T10:14:15.613054Z", "seats": [SEAT, dict(SEAT, seat_id=13)],
            "amount_minor": 30000, "currency": "USD"}
    page = {"hold": hold, "words": PAYMENT_WORDS, "final": sorted(FINAL), "now": "x",
            "seats_url": "/events/3/seats", "queue_url": "/events/3/queue",
            "provider": {"api_base": "http://psp.test", "publishable_key": "pk_test_page"}}
    return templates.get_template("seats/checkout.html").render(base_context(
        hold=hold, page=page, hold_words=seat_pages.HOLD_WORDS[status], cards=TEST_CARDS))


def test_the_checkout_page_has_the_card_form_the_total_and_the_test_cards() -> None:
    html = render_checkout()
    # number, expiry and CVC, none with a name: the browser tokenizes them at the
    # provider and no form submission can carry them to this site
    for field in ("card", "card-exp", "card-cvc"):
        tag = re.search(rf'<input id="{field}"[^>]*>', html)
        assert tag is not None, field
        assert "name=" not in tag.group(0) and "required" in tag.group(0)
    assert 'autocomplete="cc-exp"' in html and 'autocomplete="cc-csc"' in html
    data = re.search(r'<script type="application/json" id="checkout-data">(.*?)</script>',
                     html, re.S)
    assert data is not None
    assert json.loads(data.group(1))["provider"] == {"api_base": "http://psp.test",
                                                     "publishable_key": "pk_test_page"}
    assert 'id="pay-button"' in html and "Pay 300.00 USD" in html
    assert 'data-expires-at="2026-11-29T10:14:15.613054Z"' in html
    for number, _ in TEST_CARDS:
        assert f'data-card="{number}"' in html
    assert "4242 4242 4242 4242" in html and "3-D Secure" in html
    assert html.count('<tr data-seat-id=') == 2


def test_a_hold_that_cannot_be_paid_hides_the_form() -> None:
    html = render_checkout("EXPIRED")
    assert re.search(r'<form id="pay-form"[^>]*hidden', html)
    assert "Your hold on these seats has expired." in html


def test_the_seat_map_page_has_the_contract_elements() -> None:
    event = {"event_id": 3, "name": "Night", "venue_name": "Arena", "seat_count": 50000,
             "max_seats_per_hold": 6, "currency": "USD", "price_tiers": []}
    html = templates.get_template("seats/map.html").render(base_context(
        event=event, page={"event": event, "queue_url": "/events/3/queue"}))
    for element in ('<canvas id="seat-canvas"', 'id="pick-section"', 'id="pick-row"',
                    'id="pick-seat"', 'id="pick-add"', 'id="hold-button"', 'id="selection"',
                    'id="seat-legend"', 'id="best-quantity"', 'id="best-together"'):
        assert element in html, element
    assert "50,000 seats" in html
    assert html.count('<option value=') == 6  # best available: 1 to max_seats_per_hold
    assert '<script type="module" src="/static/js/seatmap.js">' in html


def test_the_routes_are_the_three_pages() -> None:
    paths = {getattr(r, "path", None) for r in seat_pages.routes}
    assert paths == {"/events/{event_id}/seats", "/checkout/{hold_id}", "/orders/{order_id}"}
