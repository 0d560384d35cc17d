"""What a provider answer means for one payment operation (sans-I/O).

The provider is reached over HTTP, so an answer may be missing (timeout,
connection reset, response lost after the provider acted) or ambiguous (5xx).
Those are UNKNOWN, never failure: only a definitive answer moves an operation
to a final state. An answer whose PaymentIntent contradicts what the operation
recorded (``mismatch``: another intent, amount or currency) is UNKNOWN too. The
database function ``onsale_payment_apply`` then applies the outcome, accepting
only forward transitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onsale.core.payment_state import OperationStatus, PaymentOutcome

AUTHORIZE, CAPTURE, VOID = "AUTHORIZE", "CAPTURE", "VOID"
OPEN_STATUSES = (OperationStatus.PENDING, OperationStatus.UNKNOWN,
                 OperationStatus.REQUIRES_ACTION)


@dataclass(frozen=True)
class ProviderAnswer:
    """An HTTP exchange with the provider; ``status_code`` None = no response at all."""

    status_code: int | None
    body: dict[str, Any] | None = None
    error: str | None = None


@dataclass(frozen=True)
class Outcome:
    outcome: PaymentOutcome
    provider_ref: str | None = None
    failure_code: str | None = None
    next_action: dict[str, Any] | None = None


UNKNOWN = Outcome(PaymentOutcome.UNKNOWN)

# An answer whose PaymentIntent contradicts the operation (docs/payments.md#answers-that-
# do-not-match-their-operation) is applied as UNKNOWN with failure code MISMATCH + field;
# onsale_payment_apply records it as "<kind>:mismatch" and reports it back.
MISMATCH = "mismatch_"
# How long the reconciler waits before looking again at an operation whose provider
# answer contradicted it: each look logs and counts again, and none can confirm it.
MISMATCH_RECHECK_SECONDS = 3600


@dataclass(frozen=True)
class Recorded:
    """What a payment operation recorded when it was sent: an answer is about this
    operation only if its PaymentIntent agrees with every field known here."""

    amount_minor: int
    currency: str  # as stored ("EUR"); Stripe answers in lower case
    provider_ref: str | None = None  # the PaymentIntent id, once an answer named it
    authorization_id: str | None = None  # metadata.operation_id: the AUTHORIZE operation

    def for_intent(self, provider_ref: str | None) -> Recorded:
        """The same payment, for a capture or void sent to ``provider_ref``."""
        return Recorded(self.amount_minor, self.currency, provider_ref, self.authorization_id)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mismatch(recorded: Recorded, intent: dict[str, Any] | None) -> str | None:
    """The first field of a PaymentIntent that contradicts the operation: ``id`` (not the
    intent the operation recorded, or none at all), ``operation`` (its
    ``metadata.operation_id`` names another operation), ``amount`` (another amount, or a
    capture of another amount) or ``currency``; None when it agrees. No intent at all (a
    timeout, a 404) contradicts nothing."""
    if intent is None:
        return None
    ref = intent.get("id")
    if not isinstance(ref, str) or not ref or (
            recorded.provider_ref is not None and ref != recorded.provider_ref):
        return "id"
    metadata = intent.get("metadata")
    named = metadata.get("operation_id") if isinstance(metadata, dict) else None
    if recorded.authorization_id is not None and named is not None \
            and named != recorded.authorization_id:
        return "operation"
    if _int(intent.get("amount")) != recorded.amount_minor:
        return "amount"
    received = _int(intent.get("amount_received"))
    if intent.get("status") == "succeeded" and received is not None \
            and received != recorded.amount_minor:
        return "amount"
    currency = intent.get("currency")
    if not isinstance(currency, str) or currency.lower() != recorded.currency.strip().lower():
        return "currency"
    return None


def mismatched(field: str, intent: dict[str, Any] | None = None) -> Outcome:
    """The outcome applied for an answer that contradicts its operation: UNKNOWN (the
    intent's id goes to the operators' trail only; UNKNOWN records no reference)."""
    ref = intent.get("id") if intent is not None else None
    return Outcome(PaymentOutcome.UNKNOWN, ref if isinstance(ref, str) else None,
                   MISMATCH + field)


def is_mismatch(outcome: Outcome) -> bool:
    return outcome.outcome == PaymentOutcome.UNKNOWN and \
        (outcome.failure_code or "").startswith(MISMATCH)


def _intent(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The payment intent in a success body or inside an error body."""
    if not isinstance(body, dict):
        return None
    if body.get("object") == "payment_intent":
        return body
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("payment_intent"), dict):
        intent: dict[str, Any] = error["payment_intent"]
        return intent
    return None


def _error(body: dict[str, Any] | None) -> dict[str, Any]:
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _failure_code(intent: dict[str, Any] | None, error: dict[str, Any]) -> str | None:
    last = intent.get("last_payment_error") if intent else None
    for source in (error, last if isinstance(last, dict) else {}):
        code = source.get("decline_code") or source.get("code")
        if isinstance(code, str) and code:
            return code
    return None


def from_intent(kind: str, intent: dict[str, Any]) -> Outcome:
    """The outcome a payment intent's current state means for an operation of ``kind``."""
    ref = intent.get("id") if isinstance(intent.get("id"), str) else None
    status = intent.get("status")
    if kind == AUTHORIZE:
        if status in ("requires_capture", "succeeded"):
            return Outcome(PaymentOutcome.AUTHORIZED, ref)
        if status == "requires_action":
            action = intent.get("next_action")
            return Outcome(PaymentOutcome.REQUIRES_ACTION, ref,
                           next_action=action if isinstance(action, dict) else None)
        if status == "requires_payment_method":
            return Outcome(PaymentOutcome.DECLINED, ref, _failure_code(intent, {}) or "declined")
        if status == "canceled":
            return Outcome(PaymentOutcome.NO_AUTHORIZATION, ref, "canceled")
        return Outcome(PaymentOutcome.UNKNOWN, ref)
    if kind == CAPTURE:
        if status == "succeeded":
            return Outcome(PaymentOutcome.CAPTURED, ref)
        if status in ("canceled", "requires_payment_method"):
            return Outcome(PaymentOutcome.CAPTURE_FAILED, ref,
                           str(intent.get("cancellation_reason") or status))
        return Outcome(PaymentOutcome.UNKNOWN, ref)
    if kind == VOID:
        if status == "canceled":
            return Outcome(PaymentOutcome.VOIDED, ref)
        if status == "succeeded":
            return Outcome(PaymentOutcome.VOID_FAILED, ref, "already_captured")
        return Outcome(PaymentOutcome.UNKNOWN, ref)
    raise ValueError(f"unknown operation kind {kind!r}")


def _ambiguous(answer: ProviderAnswer) -> bool:
    """No definitive answer: no response, a server error, throttling, a conflict
    (a twin request still running), or credentials the provider refused (nothing
    was done, but nothing final can be concluded either)."""
    code = answer.status_code
    return code is None or code >= 500 or code in (401, 403, 409, 429)


def checked(kind: str, answer: ProviderAnswer, recorded: Recorded) -> tuple[Outcome, str | None]:
    """``classify``, cross-checked against what the operation recorded: an answer whose
    PaymentIntent contradicts it is UNKNOWN, never a sale, a capture, a void or a
    release. Returns the outcome and the contradicting field (None when it agrees)."""
    outcome = classify(kind, answer)
    if _ambiguous(answer):
        return outcome, None  # not the provider's word: nothing to check
    intent = _intent(answer.body)
    field = mismatch(recorded, intent)
    return (mismatched(field, intent), field) if field is not None else (outcome, None)


def classify(kind: str, answer: ProviderAnswer) -> Outcome:
    """Map one HTTP answer for an operation of ``kind`` to its outcome."""
    if _ambiguous(answer):
        return UNKNOWN
    intent = _intent(answer.body)
    error = _error(answer.body)
    if answer.status_code == 200:
        return from_intent(kind, intent) if intent else UNKNOWN
    if not error.get("type"):
        # A 4xx without the provider's error object (a proxy's or load
        # balancer's page during a deploy) proves nothing about the payment.
        return UNKNOWN
    if error.get("type") == "idempotency_error":
        return UNKNOWN  # our key met other parameters: look the operation up instead
    if kind == AUTHORIZE:
        if answer.status_code in (400, 402):  # declined, or a card the provider refused
            ref = intent.get("id") if intent else None
            return Outcome(PaymentOutcome.DECLINED, ref, _failure_code(intent, error) or "declined")
        return UNKNOWN
    if kind == CAPTURE:
        if intent is not None and answer.status_code == 400:
            state = from_intent(CAPTURE, intent)
            return state if state.outcome != PaymentOutcome.UNKNOWN else Outcome(
                PaymentOutcome.CAPTURE_FAILED, intent.get("id"),
                str(error.get("code") or "capture_failed"))
        if answer.status_code in (400, 402) or (
                answer.status_code == 404 and error.get("code") == "resource_missing"):
            return Outcome(PaymentOutcome.CAPTURE_FAILED, None,
                           str(error.get("code") or "capture_failed"))
        return UNKNOWN
    if kind == VOID:
        if intent is not None and answer.status_code == 400:
            state = from_intent(VOID, intent)
            return state if state.outcome != PaymentOutcome.UNKNOWN else Outcome(
                PaymentOutcome.VOID_FAILED, intent.get("id"),
                str(error.get("code") or "void_failed"))
        if answer.status_code == 404 and error.get("code") == "resource_missing":
            return Outcome(PaymentOutcome.VOIDED, None, "no_such_intent")  # nothing left to void
        return UNKNOWN
    raise ValueError(f"unknown operation kind {kind!r}")


WEBHOOK_TARGETS: dict[str, tuple[str, ...]] = {
    "payment_intent.amount_capturable_updated": (AUTHORIZE,),
    "payment_intent.requires_action": (AUTHORIZE,),
    "payment_intent.payment_failed": (AUTHORIZE,),
    "payment_intent.succeeded": (CAPTURE,),
    # A cancel ends our void, or tells an open authorization that none exists.
    "payment_intent.canceled": (VOID, AUTHORIZE),
}


def webhook_outcomes(event_type: str, intent: dict[str, Any]) -> list[tuple[str, Outcome]]:
    """(operation kind, outcome) pairs a verified webhook event asks to apply."""
    return [(kind, from_intent(kind, intent)) for kind in WEBHOOK_TARGETS.get(event_type, ())]


def can_change(kind: str, status: str, outcome: str) -> bool:
    """Whether applying ``outcome`` to an operation in ``status`` could change
    anything: a definitive operation never changes, except that an
    authorization we gave up on and that turns up after all must be voided."""
    if status == OperationStatus.SUCCEEDED:
        return False
    if status == OperationStatus.FAILED:
        return kind == AUTHORIZE and outcome == PaymentOutcome.AUTHORIZED
    return outcome != PaymentOutcome.UNKNOWN


@dataclass(frozen=True)
class Decision:
    """What the reconciler does with an open authorization after looking it up."""

    action: str  # "apply" | "abandon" | "wait" | "mismatch"
    outcome: Outcome | None = None


def after_lookup(found: dict[str, Any] | None, past_grace: bool,
                 recorded: Recorded | None = None) -> Decision:
    """An open AUTHORIZE operation, looked up at the provider by its operation id.

    Nothing found releases the seats only once the grace deadline has passed
    (the request may still be on its way before that). A shopper still in
    3-D Secure past the grace is abandoned: the intent is voided first, and the
    seats go only when the provider confirms the void. An intent that contradicts
    ``recorded`` is neither applied nor voided: "mismatch" (UNKNOWN, for operators).
    """
    field = mismatch(recorded, found) if recorded is not None else None
    if field is not None:
        return Decision("mismatch", mismatched(field, found))
    if found is None:
        if not past_grace:
            return Decision("wait")
        return Decision("apply", Outcome(PaymentOutcome.NO_AUTHORIZATION, None, "not_found"))
    outcome = from_intent(AUTHORIZE, found)
    if outcome.outcome == PaymentOutcome.REQUIRES_ACTION:
        return Decision("abandon", outcome) if past_grace else Decision("wait", outcome)
    if outcome.outcome == PaymentOutcome.UNKNOWN:
        return Decision("wait", outcome)
    return Decision("apply", outcome)
