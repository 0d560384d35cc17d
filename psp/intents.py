"""The PaymentIntent and its state machine (pure: no clock, no I/O).

    confirm ──approve──────────▶ requires_capture ──capture──▶ succeeded
       │ ──3-D Secure──▶ requires_action ──succeed──▲
       │                        └──fail──┐
       └──decline──────────────────────▶ requires_payment_method
    requires_capture | requires_action | requires_payment_method ──cancel──▶ canceled
    requires_capture older than the authorization window ──lapse──▶ canceled (automatic)

Every transition names the webhook event it emits (or ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from onsale.psp import cards

Status = Literal["requires_payment_method", "requires_action", "requires_capture",
                 "succeeded", "canceled"]

AMOUNT_CAPTURABLE_UPDATED = "payment_intent.amount_capturable_updated"
REQUIRES_ACTION = "payment_intent.requires_action"
PAYMENT_FAILED = "payment_intent.payment_failed"
SUCCEEDED = "payment_intent.succeeded"
CANCELED = "payment_intent.canceled"

CANCELABLE = frozenset({"requires_capture", "requires_action", "requires_payment_method"})
AUTHENTICATION_FAILURE = "payment_intent_authentication_failure"


@dataclass(frozen=True, slots=True)
class PaymentError:
    code: str
    decline_code: str | None
    message: str

    def public(self) -> dict[str, Any]:
        return {"code": self.code, "decline_code": self.decline_code, "message": self.message}

    def api(self, payment_method: dict[str, Any] | None) -> dict[str, Any]:
        """As ``last_payment_error`` (and the error object of a decline) shows it."""
        error: dict[str, Any] = {"type": "card_error", "code": self.code,
                                 "message": self.message}
        if self.decline_code is not None:
            error["decline_code"] = self.decline_code
        error["doc_url"] = f"https://docs.stripe.com/error-codes/{self.code.replace('_', '-')}"
        if payment_method is not None:
            error["payment_method"] = payment_method
        return error


@dataclass(frozen=True, slots=True)
class PaymentIntent:
    id: str
    amount: int
    currency: str
    status: Status
    payment_method: str
    created: int
    metadata: dict[str, Any] = field(default_factory=dict)
    amount_capturable: int = 0
    amount_received: int = 0
    last_payment_error: PaymentError | None = None
    cancellation_reason: str | None = None
    return_url: str | None = None
    authorized_at: float | None = None  # internal: when the authorization started to lapse
    latest_charge: str | None = None
    canceled_at: int | None = None

    def public(self, base_url: str, payment_method: dict[str, Any] | None = None
               ) -> dict[str, Any]:
        """Stripe's PaymentIntent object; ``base_url`` is where this simulator's 3-D
        Secure page lives, ``payment_method`` the method's object (for the error)."""
        next_action = None
        if self.status == "requires_action":
            next_action = {"type": "redirect_to_url", "redirect_to_url": {
                "url": f"{base_url.rstrip('/')}/3ds/{self.id}", "return_url": self.return_url}}
        error = self.last_payment_error
        return {
            "id": self.id, "object": "payment_intent", "amount": self.amount,
            "amount_capturable": self.amount_capturable,
            "amount_received": self.amount_received, "currency": self.currency,
            "status": self.status, "capture_method": "manual",
            "confirmation_method": "automatic", "payment_method_types": ["card"],
            "payment_method": self.payment_method,
            "client_secret": f"{self.id}_secret_sim",
            "last_payment_error": error.api(payment_method) if error is not None else None,
            "next_action": next_action, "latest_charge": self.latest_charge,
            "cancellation_reason": self.cancellation_reason, "canceled_at": self.canceled_at,
            "description": None, "customer": None,
            "metadata": dict(self.metadata), "created": self.created, "livemode": False,
        }

    def record(self) -> dict[str, Any]:
        """Everything, for storage (see :func:`from_record`)."""
        error = self.last_payment_error
        return {
            "id": self.id, "amount": self.amount, "currency": self.currency,
            "status": self.status, "payment_method": self.payment_method,
            "created": self.created, "metadata": self.metadata,
            "amount_capturable": self.amount_capturable,
            "amount_received": self.amount_received,
            "last_payment_error": error.public() if error is not None else None,
            "cancellation_reason": self.cancellation_reason, "return_url": self.return_url,
            "authorized_at": self.authorized_at, "latest_charge": self.latest_charge,
            "canceled_at": self.canceled_at,
        }


def from_record(data: dict[str, Any]) -> PaymentIntent:
    error = data.get("last_payment_error")
    return PaymentIntent(
        id=data["id"], amount=data["amount"], currency=data["currency"],
        status=data["status"], payment_method=data["payment_method"],
        created=data["created"], metadata=data["metadata"],
        amount_capturable=data["amount_capturable"], amount_received=data["amount_received"],
        last_payment_error=PaymentError(**error) if error is not None else None,
        cancellation_reason=data["cancellation_reason"], return_url=data["return_url"],
        authorized_at=data["authorized_at"], latest_charge=data.get("latest_charge"),
        canceled_at=data.get("canceled_at"),
    )


@dataclass(frozen=True, slots=True)
class Transition:
    intent: PaymentIntent
    event: str | None


class UnexpectedState(Exception):
    """The action is not allowed from the intent's status."""

    def __init__(self, intent: PaymentIntent, action: str) -> None:
        super().__init__(f"This PaymentIntent's status is {intent.status}; "
                         f"it cannot be {action}.")
        self.intent = intent
        self.action = action


class AmountTooLarge(Exception):
    """``amount_to_capture`` exceeds ``amount_capturable``."""


def charge_id(intent_id: str) -> str:
    """The id of the (one) charge behind an authorization, derived from the intent's."""
    return "ch_" + intent_id.removeprefix("pi_")


def confirm(intent_id: str, *, amount: int, currency: str, card_number: str,
            payment_method: str, metadata: dict[str, Any], return_url: str | None,
            now: float) -> Transition:
    """Create and confirm at once: the outcome depends on the test card."""
    result = cards.outcome(card_number)
    intent = PaymentIntent(
        id=intent_id, amount=amount, currency=currency, status="requires_payment_method",
        payment_method=payment_method, created=int(now), metadata=metadata,
        return_url=return_url)
    if result.result == "approve":
        return Transition(replace(intent, status="requires_capture", amount_capturable=amount,
                                  authorized_at=now, latest_charge=charge_id(intent_id)),
                          AMOUNT_CAPTURABLE_UPDATED)
    if result.result == "three_d_secure":
        return Transition(replace(intent, status="requires_action"), REQUIRES_ACTION)
    assert result.code is not None and result.message is not None
    error = PaymentError(result.code, result.decline_code, result.message)
    return Transition(replace(intent, last_payment_error=error,
                              latest_charge=charge_id(intent_id)), PAYMENT_FAILED)


def capture(intent: PaymentIntent, amount_to_capture: int | None) -> Transition:
    if intent.status != "requires_capture":
        raise UnexpectedState(intent, "captured")
    amount = intent.amount if amount_to_capture is None else amount_to_capture
    if amount > intent.amount_capturable:
        raise AmountTooLarge(amount)
    return Transition(replace(intent, status="succeeded", amount_capturable=0,
                              amount_received=amount), SUCCEEDED)


def cancel(intent: PaymentIntent, reason: str, now: float = 0.0) -> Transition:
    if intent.status not in CANCELABLE:
        raise UnexpectedState(intent, "canceled")
    return Transition(replace(intent, status="canceled", amount_capturable=0,
                              cancellation_reason=reason, canceled_at=int(now)), CANCELED)


def authenticate(intent: PaymentIntent, succeed: bool, now: float) -> Transition:
    """The shopper's 3-D Secure answer; no change unless the intent awaits it."""
    if intent.status != "requires_action":
        return Transition(intent, None)
    if succeed:
        return Transition(replace(intent, status="requires_capture",
                                  amount_capturable=intent.amount, authorized_at=now,
                                  latest_charge=charge_id(intent.id)),
                          AMOUNT_CAPTURABLE_UPDATED)
    error = PaymentError(AUTHENTICATION_FAILURE, None,
                         "The provided PaymentMethod has failed authentication.")
    return Transition(replace(intent, status="requires_payment_method",
                              last_payment_error=error), PAYMENT_FAILED)


def lapsed(intent: PaymentIntent, now: float, window: float) -> bool:
    return (intent.status == "requires_capture" and intent.authorized_at is not None
            and now - intent.authorized_at >= window)


def lapse(intent: PaymentIntent, now: float, window: float) -> Transition | None:
    """Cancel an authorization older than ``window`` seconds (``automatic``)."""
    if not lapsed(intent, now, window):
        return None
    return Transition(replace(intent, status="canceled", amount_capturable=0,
                              cancellation_reason="automatic", canceled_at=int(now)), CANCELED)
