"""What each provider answer means for an operation (core/payment_rules.py)."""

from __future__ import annotations

from typing import Any

import pytest

from onsale.core.payment_rules import (
    ProviderAnswer,
    after_lookup,
    can_change,
    classify,
    from_intent,
    webhook_outcomes,
)


def pi(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "pi_1", "object": "payment_intent", "status": status, **extra}


def declined(decline_code: str, code: str = "card_declined") -> dict[str, Any]:
    return {"error": {"type": "card_error", "code": code, "decline_code": decline_code,
                      "payment_intent": pi("requires_payment_method")}}


@pytest.mark.parametrize("answer", [
    ProviderAnswer(None, None, "ReadTimeout"),
    ProviderAnswer(500, {"error": {"type": "api_error"}}),
    ProviderAnswer(502, None),
    ProviderAnswer(409, {"error": {"type": "idempotency_error"}}),
    ProviderAnswer(429, None),
    ProviderAnswer(401, {"error": {"type": "authentication_error"}}),
    ProviderAnswer(400, {"error": {"type": "idempotency_error", "code": "idempotency_key_in_use"}}),
    ProviderAnswer(200, {"object": "list"}),
    ProviderAnswer(404, None),  # a proxy's page, not the provider's answer
    ProviderAnswer(400, {"message": "bad gateway config"}),
    ProviderAnswer(404, {"error": {"type": "invalid_request_error", "code": "url_invalid"}}),
])
@pytest.mark.parametrize("kind", ["AUTHORIZE", "CAPTURE", "VOID"])
def test_no_definitive_answer_is_unknown_never_failure(kind: str, answer: ProviderAnswer) -> None:
    assert classify(kind, answer).outcome == "UNKNOWN"


def test_authorize_outcomes() -> None:
    assert classify("AUTHORIZE", ProviderAnswer(200, pi("requires_capture"))).outcome == \
        "AUTHORIZED"
    action = {"type": "redirect_to_url", "redirect_to_url": {"url": "http://psp/3ds/pi_1"}}
    out = classify("AUTHORIZE", ProviderAnswer(200, pi("requires_action", next_action=action)))
    assert (out.outcome, out.next_action, out.provider_ref) == ("REQUIRES_ACTION", action, "pi_1")
    out = classify("AUTHORIZE", ProviderAnswer(402, declined("insufficient_funds")))
    assert (out.outcome, out.failure_code, out.provider_ref) == \
        ("DECLINED", "insufficient_funds", "pi_1")
    out = classify("AUTHORIZE", ProviderAnswer(402, {"error": {"type": "card_error",
                                                                "code": "expired_card"}}))
    assert (out.outcome, out.failure_code) == ("DECLINED", "expired_card")
    out = classify("AUTHORIZE", ProviderAnswer(400, {"error": {
        "type": "invalid_request_error", "code": "parameter_invalid"}}))
    assert (out.outcome, out.failure_code) == ("DECLINED", "parameter_invalid")


def test_capture_outcomes() -> None:
    assert classify("CAPTURE", ProviderAnswer(200, pi("succeeded"))).outcome == "CAPTURED"
    lapsed = {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
                        "payment_intent": pi("canceled", cancellation_reason="automatic")}}
    out = classify("CAPTURE", ProviderAnswer(400, lapsed))
    assert (out.outcome, out.failure_code) == ("CAPTURE_FAILED", "automatic")
    already = {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
                         "payment_intent": pi("succeeded")}}
    assert classify("CAPTURE", ProviderAnswer(400, already)).outcome == "CAPTURED"
    missing = {"error": {"type": "invalid_request_error", "code": "resource_missing"}}
    assert classify("CAPTURE", ProviderAnswer(404, missing)).outcome == "CAPTURE_FAILED"
    assert classify("VOID", ProviderAnswer(404, missing)).outcome == "VOIDED"


def test_void_outcomes() -> None:
    assert classify("VOID", ProviderAnswer(200, pi("canceled"))).outcome == "VOIDED"
    already = {"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
                         "payment_intent": pi("canceled")}}
    assert classify("VOID", ProviderAnswer(400, already)).outcome == "VOIDED"
    captured = {"error": {"type": "invalid_request_error",
                          "code": "payment_intent_unexpected_state",
                          "payment_intent": pi("succeeded")}}
    assert classify("VOID", ProviderAnswer(400, captured)).outcome == "VOID_FAILED"


def test_intent_states_for_an_authorization() -> None:
    assert from_intent("AUTHORIZE", pi("requires_capture")).outcome == "AUTHORIZED"
    assert from_intent("AUTHORIZE", pi("canceled")).outcome == "NO_AUTHORIZATION"
    assert from_intent("AUTHORIZE", pi("processing")).outcome == "UNKNOWN"
    failed = pi("requires_payment_method", last_payment_error={
        "code": "payment_intent_authentication_failure"})
    assert from_intent("AUTHORIZE", failed).failure_code == \
        "payment_intent_authentication_failure"
    with pytest.raises(ValueError):
        from_intent("REFUND", pi("succeeded"))


def test_webhook_events_map_to_operations() -> None:
    assert [(k, o.outcome) for k, o in webhook_outcomes(
        "payment_intent.amount_capturable_updated", pi("requires_capture"))] == \
        [("AUTHORIZE", "AUTHORIZED")]
    assert [(k, o.outcome) for k, o in webhook_outcomes(
        "payment_intent.succeeded", pi("succeeded"))] == [("CAPTURE", "CAPTURED")]
    assert [(k, o.outcome) for k, o in webhook_outcomes(
        "payment_intent.canceled", pi("canceled"))] == \
        [("VOID", "VOIDED"), ("AUTHORIZE", "NO_AUTHORIZATION")]
    assert webhook_outcomes("charge.refunded", pi("succeeded")) == []


def test_reconciler_releases_only_after_the_grace_and_voids_3ds_first() -> None:
    assert after_lookup(None, past_grace=False).action == "wait"
    gone = after_lookup(None, past_grace=True)
    assert (gone.action, gone.outcome and gone.outcome.outcome) == ("apply", "NO_AUTHORIZATION")
    assert after_lookup(pi("requires_action"), past_grace=False).action == "wait"
    assert after_lookup(pi("requires_action"), past_grace=True).action == "abandon"
    found = after_lookup(pi("requires_capture"), past_grace=True)
    assert (found.action, found.outcome and found.outcome.outcome) == ("apply", "AUTHORIZED")
    assert after_lookup(pi("processing"), past_grace=True).action == "wait"


def test_only_changes_that_can_happen_are_applied() -> None:
    assert not can_change("AUTHORIZE", "SUCCEEDED", "DECLINED")
    assert not can_change("CAPTURE", "SUCCEEDED", "CAPTURED")
    assert not can_change("AUTHORIZE", "FAILED", "DECLINED")
    assert can_change("AUTHORIZE", "FAILED", "AUTHORIZED")  # late: must be voided
    assert not can_change("CAPTURE", "FAILED", "CAPTURED")
    assert can_change("AUTHORIZE", "REQUIRES_ACTION", "AUTHORIZED")
    assert not can_change("AUTHORIZE", "UNKNOWN", "UNKNOWN")
