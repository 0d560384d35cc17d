"""The PaymentMethod (pure): a tokenized test card, as Stripe shows it.

The card number is kept (this is a simulator and its cards are Stripe's test
numbers) so that confirming a PaymentIntent with the method can decide the
outcome; it is never part of the API object, which shows ``brand`` and ``last4``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onsale.psp import cards


@dataclass(frozen=True, slots=True)
class PaymentMethod:
    id: str
    number: str
    exp_month: int
    exp_year: int
    created: int

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id, "object": "payment_method", "type": "card",
            "card": {"brand": cards.brand(self.number), "last4": self.number[-4:],
                     "exp_month": self.exp_month, "exp_year": self.exp_year,
                     "funding": "credit", "country": "US",
                     "checks": {"cvc_check": "pass", "address_line1_check": None,
                                "address_postal_code_check": None}},
            "billing_details": {"address": None, "email": None, "name": None, "phone": None},
            "customer": None, "metadata": {}, "created": self.created, "livemode": False,
        }

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "number": self.number, "exp_month": self.exp_month,
                "exp_year": self.exp_year, "created": self.created}


def from_record(data: dict[str, Any]) -> PaymentMethod:
    return PaymentMethod(data["id"], data["number"], data["exp_month"], data["exp_year"],
                         data["created"])


def test_card(alias: str, method_id: str, now: float) -> PaymentMethod | None:
    """A fresh PaymentMethod for one of Stripe's test ids (``pm_card_visa``…), as
    Stripe does: the PaymentIntent shows a new ``pm_…`` id, not the alias."""
    number = cards.ALIASES.get(alias)
    if number is None:
        return None
    return PaymentMethod(method_id, number, 12, 2034, int(now))
