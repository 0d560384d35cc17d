"""psp.form: Stripe's form encoding with bracket notation, as stripe-python encodes it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from stripe._encode import _api_encode  # what the SDK puts on the wire

from onsale.psp import form
from onsale.psp.errors import ApiError


def test_nested_and_lists() -> None:
    assert form.parse("a=1&metadata[operation_id]=op-1&metadata[0]=x&card[number]=4242"
                      "&expand[0]=latest_charge&expand[1]=payment_method&tags[]=a&tags[]=b") == {
        "a": "1", "metadata": {"operation_id": "op-1", "0": "x"}, "card": {"number": "4242"},
        "expand": ["latest_charge", "payment_method"], "tags": ["a", "b"]}
    assert form.parse("") == {} and form.parse(b"") == {}
    assert form.parse("metadata[k]=") == {"metadata": {"k": ""}}
    assert form.parse("q=metadata%5B%27operation_id%27%5D%3A%27x%27") == {
        "q": "metadata['operation_id']:'x'"}


@pytest.mark.parametrize("params", [
    {"amount": 5000, "currency": "usd", "confirm": True, "capture_method": "manual",
     "metadata": {"operation_id": "op-1", "order_id": "7"}, "expand": ["latest_charge"]},
    {"type": "card", "card": {"number": "4242424242424242", "exp_month": 12, "exp_year": 2034,
                              "cvc": "123"}},
])
def test_round_trip_of_what_the_sdk_sends(params: dict[str, Any]) -> None:
    wire = urlencode(list(_api_encode(params)))

    def strings(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strings(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strings(v) for v in value]
        return str(value).lower() if isinstance(value, bool) else str(value)

    assert form.parse(wire) == strings(params)


@pytest.mark.parametrize("raw", ["a=1&a=2", "a=1&a[b]=2", "a[b]=2&a=1", "a[b=1", "[x]=1",
                                 "a[b][c][d][e][f]=1", "a", "a=1&&b"])
def test_rejects(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        form.parse(raw)
    assert caught.value.status == 400
