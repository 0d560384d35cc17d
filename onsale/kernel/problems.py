"""RFC 9457 problem details with a stable ``code`` (docs/api.md lists them)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

TITLES: dict[str, str] = {
    "invalid_json": "The request body is not valid JSON",
    "invalid_request": "The request is malformed",
    "unsupported_media_type": "The request body must be JSON (Content-Type: application/json)",
    "cross_site_request": "This request came from another site's page and was refused",
    "invalid_seats": "The seat selection is not valid",
    "invalid_email": "The email address is not valid",
    "weak_password": "The password must be 8 to 256 characters",
    "email_taken": "An account with this email already exists",
    "bad_credentials": "Email or password is wrong",
    "authentication_required": "Sign in first",
    "session_unavailable": "Sessions cannot be checked or created right now; retry shortly",
    "sign_in_busy": "Too many sign-ins are being checked at once; retry shortly",
    "admin_required": "An operator token is required",
    "idempotency_key_required": "An Idempotency-Key header is required",
    "idempotency_conflict": "This Idempotency-Key was used for a different request",
    "event_not_found": "No such event",
    "shard_not_found": "No such shard is listed",
    "shard_not_active": "This shard takes no new events",
    "event_already_open": "This event's queue opens too soon, or it has holds, to move it",
    "move_not_verified": "The event's copy did not match; it was not moved",
    "venue_not_found": "No venue layout at this address",
    "hold_not_found": "No such hold",
    "hold_not_releasable": "This hold can no longer be released",
    "hold_expired": "This hold has expired",
    "sale_not_open": "The sale for this event has not opened yet",
    "price_changed": "The price changed since the seats were held",
    "seats_unavailable": "Some of the requested seats are not available",
    "sold_out": "This tier is sold out",
    "insufficient_quantity": "Fewer places are left in this tier than were asked for",
    "invalid_quantity": "The quantity of places is not valid for this tier",
    "ga_tier_not_found": "No such general-admission tier for this event",
    "ticket_limit_exceeded": "This would exceed the ticket limit for your account",
    "inventory_unavailable": (
        "Seat inventory is temporarily unavailable; retry with the same Idempotency-Key"
    ),
    "hold_checked_out": "This hold has already been paid for",
    "checkout_in_progress": "A payment for this hold is already in progress",
    "hold_expiring": "Too little time is left on this hold to start a payment",
    "invalid_payment_method": "The payment method is missing or malformed",
    "payments_unavailable": "Payments are not configured or not reachable",
    "order_not_found": "No such order",
    "invalid_signature": "The webhook signature is missing, stale or wrong",
    "invalid_webhook": "The webhook payload is malformed",
    "admission_required": "An admission token for this event is required; join the queue",
    "admission_invalid": "The admission token is malformed or its signature is wrong",
    "admission_expired": "The admission token or its shopping session has expired",
    "admission_wrong_event": "The admission token is for another event",
    "admission_wrong_account": "The admission token belongs to another account",
    "admission_revoked": "This admission was revoked: the account entered on another device",
    "admission_unavailable": "Admission cannot be verified right now; retry shortly",
    "too_many_sockets": "This account has too many seat-map connections open; close a tab",
    "not_in_queue": "You are not in this event's queue; join it first",
    "queue_not_open": "The queue for this event has not opened yet",
    "queue_closed": "The queue for this event is closed",
    "queue_unavailable": "The waiting room is temporarily unavailable; keep your place and retry",
    "rate_limited": "Too many requests; retry after the Retry-After delay",
    "pow_required": "Solve the proof-of-work challenge to join",
    "pow_invalid": "The proof of work is wrong, expired or for another challenge",
    "pow_replayed": "This proof of work was already used to join; solve the new challenge",
    "risk_refused": "This join looks automated; join from an ordinary browser, or wait and retry",
    "policy_frozen": "The queue policy cannot change once the sale is open",
    "draw_page_not_found": "The published draw has no such page",
    "beacon_not_committed": "This event's draw committed to no beacon round",
    "beacon_recorded": "The draw's beacon round, or a fallback, is recorded already",
    "beacon_not_overdue": "The beacon round is not overdue yet; the draw waits for it",
    "invalid_arrivals": "The arrivals CSV cannot be read",
    "lab_unavailable": "The fairness lab's worker process stopped; run it again",
    "not_found": "Not found",
    "method_not_allowed": "Method not allowed",
    "internal_error": "Internal error",
    # The HTTP layer's refusals (onsale/kernel/http_limits.py, docs/security.md#bounded-http).
    "headers_too_large": "The request headers are too large",
    "payload_too_large": "The request body is too large",
    "request_timeout": "The request head took too long",
    "overloaded": "The server is at capacity; retry after the Retry-After delay",
}


# A shard that failed over and is not resumed yet (onsale_shard_serving, SQLSTATE OS503;
# docs/operations.md#failover).
RESUMING = ("Reservations are temporarily unavailable while this event's database recovers "
            "from a failover; retry in a moment with the same Idempotency-Key.")

class Problem(Exception):
    """An error the API reports as problem+json."""

    def __init__(self, status: int, code: str, detail: str | None = None, **extra: Any) -> None:
        super().__init__(code)
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = extra

    def body(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "type": f"https://onsale.dev/problems/{self.code.replace('_', '-')}",
            "title": TITLES.get(self.code, self.code.replace("_", " ")),
            "status": self.status,
            "code": self.code,
        }
        if self.detail:
            doc["detail"] = self.detail
        doc.update(self.extra)
        return doc


class ProblemResponse(Response):
    media_type = "application/problem+json"

    def __init__(self, problem: Problem, headers: dict[str, str] | None = None) -> None:
        super().__init__(
            json.dumps(problem.body(), separators=(",", ":")),
            status_code=problem.status,
            headers=headers,
        )


async def problem_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    headers = {"Retry-After": "1"} if exc.status == 503 else None
    if "retry_after" in exc.extra:  # 429: the limiter says when
        headers = {"Retry-After": str(exc.extra["retry_after"])}
    return ProblemResponse(exc, headers=headers)


async def http_exception_handler(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
    headers = getattr(exc, "headers", None)
    return ProblemResponse(Problem(status, code), headers=dict(headers) if headers else None)
