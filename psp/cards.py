"""Stripe's test cards: what confirming a payment with a given card does.

Pure: :data:`ALIASES` are Stripe's test PaymentMethod ids (``pm_card_visa``…) and
the card number each stands for; :func:`outcome` says what authorizing with a
number does; :func:`brand` names the network. A card number reaches the simulator
only through ``POST /v1/payment_methods`` (tokenization), never on a PaymentIntent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Result = Literal["approve", "three_d_secure", "decline"]

ALIASES: dict[str, str] = {
    "pm_card_visa": "4242424242424242",
    "pm_card_visa_debit": "4000056655665556",
    "pm_card_mastercard": "5555555555554444",
    "pm_card_amex": "378282246310005",
    "pm_card_discover": "6011111111111117",
    "pm_card_chargeDeclined": "4000000000000002",
    "pm_card_visa_chargeDeclined": "4000000000000002",
    "pm_card_chargeDeclinedInsufficientFunds": "4000000000009995",
    "pm_card_visa_chargeDeclinedInsufficientFunds": "4000000000009995",
    "pm_card_visa_chargeDeclinedLostCard": "4000000000009987",
    "pm_card_visa_chargeDeclinedStolenCard": "4000000000009979",
    "pm_card_chargeDeclinedExpiredCard": "4000000000000069",
    "pm_card_chargeDeclinedIncorrectCvc": "4000000000000127",
    "pm_card_chargeDeclinedProcessingError": "4000000000000119",
    "pm_card_authenticationRequired": "4000002760003184",
    "pm_card_authenticationRequiredOnSetup": "4000002500003155",
    "pm_card_threeDSecure2Required": "4000000000003220",
    "pm_card_threeDSecureRequired": "4000000000003063",
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
LOST_CARD = Outcome("decline", "card_declined", "lost_card", "Your card was declined.")
STOLEN_CARD = Outcome("decline", "card_declined", "stolen_card", "Your card was declined.")
INCORRECT_CVC = Outcome("decline", "incorrect_cvc", "incorrect_cvc",
                        "Your card's security code is incorrect.")
PROCESSING_ERROR = Outcome("decline", "processing_error", "processing_error",
                           "An error occurred while processing your card. Try again "
                           "in a little bit.")
EXPIRED_CARD = Outcome("decline", "expired_card", "expired_card", "Your card has expired.")
INCORRECT_NUMBER = Outcome("decline", "incorrect_number", None,
                           "Your card number is incorrect.")

SPECIAL: dict[str, Outcome] = {
    "4000000000000002": GENERIC_DECLINE,
    "4000000000009995": INSUFFICIENT_FUNDS,
    "4000000000009987": LOST_CARD,
    "4000000000009979": STOLEN_CARD,
    "4000000000000069": EXPIRED_CARD,
    "4000000000000127": INCORRECT_CVC,
    "4000000000000119": PROCESSING_ERROR,
    "4000002760003184": THREE_D_SECURE,
    "4000002500003155": THREE_D_SECURE,  # "unless set up": this simulator never sets up
    "4000000000003220": THREE_D_SECURE,
    "4000000000003063": THREE_D_SECURE,
}


def normalized(number: str) -> str | None:
    """The digits of a card number as typed (spaces allowed), or ``None``."""
    digits = number.replace(" ", "")
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


def brand(number: str) -> str:
    """Stripe's ``card.brand`` for a number (by its leading digits)."""
    if number[:1] == "4":
        return "visa"
    if number[:2] in ("34", "37"):
        return "amex"
    if number[:2] in {"51", "52", "53", "54", "55"} or "2221" <= number[:4] <= "2720":
        return "mastercard"
    if number[:4] == "6011" or number[:2] == "65":
        return "discover"
    if number[:4] in {"3528", "3529"} or "3530" <= number[:4] <= "3589":
        return "jcb"
    if number[:2] in ("36", "38", "30"):
        return "diners"
    return "unknown"
