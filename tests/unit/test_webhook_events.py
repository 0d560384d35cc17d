"""core.webhooks.parse_event: which events are about our payments. Others (another type,
a PaymentIntent another app created on the same Stripe account) are acknowledged and
ignored, never refused: Stripe would retry a refusal and could disable the endpoint."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from onsale.core.webhooks import parse_event
from onsale.kernel.problems import Problem

OP = uuid.uuid4()


def event(obj: Any, kind: str = "payment_intent.succeeded") -> bytes:
    return json.dumps({"id": "evt_1", "object": "event", "type": kind,
                       "data": {"object": obj}}).encode()


def test_an_event_about_our_payment_names_its_operation() -> None:
    intent = {"id": "pi_1", "object": "payment_intent", "metadata": {"operation_id": str(OP)}}
    assert parse_event(event(intent)) == ("evt_1", "payment_intent.succeeded", intent, OP)


@pytest.mark.parametrize("obj", [
    {"id": "pi_2", "object": "payment_intent", "metadata": {}},         # another app's
    {"id": "pi_3", "object": "payment_intent"},
    {"id": "pi_4", "object": "payment_intent", "metadata": {"operation_id": "nope"}},
    {"id": "ch_1", "object": "charge", "metadata": {"operation_id": str(OP)}},
])
def test_events_not_about_our_payments_have_no_operation(obj: dict[str, Any]) -> None:
    assert parse_event(event(obj))[3] is None


def test_another_event_type_parses_too() -> None:
    assert parse_event(event({"id": "cus_1", "object": "customer"}, "customer.created"))[1] \
        == "customer.created"


@pytest.mark.parametrize("raw", [b"not json", b"{}", b'{"id": "evt_1", "type": "x"}',
                                 b'{"id": 1, "type": "x", "data": {"object": {}}}',
                                 b'{"id": "evt_1", "type": "x", "data": {"object": []}}'])
def test_a_malformed_event_is_refused(raw: bytes) -> None:
    with pytest.raises(Problem) as caught:
        parse_event(raw)
    assert (caught.value.status, caught.value.code) == (400, "invalid_webhook")
