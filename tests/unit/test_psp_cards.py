"""psp.cards: the test-card table, aliases and the Luhn check."""

from __future__ import annotations

import pytest

from onsale.psp import cards


@pytest.mark.parametrize("method, number", [
    ("pm_card_visa", "4242424242424242"),
    ("pm_card_chargeDeclined", "4000000000000002"),
    ("pm_card_visa_chargeDeclined", "4000000000000002"),
    ("pm_card_visa_chargeDeclinedInsufficientFunds", "4000000000009995"),
    ("pm_card_authenticationRequired", "4000002760003184"),
    ("pm_card_threeDSecure2Required", "4000000000003220"),
])
def test_stripe_test_ids(method: str, number: str) -> None:
    assert cards.ALIASES[method] == number


@pytest.mark.parametrize("typed, number", [("4242424242424242", "4242424242424242"),
                                           ("4242 4242 4242 4242", "4242424242424242"),
                                           ("", None), ("   ", None), ("4242-4242", None),
                                           ("４２４２", None)])
def test_normalized(typed: str, number: str | None) -> None:
    assert cards.normalized(typed) == number


@pytest.mark.parametrize("number, outcome", [
    ("4000002760003184", "three_d_secure"), ("4000002500003155", "three_d_secure"),
    ("4000000000003220", "three_d_secure"), ("4000000000009995", "decline"),
    ("4242424242424242", "approve")])
def test_outcomes(number: str, outcome: str) -> None:
    assert cards.outcome(number).result == outcome


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


def test_brand() -> None:
    assert [cards.brand(n) for n in ("4242424242424242", "5555555555554444", "378282246310005",
                                     "6011111111111117", "2223003122003222", "9999")] == [
        "visa", "mastercard", "amex", "discover", "mastercard", "unknown"]
