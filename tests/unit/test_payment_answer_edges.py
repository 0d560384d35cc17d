"""The edges of core/payment_rules.py that no other test took (issue 22, part 5): each
case kills a plausible one-line slip in the classification of provider answers
(scripts/mutants.py). Literal inputs only."""

from __future__ import annotations

from typing import Any

import pytest

from onsale.core.payment_rules import (
    Outcome,
    ProviderAnswer,
    Recorded,
    can_change,
    checked,
    classify,
    from_intent,
    is_mismatch,
    mismatch,
)
from onsale.core.payment_state import PaymentOutcome

OP = "0190a7c4-0000-7000-8000-000000000001"


def pi(status: str = "requires_capture", **extra: Any) -> dict[str, Any]:
    return {"id": "pi_1", "object": "payment_intent", "status": status, "amount": 2500,
            "currency": "eur", "amount_received": 0, "metadata": {"operation_id": OP},
            **extra}


def error(type_: str = "invalid_request_error", **fields: Any) -> dict[str, Any]:
    return {"error": {"type": type_, **fields}}


# --- mismatch: only an int is an amount ----------------------------------------------------


@pytest.mark.parametrize("amount", [2500.0, "2500"], ids=["float", "string"])
def test_an_amount_that_is_not_an_integer_contradicts(amount: Any) -> None:
    assert mismatch(Recorded(2500, "EUR"), pi(amount=amount)) == "amount"


def test_true_is_not_an_amount_of_one() -> None:
    assert mismatch(Recorded(1, "EUR"), pi(amount=True)) == "amount"


def test_an_intent_id_that_is_not_a_string_contradicts() -> None:
    assert mismatch(Recorded(2500, "EUR"), pi(id=1234)) == "id"


def test_a_succeeded_intent_without_amount_received_is_no_mismatch() -> None:
    intent = pi("succeeded")
    del intent["amount_received"]
    assert mismatch(Recorded(2500, "EUR"), intent) is None


def test_a_decline_code_that_starts_like_a_mismatch_is_not_one() -> None:
    """Only an UNKNOWN carries a mismatch; a provider's own code is just a code."""
    assert is_mismatch(Outcome(PaymentOutcome.DECLINED, "pi_1", "mismatch_cvc")) is False
    assert is_mismatch(Outcome(PaymentOutcome.UNKNOWN, "pi_1", "mismatch_amount")) is True


# --- the failure codes an outcome carries ------------------------------------------------------


@pytest.mark.parametrize("fields", [{"decline_code": 42}, {"code": ""}, {}],
                         ids=["not-a-string", "empty", "none"])
def test_a_decline_without_a_usable_code_is_declined(fields: dict[str, Any]) -> None:
    out = classify("AUTHORIZE", ProviderAnswer(402, error("card_error", **fields)))
    assert (out.outcome, out.failure_code) == ("DECLINED", "declined")


def test_an_empty_code_in_the_error_defers_to_the_intents_last_error() -> None:
    last = {"code": "card_declined", "decline_code": "insufficient_funds"}
    body = error("card_error", code="",
                 payment_intent=pi("requires_payment_method", last_payment_error=last))
    out = classify("AUTHORIZE", ProviderAnswer(402, body))
    assert (out.outcome, out.failure_code) == ("DECLINED", "insufficient_funds")


def test_intent_states_carry_their_failure_codes() -> None:
    declined = from_intent("AUTHORIZE", pi("requires_payment_method"))
    assert (declined.outcome, declined.failure_code) == ("DECLINED", "declined")
    cancelled = from_intent("AUTHORIZE", pi("canceled"))
    assert (cancelled.outcome, cancelled.failure_code) == ("NO_AUTHORIZATION", "canceled")
    capture = from_intent("CAPTURE", pi("canceled"))  # no cancellation_reason
    assert (capture.outcome, capture.failure_code) == ("CAPTURE_FAILED", "canceled")


def test_a_void_of_a_captured_intent_failed_and_of_a_busy_one_is_unknown() -> None:
    captured = from_intent("VOID", pi("succeeded"))
    assert (captured.outcome, captured.failure_code) == ("VOID_FAILED", "already_captured")
    assert from_intent("VOID", pi("processing")).outcome == "UNKNOWN"


# --- capture and void errors ---------------------------------------------------------------


@pytest.mark.parametrize(("status", "body", "want"), [
    # a 400 naming no intent: the capture was refused
    (400, error(code="charge_expired_for_capture"),
     ("CAPTURE_FAILED", None, "charge_expired_for_capture")),
    (400, error(), ("CAPTURE_FAILED", None, "capture_failed")),
    (402, error("card_error", code="card_declined"), ("CAPTURE_FAILED", None, "card_declined")),
    # a 402 with an intent still capturable: refused, by the status code alone
    (402, error("card_error", code="card_declined", payment_intent=pi()),
     ("CAPTURE_FAILED", None, "card_declined")),
    # a 400 with an intent in no final state: refused, named after the intent
    (400, error(code="charge_expired_for_capture", payment_intent=pi()),
     ("CAPTURE_FAILED", "pi_1", "charge_expired_for_capture")),
    (400, error(payment_intent=pi()), ("CAPTURE_FAILED", "pi_1", "capture_failed")),
    # only a 404 says the intent is missing
    (404, error(code="resource_missing"), ("CAPTURE_FAILED", None, "resource_missing")),
    (410, error(code="resource_missing"), ("UNKNOWN", None, None)),
])
def test_capture_errors(status: int, body: dict[str, Any],
                        want: tuple[str, str | None, str | None]) -> None:
    out = classify("CAPTURE", ProviderAnswer(status, body))
    assert (out.outcome, out.provider_ref, out.failure_code) == want


@pytest.mark.parametrize(("status", "body", "want"), [
    (400, error(code="intent_invalid_state", payment_intent=pi()),
     ("VOID_FAILED", "pi_1", "intent_invalid_state")),
    (400, error(payment_intent=pi()), ("VOID_FAILED", "pi_1", "void_failed")),
    (400, error(code="parameter_invalid"), ("UNKNOWN", None, None)),  # no intent: no verdict
    (402, error("card_error", payment_intent=pi()), ("UNKNOWN", None, None)),
    (404, error(code="resource_missing"), ("VOIDED", None, "no_such_intent")),
    (410, error(code="resource_missing"), ("UNKNOWN", None, None)),
])
def test_void_errors(status: int, body: dict[str, Any],
                     want: tuple[str, str | None, str | None]) -> None:
    out = classify("VOID", ProviderAnswer(status, body))
    assert (out.outcome, out.provider_ref, out.failure_code) == want


# --- ambiguous answers are not checked against the operation ----------------------------------


@pytest.mark.parametrize("status", [401, 403, 409, 429, 500])
def test_an_ambiguous_answer_is_unknown_and_not_a_mismatch(status: int) -> None:
    """Not the provider's word on this payment: even an intent in it that contradicts
    the operation is not recorded as a mismatch."""
    body = error("api_error", payment_intent=pi(id="pi_other"))
    out, field = checked("AUTHORIZE", ProviderAnswer(status, body), Recorded(2500, "EUR", "pi_1"))
    assert (out.outcome, out.failure_code, field) == ("UNKNOWN", None, None)


def test_only_an_authorization_turns_up_after_failing() -> None:
    assert can_change("AUTHORIZE", "FAILED", "AUTHORIZED") is True
    assert can_change("CAPTURE", "FAILED", "AUTHORIZED") is False
    assert can_change("VOID", "FAILED", "AUTHORIZED") is False
