"""Checkout takes only a PaymentMethod id: a card number never reaches core."""

from __future__ import annotations

from typing import Any

import pytest

from onsale.core.checkout import parse_payment_method
from onsale.kernel.problems import Problem


@pytest.mark.parametrize("pm", ["pm_card_visa", "pm_card_chargeDeclined",
                                "pm_card_visa_chargeDeclinedInsufficientFunds",
                                "pm_card_threeDSecure2Required", "pm_1PqRsTLkdIwHu7ixAbCdEfGh"])
def test_payment_method_ids_are_accepted(pm: str) -> None:
    assert parse_payment_method({"payment_method": pm}) == pm


@pytest.mark.parametrize("card", ["4242424242424242", "4242 4242 4242 4242",
                                  "4000-0000-0000-0002", "378282246310005",
                                  "pm_4242424242424242", "card 4242424242424242 exp 12/30"])
def test_anything_like_a_card_number_is_refused_without_repeating_it(card: str) -> None:
    with pytest.raises(Problem) as caught:
        parse_payment_method({"payment_method": card})
    problem = caught.value
    assert (problem.status, problem.code) == (400, "invalid_payment_method")
    digits = "".join(ch for ch in card if ch.isdigit())
    assert digits[-4:] not in (problem.detail or "")
    assert "Card numbers are not accepted" in (problem.detail or "")


@pytest.mark.parametrize("value", [None, 42, "", "tok_visa", "card_4242", "pm_", "pm_a b",
                                   "pm_" + "x" * 251, {"number": "4242"}])
def test_other_values_are_not_a_payment_method(value: Any) -> None:
    with pytest.raises(Problem) as caught:
        parse_payment_method({"payment_method": value})
    assert (caught.value.status, caught.value.code) == (400, "invalid_payment_method")


def test_unknown_fields_are_refused_without_echoing_their_values() -> None:
    with pytest.raises(Problem) as caught:
        parse_payment_method({"payment_method": "pm_card_visa", "card": "4242424242424242"})
    assert caught.value.code == "invalid_request"
    assert "4242" not in (caught.value.detail or "")


def test_every_payment_method_id_the_simulator_makes_is_accepted() -> None:
    """The simulator's ids look like Stripe's (letters and digits) and never hold a run
    of digits that core would take for a card number (hex ids did, ~1 in 20)."""
    import re

    from onsale.psp.events import new_payment_method_id

    for _ in range(5000):
        pm = new_payment_method_id()
        assert re.fullmatch(r"pm_[0-9A-Za-z]{24}", pm), pm
        assert parse_payment_method({"payment_method": pm}) == pm
