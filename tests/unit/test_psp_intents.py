"""psp.intents: the PaymentIntent state machine, with literal inputs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from onsale.psp import intents
from onsale.psp.intents import PaymentIntent

NOW = 1_700_000_000.5
BASE = "http://psp.test"


def confirmed(card: str, return_url: str | None = None) -> intents.Transition:
    return intents.confirm("pi_1", amount=5000, currency="usd", card_number=card,
                           payment_method="pm_1", metadata={"operation_id": "op-1"},
                           return_url=return_url, now=NOW)


def authorized() -> PaymentIntent:
    return confirmed("4242424242424242").intent


def test_approved_card_is_authorized() -> None:
    t = confirmed("4242424242424242")
    assert t.event == intents.AMOUNT_CAPTURABLE_UPDATED
    assert t.intent.public(BASE) == {
        "id": "pi_1", "object": "payment_intent", "amount": 5000, "currency": "usd",
        "status": "requires_capture", "capture_method": "manual", "amount_capturable": 5000,
        "amount_received": 0, "payment_method": "pm_1", "last_payment_error": None,
        "next_action": None, "cancellation_reason": None, "canceled_at": None,
        "latest_charge": "ch_1", "client_secret": "pi_1_secret_sim",
        "confirmation_method": "automatic", "payment_method_types": ["card"],
        "description": None, "customer": None,
        "metadata": {"operation_id": "op-1"}, "created": 1_700_000_000, "livemode": False,
    }
    assert t.intent.authorized_at == NOW


@pytest.mark.parametrize("card, code, decline_code", [
    ("4000000000000002", "card_declined", "generic_decline"),
    ("4000000000009995", "card_declined", "insufficient_funds"),
    ("4000000000000069", "expired_card", "expired_card"),
    ("4242424242424241", "incorrect_number", None),
])
def test_declines_require_a_payment_method(card: str, code: str,
                                           decline_code: str | None) -> None:
    t = confirmed(card)
    assert t.event == intents.PAYMENT_FAILED
    public = t.intent.public(BASE)
    assert public["status"] == "requires_payment_method"
    assert public["amount_capturable"] == 0
    assert public["last_payment_error"]["code"] == code
    assert public["last_payment_error"].get("decline_code") == decline_code
    assert public["last_payment_error"]["type"] == "card_error"
    assert t.intent.authorized_at is None


def test_three_d_secure_requires_action_with_a_redirect() -> None:
    t = confirmed("4000002760003184", return_url="https://shop.test/back")
    assert t.event == intents.REQUIRES_ACTION
    public = t.intent.public(BASE + "/")
    assert public["status"] == "requires_action"
    assert public["next_action"] == {"type": "redirect_to_url", "redirect_to_url": {
        "url": "http://psp.test/3ds/pi_1", "return_url": "https://shop.test/back"}}


def test_authenticate_succeed_and_fail() -> None:
    pending = confirmed("4000002760003184").intent
    ok = intents.authenticate(pending, True, NOW + 10)
    assert (ok.intent.status, ok.intent.amount_capturable, ok.event) == (
        "requires_capture", 5000, intents.AMOUNT_CAPTURABLE_UPDATED)
    assert ok.intent.authorized_at == NOW + 10
    assert ok.intent.public(BASE)["next_action"] is None
    failed = intents.authenticate(pending, False, NOW + 10)
    assert failed.intent.status == "requires_payment_method"
    assert failed.event == intents.PAYMENT_FAILED
    assert failed.intent.last_payment_error is not None
    assert failed.intent.last_payment_error.code == "payment_intent_authentication_failure"


def test_authenticate_twice_changes_nothing() -> None:
    done = intents.authenticate(confirmed("4000002760003184").intent, True, NOW).intent
    again = intents.authenticate(done, False, NOW + 1)
    assert again == intents.Transition(done, None)


def test_capture() -> None:
    t = intents.capture(authorized(), None)
    assert (t.intent.status, t.intent.amount_received, t.intent.amount_capturable) == (
        "succeeded", 5000, 0)
    assert t.event == intents.SUCCEEDED
    partial = intents.capture(authorized(), 1200)
    assert partial.intent.amount_received == 1200
    with pytest.raises(intents.AmountTooLarge):
        intents.capture(authorized(), 5001)


@pytest.mark.parametrize("status", ["requires_payment_method", "requires_action",
                                    "succeeded", "canceled"])
def test_capture_from_other_states_is_refused(status: str) -> None:
    intent = replace(authorized(), status=status)  # type: ignore[arg-type]
    with pytest.raises(intents.UnexpectedState) as caught:
        intents.capture(intent, None)
    assert caught.value.intent is intent
    assert str(caught.value) == (f"This PaymentIntent's status is {status}; "
                                 "it cannot be captured.")


@pytest.mark.parametrize("status", ["requires_capture", "requires_action",
                                    "requires_payment_method"])
def test_cancel(status: str) -> None:
    intent = replace(authorized(), status=status)  # type: ignore[arg-type]
    t = intents.cancel(intent, "requested_by_customer")
    assert (t.intent.status, t.intent.cancellation_reason, t.event) == (
        "canceled", "requested_by_customer", intents.CANCELED)
    assert t.intent.amount_capturable == 0
    assert t.intent.public(BASE)["next_action"] is None


@pytest.mark.parametrize("status", ["succeeded", "canceled"])
def test_cancel_refused(status: str) -> None:
    with pytest.raises(intents.UnexpectedState):
        intents.cancel(replace(authorized(), status=status), "abandoned")  # type: ignore[arg-type]


def test_lapse_after_the_window_only() -> None:
    intent = authorized()
    assert intents.lapse(intent, NOW + 99.9, 100) is None
    t = intents.lapse(intent, NOW + 100, 100)
    assert t is not None
    assert (t.intent.status, t.intent.cancellation_reason, t.event) == (
        "canceled", "automatic", intents.CANCELED)
    assert intents.lapse(t.intent, NOW + 1000, 100) is None
    assert intents.lapse(intents.capture(intent, None).intent, NOW + 1000, 100) is None


def test_record_round_trip() -> None:
    for intent in (authorized(), confirmed("4000000000000002").intent,
                   confirmed("4000002760003184", "https://x.test/").intent):
        assert intents.from_record(intent.record()) == intent
