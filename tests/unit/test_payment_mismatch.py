"""An answer whose PaymentIntent contradicts its payment operation is UNKNOWN, never a
sale, a capture, a void or a release (core/payment_rules.py: mismatch, checked,
after_lookup). Literal inputs only."""

from __future__ import annotations

from typing import Any

import pytest

from onsale.core.payment_rules import (
    MISMATCH,
    ProviderAnswer,
    Recorded,
    after_lookup,
    checked,
    is_mismatch,
    mismatch,
    mismatched,
)

OP = "0190a7c4-0000-7000-8000-000000000001"
RECORDED = Recorded(2500, "EUR", None, OP)


def pi(status: str = "requires_capture", **extra: Any) -> dict[str, Any]:
    return {"id": "pi_1", "object": "payment_intent", "status": status, "amount": 2500,
            "currency": "eur", "amount_received": 0, "metadata": {"operation_id": OP}, **extra}


@pytest.mark.parametrize(("recorded", "intent"), [
    (RECORDED, pi()),
    (RECORDED, pi(currency="EUR")),  # currency compared without case (Stripe: lower case)
    (Recorded(2500, "EUR"), pi(metadata={})),  # nothing recorded to compare: agrees
    (RECORDED, pi(metadata={})),  # a metadata-less intent names no other operation
    (Recorded(2500, "EUR", "pi_1", OP), pi()),
    (RECORDED, pi("succeeded", amount_received=2500)),
    (Recorded(2500, "EUR ", "pi_1", None), pi()),  # char(3) padding
])
def test_an_intent_that_agrees_is_no_mismatch(recorded: Recorded, intent: dict[str, Any]) -> None:
    assert mismatch(recorded, intent) is None


@pytest.mark.parametrize(("recorded", "intent", "field"), [
    (Recorded(2500, "EUR", "pi_1", OP), pi(id="pi_2"), "id"),
    (RECORDED, pi(id=None), "id"),
    (RECORDED, pi(id=""), "id"),
    (RECORDED, pi(metadata={"operation_id": "0190a7c4-0000-7000-8000-000000000002"}),
     "operation"),
    (RECORDED, pi(amount=2501), "amount"),
    (RECORDED, pi(amount=250), "amount"),
    (RECORDED, pi(amount="2500"), "amount"),  # not a number
    (RECORDED, pi(amount=True), "amount"),
    (RECORDED, {k: v for k, v in pi().items() if k != "amount"}, "amount"),
    (RECORDED, pi("succeeded", amount_received=100), "amount"),  # a partial capture
    (RECORDED, pi(currency="usd"), "currency"),
    (RECORDED, pi(currency=None), "currency"),
    # The first field that differs is named: id before amount before currency.
    (Recorded(2500, "EUR", "pi_1", OP), pi(id="pi_9", amount=1, currency="usd"), "id"),
    (RECORDED, pi(amount=1, currency="usd"), "amount"),
])
def test_the_field_that_contradicts_is_named(recorded: Recorded, intent: dict[str, Any],
                                             field: str) -> None:
    assert mismatch(recorded, intent) == field


def test_no_intent_contradicts_nothing() -> None:
    assert mismatch(RECORDED, None) is None


@pytest.mark.parametrize(("kind", "answer"), [
    ("AUTHORIZE", ProviderAnswer(200, pi(amount=9900))),
    ("AUTHORIZE", ProviderAnswer(200, pi(currency="usd"))),
    ("AUTHORIZE", ProviderAnswer(200, pi("succeeded", amount=1))),
    ("AUTHORIZE", ProviderAnswer(200, pi("requires_action", amount=1))),
    ("AUTHORIZE", ProviderAnswer(200, pi("canceled", currency="gbp"))),
    # A decline about another intent releases nothing either.
    ("AUTHORIZE", ProviderAnswer(402, {"error": {
        "type": "card_error", "code": "card_declined",
        "payment_intent": pi("requires_payment_method", amount=1)}})),
    ("CAPTURE", ProviderAnswer(200, pi("succeeded", id="pi_other"))),
    ("CAPTURE", ProviderAnswer(200, pi("succeeded", amount_received=1))),
    ("CAPTURE", ProviderAnswer(400, {"error": {
        "type": "invalid_request_error", "code": "payment_intent_unexpected_state",
        "payment_intent": pi("canceled", id="pi_other")}})),
    ("VOID", ProviderAnswer(200, pi("canceled", currency="usd"))),
])
def test_a_contradicting_answer_is_unknown(kind: str, answer: ProviderAnswer) -> None:
    recorded = RECORDED if kind == "AUTHORIZE" else RECORDED.for_intent("pi_1")
    outcome, field = checked(kind, answer, recorded)
    assert field is not None
    assert (outcome.outcome, outcome.failure_code) == ("UNKNOWN", MISMATCH + field)
    assert is_mismatch(outcome)


@pytest.mark.parametrize(("kind", "answer", "want"), [
    ("AUTHORIZE", ProviderAnswer(200, pi()), "AUTHORIZED"),
    ("AUTHORIZE", ProviderAnswer(None, None, "ReadTimeout"), "UNKNOWN"),
    ("AUTHORIZE", ProviderAnswer(402, {"error": {
        "type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
        "payment_intent": pi("requires_payment_method")}}), "DECLINED"),
    # A 5xx is not the provider's word: nothing is checked, it stays a plain UNKNOWN.
    ("AUTHORIZE", ProviderAnswer(500, {"error": {"type": "api_error",
                                                 "payment_intent": pi(amount=1)}}), "UNKNOWN"),
    ("CAPTURE", ProviderAnswer(200, pi("succeeded", amount_received=2500)), "CAPTURED"),
    ("CAPTURE", ProviderAnswer(404, {"error": {"type": "invalid_request_error",
                                               "code": "resource_missing"}}), "CAPTURE_FAILED"),
    ("VOID", ProviderAnswer(200, pi("canceled")), "VOIDED"),
])
def test_an_agreeing_answer_is_classified_as_before(kind: str, answer: ProviderAnswer,
                                                    want: str) -> None:
    recorded = RECORDED if kind == "AUTHORIZE" else RECORDED.for_intent("pi_1")
    outcome, field = checked(kind, answer, recorded)
    assert (outcome.outcome, field, is_mismatch(outcome)) == (want, None, False)


def test_the_reconciler_never_applies_nor_voids_a_contradicting_intent() -> None:
    recorded = Recorded(2500, "EUR", "pi_1", OP)
    for found in (pi(amount=1), pi(id="pi_2"), pi(currency="usd"),
                  pi("requires_action", amount=1)):
        for past_grace in (False, True):
            decision = after_lookup(found, past_grace, recorded)
            assert decision.action == "mismatch"
            assert decision.outcome is not None and is_mismatch(decision.outcome)
    # Agreeing intents decide as they always did; without ``recorded`` nothing is checked.
    assert after_lookup(pi(), True, recorded).action == "apply"
    assert after_lookup(pi("requires_action"), True, recorded).action == "abandon"
    assert after_lookup(None, True, recorded).action == "apply"
    assert after_lookup(pi(amount=1), True).action == "apply"


def test_the_mismatch_outcome_keeps_the_intent_id_for_the_trail_only() -> None:
    outcome = mismatched("amount", pi(id="pi_7"))
    assert (outcome.outcome, outcome.provider_ref, outcome.failure_code) == \
        ("UNKNOWN", "pi_7", "mismatch_amount")
    assert mismatched("id").provider_ref is None
    assert RECORDED.for_intent("pi_3") == Recorded(2500, "EUR", "pi_3", OP)
