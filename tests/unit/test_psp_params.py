"""psp.params: request validation and the search query."""

from __future__ import annotations

from typing import Any

import pytest

from onsale.psp import params
from onsale.psp.errors import ApiError

VALID = {"amount": 1500, "currency": "usd", "payment_method": "4242 4242 4242 4242",
         "capture_method": "manual", "confirm": True,
         "metadata": {"order_id": "o-1", "operation_id": "op-1"},
         "return_url": "https://shop.test/return"}


def test_create_valid() -> None:
    p = params.create(VALID)
    assert p == params.CreateParams(1500, "usd", "4242424242424242",
                                    {"order_id": "o-1", "operation_id": "op-1"},
                                    "https://shop.test/return")
    minimal = params.create({"amount": 1, "currency": "USD", "payment_method": "pm_card_visa"})
    assert (minimal.currency, minimal.metadata, minimal.return_url) == ("usd", {}, None)


@pytest.mark.parametrize("change, param", [
    ({"amount": None}, "amount"),
    ({"amount": 0}, "amount"),
    ({"amount": -5}, "amount"),
    ({"amount": 10.5}, "amount"),
    ({"amount": "100"}, "amount"),
    ({"amount": True}, "amount"),
    ({"amount": 100_000_000}, "amount"),
    ({"currency": None}, "currency"),
    ({"currency": "eur"}, "currency"),
    ({"payment_method": None}, "payment_method"),
    ({"payment_method": 4242424242424242}, "payment_method"),
    ({"payment_method": "pm_card_bogus"}, "payment_method"),
    ({"capture_method": "automatic"}, "capture_method"),
    ({"confirm": False}, "confirm"),
    ({"metadata": ["x"]}, "metadata"),
    ({"metadata": {"k": {"nested": 1}}}, "metadata[k]"),
    ({"metadata": {"": "v"}}, "metadata"),
    ({"return_url": "/relative"}, "return_url"),
])
def test_create_rejects(change: dict[str, Any], param: str) -> None:
    body = {**VALID, **change}
    with pytest.raises(ApiError) as caught:
        params.create(body)
    error = caught.value.body()["error"]
    assert caught.value.status == 400
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error", "parameter_invalid", param)


def test_json_body() -> None:
    assert params.json_body(b"") == {}
    assert params.json_body(b" \n") == {}
    assert params.json_body(b'{"a": 1}') == {"a": 1}
    for raw in (b"[1]", b"{", b'"x"', b"[" * 100_000):
        with pytest.raises(ApiError):
            params.json_body(raw)


def test_capture_and_cancel() -> None:
    assert params.capture({}) is None
    assert params.capture({"amount_to_capture": 700}) == 700
    with pytest.raises(ApiError):
        params.capture({"amount_to_capture": 0})
    assert params.cancel({}) == "requested_by_customer"
    assert params.cancel({"cancellation_reason": "abandoned"}) == "abandoned"
    for reason in ("automatic", "nope", 3):
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
