"""psp.params: request validation and the search query."""

from __future__ import annotations

from typing import Any

import pytest

from onsale.psp import form, params
from onsale.psp.errors import ApiError

VALID: dict[str, Any] = {
    "amount": "1500", "currency": "usd", "payment_method": "pm_card_visa",
    "capture_method": "manual", "confirm": "true",
    "metadata": {"order_id": "o-1", "operation_id": "op-1"},
    "return_url": "https://shop.test/return", "expand": ["latest_charge"]}


def test_create_valid() -> None:
    p = params.create(VALID)
    assert p == params.CreateParams(1500, "usd", "pm_card_visa",
                                    {"order_id": "o-1", "operation_id": "op-1"},
                                    "https://shop.test/return")
    minimal = params.create({"amount": "1", "currency": "USD", "payment_method": "pm_1",
                             "capture_method": "manual", "confirm": "true"})
    assert (minimal.currency, minimal.metadata, minimal.return_url) == ("usd", {}, None)


def test_create_from_the_wire() -> None:
    """What stripe-python sends (indexed arrays, booleans as 'true') parses and validates."""
    raw = ("amount=1500&currency=usd&payment_method=pm_card_visa&capture_method=manual"
           "&confirm=true&return_url=https%3A%2F%2Fshop.test%2Freturn"
           "&metadata[order_id]=o-1&metadata[operation_id]=op-1&expand[0]=latest_charge")
    assert params.create(form.parse(raw)) == params.create(VALID)


@pytest.mark.parametrize("change, param, code", [
    ({"amount": None}, "amount", "parameter_missing"),
    ({"amount": "0"}, "amount", "parameter_invalid"),
    ({"amount": "-5"}, "amount", "parameter_invalid"),
    ({"amount": "10.5"}, "amount", "parameter_invalid"),
    ({"amount": {"x": "1"}}, "amount", "parameter_invalid"),
    ({"amount": "100000000"}, "amount", "parameter_invalid"),
    ({"currency": None}, "currency", "parameter_missing"),
    ({"currency": "eur"}, "currency", "parameter_invalid"),
    ({"payment_method": None}, "payment_method", "parameter_missing"),
    ({"payment_method": "4242424242424242"}, "payment_method", "parameter_invalid"),
    ({"capture_method": "automatic"}, "capture_method", "parameter_invalid"),
    ({"capture_method": None}, "capture_method", "parameter_invalid"),
    ({"confirm": "false"}, "confirm", "parameter_invalid"),
    ({"metadata": ["x"]}, "metadata", "parameter_invalid"),
    ({"metadata": {"k": {"nested": "1"}}}, "metadata[k]", "parameter_invalid"),
    ({"metadata": {"": "v"}}, "metadata", "parameter_invalid"),
    ({"return_url": "/relative"}, "return_url", "url_invalid"),
    ({"shipping": {"name": "x"}}, "shipping", "parameter_unknown"),
])
def test_create_rejects(change: dict[str, Any], param: str, code: str) -> None:
    body = {k: v for k, v in {**VALID, **change}.items() if v is not None}
    with pytest.raises(ApiError) as caught:
        params.create(body)
    error = caught.value.body()["error"]
    assert caught.value.status == 400
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error", code, param)


CARD = {"type": "card", "card": {"number": "4242 4242 4242 4242", "exp_month": "12",
                                 "exp_year": "34", "cvc": "123"}}


def test_card() -> None:
    assert params.card(CARD, 2026, 12) == params.CardParams("4242424242424242", 12, 2034)
    assert params.card({**CARD, "key": "pk_x", "guid": "g"}, 2026, 1).exp_year == 2034


@pytest.mark.parametrize("card, code, param", [
    ({"number": "4242424242424241"}, "incorrect_number", "card[number]"),
    ({"number": "abc"}, "incorrect_number", "card[number]"),
    ({"exp_month": "13"}, "invalid_expiry_month", "card[exp_month]"),
    ({"exp_year": "2025"}, "invalid_expiry_year", "card[exp_year]"),
    ({"exp_year": "x"}, "invalid_expiry_year", "card[exp_year]"),
    ({"cvc": "12"}, "invalid_cvc", "card[cvc]"),
])
def test_card_rejects(card: dict[str, str], code: str, param: str) -> None:
    with pytest.raises(ApiError) as caught:
        params.card({"type": "card", "card": {**CARD["card"], **card}}, 2026, 12)  # type: ignore[dict-item]
    error = caught.value.body()["error"]
    assert caught.value.status == 402
    assert (error["type"], error["code"], error["param"]) == ("card_error", code, param)


def test_json_body() -> None:
    assert params.json_body(b"") == {}
    assert params.json_body(b" \n") == {}
    assert params.json_body(b'{"a": 1}') == {"a": 1}
    for raw in (b"[1]", b"{", b'"x"', b"[" * 100_000):
        with pytest.raises(ApiError):
            params.json_body(raw)


def test_capture_and_cancel() -> None:
    assert params.capture({}) is None
    assert params.capture({"amount_to_capture": "700", "expand": ["latest_charge"]}) == 700
    for bad in ({"amount_to_capture": "0"}, {"amount": "700"}):
        with pytest.raises(ApiError):
            params.capture(bad)
    assert params.cancel({}) == "requested_by_customer"
    assert params.cancel({"cancellation_reason": "abandoned"}) == "abandoned"
    for reason in ("automatic", "nope", ["x"]):
        with pytest.raises(ApiError):
            params.cancel({"cancellation_reason": reason})


@pytest.mark.parametrize("query, expected", [
    ("metadata['operation_id']:'abc-123'", ("operation_id", "abc-123")),
    ('metadata["operation_id"]:"abc-123"', ("operation_id", "abc-123")),
    ("metadata['order_id']:\"7\"", ("order_id", "7")),
    (" metadata['order_id'] : 'a b' ", ("order_id", "a b")),
    (r"metadata['k']:'it\'s'", ("k", "it's")),
    ("metadata['k']:''", ("k", "")),
])
def test_search_query(query: str, expected: tuple[str, str]) -> None:
    assert params.search_query(query) == expected


@pytest.mark.parametrize("query", [
    None, "", "status:'succeeded'", "metadata['k']:v", "metadata['k']:'v' AND x:'y'",
    "metadata[k]:'v'", "metadata['k']:'v\"", "amount>100",
])
def test_search_query_rejects(query: str | None) -> None:
    with pytest.raises(ApiError) as caught:
        params.search_query(query)
    assert caught.value.body()["error"]["param"] == "query"


def test_metadata_text() -> None:
    assert [params.metadata_text(v) for v in ("x", 7, 1.5, True)] == ["x", "7", "1.5", "true"]
