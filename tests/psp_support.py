"""Helpers for the simulator tests that speak Stripe's wire format by hand (raw
httpx): bodies form-encoded with bracket notation, as stripe-python sends them."""

from __future__ import annotations

from typing import Any

KEY = "sk_test_psp_0123456789abcdef"
PUBLISHABLE = "pk_test_psp_0123456789abcdef"
SIM_KEY = "sim_test_psp_0123456789abcdef"
SECRET = "whsec_test_0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}
SIM_AUTH = {"Authorization": f"Bearer {SIM_KEY}"}


def form(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``{"metadata": {"a": "b"}, "expand": ["x"]}`` → ``metadata[a]=b&expand[0]=x``."""
    pairs: list[tuple[str, str]] = []

    def put(name: str, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                put(f"{name}[{key}]", item)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                put(f"{name}[{index}]", item)
        elif isinstance(value, bool):
            pairs.append((name, "true" if value else "false"))
        else:
            pairs.append((name, str(value)))

    for key, value in body.items():
        put(key, value)
    return pairs


def encoded(body: dict[str, Any]) -> bytes:
    """The form body as bytes (httpx's ``content=``)."""
    from urllib.parse import urlencode
    return urlencode(form(body)).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def card(number: str, exp: str = "12/34", cvc: str = "123") -> dict[str, Any]:
    """A ``POST /v1/payment_methods`` body for a card number, as a page tokenizes it."""
    month, year = exp.split("/")
    return {"type": "card", "card": {"number": number, "exp_month": month,
                                     "exp_year": year, "cvc": cvc}}
