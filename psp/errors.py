"""Stripe's error object, ``{"error": {"type", "code", "decline_code", "param", "message",
"payment_intent"...}}``, with Stripe's HTTP statuses (400, 401, 402, 404, 409, 429, 500)."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, type_: str, message: str, *, code: str | None = None,
                 **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.code = code
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"type": self.type}
        if self.code is not None:
            error["code"] = self.code
        error["message"] = self.message
        error.update(self.extra)
        return {"error": error}


def authentication() -> ApiError:
    return ApiError(401, "authentication_error",
                    "Invalid API Key provided: send 'Authorization: Bearer sk_…'.")


def publishable_key_refused() -> ApiError:
    return ApiError(401, "authentication_error",
                    "This API call cannot be made with a publishable API key. "
                    "Please use a secret API key.", code="secret_key_required")


def sim_key_required() -> ApiError:
    return ApiError(401, "authentication_error",
                    "The /_sim/ endpoints need 'Authorization: Bearer <ONSALE_PSP_SIM_KEY>'.")


def not_found_url(method: str, path: str) -> ApiError:
    return ApiError(404, "invalid_request_error",
                    f"Unrecognized request URL ({method}: {path}).")


def card_field(code: str, param: str, message: str) -> ApiError:
    """A card refused at tokenization (``POST /v1/payment_methods``)."""
    return ApiError(402, "card_error", message, code=code, param=param)


def invalid(param: str | None, message: str, code: str = "parameter_invalid") -> ApiError:
    return ApiError(400, "invalid_request_error", message, code=code, param=param)


def idempotency_conflict() -> ApiError:
    return ApiError(400, "idempotency_error",
                    "Keys for idempotent requests can only be used with the same parameters "
                    "they were first used with.", code="idempotency_key_in_use")


def idempotency_in_progress() -> ApiError:
    return ApiError(409, "idempotency_error",
                    "There is currently another in-progress request using this "
                    "Idempotency-Key; retry later.", code="idempotency_key_in_use")


def missing(intent_id: str, kind: str = "payment_intent", param: str = "id") -> ApiError:
    return ApiError(404, "invalid_request_error", f"No such {kind}: '{intent_id}'",
                    code="resource_missing", param=param)


def unexpected_state(message: str, intent: dict[str, Any]) -> ApiError:
    return ApiError(400, "invalid_request_error", message,
                    code="payment_intent_unexpected_state", payment_intent=intent)


def card_error(error: dict[str, Any], intent: dict[str, Any]) -> ApiError:
    """A declined confirmation: ``last_payment_error`` plus the PaymentIntent."""
    extra = {k: v for k, v in error.items() if k not in ("type", "code", "message")}
    return ApiError(402, "card_error", error["message"], code=error["code"],
                    **extra, payment_intent=intent)


def rate_limited() -> ApiError:
    return ApiError(429, "invalid_request_error", "Too many requests hit the API too quickly.",
                    code="rate_limit")


def api_error() -> ApiError:
    return ApiError(500, "api_error", "Simulated internal error.")
