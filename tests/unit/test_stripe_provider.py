"""core.stripe_provider: what the SDK's answers and errors mean for core (literal SDK
objects, no network)."""

from __future__ import annotations

import stripe

from onsale.core.stripe_provider import answer_from_error, answer_from_object

DECLINE = {"error": {"type": "card_error", "code": "card_declined",
                     "decline_code": "generic_decline", "message": "Your card was declined."}}


def test_a_card_error_keeps_its_status_and_stripes_error_object() -> None:
    exc = stripe.CardError("Your card was declined.", None, "card_declined",
                           http_status=402, json_body=DECLINE)
    answer = answer_from_error(exc)
    assert (answer.status_code, answer.body) == (402, DECLINE)


def test_no_answer_is_unknown_not_an_error_status() -> None:
    for exc in (stripe.APIConnectionError("Request timed out"),
                stripe.APIError("boom")):  # no HTTP status: nothing came back
        answer = answer_from_error(exc)
        assert answer.status_code is None and answer.body is None
        assert answer.error


def test_a_server_error_keeps_its_status() -> None:
    exc = stripe.APIError("upstream", http_status=500, json_body={"error": {"type": "api_error"}})
    assert answer_from_error(exc).status_code == 500


def test_a_success_is_the_objects_json() -> None:
    intent = stripe.PaymentIntent.construct_from(
        {"id": "pi_1", "object": "payment_intent", "status": "requires_capture",
         "metadata": {"operation_id": "x"}}, "sk_test")
    answer = answer_from_object(intent)
    assert answer.status_code == 200
    assert answer.body == {"id": "pi_1", "object": "payment_intent",
                           "status": "requires_capture", "metadata": {"operation_id": "x"}}


def test_a_success_with_its_response_is_the_responses_own_json() -> None:
    """The body the SDK parsed from the wire, with its status, not the object walked
    back into dicts: the same document."""
    import json

    from stripe._stripe_response import StripeResponse

    doc = {"id": "pi_2", "object": "payment_intent", "status": "succeeded",
           "latest_charge": {"id": "ch_1", "object": "charge"}, "metadata": {"a": "b"}}
    response = StripeResponse(json.dumps(doc), 200, {})
    intent = stripe.PaymentIntent.construct_from(doc, "sk_test", last_response=response)
    answer = answer_from_object(intent)
    assert (answer.status_code, answer.body) == (200, doc)
    assert answer.body is response.data
    assert answer.body == intent.to_dict()
