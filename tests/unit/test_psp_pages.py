"""psp.pages and psp.events: the 3-D Secure HTML and the event bytes."""

from __future__ import annotations

import json
import re

from onsale.psp import events, intents, pages


def intent(return_url: str | None) -> intents.PaymentIntent:
    return intents.confirm("pi_<x>", amount=1234, currency="usd",
                           card_number="4000002760003184", payment_method="pm_1",
                           metadata={}, return_url=return_url,
                           now=1_700_000_000).intent


def test_challenge_is_a_plain_form_with_both_buttons() -> None:
    html = pages.challenge(intent(None))
    assert '<form method="post" action="/3ds/pi_&lt;x&gt;">' in html
    assert 'name="result" value="succeed">Complete authentication' in html
    assert 'name="result" value="fail">Fail authentication' in html
    assert "12.34 USD" in html
    assert "<script" not in html
    assert "pi_<x>" not in html  # escaped


def test_return_to_appends_the_payment_intent() -> None:
    assert pages.return_to(intent("https://shop.test/back")) == \
        "https://shop.test/back?payment_intent=pi_%3Cx%3E"
    assert pages.return_to(intent("https://shop.test/back?a=1#top")) == \
        "https://shop.test/back?a=1&payment_intent=pi_%3Cx%3E#top"


def test_done_page_links_back_when_there_is_a_return_url() -> None:
    assert "Return to the merchant" in pages.done(intent("https://shop.test/b"))
    assert "Return to the merchant" not in pages.done(intent(None))
    assert "requires_action" in pages.done(intent(None))


def test_ids_and_event_body() -> None:
    assert re.fullmatch(r"pi_[0-9a-f]{24}", events.new_id("pi"))
    assert re.fullmatch(r"evt_[0-9a-f]{24}", events.new_id("evt"))
    assert events.new_id("evt") != events.new_id("evt")
    raw = events.body("evt_1", "payment_intent.succeeded", 1_700_000_000, {"id": "pi_1"})
    assert json.loads(raw) == {"id": "evt_1", "object": "event",
                               "type": "payment_intent.succeeded", "created": 1_700_000_000,
                               "data": {"object": {"id": "pi_1"}}, "livemode": False,
                               "api_version": events.API_VERSION, "pending_webhooks": 1,
                               "request": {"id": None, "idempotency_key": None}}
    assert b" " not in raw
