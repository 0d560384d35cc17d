"""Test cards: what confirming a payment with a given card or ``pm_card_*`` alias does.

Pure: :func:`resolve` turns the ``payment_method`` parameter into a card number
(or ``None`` when it is neither digits nor a known alias) and :func:`outcome`
says what authorizing with that number does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Result = Literal["approve", "three_d_secure", "decline"]

ALIASES: dict[str, str] = {
    "pm_card_visa": "4242424242424242",
    "pm_card_mastercard": "5555555555554444",
    "pm_card_amex": "378282246310005",
    "pm_card_chargeDeclined": "4000000000000002",
    "pm_card_chargeDeclinedInsufficientFunds": "4000000000009995",
    "pm_card_chargeDeclinedExpiredCard": "4000000000000069",
    "pm_card_threeDSecureRequired": "4000002760003184",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    result: Result
    code: str | None = None
    decline_code: str | None = None
    message: str | None = None


APPROVE = Outcome("approve")
THREE_D_SECURE = Outcome("three_d_secure")
GENERIC_DECLINE = Outcome("decline", "card_declined", "generic_decline",
                          "Your card was declined.")
INSUFFICIENT_FUNDS = Outcome("decline", "card_declined", "insufficient_funds",
                             "Your card has insufficient funds.")
EXPIRED_CARD = Outcome("decline", "expired_card", "expired_card", "Your card has expired.")
INCORRECT_NUMBER = Outcome("decline", "incorrect_number", None,
                           "Your card number is incorrect.")

SPECIAL: dict[str, Outcome] = {
    "4000000000000002": GENERIC_DECLINE,
    "4000000000009995": INSUFFICIENT_FUNDS,
    "4000000000000069": EXPIRED_CARD,
    "4000002760003184": THREE_D_SECURE,
}


def resolve(payment_method: str) -> str | None:
    """The card number behind a ``payment_method`` parameter: digits (spaces
    allowed) or a ``pm_card_*`` alias; ``None`` if it is neither."""
    if payment_method in ALIASES:
        return ALIASES[payment_method]
    digits = payment_method.replace(" ", "")
    if digits and digits.isascii() and digits.isdigit():
        return digits
    return None


def luhn_valid(number: str) -> bool:
    """The Luhn check (mod 10) of a string of digits, 12 to 19 long."""
    if not 12 <= len(number) <= 19 or not number.isdigit():
        return False
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = int(char)
        if index % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def outcome(number: str) -> Outcome:
    """What confirming with this card number does."""
    special = SPECIAL.get(number)
    if special is not None:
        return special
    return APPROVE if luhn_valid(number) else INCORRECT_NUMBER


def masked(number: str) -> str:
    """The ``payment_method`` shown on the PaymentIntent, e.g. ``card_4242``."""
    return f"card_{number[-4:]}"
