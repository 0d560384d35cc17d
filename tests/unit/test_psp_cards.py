"""psp.cards: the test-card table, aliases and the Luhn check."""

from __future__ import annotations

import pytest

from onsale.psp import cards


@pytest.mark.parametrize("method, number", [
    ("4242424242424242", "4242424242424242"),
    ("4242 4242 4242 4242", "4242424242424242"),
    ("pm_card_visa", "4242424242424242"),
    ("pm_card_chargeDeclined", "4000000000000002"),
    ("pm_card_chargeDeclinedInsufficientFunds", "4000000000009995"),
    ("pm_card_threeDSecureRequired", "4000002760003184"),
    ("1234", "1234"),
])
def test_resolve(method: str, number: str) -> None:
    assert cards.resolve(method) == number


@pytest.mark.parametrize("method", ["", "   ", "pm_card_unknown", "4242-4242", "card_4242",
                                    "４２４２"])
def test_resolve_rejects(method: str) -> None:
    assert cards.resolve(method) is None


@pytest.mark.parametrize("number, valid", [
    ("4242424242424242", True),
    ("4242424242424241", False),
    ("5555555555554444", True),
    ("378282246310005", True),
    ("4000000000000002", True),
    ("79927398713", False),  # valid Luhn but too short for a card
    ("00000000000000000000", False),  # too long
    ("000000000000", True),
])
def test_luhn(number: str, valid: bool) -> None:
    assert cards.luhn_valid(number) is valid


@pytest.mark.parametrize("number, result, code, decline_code", [
    ("4242424242424242", "approve", None, None),
    ("5555555555554444", "approve", None, None),
    ("4000000000000002", "decline", "card_declined", "generic_decline"),
    ("4000000000009995", "decline", "card_declined", "insufficient_funds"),
    ("4000000000000069", "decline", "expired_card", "expired_card"),
    ("4000002760003184", "three_d_secure", None, None),
    ("4242424242424241", "decline", "incorrect_number", None),
    ("42", "decline", "incorrect_number", None),
])
def test_outcome(number: str, result: str, code: str | None, decline_code: str | None) -> None:
    outcome = cards.outcome(number)
    assert (outcome.result, outcome.code, outcome.decline_code) == (result, code, decline_code)


def test_masked() -> None:
    assert cards.masked("4242424242424242") == "card_4242"
    assert cards.masked("4000002760003184") == "card_3184"
