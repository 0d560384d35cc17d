"""psp.faults: rule parsing, matching with counts and probability, backoff."""

from __future__ import annotations

import random
from typing import Any

import pytest

from onsale.psp import faults
from onsale.psp.errors import ApiError
from onsale.psp.faults import FaultState, WebhookFaults


class Dice(random.Random):
    """A random source that returns the given values in turn."""

    def __init__(self, *values: float) -> None:
        super().__init__(0)
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


@pytest.mark.parametrize("method, path, op", [
    ("POST", "/v1/payment_intents", "authorize"),
    ("POST", "/v1/payment_intents/", "authorize"),
    ("POST", "/v1/payment_intents/pi_1/capture", "capture"),
    ("POST", "/v1/payment_intents/pi_1/cancel", "cancel"),
    ("GET", "/v1/payment_intents/pi_1", "retrieve"),
    ("GET", "/v1/payment_intents/search", "search"),
    ("GET", "/v1/payment_intents", None),
    ("POST", "/v1/payment_intents/pi_1", None),
    ("POST", "/v1/payment_intents/pi_1/refund", None),
    ("GET", "/_sim/faults", None),
    ("POST", "/3ds/pi_1", None),
    ("GET", "/healthz", None),
])
def test_classify(method: str, path: str, op: str | None) -> None:
    assert faults.classify(method, path) == op


def test_parse_defaults_and_public_view() -> None:
    state = faults.parse({"rules": [
        {"op": "authorize", "fault": "timeout"},
        {"op": "*", "fault": "latency", "ms": 250, "count": 3, "probability": 0.5},
        {"op": "capture", "fault": "lost_response", "count": 1},
    ], "webhooks": {"duplicate": 1, "delay_ms": 10, "shuffle": True, "fail_first": 2,
                    "paused": True}})
    assert state.public() == {
        "rules": [
            {"op": "authorize", "fault": "timeout", "ms": 30000, "count": None,
             "probability": 1.0, "remaining": None},
            {"op": "*", "fault": "latency", "ms": 250, "count": 3, "probability": 0.5,
             "remaining": 3},
            {"op": "capture", "fault": "lost_response", "ms": 0, "count": 1,
             "probability": 1.0, "remaining": 1},
        ],
        "webhooks": {"duplicate": 1.0, "delay_ms": 10, "shuffle": True, "fail_first": 2,
                     "paused": True},
    }
    assert faults.parse({}).public() == {"rules": [], "webhooks": {
        "duplicate": 0.0, "delay_ms": 0, "shuffle": False, "fail_first": 0, "paused": False}}


@pytest.mark.parametrize("body, param", [
    ({"rules": {}}, "rules"),
    ({"rules": ["x"]}, "rules[0]"),
    ({"rules": [{"op": "refund", "fault": "latency"}]}, "rules[0].op"),
    ({"rules": [{"op": "*", "fault": "explode"}]}, "rules[0].fault"),
    ({"rules": [{"op": "*", "fault": "latency", "ms": -1}]}, "rules[0].ms"),
    ({"rules": [{"op": "*", "fault": "latency", "ms": 1.5}]}, "rules[0].ms"),
    ({"rules": [{"op": "*", "fault": "latency", "count": True}]}, "rules[0].count"),
    ({"rules": [{"op": "*", "fault": "latency", "probability": 2}]}, "rules[0].probability"),
    ({"webhooks": []}, "webhooks"),
    ({"webhooks": {"duplicate": -0.1}}, "webhooks.duplicate"),
    ({"webhooks": {"paused": "yes"}}, "webhooks.paused"),
    ({"webhooks": {"fail_first": 1.5}}, "webhooks.fail_first"),
])
def test_parse_rejects(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ApiError) as caught:
        faults.parse(body)
    assert caught.value.status == 400
    assert caught.value.body()["error"]["param"] == param


def test_count_is_spent_only_when_the_rule_applies() -> None:
    state = faults.parse({"rules": [{"op": "capture", "fault": "error_500", "count": 2},
                                    {"op": "*", "fault": "latency", "ms": 5}]})
    rng = Dice()
    assert state.pick("authorize", rng) is state.rules[1]
    assert state.pick("capture", rng) is state.rules[0]
    assert state.pick("capture", rng) is state.rules[0]
    assert state.rules[0].remaining == 0
    assert state.pick("capture", rng) is state.rules[1]  # falls through to "*"
    assert state.rules[1].remaining is None


def test_probability() -> None:
    state = faults.parse({"rules": [{"op": "search", "fault": "error_500", "count": 1,
                                     "probability": 0.25}]})
    assert state.pick("search", Dice(0.25)) is None  # not applied: count kept
    assert state.rules[0].remaining == 1
    assert state.pick("search", Dice(0.1)) is state.rules[0]
    assert state.pick("search", Dice(0.1)) is None  # spent
    assert FaultState().pick("search", Dice()) is None


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [faults.backoff(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert faults.backoff(3, base=0.5, cap=10) == 2.0
    assert faults.backoff(10_000) == 60


def test_webhook_fault_decisions() -> None:
    settings = WebhookFaults(fail_first=2, duplicate=0.5)
    assert [faults.simulated_failure(n, settings) for n in (1, 2, 3)] == [True, True, False]
    assert faults.duplicated(settings, Dice(0.49)) is True
    assert faults.duplicated(settings, Dice(0.5)) is False
    assert faults.duplicated(WebhookFaults(), Dice()) is False


def test_wrong_faults_alter_every_intent_in_an_answer() -> None:
    state = faults.parse({"rules": [{"op": "capture", "fault": "wrong_id"},
                                    {"op": "search", "fault": "wrong_amount", "count": 1}]})
    assert [(r.fault, r.ms) for r in state.rules] == [("wrong_id", 0), ("wrong_amount", 0)]
    intent = {"id": "pi_1", "object": "payment_intent", "amount": 2500, "currency": "eur"}
    assert faults.tampered("wrong_amount", intent) == {**intent, "amount": 2600}
    assert faults.tampered("wrong_currency", intent) == {**intent, "currency": "xts"}
    assert faults.tampered("wrong_id", intent) == {**intent, "id": "pi_wrong_1"}
    search = {"object": "search_result", "data": [intent, intent], "has_more": False}
    assert faults.tampered("wrong_id", search)["data"] == [{**intent, "id": "pi_wrong_1"}] * 2
    error = {"error": {"type": "card_error", "payment_intent": intent}}
    assert faults.tampered("wrong_currency", error) == \
        {"error": {"type": "card_error", "payment_intent": {**intent, "currency": "xts"}}}
    assert intent["amount"] == 2500  # the original is not changed
    for body in ({"error": {"type": "api_error"}}, {"object": "payment_method"}, [1], None):
        assert faults.tampered("wrong_amount", body) == body
